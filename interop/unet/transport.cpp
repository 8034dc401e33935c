// The U-Net live suite's sides and wire (transport.hpp).
#include "interop/unet/transport.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "protocols/core/bits.hpp"

namespace rdmaconf::interop::unet {

using Clock = std::chrono::steady_clock;

u::Faults faults(const std::string& name) {
  u::Faults f;
  f.forge = name == "forge";
  f.ignore_channels = name == "ignore-channels";
  f.overflow = name == "overflow";
  return f;
}
json spec_json(const PeerSpec& s) {
  return {{"behaviour", static_cast<int>(s.behaviour)}, {"buffer_size", s.buffer_size}, {"give", s.give},
          {"teardown_after", s.teardown_after}, {"a", s.a}, {"b", s.b}};
}
PeerSpec spec_from(const json& j) {
  PeerSpec s;
  s.behaviour = static_cast<Behaviour>(j.value("behaviour", 1));
  s.buffer_size = j.value("buffer_size", 2048u);
  s.give = j.value("give", 64u);
  s.teardown_after = j.value("teardown_after", 0u);
  s.a = j.value("a", std::uint16_t{0});
  s.b = j.value("b", std::uint16_t{0});
  return s;
}

// Side B: a node with two endpoints, b (channel to A's endpoint) and b + 1

namespace {

class Responder {
 public:
  Responder(const PeerSpec& spec, const std::string& fault, std::unique_ptr<u::Node> node, u::Link* link)
      : spec_(spec), owned_(std::move(node)), node_(*owned_) {
    node_.attach(link);
    node_.set_faults(faults(fault));
    u::SegmentConfig cfg;
    cfg.buffer_size = spec.buffer_size;
    ep_ = node_.create_endpoint(spec.b, cfg);
    other_ = node_.create_endpoint(static_cast<std::uint16_t>(spec.b + 1));
    ch_ = *node_.open_channel(*ep_, kMacA, spec.a);
    (void)node_.open_channel(*other_, kMacA, spec.a);
    for (std::uint32_t i = 0; i < cfg.buffers; ++i) std::fill(ep_->buffer(i).begin(), ep_->buffer(i).end(), kCanary);
    for (std::uint32_t i = 0; i < spec.give; ++i) ep_->give(i);
    for (std::uint32_t i = 0; i < other_->config().buffers; ++i) other_->give(i);
  }
  void on_frame(u::Bytes f) {
    node_.receive(f);
    drain();
  }
  void drain() {
    while (auto d = other_->poll()) {
      ++other_delivered_;
      other_->give(d->buffer);
    }
    if (ep_->alive())
      while (auto d = ep_->poll()) take(*d);
    node_.transmit();
    if (ep_->alive())
      while (auto b = ep_->poll_sent()) ep_->give(*b);
  }
  json report() const {
    bool canary = true;
    for (std::uint32_t i = spec_.give; i < ep_->config().buffers && ep_->alive(); ++i) {
      const auto b = ep_->buffer(i);
      canary = canary && std::all_of(b.begin(), b.end(), [](std::byte x) { return x == kCanary; });
    }
    const auto& n = node_.counters();
    const auto& e = ep_->counters();
    return {{"delivered", delivered_}, {"intact", intact_}, {"out_of_order", out_of_order_}, {"truncated_flagged", truncated_},
            {"max_length", max_length_}, {"max_message", max_message_}, {"canary_ok", canary},
            {"rx_frames", n.rx_frames}, {"rx_unknown_tag", n.rx_unknown_tag}, {"rx_malformed", n.rx_malformed},
            {"rx_no_channel", e.rx_no_channel}, {"rx_no_free", e.rx_no_free}, {"other_delivered", other_delivered_}};
  }

 private:
  void take(const u::RxDesc& d) {
    ++delivered_;
    max_length_ = std::max(max_length_, d.length);
    max_message_ = std::max(max_message_, d.message);
    if (d.flags & u::RxDesc::truncated) ++truncated_;
    const auto buf = ep_->buffer(d.buffer);
    const std::uint32_t seq = d.length >= 4 ? protocols::be32(buf, 0) : next_seq_;
    if (intact(buf, d.length, seq)) ++intact_;
    if (seq != next_seq_) ++out_of_order_;
    next_seq_ = seq + 1;
    switch (spec_.behaviour) {
      case Behaviour::echo:
        ep_->send(ch_, d.buffer, d.length);  // the buffer comes back through the completion queue
        break;
      case Behaviour::sink:
        ep_->give(d.buffer);
        break;
      case Behaviour::hold:
        break;
      case Behaviour::teardown:
        ep_->give(d.buffer);
        if (delivered_ == spec_.teardown_after) node_.destroy_endpoint(spec_.b);
        break;
    }
  }

  PeerSpec spec_;
  std::unique_ptr<u::Node> owned_;
  u::Node& node_;
  u::Endpoint *ep_ = nullptr, *other_ = nullptr;
  std::uint32_t ch_ = 0;
  std::uint64_t delivered_ = 0, intact_ = 0, out_of_order_ = 0, truncated_ = 0, other_delivered_ = 0;
  std::uint32_t max_length_ = 0, max_message_ = 0, next_seq_ = 0;
};


class MemoryTransport final : public Transport {
 public:
  std::string setup(const PeerSpec& spec, const std::string& fault) override {
    b_ = std::make_unique<Responder>(spec, fault, std::make_unique<u::Node>(kMacB), &to_a_);
    return {};
  }
  void pump(u::Node& a, int, int, const std::function<bool()>&) override {
    a.attach(&to_b_);
    for (int rounds = 0; rounds < 100000; ++rounds) {
      a.transmit();
      if (to_b_.q.empty() && to_a_.q.empty()) return;
      while (!to_b_.q.empty()) {
        const auto f = std::move(to_b_.q.front());
        to_b_.q.pop_front();
        b_->on_frame(f);
      }
      while (!to_a_.q.empty()) {
        const auto f = std::move(to_a_.q.front());
        to_a_.q.pop_front();
        if (record) record(f);
        a.receive(f);
      }
    }
  }
  void inject(u::Bytes f) override {
    if (record) record(f);
    b_->on_frame(f);
  }
  json report() override { return b_->report(); }
  std::string path() const override { return "memory"; }

 private:
  struct Queue final : u::Link {
    std::deque<std::vector<std::byte>> q;
    void send(u::Bytes f) override { q.emplace_back(f.begin(), f.end()); }
  };
  Queue to_b_, to_a_;
  std::unique_ptr<Responder> b_;
};

std::unique_ptr<u::Port> open_port(bool xdp, const std::string& ifname, std::string& error) {
  if (xdp) return u::open_xdp_port(ifname, error);
  return u::open_packet_port(ifname, error);
}

// Hands a port to a node for a scenario: the XDP program forgets the last
// node's tags and channels and filters by this one's.
void adopt(u::Port& port, u::Node& node, const std::string& fault) {
  if (auto* x = dynamic_cast<u::XdpPort*>(&port)) {
    x->program().reset();
    x->program().check_channels(fault != "ignore-channels");
    node.observe(&x->program());
  }
}

// Side B's process: a node on its end of the pair, a kernel UDP echo
// (10.78.0.2:7000) and sink (:7001), and the control socket to side A.
// Waits in poll(), or spins when a set-up asks it to busy-poll. Never

[[noreturn]] void peer_main(const std::string& ns, const std::string& ifname, int control, bool xdp) {
  std::string err;
  ControlChannel ch(control);
  InNetns in(ns);
  auto port = in.error.empty() ? open_port(xdp, ifname, err) : nullptr;
  const int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), sink = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in me{};
  me.sin_family = AF_INET;
  me.sin_port = htons(7000);
  inet_pton(AF_INET, "10.78.0.2", &me.sin_addr);
  if (port && bind(udp, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) err = "binding the UDP echo to 10.78.0.2:7000";
  me.sin_port = htons(7001);
  int big = 8 << 20;
  (void)setsockopt(sink, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  if (port && bind(sink, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) err = "binding the UDP sink to 10.78.0.2:7001";
  if (!in.error.empty() || !err.empty()) {
    ch.send(json{{"error", in.error.empty() ? err : in.error}});
    _exit(1);
  }
  ch.send(json::object());
  std::unique_ptr<Responder> b;
  std::uint64_t sunk = 0;
  bool busy = false;
  const auto frames = [&] {
    port->receive([&](u::Bytes f) {
      if (b) b->on_frame(f);
    });
  };
  char d[2048];
  for (;;) {
    pollfd p[4] = {{control, POLLIN, 0}, {udp, POLLIN, 0}, {sink, POLLIN, 0}, {port->fd(), POLLIN, 0}};
    if (busy) frames();
    if (poll(p, busy ? 3 : 4, busy ? 0 : 1000) < 0 && errno != EINTR) _exit(1);
    if (p[3].revents & POLLIN) frames();
    if (p[1].revents & POLLIN) {
      sockaddr_in from{};
      socklen_t fl = sizeof from;
      const ssize_t n = recvfrom(udp, d, sizeof d, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n > 0) (void)sendto(udp, d, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), fl);
    }
    if (p[2].revents & POLLIN)
      while (recv(sink, d, sizeof d, MSG_DONTWAIT) > 0) ++sunk;
    if (p[0].revents & (POLLIN | POLLHUP)) {
      const auto m = ch.receive(1000, err);
      if (!m || m->is_null() || m->contains("quit")) _exit(0);
      const json& j = *m;
      if (j.contains("setup")) {
        const auto fault = j.value("fault", std::string());
        busy = j.value("busy", false);
        b.reset();
        auto node = std::make_unique<u::Node>(kMacB);
        adopt(*port, *node, fault);
        b = std::make_unique<Responder>(spec_from(j["setup"]), fault, std::move(node), port.get());
        ch.send(json::object());
      } else if (j.contains("report")) {
        frames();  // frames still on their way: take what arrived before answering
        while (recv(sink, d, sizeof d, MSG_DONTWAIT) > 0) ++sunk;
        json r = b ? b->report() : json::object();
        if (auto* x = dynamic_cast<u::XdpPort*>(port.get())) {
          // What the kernel's demultiplexer dropped before the node saw it.
          const auto s = x->program().stats();
          r["rx_unknown_tag"] = r.value("rx_unknown_tag", std::uint64_t{0}) + s.unknown_tag;
          r["rx_no_channel"] = r.value("rx_no_channel", std::uint64_t{0}) + s.no_channel;
          r["rx_malformed"] = r.value("rx_malformed", std::uint64_t{0}) + s.malformed;
          r["xdp"] = {{"passed", s.passed}, {"redirected", s.redirected}, {"malformed", s.malformed},
                      {"unknown_tag", s.unknown_tag}, {"no_channel", s.no_channel}, {"no_socket", s.no_socket}};
        }
        r["udp_sunk"] = sunk;
        ch.send(r);
      }
    }
  }
}

// Two namespaces joined by a veth pair, side B in a child process, each
// side's node on a port of the same kind: AF_XDP, or the AF_PACKET

}  // namespace

// Side A's node made ready for a scenario: the transport adopts it, then
// its endpoint (tag spec.a) with a channel to B's endpoint (`ch`) and
// buffers 32 on given (0-31 are for sending).
u::Endpoint* open_side_a(Transport& t, u::Node& a, const PeerSpec& spec, const std::string& fault, std::uint32_t& ch) {
  a.set_faults(faults(fault));
  t.adopt(a, fault);
  auto* ea = a.create_endpoint(spec.a);
  ch = *a.open_channel(*ea, kMacB, spec.b);
  for (std::uint32_t i = 32; i < ea->config().buffers; ++i) ea->give(i);
  return ea;
}

std::unique_ptr<Transport> memory_transport() { return std::make_unique<MemoryTransport>(); }

WireTransport::~WireTransport() {
  if (control_ >= 0) {
    channel_->send(json{{"quit", true}});
    close(control_);
  }
  if (child_ > 0) {
    for (int i = 0; i < 50 && waitpid(child_, nullptr, WNOHANG) == 0; ++i) usleep(20000);
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }
  port_.reset();
  // (namespaces_ removes the namespaces, their veth ends and XDP program with them.)
}

std::string WireTransport::start(bool xdp, std::string& notice) {
  if (geteuid() != 0) return "the packet and xdp paths need root (network namespaces, a veth pair, raw sockets)";
  // What a run that died left behind goes first (its namespaces hold the
  // same addresses and interface names).
  for (const auto& n : RunNamespaces::remove_stale()) notice += fmt::format("removed {}, left by a run that died; ", n);
  ns_a_ = namespaces_.add("unet", "a");
  ns_b_ = namespaces_.add("unet", "b");
  if (std::string e = make_veth_pair({ns_a_, "unetA", "02:00:0a:4e:00:01", {"10.78.0.1/24"}, {}},
                                     {ns_b_, "unetB", "02:00:0a:4e:00:02", {"10.78.0.2/24"}, {}});
      !e.empty())
    return "setting up the namespaces and veth pair failed: " + e;
  std::string err;
  {
    InNetns in(ns_a_);
    if (!in.error.empty()) return in.error;
    port_ = open_port(xdp, "unetA", err);
    if (!port_ && xdp) {
      notice += fmt::format("AF_XDP cannot run here ({}); using the AF_PACKET fallback", err);
      xdp = false;
      err.clear();
      port_ = open_port(false, "unetA", err);
    }
  }
  if (!port_) return err;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return "socketpair failed";
  child_ = fork();
  if (child_ < 0) return "fork failed";
  if (child_ > 0) namespaces_.add_child(child_);
  if (child_ == 0) {
    close(sv[0]);
    peer_main(ns_b_, "unetB", sv[1], xdp);
  }
  close(sv[1]);
  control_ = sv[0];
  channel_.emplace(control_);
  const auto hello = channel_->receive(5000, err);
  if (!hello || hello->is_null()) return "side B did not start" + (err.empty() ? std::string() : ": " + err);
  if (const auto e = hello->find("error"); e != hello->end() && e->is_string())
    return fmt::format("side B: {}", e->get<std::string>());
  return {};
}

void WireTransport::adopt(u::Node& a, const std::string& fault) { unet::adopt(*port_, a, fault); }

std::string WireTransport::path() const {
  if (auto* x = dynamic_cast<const u::XdpPort*>(port_.get())) return fmt::format("{} ({} XDP)", x->kind(), x->mode());
  return std::string(port_->kind());
}

std::string WireTransport::setup(const PeerSpec& spec, const std::string& fault, bool busy) {
  std::string err;
  if (!channel_->send(json{{"setup", spec_json(spec)}, {"fault", fault}, {"busy", busy}}))
    return "side B did not answer the set-up";
  if (const auto m = channel_->receive(5000, err); !m || m->is_null())
    return "side B did not answer the set-up" + (err.empty() ? std::string() : ": " + err);
  return {};
}

void WireTransport::pump(u::Node& a, int quiet_ms, int max_ms, const std::function<bool()>& done) {
  a.attach(port_.get());
  const auto until = Clock::now() + std::chrono::milliseconds(max_ms);
  auto last = Clock::now();
  a.transmit();
  while (Clock::now() < until && Clock::now() - last < std::chrono::milliseconds(quiet_ms) && !(done && done())) {
    pollfd p{port_->fd(), POLLIN, 0};
    if (poll(&p, 1, std::min(5, quiet_ms)) <= 0) continue;
    while (port_->receive([&](u::Bytes f) {
      if (record) record(f);
      a.receive(f);
    }))
      last = Clock::now();
    a.transmit();
  }
}

void WireTransport::inject(u::Bytes f) {
  if (record) record(f);
  port_->send(f);
  port_->flush();
}

json WireTransport::report() {
  std::string err;
  if (!channel_->send(json{{"report", true}})) return {};
  const auto m = channel_->receive(5000, err);
  return m ? *m : json{};
}

bool WireTransport::round_trip(u::Node& a, u::Endpoint& ea, int max_ms, bool busy) {
  a.attach(port_.get());
  a.transmit();
  const auto until = Clock::now() + std::chrono::milliseconds(max_ms);
  const auto take = [&](u::Bytes f) { a.receive(f); };
  while (Clock::now() < until) {
    if (!busy) {
      pollfd p{port_->fd(), POLLIN, 0};
      if (poll(&p, 1, max_ms) <= 0) continue;
    }
    if (port_->receive(take) == 0) continue;
    if (auto d = ea.poll()) {
      ea.give(d->buffer);
      return true;
    }
  }
  return false;
}

int WireTransport::kernel_socket(std::uint16_t port) {
  InNetns in(ns_a_);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "10.78.0.2", &to.sin_addr);
  (void)connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
  return fd;
}

std::optional<int> WireTransport::kernel_exchange(int n) {
  const int fd = kernel_socket();
  int echoed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string d = fmt::format("kernel datagram {}", i);
    (void)::send(fd, d.data(), d.size(), 0);
    pollfd p{fd, POLLIN, 0};
    char buf[256];
    if (poll(&p, 1, 1000) > 0 && recv(fd, buf, sizeof buf, 0) == static_cast<ssize_t>(d.size()) &&
        std::memcmp(buf, d.data(), d.size()) == 0)
      ++echoed;
  }
  close(fd);
  return echoed;
}

}  // namespace rdmaconf::interop::unet

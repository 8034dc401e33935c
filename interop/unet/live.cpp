#include "interop/unet/live.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
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
#include <memory>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "captures/io/pcap_writer.hpp"
#include "conformance/judge.hpp"
#include "conformance/unet/live_cases.hpp"
#include "engines/unet/ports.hpp"
#include "engines/unet/unet.hpp"
#include "interop/netns.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::interop::unet {

namespace {

namespace u = engine::unet;
namespace conf = conformance;
namespace lc = conformance::unet::live;
namespace pu = protocols::unet;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

const u::Mac kMacA{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x01}, kMacB{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x02};
const u::Mac kForeign{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x03};
constexpr std::byte kCanary{0xcc};

// A message's octets: the sequence number in the first four (when there is
// room), then a pattern of it.
void fill(std::span<std::byte> b, std::uint32_t size, std::uint32_t seq) {
  for (std::uint32_t i = 0; i < size; ++i) b[i] = std::byte(static_cast<std::uint8_t>(seq * 7 + i * 13));
  if (size >= 4) protocols::put_be32(b, 0, seq);
}
bool intact(std::span<const std::byte> b, std::uint32_t size, std::uint32_t seq) {
  for (std::uint32_t i = size >= 4 ? 4 : 0; i < size; ++i)
    if (b[i] != std::byte(static_cast<std::uint8_t>(seq * 7 + i * 13))) return false;
  return size < 4 || protocols::be32(b, 0) == seq;
}

// What side B does with what it receives.
enum class Behaviour { echo, sink, hold, teardown };
struct PeerSpec {
  Behaviour behaviour = Behaviour::sink;
  std::uint32_t buffer_size = 2048, give = 64, teardown_after = 0;
  std::uint16_t a = 0, b = 0;  // the tags: A's endpoint, B's (B's second endpoint is b + 1)
};

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
// (a second channel to it), acting on what arrives as its spec says.
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

// How side A reaches side B.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string setup(const PeerSpec& spec, const std::string& fault) = 0;  // empty, or what went wrong
  // Side A's node for the scenario, before its endpoints are made.
  virtual void adopt(u::Node&, const std::string& /*fault*/) {}
  // The data path, as the report names it.
  virtual std::string path() const = 0;
  // A's node sends what it queued; frames move both ways until `quiet_ms`
  // pass without one (or `max_ms` in all).
  // Moves frames both ways until the wire has been quiet for quiet_ms, or
  // `done` holds (what was waited for has come), or max_ms have passed.
  virtual void pump(u::Node& a, int quiet_ms, int max_ms, const std::function<bool()>& done = {}) = 0;
  virtual void inject(u::Bytes frame) = 0;  // raw onto the wire from A's side (a hostile host)
  virtual json report() = 0;
  // A kernel UDP exchange across the same interfaces: datagrams echoed of `n` (none: not this path).
  virtual std::optional<int> kernel_exchange(int) { return std::nullopt; }
  std::function<void(u::Bytes)> record;  // every frame on the wire, seen from A
};

// Both sides in this process.
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

// A line to the other side; false (never SIGPIPE) when it has gone.
bool write_line(int fd, const std::string& s) {
  const std::string line = s + "\n";
  return ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size());
}

// A line from `fd` within `ms` milliseconds.
std::optional<std::string> read_line(int fd, std::string& pending, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (const auto nl = pending.find('\n'); nl != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    pending.append(buf, static_cast<std::size_t>(n));
  }
}

// A node's port on `ifname` (in the calling thread's namespace): AF_XDP or
// AF_PACKET.
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
// returns.
[[noreturn]] void peer_main(const std::string& ns, const std::string& ifname, int control, bool xdp) {
  std::string err;
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
    write_line(control, json{{"error", in.error.empty() ? err : in.error}}.dump());
    _exit(1);
  }
  write_line(control, "{}");
  std::unique_ptr<Responder> b;
  std::uint64_t sunk = 0;
  bool busy = false;
  std::string pending;
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
      const auto line = read_line(control, pending, 1000);
      if (!line || *line == "quit") _exit(0);
      const json j = json::parse(*line, nullptr, false);
      if (j.is_object() && j.contains("setup")) {
        const auto fault = j.value("fault", std::string());
        busy = j.value("busy", false);
        b.reset();
        auto node = std::make_unique<u::Node>(kMacB);
        adopt(*port, *node, fault);
        b = std::make_unique<Responder>(spec_from(j["setup"]), fault, std::move(node), port.get());
        write_line(control, "{}");
      } else if (j.is_object() && j.contains("report")) {
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
        write_line(control, r.dump());
      }
    }
  }
}

// Two namespaces joined by a veth pair, side B in a child process, each
// side's node on a port of the same kind: AF_XDP, or the AF_PACKET
// fallback.
class WireTransport final : public Transport {
 public:
  ~WireTransport() override {
    if (control_ >= 0) {
      write_line(control_, "quit");
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
  // Makes the namespaces and starts side B; empty, or what went wrong.
  // With `xdp`, AF_XDP where it can run; where it cannot, `notice` says why
  // and the AF_PACKET fallback runs.
  std::string start(bool xdp, std::string& notice) {
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
    const auto hello = read_line(control_, pending_, 5000);
    if (!hello) return "side B did not start";
    const json h = json::parse(*hello, nullptr, false);
    if (h.is_object() && h.contains("error")) return fmt::format("side B: {}", h["error"].get<std::string>());
    return {};
  }
  std::string path() const override {
    if (auto* x = dynamic_cast<const u::XdpPort*>(port_.get())) return fmt::format("{} ({} XDP)", x->kind(), x->mode());
    return std::string(port_->kind());
  }
  std::string setup(const PeerSpec& spec, const std::string& fault) override { return setup(spec, fault, false); }
  std::string setup(const PeerSpec& spec, const std::string& fault, bool busy) {
    if (!write_line(control_, json{{"setup", spec_json(spec)}, {"fault", fault}, {"busy", busy}}.dump()) ||
        !read_line(control_, pending_, 5000))
      return "side B did not answer the set-up";
    return {};
  }
  void adopt(u::Node& a, const std::string& fault) override { unet::adopt(*port_, a, fault); }
  void pump(u::Node& a, int quiet_ms, int max_ms, const std::function<bool()>& done) override {
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
  void inject(u::Bytes f) override {
    if (record) record(f);
    port_->send(f);
    port_->flush();
  }
  json report() override {
    if (!write_line(control_, R"({"report":true})")) return {};
    const auto line = read_line(control_, pending_, 5000);
    return line ? json::parse(*line, nullptr, false) : json{};
  }
  // One message from A's endpoint and its echo back, waiting in poll() or
  // spinning on the port (`busy`): false when none came within `max_ms`.
  bool round_trip(u::Node& a, u::Endpoint& ea, int max_ms, bool busy) {
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
  // A kernel UDP socket in A's namespace, connected to B's echo (7000) or
  // sink (7001).
  int kernel_socket(std::uint16_t port = 7000) {
    InNetns in(ns_a_);
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, "10.78.0.2", &to.sin_addr);
    (void)connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
    return fd;
  }
  std::optional<int> kernel_exchange(int n) override {
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
  u::Port& port() { return *port_; }

 private:
  std::string ns_a_, ns_b_, pending_;
  RunNamespaces namespaces_;
  pid_t child_ = -1;
  int control_ = -1;
  std::unique_ptr<u::Port> port_;
};

// ---- Scenarios: side A's script and judge ----

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

struct Run {
  Run(Transport& transport, conf::Judge& judge, const UnetLiveOptions& options, PeerSpec peer)
      : t(transport), j(judge), opt(options), spec(peer) {}
  Transport& t;
  conf::Judge& j;
  const UnetLiveOptions& opt;
  PeerSpec spec;
  u::Node a{kMacA};
  u::Endpoint* ea = nullptr;
  std::uint32_t ch = 0, ch_other = 0;
  std::string note;  // the scenario's one-line account

  // A's endpoint with channels to B's two endpoints, B set up as `spec`.
  bool start() {
    if (const auto e = t.setup(spec, opt.fault); !e.empty()) {
      note = e;
      return false;
    }
    ea = open_side_a(t, a, spec, opt.fault, ch);
    ch_other = *a.open_channel(*ea, kMacB, static_cast<std::uint16_t>(spec.b + 1));
    if (t.record) a.on_send = t.record;
    return true;
  }
  void send(std::uint32_t channel, std::uint32_t size, std::uint32_t seq, std::uint32_t buffer = 0) {
    fill(ea->buffer(buffer), size, seq);
    ea->send(channel, buffer, size);
    while (ea->poll_sent()) {
    }
  }
  // Until the wire has been quiet for 30 ms: what was sent has come back.
  void pump() { t.pump(a, 30, opt.timeout_ms); }
  // What was queued goes out, with no wait for answers: for a one-way
  // stream, between its batches. (Each batch waiting for a quiet wire, as
  // pump() does, cost 30 ms per 16 messages: 38 s for 20 000.)
  void flush() { t.pump(a, 1, opt.timeout_ms); }
  // Until one more message has been delivered to A's endpoint (an echo), or
  // the wire has been quiet for 30 ms. (Waiting out the quiet after every
  // echo cost 30 ms a message: 75 s for pingpong's 2 500 rounds.)
  void pump_for_echo() {
    const auto before = ea->counters().rx_delivered;
    t.pump(a, 30, opt.timeout_ms, [&] { return ea->counters().rx_delivered > before; });
  }
  json peer() { return t.report(); }
};

std::string counters(const json& r) { return r.dump(); }

// What side B's XDP program did, when it has one.
std::string in_kernel(const json& b) {
  if (!b.contains("xdp")) return {};
  const auto& x = b["xdp"];
  return fmt::format(" (B's XDP program: {} redirected, {} passed to the kernel, {} dropped for an unknown tag, {} for no channel)",
                     x.value("redirected", 0u), x.value("passed", 0u), x.value("unknown_tag", 0u), x.value("no_channel", 0u));
}

void pingpong(Run& r) {
  const std::uint32_t sizes[] = {0, 1, 37, 38, 64, 700, 1472, 1492};
  std::uint32_t ok = 0, n = 0;
  for (std::uint32_t round = 0; round < std::max<std::uint32_t>(r.opt.messages / 8, 1); ++round)
    for (std::uint32_t size : sizes) {
      r.send(r.ch, size, n);
      r.pump_for_echo();
      const auto d = r.ea->poll();
      const bool good = d && d->length == size && intact(r.ea->buffer(d->buffer), size, n);
      if (d) r.ea->give(d->buffer);
      ok += good;
      r.j.check(lc::data, good, 0, fmt::format("message {} ({} octets) echoed intact", n, size),
                d ? fmt::format("{} octets back{}", d->length, good ? "" : ", not as sent") : "no echo");
      ++n;
    }
  r.note = fmt::format("{} of {} messages echoed intact", ok, n);
  if (const auto k = r.t.kernel_exchange(10)) {
    r.j.check(lc::kernel, *k == 10, 0, "10 kernel UDP datagrams echoed across the pair", fmt::format("{} echoed", *k));
    r.note += fmt::format("; {} of 10 kernel UDP datagrams echoed", *k) + in_kernel(r.peer());
  }
}

void stream(Run& r) {
  const std::uint32_t n = r.opt.messages;
  for (std::uint32_t i = 0; i < n; ++i) {
    r.send(r.ch, 1472, i, i % 32);
    if (i % 16 == 15) r.flush();
  }
  r.pump();
  const json b = r.peer();
  const auto delivered = b.value("delivered", 0u), whole = b.value("intact", 0u), disorder = b.value("out_of_order", 1u);
  r.j.check(lc::data, delivered == n && whole == n && disorder == 0, 0,
            fmt::format("{} messages of 1472 octets delivered intact, in order", n),
            fmt::format("{} delivered, {} intact, {} out of order", delivered, whole, disorder));
  r.note = fmt::format("{} of {} delivered intact", whole, n);
}

void spoof(Run& r) {
  const std::byte msg[16] = {};
  const auto put = [&](const std::vector<std::byte>& f, std::uint32_t buffer) {
    std::copy(f.begin(), f.end(), r.ea->buffer(buffer).begin());
    r.ea->send_frame(buffer, static_cast<std::uint32_t>(f.size()));
  };
  put(u::build_frame(kMacA, kMacB, static_cast<std::uint16_t>(r.spec.a + 1), r.spec.b, msg), 1);  // a tag it does not own
  put(u::build_frame(kForeign, kMacB, r.spec.a, r.spec.b, msg), 2);                               // another host's MAC
  put(u::build_frame(kMacA, kMacB, r.spec.a, static_cast<std::uint16_t>(r.spec.b + 5), msg), 3);  // no channel to that peer
  r.send(r.ch, 16, 0);
  r.pump();
  const json b = r.peer();
  const auto spoofed = r.ea->counters().tx_spoofed;
  const auto frames = b.value("rx_frames", 0u), delivered = b.value("delivered", 0u);
  r.j.check(lc::spoof, spoofed == 3 && frames == 1 && delivered == 1, 0,
            "3 forged frames refused at the sender (counted), the 1 honest message alone on the wire",
            fmt::format("{} refused at the sender; the peer saw {} frames and delivered {}", spoofed, frames, delivered));
  r.note = fmt::format("{} forged frames refused, the peer saw {}", spoofed, frames);
}

void unknown_tag(Run& r) {
  const std::byte msg[32] = {};
  const std::uint16_t unknown = static_cast<std::uint16_t>(60000 + r.spec.b % 1000);
  for (int i = 0; i < 5; ++i) r.t.inject(u::build_frame(kMacA, kMacB, r.spec.a, unknown, msg));
  for (int i = 0; i < 5; ++i) r.t.inject(u::build_frame(kMacA, kMacB, static_cast<std::uint16_t>(r.spec.a + 3), r.spec.b, msg));
  r.pump();
  const json b = r.peer();
  const auto unknown_n = b.value("rx_unknown_tag", 0u), stranger = b.value("rx_no_channel", 0u), delivered = b.value("delivered", 1u);
  // The stranger's 5 frames are dropped or (a broken channel check)
  // delivered; any delivery beyond them came from an unknown tag.
  r.j.check(lc::unknown_tag, unknown_n == 5 && delivered + stranger == 5, 0,
            fmt::format("5 frames for tag {} dropped and counted, none delivered", unknown),
            fmt::format("{} counted as unknown, {} delivered", unknown_n, delivered));
  r.j.check(lc::channel, stranger == 5 && delivered == 0, 0, "5 frames from a tag without a channel dropped and counted",
            fmt::format("{} counted, {} delivered", stranger, delivered));
  r.note = fmt::format("{} unknown-tag and {} stranger frames dropped", unknown_n, stranger) + in_kernel(b);
}

void oversize(Run& r) {
  for (std::uint32_t i = 0; i < 4; ++i) r.send(r.ch, 1000, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 4 && b.value("truncated_flagged", 0u) == 4 && b.value("max_length", 0u) == 256 &&
                  b.value("max_message", 0u) == 1000 && b.value("intact", 0u) == 4 && b.value("canary_ok", false);
  r.j.check(lc::oversize, ok, 0,
            "4 messages of 1000 octets into 256-octet buffers: each cut to 256, flagged with 1000, no other buffer written",
            counters(b));
  r.note = fmt::format("{} delivered, {} flagged truncated", b.value("delivered", 0u), b.value("truncated_flagged", 0u));
}

void no_free(Run& r) {
  for (std::uint32_t i = 0; i < 10; ++i) r.send(r.ch, 200, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 2 && b.value("rx_no_free", 0u) == 8 && b.value("canary_ok", false);
  r.j.check(lc::no_free, ok, 0, "2 buffers given: 2 delivered, 8 dropped and counted, no other buffer written", counters(b));
  r.note = fmt::format("{} delivered, {} dropped for no free buffer", b.value("delivered", 0u), b.value("rx_no_free", 0u));
}

void teardown(Run& r) {
  for (std::uint32_t i = 0; i < 20; ++i) {
    r.send(r.ch, 100, i, i);
    r.pump();
  }
  for (std::uint32_t i = 0; i < 3; ++i) r.send(r.ch_other, 100, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 10 && b.value("rx_unknown_tag", 0u) == 10 && b.value("other_delivered", 0u) == 3;
  r.j.check(lc::teardown, ok, 0,
            "torn down after 10 messages: 10 delivered, the next 10 counted as for an unknown tag, the node's other "
            "endpoint still served (3 delivered)",
            counters(b));
  r.note = fmt::format("{} delivered before the teardown, {} after it counted", b.value("delivered", 0u), b.value("rx_unknown_tag", 0u));
}

struct ScenarioDef {
  LiveScenarioInfo info;
  PeerSpec spec;
  void (*run)(Run&);
};

const std::vector<ScenarioDef>& defs() {
  static const std::vector<ScenarioDef> d{
      {{"pingpong", "messages of 0 to 1492 octets echoed; a kernel UDP exchange across the same pair (xdp and packet paths)"},
       {.behaviour = Behaviour::echo},
       pingpong},
      {{"stream", "1472-octet messages one way, sequence numbers checked"}, {.behaviour = Behaviour::sink}, stream},
      {{"spoof", "frames with a tag or MAC the endpoint does not own, or to a peer without a channel"}, {.behaviour = Behaviour::sink}, spoof},
      {{"unknown-tag", "frames put on the wire raw for an unknown tag and from a stranger"}, {.behaviour = Behaviour::sink}, unknown_tag},
      {{"oversize", "1000-octet messages into 256-octet buffers"}, {.behaviour = Behaviour::hold, .buffer_size = 256, .give = 4}, oversize},
      {{"no-free", "ten messages, two free buffers"}, {.behaviour = Behaviour::hold, .give = 2}, no_free},
      {{"teardown", "the receiving endpoint torn down mid-stream"}, {.behaviour = Behaviour::teardown, .teardown_after = 10}, teardown},
  };
  return d;
}

}  // namespace

const std::vector<LiveScenarioInfo>& live_scenarios() {
  static const std::vector<LiveScenarioInfo> v = [] {
    std::vector<LiveScenarioInfo> x;
    for (const auto& d : defs()) x.push_back(d.info);
    return x;
  }();
  return v;
}

conf::InputResult unet_live(const UnetLiveOptions& opt, std::ostream& log) {
  conf::InputResult in;
  in.path = fmt::format("unet-live:{}", opt.path);
  in.linktype = "unet-live";
  std::vector<const ScenarioDef*> chosen;
  for (const auto& d : defs())
    if (opt.scenarios.empty() || std::find(opt.scenarios.begin(), opt.scenarios.end(), d.info.name) != opt.scenarios.end())
      chosen.push_back(&d);
  for (const auto& n : opt.scenarios)
    if (std::none_of(defs().begin(), defs().end(), [&](const ScenarioDef& d) { return d.info.name == n; })) {
      in.error = fmt::format("no U-Net scenario named '{}' (rdmaconf unet live --list shows them)", n);
      return in;
    }
  if (!opt.fault.empty() && opt.fault != "forge" && opt.fault != "ignore-channels" && opt.fault != "overflow") {
    in.error = fmt::format("no fault named '{}' (forge, ignore-channels or overflow)", opt.fault);
    return in;
  }
  std::unique_ptr<Transport> t;
  if (opt.path == "memory") {
    t = std::make_unique<MemoryTransport>();
  } else if (opt.path == "packet" || opt.path == "xdp") {
    auto w = std::make_unique<WireTransport>();
    std::string notice;
    if (const auto e = w->start(opt.path == "xdp", notice); !e.empty()) {
      in.error = e;
      return in;
    }
    if (!notice.empty()) {
      log << "note: " << notice << "\n";
      in.warnings.push_back(notice);
      ++in.warnings_total;
    }
    t = std::move(w);
  } else {
    in.error = fmt::format("no data path named '{}' (memory, packet or xdp)", opt.path);
    return in;
  }
  log << fmt::format("data path: {}\n", t->path());
  std::unique_ptr<captures::io::PcapWriter> pcap;
  if (!opt.pcap.empty()) {
    pcap = std::make_unique<captures::io::PcapWriter>(opt.pcap);
    t->record = [&](u::Bytes f) {
      pcap->set_time_us(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
      pcap->frame(f);
    };
  }
  std::uint64_t order = 0;
  for (const auto* d : chosen) {
    conf::Judge j(opt.cases, "unet");
    Run r(*t, j, opt, d->spec);
    // Each scenario its own tags, so that a recording holds one channel per scenario and pair.
    r.spec.a = static_cast<std::uint16_t>(1000 + 20 * order + 7);
    r.spec.b = static_cast<std::uint16_t>(1000 + 20 * order + 9);
    conf::ScopeResult s;
    s.family = conformance::unet::kLiveFamily;
    s.order = order;
    s.id = fmt::format("unet-live/{}", order);
    s.label = fmt::format("{}: {}", d->info.name, d->info.summary);
    if (r.start()) d->run(r);
    s.params = conformance::params_text(
        {{"scenario", d->info.name}, {"path", t->path()}, {"tag_a", r.spec.a}, {"tag_b", r.spec.b}, {"account", r.note}});
    s.outcomes = j.take();
    for (const auto& o : s.outcomes) in.verdicts.add(o.tally.verdict());
    log << fmt::format("{:<12} {}\n", d->info.name, r.note);
    in.scopes.push_back(std::move(s));
    ++order;
  }
  return in;
}

BenchResult unet_bench(const BenchOptions& opt) {
  BenchResult res;
  WireTransport t;
  if (const auto e = t.start(opt.xdp, res.notice); !e.empty()) {
    res.error = e;
    return res;
  }
  res.path = t.path();
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const int echo = t.kernel_socket(7000), sink = t.kernel_socket(7001);
  std::vector<std::byte> msg(std::max(opt.latency_size, opt.stream_size)), back(2048);
  std::uint16_t tag = 100;
  for (const bool busy : {false, true}) {
    auto& m = busy ? res.busy : res.interrupt;
    for (int round = 0; round < opt.rounds && res.error.empty(); ++round) {
      // U-Net round trips: B echoes.
      PeerSpec spec;
      spec.behaviour = Behaviour::echo;
      spec.a = tag++;
      spec.b = tag++;
      ++tag;  // B's second endpoint
      if (const auto e = t.setup(spec, "", busy); !e.empty()) {
        res.error = e;
        break;
      }
      {
        u::Node a(kMacA);
        std::uint32_t ch = 0;
        auto* ea = open_side_a(t, a, spec, "", ch);
        fill(ea->buffer(0), opt.latency_size, 1);
        std::vector<double> rtt;
        rtt.reserve(opt.latency_count);
        for (std::uint32_t i = 0; i < opt.latency_count; ++i) {
          const auto t0 = Clock::now();
          ea->send(ch, 0, opt.latency_size);
          if (!t.round_trip(a, *ea, 1000, busy)) {
            res.error = fmt::format("U-Net message {} of round {} got no echo", i, round + 1);
            break;
          }
          while (ea->poll_sent()) {
          }
          rtt.push_back(seconds(t0) * 1e6);
        }
        m.unet_us.push_back(median(rtt));
      }
      // Kernel UDP round trips: the same process echoes.
      std::vector<double> rtt;
      for (std::uint32_t i = 0; i < opt.latency_count && res.error.empty(); ++i) {
        const auto t0 = Clock::now();
        (void)::send(echo, msg.data(), opt.latency_size, 0);
        ssize_t n = -1;
        if (busy) {
          const auto until = t0 + std::chrono::seconds(1);
          while ((n = recv(echo, back.data(), back.size(), MSG_DONTWAIT)) < 0 && Clock::now() < until) {
          }
        } else {
          pollfd p{echo, POLLIN, 0};
          if (poll(&p, 1, 1000) > 0) n = recv(echo, back.data(), back.size(), 0);
        }
        if (n != static_cast<ssize_t>(opt.latency_size)) {
          res.error = fmt::format("kernel UDP datagram {} of round {} got no echo", i, round + 1);
          break;
        }
        rtt.push_back(seconds(t0) * 1e6);
      }
      m.kernel_us.push_back(median(rtt));
      if (!res.error.empty()) break;

      // U-Net streaming: B sinks (and checks every message).
      spec.behaviour = Behaviour::sink;
      spec.a = tag++;
      spec.b = tag++;
      ++tag;
      if (const auto e = t.setup(spec, "", busy); !e.empty()) {
        res.error = e;
        break;
      }
      {
        u::Node a(kMacA);
        std::uint32_t ch = 0;
        auto* ea = open_side_a(t, a, spec, "", ch);
        a.attach(&t.port());
        for (std::uint32_t b = 0; b < 32; ++b) fill(ea->buffer(b), opt.stream_size, b);
        const auto t0 = Clock::now();
        for (std::uint32_t i = 0; i < opt.stream_count; ++i) {
          ea->send(ch, i % 32, opt.stream_size);
          if (i % 32 == 31 || i + 1 == opt.stream_count) {
            a.transmit();
            while (ea->poll_sent()) {
            }
          }
        }
        const json b = t.report();
        const double s = seconds(t0);
        const auto got = b.value("delivered", std::uint64_t{0});
        m.unet_mps.push_back(static_cast<double>(got) / s);
        m.unet_loss.push_back(1.0 - static_cast<double>(got) / opt.stream_count);
      }
      // Kernel UDP streaming to B's sink.
      const auto before = t.report().value("udp_sunk", std::uint64_t{0});
      const auto t0 = Clock::now();
      for (std::uint32_t i = 0; i < opt.stream_count; ++i) (void)::send(sink, msg.data(), opt.stream_size, 0);
      const auto got = t.report().value("udp_sunk", std::uint64_t{0}) - before;
      const double s = seconds(t0);
      m.kernel_mps.push_back(static_cast<double>(got) / s);
      m.kernel_loss.push_back(1.0 - static_cast<double>(got) / opt.stream_count);
    }
  }
  close(echo);
  close(sink);
  return res;
}

}  // namespace rdmaconf::interop::unet

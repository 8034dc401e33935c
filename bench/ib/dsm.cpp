// Benchmark: the kernel InfiniBand DSM seed's experiment over our RoCEv2
// engine (Liss, Birk and Schuster: short asynchronous messages round trip
// in 45 us with completions polled, 60 us handled in interrupt context and
// 90 us in process context, 1 : 1.33 : 2).
//
//   rdmaconf-bench-dsm [--rounds R] [--messages N] [--faults F] [--json FILE]
//
// Two nodes on loopback, each a queue pair (RC) on its own UDP link and its
// own thread, as two hosts' kernels would be. How a node handles its
// completions is the mode, the same on both nodes:
//
//   polling    its thread spins on the socket and the completion queues;
//   event      its thread sleeps in poll() on the socket and handles the
//              completion when the kernel wakes it (a wake-up per message,
//              the analogue of the seed's interrupt context);
//   hand-off   as event, but the completion goes to a second thread (the
//              seed's process context), which wakes, does the work and posts
//              the answer itself.
//
// Round trip: 64-octet Sends bounced between the nodes, one in flight.
// DSM page faults: the home node holds 256 pages of 4 KiB; a fault on the
// other node sends a page request (a Send), the home records the copy in
// its directory and grants it (a Send), and the faulting node fetches the
// page by RDMA Read; every fourth grant the home also invalidates a page the
// other holds (a Send, no answer), and the faulting node keeps 64 pages at
// most (the oldest dropped first). A node keeps
// at most 16 work requests in flight on its queue pair: a post beyond that
// waits in the node's own queue until completions free room, and send
// completions are only reclaimed then, in a batch (the engine signals every
// work request; nothing waits on one). A fault's latency runs from its
// request to its Read's completion; faults are measured one at a time (the
// latency alone) and four at once (sharing the queue pair).
//
// Each round measures the three modes one after the other, the order
// rotating from round to round; figures are medians over the rounds with
// the quartiles in the JSON.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engines/ib/qp.hpp"
#include "engines/ib/udp_link.hpp"

using namespace rdmaconf::engine;
using namespace rdmaconf::engine::ib;
using Clock = std::chrono::steady_clock;

namespace {

enum class Mode { polling, event, handoff };
constexpr std::array kModes = {Mode::polling, Mode::event, Mode::handoff};
const char* name(Mode m) { return m == Mode::polling ? "polling" : m == Mode::event ? "event" : "hand-off"; }

constexpr std::size_t kMsg = 64, kRecvs = 64, kPage = 4096, kPages = 256, kWindow = 16;
enum : std::uint8_t { kPing = 1, kRequest = 2, kGrant = 3, kInvalidate = 4 };

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count());
}

// One node: a queue pair on its link, receive buffers, a message buffer per
// send slot, its pages (the home's are read by the other node; the other's
// are the frames faulted pages land in), a bounded send window, and the
// thread (two in hand-off) that handles its completions in the run's mode.
class Node {
 public:
  // `handle` gets each received message and each completed RDMA Read
  // (wr_id >= kReadBase), on the handling thread, and may post.
  using Handler = std::function<void(Node&, const Completion&, const std::byte* msg)>;
  static constexpr std::uint64_t kReadBase = 1u << 20;

  Node(std::uint32_t qpn, std::uint32_t dest, std::string_view local, std::string_view peer)
      : rbuf_(kRecvs * kMsg), sbuf_(1024 * kMsg), pages_(kPages * kPage), qp_(pd_, scq_, rcq_, config(qpn, dest)) {
    rstag_ = pd_.register_mr(rbuf_, kLocalWrite);
    sstag_ = pd_.register_mr(sbuf_, 0);
    pstag_ = pd_.register_mr(pages_, kLocalWrite | kRemoteRead);
    for (std::uint64_t i = 0; i < kRecvs; ++i) qp_.post_recv({i, {rstag_, i * kMsg, kMsg}});
    std::string err;
    if (!link_.open(local, err) || !link_.set_peer(peer, err)) throw std::runtime_error(err);
  }
  std::uint32_t page_stag() const { return pstag_; }
  std::byte* page(std::size_t k) { return pages_.data() + k * kPage; }

  // Posts a message (type, a and b fields) or an RDMA Read of `page` into
  // frame `frame`; queued while the window is full. (On the handling thread.)
  void send(std::uint8_t type, std::uint64_t a, std::uint64_t b = 0) {
    Pending p{};
    p.msg[0] = std::byte{type};
    std::memcpy(p.msg.data() + 8, &a, 8);
    std::memcpy(p.msg.data() + 16, &b, 8);
    waiting_.push_back(p);
    drain_waiting();
  }
  void read_page(std::uint32_t remote_stag, std::size_t page, std::size_t frame, std::uint64_t tag) {
    Pending p{};
    p.read = true;
    p.remote_stag = remote_stag;
    p.page = page;
    p.frame = frame;
    p.tag = tag;
    waiting_.push_back(p);
    drain_waiting();
  }

  // Has the node's own loop call `start` once (from its thread, as its
  // handler would): how a measurement begins.
  void kick(std::function<void(Node&)> start) {
    std::lock_guard lk(kick_mu_);
    start_ = std::move(start);
    kicked_ = true;
  }

  // Runs the node until `stop` is set: the network loop on this thread and,
  // in hand-off mode, the handling thread beside it.
  void run(Mode mode, const Handler& handle, const std::atomic<bool>& stop) {
    mode_ = mode;
    handle_ = handle;
    std::jthread worker;
    if (mode == Mode::handoff) worker = std::jthread([&] { work(stop); });
    while (!stop.load(std::memory_order_relaxed)) {
      {
        std::unique_lock lk(mu_, std::defer_lock);
        if (mode == Mode::handoff) lk.lock();
        if (kicked_.load(std::memory_order_relaxed)) {
          std::lock_guard k(kick_mu_);
          kicked_ = false;
          start_(*this);
        }
        qp_.tick(now_ms());
        const std::size_t got = link_.poll(qp_);
        take_completions();
        link_.flush(qp_);
        if (got || mode == Mode::polling) continue;
      }
      // Asleep until a datagram comes (or the QP's timer is due).
      pollfd p{link_.fd(), POLLIN, 0};
      int wait = kicked_ ? 0 : 20;
      if (auto t = qp_.next_timer(now_ms())) wait = static_cast<int>(std::min<std::uint64_t>(*t, 20));
      ::poll(&p, 1, wait);
    }
    if (worker.joinable()) {
      {
        std::lock_guard lk(mu_);
        quit_ = true;
      }
      cv_.notify_one();
    }
  }

 private:
  struct Pending {
    bool read = false;
    std::array<std::byte, kMsg> msg{};
    std::uint32_t remote_stag = 0;
    std::size_t page = 0, frame = 0;
    std::uint64_t tag = 0;
  };
  struct Work {
    Completion c;
    std::array<std::byte, kMsg> msg{};
  };

  static QpConfig config(std::uint32_t qpn, std::uint32_t dest) {
    QpConfig c;
    c.qpn = qpn;
    c.dest_qpn = dest;
    c.ack_every = 1;  // every request acknowledged at once, as an adapter does
    return c;
  }

  void drain_waiting() {
    while (!waiting_.empty()) {
      if (inflight_ >= kWindow) {  // reclaim what has completed, in one batch
        while (auto c = scq_.poll()) {
          --inflight_;
          if (c->op == WcOpcode::rdma_read) done_reads_.push_back(*c);
        }
        if (inflight_ >= kWindow) return;
      }
      const Pending& p = waiting_.front();
      SendWr w;
      if (p.read) {
        w = {kReadBase + p.tag, WrOpcode::read, {pstag_, p.frame * kPage, kPage}};
        w.remote_stag = p.remote_stag;
        w.remote_to = p.page * kPage;
      } else {
        const std::size_t slot = next_slot_++ % 1024;
        std::memcpy(sbuf_.data() + slot * kMsg, p.msg.data(), kMsg);
        w = {slot, WrOpcode::send, {sstag_, slot * kMsg, kMsg}};
      }
      if (!qp_.post_send(w)) throw std::runtime_error("post_send refused: " + qp_.error());
      ++inflight_;
      waiting_.pop_front();
    }
  }

  // Received messages and completed Reads, to the handler in this mode.
  void take_completions() {
    // Read completions matter at once (a fault ends there); Send
    // completions only free window room.
    std::vector<Completion> reads;
    reads.swap(done_reads_);
    for (std::size_t n = scq_.size(); n > 0; --n) {
      auto c = scq_.poll();
      if (c->op == WcOpcode::rdma_read) {
        --inflight_;
        reads.push_back(*c);
      } else {
        scq_.push(*c);  // (left for the window's batch)
      }
    }
    for (const auto& c : reads) dispatch(c, nullptr);
    while (auto c = rcq_.poll()) {
      if (c->status != WcStatus::success)
        throw std::runtime_error(fmt::format("a receive completed in error (status {}): {}", static_cast<int>(c->status), qp_.error()));
      const std::byte* msg = rbuf_.data() + c->wr_id * kMsg;
      dispatch(*c, msg);
      qp_.post_recv({c->wr_id, {rstag_, c->wr_id * kMsg, kMsg}});
    }
    drain_waiting();
  }

  void dispatch(const Completion& c, const std::byte* msg) {
    if (mode_ != Mode::handoff) return handle_(*this, c, msg);
    Work w{c, {}};
    if (msg) std::memcpy(w.msg.data(), msg, kMsg);
    queue_.push_back(w);  // (mu_ held by the network loop)
    cv_.notify_one();
  }

  // Hand-off mode's second thread: wakes for each piece of work, handles it
  // and posts (under the queue pair's lock), then sends what it posted.
  void work(const std::atomic<bool>& stop) {
    std::unique_lock lk(mu_);
    while (!stop.load() && !quit_) {
      cv_.wait(lk, [&] { return !queue_.empty() || quit_ || stop.load(); });
      while (!queue_.empty()) {
        const Work w = queue_.front();
        queue_.pop_front();
        handle_(*this, w.c, w.c.op == WcOpcode::rdma_read ? nullptr : w.msg.data());
      }
      link_.flush(qp_);
    }
  }

  ProtectionDomain pd_;
  CompletionQueue scq_, rcq_;
  std::vector<std::byte> rbuf_, sbuf_, pages_;
  QueuePair qp_;
  UdpLink link_;
  std::uint32_t rstag_ = 0, sstag_ = 0, pstag_ = 0;
  std::deque<Pending> waiting_;
  std::vector<Completion> done_reads_;
  std::size_t inflight_ = 0, next_slot_ = 0;
  Mode mode_ = Mode::polling;
  Handler handle_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;
  bool quit_ = false;
  std::mutex kick_mu_;
  std::atomic<bool> kicked_{false};
  std::function<void(Node&)> start_;
};

std::uint64_t field(const std::byte* msg, int at) {
  std::uint64_t v;
  std::memcpy(&v, msg + at, 8);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Figures {
  double rtt_us = 0, fault_us = 0;
};

// One measurement of a mode: `messages` round trips, then `faults` faults.
int timeout_s = 60;

Figures measure(Mode mode, std::uint64_t messages, std::uint64_t faults, unsigned concurrent, std::uint16_t port,
                std::uint32_t seed) {
  Node home(0x21, 0x22, fmt::format("127.0.0.1:{}", port), fmt::format("127.0.0.2:{}", port));
  Node other(0x22, 0x21, fmt::format("127.0.0.2:{}", port), fmt::format("127.0.0.1:{}", port));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bounced{0}, faulted{0};
  Clock::time_point t0, t_end;
  std::vector<double> fault_us;
  fault_us.reserve(faults);
  std::mutex result_mu;

  // The home: echoes pings; grants page requests (recording the copy) and
  // now and then invalidates a page the other node holds.
  std::vector<bool> copyset(kPages, false);
  std::uint64_t grants = 0;
  auto at_home = [&](Node& n, const Completion&, const std::byte* msg) {
    if (!msg) return;
    const auto type = static_cast<std::uint8_t>(msg[0]);
    if (type == kPing) return n.send(kPing, field(msg, 8));
    if (type == kRequest) {
      const std::uint64_t p = field(msg, 8);
      copyset[p] = true;
      n.send(kGrant, p, field(msg, 16));
      if (++grants % 4 == 0)
        for (std::size_t k = (p + 1) % kPages; k != p; k = (k + 1) % kPages)
          if (copyset[k]) {
            copyset[k] = false;
            n.send(kInvalidate, k);
            break;
          }
    }
  };

  // The other node: bounces pings until `messages`, then runs the faults,
  // four at a time, on pages it does not hold.
  std::mt19937 rng(seed);
  // It keeps at most 64 pages (its working set): a fault beyond drops the
  // oldest copy it holds, as a page cache of that size would.
  std::vector<bool> held(kPages, false);
  std::deque<std::size_t> resident;
  std::vector<Clock::time_point> started(concurrent);
  std::uint64_t issued = 0;
  auto fault = [&](Node& n, std::uint64_t slot) {
    while (resident.size() >= 64) {
      held[resident.front()] = false;
      resident.pop_front();
    }
    std::size_t p;
    do p = rng() % kPages;
    while (held[p]);
    held[p] = true;  // (the frame it will land in is its own)
    resident.push_back(p);
    started[slot] = Clock::now();
    ++issued;
    n.send(kRequest, p, slot);
  };
  auto at_other = [&](Node& n, const Completion& c, const std::byte* msg) {
    if (!msg) {  // a page arrived: its fault is over
      const std::uint64_t slot = c.wr_id - Node::kReadBase;
      {
        std::lock_guard lk(result_mu);
        fault_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - started[slot]).count());
      }
      if (faulted.fetch_add(1) + 1 >= faults) stop = true;
      else if (issued < faults) fault(n, slot);
      return;
    }
    const auto type = static_cast<std::uint8_t>(msg[0]);
    if (type == kPing) {
      if (bounced.fetch_add(1) + 1 < messages) return n.send(kPing, 0);
      t_end = Clock::now();
      for (std::uint64_t s = 0; s < concurrent && s < faults; ++s) fault(n, s);
      if (faults == 0) stop = true;
    } else if (type == kGrant) {
      n.read_page(home.page_stag(), field(msg, 8), field(msg, 8), field(msg, 16));
    } else if (type == kInvalidate) {
      const std::uint64_t p = field(msg, 8);
      held[p] = false;
      std::erase(resident, p);
    }
  };

  std::string failure;
  auto guarded = [&](Node& n, const Node::Handler& handle) {
    try {
      n.run(mode, handle, stop);
    } catch (const std::exception& e) {
      std::lock_guard lk(result_mu);
      failure = e.what();
      stop = true;
    }
  };
  std::jthread h([&] { guarded(home, at_home); });
  std::jthread o([&] { guarded(other, at_other); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both loops running
  // The home sends the first ping from its own loop; the clock starts there.
  home.kick([&](Node& n) {
    t0 = Clock::now();
    n.send(kPing, 0);
  });
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (!stop && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool finished = stop.load();
  stop = true;
  h.join();
  o.join();
  if (!failure.empty()) throw std::runtime_error(fmt::format("{}: {}", name(mode), failure));
  if (!finished)
    throw std::runtime_error(fmt::format("{}: the exchange did not finish within 60 s ({} round trips, {} faults done)", name(mode),
                                         bounced.load(), faulted.load()));
  Figures f;
  f.rtt_us = std::chrono::duration<double, std::micro>(t_end - t0).count() / static_cast<double>(messages);
  f.fault_us = median(fault_us);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-dsm: the DSM seed's round trips and page faults over the RoCEv2 engine, by completion handling"};
  int rounds = 11;
  std::uint64_t messages = 20000, faults = 4000;
  std::uint16_t port = 47911;
  std::string json_out;
  app.add_option("--rounds", rounds, "rounds, each measuring every mode (medians reported)")->check(CLI::Range(1, 200));
  app.add_option("--messages", messages, "round trips per mode and round")->check(CLI::Range(10, 10000000));
  app.add_option("--faults", faults, "page faults per mode and round")->check(CLI::Range(0, 10000000));
  app.add_option("--port", port, "the UDP port both nodes use (on 127.0.0.1 and 127.0.0.2)");
  app.add_option("--json", json_out, "write the figures as JSON");
  app.add_option("--timeout", timeout_s, "seconds a mode may take before the run fails");
  CLI11_PARSE(app, argc, argv);

  std::array<std::vector<double>, 3> rtt, fault, fault4;
  try {
    for (int r = 0; r < rounds; ++r)
      for (std::size_t k = 0; k < kModes.size(); ++k) {
        const std::size_t m = (k + static_cast<std::size_t>(r)) % kModes.size();  // the order rotates
        const auto seed = static_cast<std::uint32_t>(r * 7 + m);
        const Figures f = measure(kModes[m], messages, faults, 1, port, seed);
        rtt[m].push_back(f.rtt_us);
        fault[m].push_back(f.fault_us);
        // Four faults at once, after a few round trips to start the exchange.
        fault4[m].push_back(measure(kModes[m], 10, faults, 4, port, seed).fault_us);
      }
  } catch (const std::exception& e) {
    std::cerr << "rdmaconf-bench-dsm: " << e.what() << "\n";
    return 1;
  }
  nlohmann::json out = {{"rounds", rounds}, {"messages", messages}, {"faults", faults}, {"modes", nlohmann::json::object()}};
  std::cout << fmt::format("medians of {} rounds; round trip of a 64-octet Send, page fault (request, grant, 4 KiB RDMA Read)\n",
                           rounds);
  const double base = median(rtt[0]);
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    std::cout << fmt::format("{:<9} round trip {:>8.2f} us ({:.2f}x polling)   page fault {:>8.2f} us, four at once {:>8.2f} us\n",
                             name(kModes[m]), median(rtt[m]), median(rtt[m]) / base, median(fault[m]), median(fault4[m]));
    out["modes"][name(kModes[m])] = {{"rtt_us", rtt[m]}, {"fault_us", fault[m]}, {"fault4_us", fault4[m]}};
  }
  if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << "\n";
  return 0;
}

// Our engine against perftest started with -R (rdma_cm over iWARP), as its client and as its server.
#include "captures/io/pcap_tap.hpp"
#include "interop/iwarp/session.hpp"

#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>

namespace rdmaconf::interop::iwarp {

using namespace detail;

// ------------------------------------------------- perftest -R (rdma_cm)

namespace {

// perftest's destination record as it crosses rdma_cm connections: its C
// structure with every field in network order (docs/lab.md).
constexpr std::size_t kPerftestRecord = 56;
struct PerftestRecord {
  std::uint32_t lid = 0, out_reads = 0, qpn = 0, psn = 0, rkey = 0;
  std::uint64_t vaddr = 0;
  std::array<std::byte, 16> gid{};
};
std::array<std::byte, kPerftestRecord> encode_record(const PerftestRecord& d) {
  std::array<std::byte, kPerftestRecord> b{};
  protocols::put_be32(b, 0, d.lid);
  protocols::put_be32(b, 4, d.out_reads);
  protocols::put_be32(b, 8, d.qpn);
  protocols::put_be32(b, 12, d.psn);
  protocols::put_be32(b, 16, d.rkey);
  protocols::put_be64(b, 24, d.vaddr);
  std::copy(d.gid.begin(), d.gid.end(), b.begin() + 32);
  return b;
}
// The messages of the setup steps, the same from both sides: our version,
// page and cache-line size, the MTU digit (1024) and a record of zeros.
struct PerftestSetup {
  std::array<std::byte, 16> version{};
  std::array<std::byte, 4> page{}, line{};
  std::array<std::byte, 2> mtu{std::byte{'3'}, std::byte{0}};
  std::array<std::byte, kPerftestRecord> zeros{};
  PerftestSetup() {
    std::memcpy(version.data(), "6.06", 4);
    protocols::put_be32(page, 0, 4096);
    protocols::put_be32(line, 0, 64);
  }
};
// A NUL-padded text field (the version) as a string.
std::string c_text(const std::vector<std::byte>& b) {
  const char* p = reinterpret_cast<const char*>(b.data());
  return std::string(p, strnlen(p, b.size()));
}

// Our record: a buffer of the test connection with its STag and address.
struct PerftestBuffer {
  std::uint32_t stag = 0;
  std::array<std::byte, kPerftestRecord> record{};
};
PerftestBuffer perftest_buffer(Session& test, std::vector<std::byte>& buf, unsigned access, unsigned out_reads) {
  fill_pattern(buf, 18515);
  PerftestBuffer b;
  const std::uint64_t to = random_to();
  b.stag = test.pd.register_mr(buf, access, to);
  PerftestRecord mine;
  mine.out_reads = out_reads;
  mine.qpn = 2;
  mine.psn = static_cast<std::uint32_t>(Clock::now().time_since_epoch().count()) & 0xffffff;
  mine.rkey = b.stag;
  mine.vaddr = to;
  b.record = encode_record(mine);
  return b;
}

PerftestRecord decode_record(Bytes b) {
  PerftestRecord d;
  d.lid = protocols::be32(b, 0);
  d.out_reads = protocols::be32(b, 4);
  d.qpn = protocols::be32(b, 8);
  d.psn = protocols::be32(b, 12);
  d.rkey = protocols::be32(b, 16);
  d.vaddr = protocols::be64(b, 24);
  std::copy(b.begin() + 32, b.begin() + 48, d.gid.begin());
  return d;
}

}  // namespace

RunResult run_perftest_client(std::string_view peer, std::string_view program, const RunOptions& o) {
  RunResult r;
  r.scenario = std::string(program);
  const bool write = program == "ib_write_bw", read = program == "ib_read_bw", send = program == "ib_send_bw";
  if (!write && !read && !send) {
    r.message = fmt::format("perftest program '{}' over iWARP: ib_write_bw, ib_read_bw or ib_send_bw (their -R servers)",
                            program);
    return r;
  }
  const std::uint32_t size = o.size ? o.size : 65536;
  const std::uint64_t iters = o.iterations ? o.iterations : 1000;
  QpConfig cfg = o.qp;
  cfg.initiator = true;
  if (const std::string bad = Device().validate(cfg); !bad.empty()) {
    r.message = fmt::format("configuration not supported: {}", bad);
    return r;
  }
  // Each connection: TCP, MPA as rdma_cm does it over iWARP (no private
  // data beyond the enhanced header), receive slots posted.
  auto open = [&](std::string_view what, const std::string& pcap) -> std::unique_ptr<Session> {
    std::string err;
    // The server listens for the test connection only once it has set it
    // up: like perftest's own client, try again while it refuses.
    const auto until = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    Fd fd = tcp_connect(peer, o.timeout_ms, err);
    while (!fd && err.find("refused") != std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      fd = tcp_connect(peer, o.timeout_ms, err);
    }
    if (!fd) {
      r.message = fmt::format("{}: {}", what, err);
      return nullptr;
    }
    auto s = std::make_unique<Session>(cfg, std::move(fd), o.wait, o.timeout_ms);
    if (!pcap.empty() && !s->link->record(captures::io::pcap_tap(pcap, err))) {
      r.message = err;
      return nullptr;
    }
    s->setup_slots(kMinSlot, kSlots);
    s->qp.connect();
    if (!s->wait([&] { return s->qp.state() == QpState::connected; })) {
      r.message = s->why(fmt::format("{}: MPA setup", what));
      return nullptr;
    }
    return s;
  };
  // One step of perftest's exchange on the first connection: we send, then
  // take the server's message of the same size.
  std::unique_ptr<Session> ctl = open("the exchange connection", o.pcap);
  if (!ctl) return r;
  r.negotiated = ctl->negotiated();
  std::string version;
  auto step = [&](Bytes mine, std::string_view what) -> std::optional<std::vector<std::byte>> {
    if (!ctl->send(mine)) return r.message = ctl->why(fmt::format("perftest {}: sending", what)), std::nullopt;
    auto m = ctl->receive();
    if (!m) return r.message = ctl->why(fmt::format("perftest {}: waiting for the server's", what)), std::nullopt;
    if (m->size() != mine.size()) {
      r.message = fmt::format("perftest {}: the server sent {} octets, {} expected", what, m->size(), mine.size());
      return std::nullopt;
    }
    return m;
  };
  const PerftestSetup set;
  const auto& zeros = set.zeros;
  const auto rv = step(set.version, "version");
  if (!rv) return r;
  version = c_text(*rv);
  if (!step(set.page, "page size") || !step(set.line, "cache line size") || !step(set.mtu, "MTU") ||
      !step(zeros, "first record"))
    return r;
  // The test connection, then the records: one more of zeros, then ours
  // (the first carries the keys, the others are barriers).
  std::unique_ptr<Session> test = open("the test connection", o.pcap.empty() ? "" : o.pcap + ".test.pcap");
  if (!test) return r;
  const PerftestBuffer pb = perftest_buffer(*test, test->buffer(size), kLocalWrite, cfg.ord);
  const std::uint32_t stag = pb.stag;
  const auto& rec = pb.record;
  if (!step(zeros, "second record")) return r;
  const auto keys = step(rec, "keys");
  if (!keys) return r;
  const PerftestRecord theirs = decode_record(*keys);
  const int barriers = send ? 3 : 2;  // ib_send_bw: one more once the server's receives are posted
  for (int i = 0; i < barriers; ++i)
    if (!step(rec, "barrier")) return r;

  std::uint64_t posted = 0;
  const unsigned window = read ? std::max(1u, std::min<unsigned>(o.window, std::max<unsigned>(1, theirs.out_reads))) : o.window;
  const auto t0 = Clock::now();
  while (test->completed < iters) {
    while (posted < iters && test->outstanding < window) {
      SendWr w{kDataBase + posted++, write ? WrOpcode::write : read ? WrOpcode::read : WrOpcode::send, {stag, 0, size}};
      w.remote_stag = theirs.rkey;
      w.remote_to = theirs.vaddr;
      test->post(w);
    }
    const std::uint64_t target = test->completed + 1;
    if (!test->wait([&] { return test->completed >= target; })) {
      r.message = test->why(write ? "RDMA Write" : read ? "RDMA Read" : "Send");
      return r;
    }
  }
  // A Send or Write completes once it is framed; the test connection is
  // only driven here, so let it put everything on the wire before the
  // exchange goes on (the ib_send_bw server answers the next barrier only
  // once every Send has arrived).
  if (!test->wait([&] { return test->qp.output().empty(); })) {
    r.message = test->why("sending the last of the test's data");
    return r;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.size = size;
  r.iterations = iters;
  r.bytes = iters * size;
  // After the test: a barrier, the report (not after a one-way Send test), a barrier.
  if (!step(rec, "barrier after the test")) return r;
  if (!send) {
    const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
    const double mpps = r.seconds > 0 ? static_cast<double>(iters) / r.seconds / 1e6 : 0;
    for (const std::uint64_t x : {std::uint64_t{size}, iters, std::bit_cast<std::uint64_t>(gbps),
                                  std::bit_cast<std::uint64_t>(gbps), std::bit_cast<std::uint64_t>(mpps)}) {
      std::array<std::byte, 8> b{};
      protocols::put_be64(b, 0, x);
      if (!step(b, "bandwidth report")) return r;
    }
    if (!step(rec, "closing barrier")) return r;
  }
  test->link->close(2000);
  ctl->link->close(2000);
  r.ok = true;
  r.message = fmt::format("{} {}s of {} octets completed against perftest {} -R (server QPN {}, R_Key {:#x})", iters,
                          write ? "RDMA Write" : read ? "RDMA Read" : "Send", size, version, theirs.qpn, theirs.rkey);
  return r;
}

namespace {

// perftest -R makes two connections, the exchange and then the test, and
// nothing on the second says whose it is: the acceptor gives a connection
// to the earliest session that expects one from the connection's host, and
// starts a session with it otherwise. (Two clients of one host that both
// reach that moment at once may be crossed; both sessions then fail, as
// neither connection carries the other's exchange.)
class SecondConnections {
  struct Expected {
    std::string host;
    Fd fd;
  };

 public:
  // A session's wish for the next connection from its client's host, from
  // its making to its end (however the session ends).
  class Ticket {
   public:
    Ticket(SecondConnections& s, std::string host) : s_(s), e_(std::make_shared<Expected>(Expected{std::move(host), Fd()})) {
      std::lock_guard g(s_.mu_);
      s_.waiting_.push_back(e_);
    }
    ~Ticket() {
      std::lock_guard g(s_.mu_);
      s_.waiting_.remove(e_);
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    // The connection, or none after timeout_ms or a stop.
    Fd take(int timeout_ms, std::stop_token stop) {
      std::unique_lock g(s_.mu_);
      const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
      while (!e_->fd && Clock::now() < until && !stop.stop_requested()) s_.cv_.wait_for(g, std::chrono::milliseconds(100));
      return std::move(e_->fd);
    }

   private:
    SecondConnections& s_;
    std::shared_ptr<Expected> e_;
  };
  // The acceptor's side: true when a session took the connection.
  bool offer(Fd& fd, const std::string& host) {
    std::lock_guard g(mu_);
    const auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& e) { return e->host == host; });
    if (it == waiting_.end()) return false;
    (*it)->fd = std::move(fd);
    waiting_.erase(it);
    cv_.notify_all();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<Expected>> waiting_;
};

// The address of an ADDRESS:PORT endpoint ("[v6]:port" too).

nlohmann::json serve_perftest_one(Fd fa, const PeerOptions& o, std::string_view program, std::uint64_t n,
                                  MemoryBudget& budget, SecondConnections& seconds, std::stop_token stop) {
  const bool send = program == "ib_send_bw";
  QpConfig cfg = o.qp;
  cfg.initiator = false;
  Reservation mem(&budget);
  nlohmann::json rep = {{"connection", n}, {"ok", false}, {"program", program}};
  auto fail = [&](const std::string& why) {
    rep["error"] = why;
    return rep;
  };
  // `slots`: receives posted for the exchange (none on the test connection,
  // where ib_send_bw's Sends must land in the receives of the test).
  auto start = [&](Fd fd, const std::string& pcap, unsigned slots) {
    auto ses = std::make_unique<Session>(cfg, std::move(fd), o.wait, o.idle_timeout_ms);
    std::string e;
    if (!pcap.empty() && !ses->link->record(captures::io::pcap_tap(pcap, e))) rep["pcap_error"] = e;
    ses->setup_slots(kMinSlot, slots);
    ses->qp.connect();
    return ses;
  };
  const std::string pcap = o.pcap_dir.empty() ? "" : fmt::format("{}/peer-perftest-{}.pcap", o.pcap_dir, n);
  const std::string host = host_part(engine::remote_endpoint(fa.get()));
  auto ctl = start(std::move(fa), pcap, kSlots);
  if (!ctl->wait([&] { return ctl->qp.state() == QpState::connected; }))
    return fail(ctl->why("the exchange connection: MPA setup"));
  // The server's side of each step: the client's message, then ours of the same size.
  auto step = [&](Bytes mine, std::string_view what) -> std::optional<std::vector<std::byte>> {
    auto m = ctl->receive();
    if (!m) {
      fail(ctl->why(fmt::format("perftest {}: waiting for the client's", what)));
      return std::nullopt;
    }
    if (m->size() != mine.size()) {
      fail(fmt::format("perftest {}: the client sent {} octets, {} expected", what, m->size(), mine.size()));
      return std::nullopt;
    }
    if (!ctl->send(mine)) {
      fail(ctl->why(fmt::format("perftest {}: sending", what)));
      return std::nullopt;
    }
    return m;
  };
  const PerftestSetup set;
  const auto& zeros = set.zeros;
  const auto rv = step(set.version, "version");
  if (!rv) return rep;
  rep["version"] = c_text(*rv);
  if (!step(set.page, "page size") || !step(set.line, "cache line size") || !step(set.mtu, "MTU") ||
      !step(zeros, "first record"))
    return rep;
  // Our answer is only framed: put it on the wire before waiting for the
  // client's second connection (the client sends nothing until it has it).
  // The acceptor hands us the next connection from our client's host from
  // the moment we say we expect it, which is before the client can make it.
  SecondConnections::Ticket second(seconds, host);
  if (!ctl->wait([&] { return ctl->qp.output().empty(); })) return fail(ctl->why("perftest first record: sending"));
  Fd fb = second.take(o.idle_timeout_ms, stop);
  if (!fb) return fail("the test connection: the client did not connect");
  auto test = start(std::move(fb), pcap.empty() ? "" : pcap + ".test.pcap", 0);
  // Connected once our Reply is framed; the exchange goes on the other
  // connection, so put the Reply on the wire first.
  if (!test->wait([&] { return test->qp.state() == QpState::connected && test->qp.output().empty(); }))
    return fail(test->why("the test connection: MPA setup"));
  // Our buffer: remote Write and Read for the client's test; for
  // ib_send_bw receives of the whole buffer, reposted as they complete.
  const std::size_t size = std::min<std::size_t>(o.max_size, 16u << 20);
  if (!mem.add(size))
    return fail(fmt::format("{} octets of buffer are beyond the peer's memory budget ({} of {} in use)", size,
                            budget.used(), budget.limit()));
  auto& buf = test->buffer(size);
  const PerftestBuffer pb = perftest_buffer(*test, buf, kLocalWrite | kRemoteWrite | kRemoteRead, cfg.ird);
  const std::uint32_t stag = pb.stag;
  const auto& rec = pb.record;
  if (!step(zeros, "second record")) return rep;
  const auto keys = step(rec, "keys");
  if (!keys || !step(rec, "barrier") || !step(rec, "barrier")) return rep;
  const PerftestRecord client = decode_record(*keys);
  constexpr unsigned kRecvDepth = 32;
  // ib_send_bw's client sends only as far as the server's credits allow:
  // the server writes the count of Sends it has received, 4 octets
  // little-endian, to the address of the client's keys (seen in the
  // siw-siw capture). We write it after every Send, from a ring of slots.
  constexpr unsigned kCreditSlots = 64;
  auto& credits = test->buffer(4 * kCreditSlots);
  const std::uint32_t credit_stag = test->pd.register_mr(credits, 0);
  const auto recv_len = static_cast<std::uint32_t>(buf.size());
  std::uint64_t received = 0, received_octets = 0;
  if (send) {
    for (unsigned i = 0; i < kRecvDepth; ++i) test->qp.post_recv({kDataBase + i, {stag, 0, recv_len}});
    if (!step(rec, "barrier with the receives posted")) return rep;
  }
  // Serve the test until the client's barrier after it arrives on the
  // exchange connection, driving both connections in turn.
  auto take = [&] {
    test->drain();
    while (!test->recvs.empty()) {
      const Completion c = test->recvs.front();
      test->recvs.pop_front();
      if (c.wr_id < kDataBase) continue;  // a control slot: perftest sends nothing there
      ++received;
      received_octets += c.byte_len;
      test->qp.post_recv({c.wr_id, {stag, 0, recv_len}});
      const std::size_t slot = (received % kCreditSlots) * 4;
      protocols::put_le32(credits, slot, static_cast<std::uint32_t>(received));
      SendWr w{kSendBase + kSlots + slot / 4, WrOpcode::write, {credit_stag, slot, 4}};
      w.remote_stag = client.rkey;
      w.remote_to = client.vaddr;
      test->qp.post_send(w);
    }
  };
  const auto until = Clock::now() + std::chrono::milliseconds(o.idle_timeout_ms * 4);
  bool barrier_in = false;
  while (!barrier_in && Clock::now() < until && !stop.stop_requested() && test->failure.empty() && !test->dead()) {
    test->link->run_until([&] { take(); return false; }, 5);
    ctl->link->run_until([&] { ctl->drain(); return !ctl->recvs.empty(); }, 5);
    barrier_in = !ctl->recvs.empty() || ctl->dead();
  }
  take();
  if (send) {
    rep["received"] = received;
    rep["received_octets"] = received_octets;
  }
  if (!test->failure.empty() || test->qp.terminate_received() || test->qp.terminate_sent()) {
    return fail(test->why("the test"));
  }
  if (!step(rec, "barrier after the test")) return rep;
  bool reported = true;
  if (!send)
    for (int i = 0; i < 5 && reported; ++i) reported = step(std::array<std::byte, 8>{}, "bandwidth report").has_value();
  if (!reported || (!send && !step(rec, "closing barrier"))) return rep;
  // Our last answer is only framed: put it on the wire, or the client waits
  // for it while we wait for the client to close (it closes first; we follow).
  if (!ctl->wait([&] { return ctl->qp.output().empty(); })) return fail(ctl->why("perftest closing barrier: sending"));
  test->link->close(2000);
  ctl->link->close(2000);

  rep["ok"] = !send || received > 0;
  rep["negotiated"] = ctl->negotiated();
  return rep;
}

}  // namespace

void serve_perftest(int listen_fd, const PeerOptions& o, std::string_view program,
                    const std::function<void(const nlohmann::json&)>& on_connection, std::stop_token stop) {
  if (program != "ib_write_bw" && program != "ib_read_bw" && program != "ib_send_bw") {
    on_connection({{"ok", false}, {"error", fmt::format("perftest program '{}' over iWARP: ib_write_bw, ib_read_bw "
                                                        "or ib_send_bw (their -R clients)", program)}});
    return;
  }
  std::mutex report_mu;
  auto report = [&](const nlohmann::json& j) {
    std::lock_guard g(report_mu);
    on_connection(j);
  };
  MemoryBudget budget(o.memory_budget);
  SecondConnections seconds;
  Refuser refuser([&o](std::string_view got) { return busy_reply(got, o); }, refusal_report(report, o));
  Acceptor acceptor(listen_fd, "serve iwarp --perftest", o.log);
  SessionPool pool(o.max_sessions, &refuser, o.max_per_source);  // last: its sessions use the above
  // After the last session has started, connections are still taken for
  // the sessions that expect their second one.
  for (std::uint64_t n = 0; !stop.stop_requested();) {
    const bool more = o.connections == 0 || n < o.connections;
    if (!more && pool.active() == 0) break;
    Fd fd = acceptor.next(200);
    if (!fd || seconds.offer(fd, host_part(engine::remote_endpoint(fd.get()))) || !more) continue;
    ++n;
    pool.admit(std::move(fd), [&, n](Fd& f) { report(serve_perftest_one(std::move(f), o, program, n, budget, seconds, stop)); }, n);
  }
}

}  // namespace rdmaconf::interop::iwarp

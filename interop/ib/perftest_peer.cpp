// Our InfiniBand engine against perftest (ib_{write,read,send,atomic}_bw without -R): as its client and as its server.
#include "interop/ib/scenarios.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "captures/io/pcap_tap.hpp"
#include "engines/common/socket.hpp"
#include "engines/ib/udp_link.hpp"
#include "interop/channel.hpp"
#include "interop/control.hpp"
#include "interop/ib/control.hpp"
#include "interop/ib/detail.hpp"
#include "interop/ib/perftest.hpp"
#include "interop/pattern.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::ib {

namespace {

// The IPv4-mapped GID of an ADDR:PORT endpoint, and back.
std::array<std::uint8_t, 16> gid_of(const std::string& endpoint) {
  std::array<std::uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  unsigned a[4] = {};
  if (std::sscanf(endpoint.c_str(), "%u.%u.%u.%u", &a[0], &a[1], &a[2], &a[3]) == 4)
    for (int i = 0; i < 4; ++i) g[12 + i] = static_cast<std::uint8_t>(a[i]);
  return g;
}
std::optional<std::string> udp_of(const std::array<std::uint8_t, 16>& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i]) return std::nullopt;
  if (g[10] != 0xff || g[11] != 0xff) return std::nullopt;
  return fmt::format("{}.{}.{}.{}:{}", g[12], g[13], g[14], g[15], protocols::ib::kRoceV2Port);
}

// The perftest programs we speak to. ib_write_bw and ib_read_bw share one
// sequence (keys and two barriers; after the test a barrier, the report and
// the closing barrier). ib_send_bw has one more barrier before the test,
// exchanged once the server has posted its receives, and no report after a
// one-way test: only the closing barrier.
// ib_atomic_bw follows the write/read sequence with 8-octet Fetch and Adds.
// Each may run over RC; ib_write_bw and ib_send_bw also over UC (perftest's
// -c UC), and ib_send_bw over UD (-c UD: one packet per message, Q_Key
// 0x11111111). The exchange is the same for all three.
enum class PerftestVerb { write, read, send, atomic };
std::optional<PerftestVerb> perftest_verb(std::string_view program) {
  if (program == "ib_write_bw") return PerftestVerb::write;
  if (program == "ib_read_bw") return PerftestVerb::read;
  if (program == "ib_send_bw") return PerftestVerb::send;
  if (program == "ib_atomic_bw") return PerftestVerb::atomic;
  return std::nullopt;
}
constexpr const char* kPerftestPrograms = "ib_write_bw, ib_read_bw, ib_send_bw or ib_atomic_bw";
constexpr std::uint32_t kPerftestQkey = 0x11111111;  // perftest's DEF_QKEY

// Empty when perftest runs `verb` over `type`, else why not.
std::string perftest_type_problem(PerftestVerb verb, QpType type, std::string_view program) {
  if (type == QpType::rc || (type == QpType::uc && (verb == PerftestVerb::write || verb == PerftestVerb::send)) ||
      (type == QpType::ud && verb == PerftestVerb::send))
    return {};
  return fmt::format("{} does not run over {} (UC: ib_write_bw and ib_send_bw; UD: ib_send_bw)", program,
                     qp_type_name(type));
}

// The QP side of a perftest connection, either role, after the keys: the
// client posts its work (write, read or send), the server serves until the
// client's barrier after the test arrives on the TCP socket.
struct PerftestRun {
  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> buf;
  std::uint32_t key = 0;
  std::optional<QueuePair> qp;
  PerftestDest mine, theirs;
};

bool perftest_connect(PerftestRun& run, PerftestSession& ses, UdpLink& link, QpConfig cfg, std::size_t buffer,
                      std::string& err) {
  run.buf.assign(buffer, std::byte{0});
  fill_pattern(run.buf, 18515);
  run.key = run.pd.register_mr(run.buf, kRemoteRead | kRemoteWrite | kRemoteAtomic | kLocalWrite);
  run.mine.out_reads = static_cast<std::uint16_t>(cfg.max_dest_rd_atomic);
  run.mine.qpn = cfg.qpn;
  run.mine.psn = cfg.sq_psn;
  run.mine.rkey = run.key;
  run.mine.vaddr = 0;  // our region's base_to
  run.mine.gid = gid_of(link.local_name());
  if (!ses.keys(run.mine, run.theirs) || !ses.barrier(run.mine) || !ses.barrier(run.mine)) {
    err = ses.error();
    return false;
  }
  const auto peer = udp_of(run.theirs.gid);
  if (!peer) {
    err = "perftest keys: the peer's GID is not an IPv4-mapped address";
    return false;
  }
  if (!link.set_peer(*peer, err)) return false;
  cfg.dest_qpn = run.theirs.qpn;
  cfg.rq_psn = run.theirs.psn;
  cfg.max_rd_atomic = std::max<unsigned>(1, std::min<unsigned>(cfg.max_rd_atomic, run.theirs.out_reads));
  if (const std::string bad = eng::validate(cfg); !bad.empty()) {
    err = "perftest: " + bad;
    return false;
  }
  run.qp.emplace(run.pd, run.scq, run.rcq, cfg);
  return true;
}

const std::vector<PerftestFault> kPerftestFaults = {
    {"fault-psn-gap", {"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}},
    {"fault-icrc", {"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}},
    {"fault-pkey", {"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}, QpType::rc, "bad_pkey_cntr"},
    {"fault-qp-type", {"ib_write_bw", "ib_send_bw"}},
    {"fault-duplicate", {"ib_write_bw"}, QpType::rc, {}, true},
    {"fault-duplicate-send", {"ib_send_bw"}, QpType::rc, {}, true},
    {"fault-duplicate-read", {"ib_read_bw"}, QpType::rc, {}, true},
    {"fault-duplicate-atomic", {"ib_atomic_bw"}},
    {"fault-zero-length-rkey", {"ib_write_bw", "ib_read_bw"}},
    {"fault-bad-rkey", {"ib_write_bw"}, QpType::rc, {}, true},
    {"fault-oversize", {"ib_write_bw"}, QpType::rc, {}, true},
    {"fault-wrong-pad", {"ib_write_bw"}, QpType::rc, {}, true},
    {"fault-opseq", {"ib_write_bw", "ib_send_bw"}, QpType::rc, {}, true},
    {"fault-qkey", {"ib_send_bw"}, QpType::ud, "qkey_viol_cntr"},
};

}  // namespace

const std::vector<PerftestFault>& perftest_faults() { return kPerftestFaults; }

const PerftestFault* find_perftest_fault(std::string_view name) {
  for (const auto& f : kPerftestFaults)
    if (f.name == name) return &f;
  return nullptr;
}

std::string perftest_fault_problem(std::string_view fault, std::string_view program, QpType type, std::uint32_t size,
                                   unsigned pmtu) {
  const auto* f = find_perftest_fault(fault);
  if (!f) {
    std::string names;
    for (const auto& k : kPerftestFaults) names += (names.empty() ? "" : ", ") + std::string(k.name);
    return fmt::format("fault '{}' cannot be planted against perftest; these can: {}", fault, names);
  }
  if (std::find(f->programs.begin(), f->programs.end(), program) == f->programs.end())
    return fmt::format("fault '{}' runs against {}, not {}", fault, fmt::join(f->programs, " or "), program);
  if (type != f->type)
    return fmt::format("fault '{}' runs over {} only", fault, qp_type_name(f->type));
  if (f->one_packet_messages && size > pmtu)
    return fmt::format("fault '{}' names a packet that must start a message: --size {} must not exceed the path MTU {}",
                       fault, size, pmtu);
  return {};
}

RunResult run_perftest_client(std::string_view server, std::string_view program, const RunOptions& o) {
  RunResult r;
  r.scenario = std::string(program);
  const auto verb = perftest_verb(program);
  if (!verb) {
    r.message = fmt::format("perftest program '{}': {}", program, kPerftestPrograms);
    return r;
  }
  if (const auto bad = perftest_type_problem(*verb, o.qp.type, program); !bad.empty()) {
    r.message = bad;
    return r;
  }
  const std::uint32_t size = *verb == PerftestVerb::atomic ? 8 : o.size ? o.size : 65536;
  if (!o.fault.empty()) {
    if (auto bad = perftest_fault_problem(o.fault, program, o.qp.type, size, o.qp.pmtu); !bad.empty()) {
      r.message = std::move(bad);
      return r;
    }
  }
  if (o.qp.type != QpType::rc) r.scenario += fmt::format(".{}", qp_type_name(o.qp.type));
  if (!o.fault.empty()) r.scenario += "." + o.fault;
  const char* what = *verb == PerftestVerb::read     ? "READ"
                     : *verb == PerftestVerb::send   ? "SEND"
                     : *verb == PerftestVerb::atomic ? "FETCH_ADD"
                                                     : "WRITE";
  const std::uint64_t iters = o.iterations ? o.iterations : 1000;
  r.size = size;
  if (o.qp.type == QpType::ud && size > o.qp.pmtu) {
    r.message = fmt::format("{} over UD: a message is one packet, so --size {} must not exceed the path MTU {}",
                            program, size, o.qp.pmtu);
    return r;
  }
  std::string err;
  Fd tcp = tcp_connect(server, o.timeout_ms, err);
  UdpLink link;
  if (!tcp || !link.open(o.udp_local, err) || (!o.pcap.empty() && !link.record(captures::io::pcap_tap(o.pcap, err))) ||
      (o.raw_receive && !link.raw_receive(err))) {
    r.message = err;
    return r;
  }
  PerftestSession ses(tcp.get(), true, o.timeout_ms);
  QpConfig cfg = o.qp;
  plant_fault(o.fault, cfg);
  cfg.qpn = 0x1000 + static_cast<std::uint32_t>((Clock::now().time_since_epoch().count() >> 12) & 0xffff);
  cfg.sq_psn = static_cast<std::uint32_t>(Clock::now().time_since_epoch().count()) & 0xffffff;
  std::string version;
  if (!ses.setup(cfg.pmtu, version)) {
    r.message = ses.error();
    return r;
  }
  PerftestRun run;
  if (!perftest_connect(run, ses, link, cfg, size, err) ||
      (*verb == PerftestVerb::send && !ses.barrier(run.mine))) {  // the server's receives are posted
    r.message = err.empty() ? ses.error() : err;
    return r;
  }
  QueuePair& qp = *run.qp;
  std::string bad;
  const std::optional<WcStatus> fatal_want = fatal_completion(o.fault);
  const bool fatal = fatal_want.has_value();
  const std::uint64_t fatal_wr = o.fault == "fault-opseq" ? 1 : 0;  // the work request the fault hits (plant_fault)
  // fault-zero-length-rkey: before the test, a zero-length operation of the
  // program's kind (its server's QP allows no other remote access) naming
  // an R_Key and an address perftest never gave us; it must succeed.
  // fault-qkey: one more SEND than the server counts, the second with a
  // Q_Key not perftest's.
  std::vector<SendWr> prologue;
  if (o.fault == "fault-zero-length-rkey") {
    SendWr& w = prologue.emplace_back();
    w.wr_id = ~0ull;
    w.op = *verb == PerftestVerb::read ? WrOpcode::read : WrOpcode::write;
    w.local = {run.key, 0, 0};
    w.remote_stag = run.theirs.rkey ^ 0x5a5a00;
    w.remote_to = ~0ull - 15;
  }
  const std::uint64_t total = iters + prologue.size() + (o.fault == "fault-qkey" ? 1 : 0);
  std::uint64_t posted = 0, completed = 0;
  std::optional<std::uint64_t> first_original;  // ib_atomic_bw: FetchAdds of 1 on one word find consecutive values
  std::optional<WcStatus> fatal_status;
  const auto t0 = Clock::now();
  auto take = [&] {
    while (auto c = run.scq.poll()) {
      const std::uint64_t k = completed++;
      if (fatal && !fatal_status && c->status != WcStatus::success) {
        fatal_status = c->status;  // judged below; what follows it is flushed
        if (c->wr_id != fatal_wr && bad.empty())
          bad = fmt::format("{} {} completed with '{}'; the faulty one is {}", what, c->wr_id, wc_status_name(c->status), fatal_wr);
        continue;
      }
      if (fatal && fatal_status) {
        if (c->status != WcStatus::flushed && bad.empty())
          bad = fmt::format("{} {} completed with '{}' after the fatal NAK, not flushed", what, c->wr_id, wc_status_name(c->status));
        continue;
      }
      if (c->status != WcStatus::success && bad.empty())
        bad = fmt::format("{} {} completed with '{}'", what, c->wr_id, wc_status_name(c->status));
      if (*verb == PerftestVerb::atomic && c->atomic_original && bad.empty()) {
        if (!first_original) first_original = *c->atomic_original - k;
        else if (*c->atomic_original != *first_original + k)
          bad = fmt::format("FETCH_ADD {} found {}, expected {}: an Atomic was executed other than once, in order", k,
                            *c->atomic_original, *first_original + k);
      }
    }
  };
  bool ran = link.run_until(qp, [&] {
    take();
    // A fatal fault's requests go one at a time: nothing of ours is on the
    // wire when the NAK comes, so the capture shows the requester sending
    // nothing after it (ib.nak.fatal) rather than a race with our window.
    while (posted < total && posted - completed < (fatal ? 1u : o.window)) {
      if (posted < prologue.size()) {
        qp.post_send(prologue[posted++]);
        continue;
      }
      SendWr w{};
      w.wr_id = posted++;
      w.op = *verb == PerftestVerb::read     ? WrOpcode::read
             : *verb == PerftestVerb::send   ? WrOpcode::send
             : *verb == PerftestVerb::atomic ? WrOpcode::atomic_fetch_add
                                             : WrOpcode::write;
      w.add_swap = 1;
      w.local = {run.key, 0, size};
      w.remote_stag = o.fault == "fault-bad-rkey" && w.wr_id == 0 ? run.theirs.rkey ^ 0x100 : run.theirs.rkey;
      w.remote_to = run.theirs.vaddr;
      w.remote_qpn = run.theirs.qpn;
      w.remote_qkey = o.fault == "fault-qkey" && w.wr_id == 1 ? kPerftestQkey ^ 0x0100 : kPerftestQkey;
      qp.post_send(w);
    }
    return completed >= total || (fatal_status && qp.state() == QpState::error);
  }, o.timeout_ms);
  // A fatal NAK ends the run with the QP in error, as it must: what it
  // flushed is judged, what was never posted does not matter.
  take();
  if (!ran && fatal_status && qp.state() == QpState::error) ran = true;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.iterations = iters;
  r.bytes = iters * size;
  r.counters = counters_json(qp.counters(), link);
  const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
  const bool report = *verb != PerftestVerb::send;
  if (report && (!ses.barrier(run.mine) ||
                 !ses.report(size, iters, gbps, gbps, r.seconds > 0 ? static_cast<double>(iters) / r.seconds / 1e6 : 0))) {
    r.message = ses.error();
    return r;
  }
  if (!ses.barrier(run.mine) || !ses.done()) {
    r.message = ses.error();
    return r;
  }
  r.peer = {{"program", program}, {"version", version}, {"qpn", run.theirs.qpn}, {"psn", run.theirs.psn},
            {"out_reads", run.theirs.out_reads}, {"connection_type", qp_type_name(cfg.type)}};
  // A planted fault: the reaction a conforming responder shows, read off our
  // counters (the capture's checker judges the packets themselves).
  std::string reaction;
  if (!o.fault.empty()) {
    const auto& k = qp.counters();
    const bool lost = o.fault == "fault-psn-gap" || o.fault == "fault-icrc" || o.fault == "fault-pkey" || o.fault == "fault-qp-type";
    if (lost && k.retransmitted == 0 && bad.empty()) bad = fmt::format("{}: the lost packet was never resent", o.fault);
    if (o.fault == "fault-psn-gap" && k.naks_received == 0 && bad.empty())
      bad = "fault-psn-gap: the responder sent no NAK for the gap (a PSN Sequence Error NAK is required)";
    if (o.fault.starts_with("fault-duplicate") && bad.empty()) {
      if (k.naks_received != 0) bad = fmt::format("{}: the responder sent {} NAKs for a duplicate request", o.fault, k.naks_received);
      else if (o.fault == "fault-duplicate-read" && k.duplicates == 0)
        bad = "fault-duplicate-read: the responder did not answer the duplicate READ request again";
      else if (o.fault == "fault-duplicate-atomic" && (k.atomic_replays != 1 || k.atomic_replays_differing != 0))
        bad = fmt::format("fault-duplicate-atomic: the duplicate Atomic was answered {} times again, {} of them with "
                          "another original value than the first answer's",
                          k.atomic_replays, k.atomic_replays_differing);
    }
    if (fatal && bad.empty()) {
      const WcStatus want = *fatal_want;
      if (fatal_status != want)
        bad = fmt::format("{}: the faulty {} completed with '{}', a conforming responder's NAK gives '{}'", o.fault, what,
                          fatal_status ? wc_status_name(*fatal_status) : "success", wc_status_name(want));
    }
    reaction = fmt::format("; reaction: {} NAK(s), {} timeout(s), {} packet(s) resent, {} duplicate answer(s){}",
                           k.naks_received, k.timeouts, k.retransmitted, k.duplicates,
                           fatal_status ? fmt::format(", the faulty request completed with '{}'", wc_status_name(*fatal_status)) : "");
  }
  r.ok = ran && bad.empty();
  r.message = !ran ? fmt::format("{}: {}", program, link.error()) : !bad.empty() ? bad
              : fmt::format("{} {} {}s of {} octets completed against perftest {}{}", iters, qp_type_name(cfg.type),
                            what, size, version, reaction);
  return r;
}

namespace {

// What the perftest sessions of one serve_perftest() share. perftest's
// clients all send to port 4791 from source ports their kernel picks (rxe
// derives them from the QPN), so no session can have a socket connected to
// its client: one thread reads the port and hands each datagram to the
// session whose QPN it names (UdpLink::dispatch). A session's QPN is drawn
// at random among those no live session holds, and its link takes only its
// client's address; what names no live QPN is dropped and counted.
struct PerftestShared {
  UdpLink& port;
  MemoryBudget budget;
  std::mutex mu;
  std::map<std::uint32_t, Mailbox*> sessions;  // by QPN
  std::atomic<std::uint64_t> drained{0};        // the reader's passes that ended with the port empty
};

// A session's QPN, held for its life.
class QpnClaim {
 public:
  QpnClaim(PerftestShared& s, Mailbox& box) : s_(s) {
    std::lock_guard g(s_.mu);
    do qpn_ = 2 + static_cast<std::uint32_t>(random_u64() % (kMaxQpn - 1));  // (QPN 0 and 1 are the special QPs)
    while (!s_.sessions.emplace(qpn_, &box).second);
  }
  ~QpnClaim() {
    std::lock_guard g(s_.mu);
    s_.sessions.erase(qpn_);
  }
  QpnClaim(const QpnClaim&) = delete;
  QpnClaim& operator=(const QpnClaim&) = delete;
  std::uint32_t qpn() const { return qpn_; }

 private:
  PerftestShared& s_;
  std::uint32_t qpn_ = 0;
};

json serve_perftest_one(int cfd, const PeerOptions& o, PerftestVerb verb, std::uint64_t index, std::stop_token stop,
                        PerftestShared& shared) {
  json rep = {{"connection", index}, {"ok", false}, {"program", o.perftest_program},
              {"connection_type", qp_type_name(o.qp.type)}};
  std::string err;
  Mailbox box;
  const QpnClaim claim(shared, box);
  UdpLink link;
  if (!link.attach(box, shared.port.local_name(), shared.port.fd(), err)) {
    rep["error"] = err;
    return rep;
  }
  // perftest has no way to say why it is turned away: the connection closes.
  const std::size_t buffer = std::min<std::size_t>(o.max_size, 64u << 20);
  Reservation mem(&shared.budget);
  if (!mem.add(buffer)) {
    rep["error"] = fmt::format("{} octets of buffer are beyond the peer's memory budget ({} of {} in use)", buffer,
                               shared.budget.used(), shared.budget.limit());
    return rep;
  }
  PerftestSession ses(cfd, false, o.idle_timeout_ms);
  QpConfig cfg = o.qp;
  cfg.qpn = claim.qpn();
  cfg.sq_psn = static_cast<std::uint32_t>(random_u64() & kMaxPsn);
  std::string version;
  PerftestRun run;
  if (!o.pcap_dir.empty())
    link.record(captures::io::pcap_tap((std::filesystem::path(o.pcap_dir) / fmt::format("peer-perftest-{}.pcap", index)).string(), err));
  if (!ses.setup(cfg.pmtu, version) || !perftest_connect(run, ses, link, cfg, buffer, err)) {
    rep["error"] = err.empty() ? ses.error() : err;
    return rep;
  }
  QueuePair& qp = *run.qp;
  // ib_send_bw: receives of the whole buffer each (perftest's client
  // sends at most -s octets), reposted as they complete; then the barrier
  // that tells the client they are there.
  const bool send = verb == PerftestVerb::send;
  constexpr std::uint64_t kRecvDepth = 128;
  const auto recv_len = static_cast<std::uint32_t>(run.buf.size());
  std::uint64_t received = 0, received_octets = 0;
  std::string recv_error;
  if (send) {
    for (std::uint64_t i = 0; i < kRecvDepth; ++i) qp.post_recv({i, {run.key, 0, recv_len}});
    if (!ses.barrier(run.mine)) {
      rep["error"] = ses.error();
      return rep;
    }
  }
  const auto take_receives = [&] {
    while (auto wc = run.rcq.poll()) {
      if (wc->status != WcStatus::success) {
        if (recv_error.empty()) recv_error = fmt::format("receive {} completed with '{}'", received, wc_status_name(wc->status));
        continue;
      }
      ++received;
      received_octets += wc->byte_len;
      qp.post_recv({wc->wr_id, {run.key, 0, recv_len}});
    }
  };
  // Serve until the client's barrier after its test shows on the socket,
  // then take what is still waiting: over UC and UD nothing is
  // acknowledged, so the client's barrier can overtake our reading of the
  // datagrams it sent before it. Those are in the port by then, but maybe
  // not yet in our mailbox: we wait for a pass of the reader that began
  // after the barrier came and emptied the port.
  std::optional<std::uint64_t> barrier_at;
  const bool served = link.run_until(qp, [&] {
    take_receives();
    if (stop.stop_requested()) return true;
    if (!barrier_at) {
      pollfd p{cfd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) barrier_at = shared.drained.load();
      return false;
    }
    return shared.drained.load() >= *barrier_at + 2 && link.poll(qp) == 0;
  }, o.idle_timeout_ms * 4);
  link.run_until(qp, [&] { take_receives(); return qp.idle(); }, 100);
  const bool closed = (send || (ses.barrier(run.mine) && ses.report(0, 0, 0, 0, 0))) && ses.barrier(run.mine) && ses.done();
  if (send) {
    rep["received"] = received;
    rep["received_octets"] = received_octets;
    if (!recv_error.empty()) rep["error"] = recv_error;
  }
  rep["ok"] = served && closed && qp.state() == QpState::rts && recv_error.empty() && (!send || received > 0);
  rep["version"] = version;
  rep["qpn"] = cfg.qpn;
  rep["counters"] = counters_json(qp.counters(), link);
  rep["foreign_datagrams_dropped"] = link.foreign_datagrams();
  rep["refusals"] = refusals_json(qp);
  rep["state"] = qp.state() == QpState::rts ? "rts" : "error";
  if (!served || !closed) rep["error"] = !served ? link.error() : ses.error();
  link.stop_recording();
  return rep;
}

}  // namespace

void serve_perftest(int listen_fd, const PeerOptions& o, const std::function<void(const json&)>& on_connection,
                    std::stop_token stop) {
  UdpLink port;
  std::string err;
  if (!port.open(o.udp_local, err) || (o.raw_receive && !port.raw_receive(err))) {
    on_connection({{"ok", false}, {"error", err}});
    return;
  }
  const auto verb = perftest_verb(o.perftest_program);
  if (!verb) {
    on_connection({{"ok", false}, {"error", fmt::format("perftest program '{}': {}", o.perftest_program,
                                                        kPerftestPrograms)}});
    return;
  }
  if (const auto bad = perftest_type_problem(*verb, o.qp.type, o.perftest_program); !bad.empty()) {
    on_connection({{"ok", false}, {"error", bad}});
    return;
  }
  PerftestShared shared{port, MemoryBudget(o.memory_budget), {}, {}};
  std::mutex report_mu;
  std::atomic<std::uint64_t> dropped{0};
  auto report = [&](json j) {
    j["datagrams_for_no_session"] = dropped.load();
    std::lock_guard g(report_mu);
    on_connection(j);
  };
  // The port's reader, until every session has ended.
  std::jthread reader([&](std::stop_token st) {
    const UdpLink::Route route = [&](std::uint32_t qpn, protocols::Bytes datagram, const sockaddr_storage& from,
                                     std::size_t ihl) {
      std::lock_guard g(shared.mu);
      const auto it = shared.sessions.find(qpn);
      if (it == shared.sessions.end()) return false;
      it->second->put(datagram, from, ihl);
      return true;
    };
    while (!st.stop_requested()) {
      port.wait(50);
      while (port.dispatch(route) > 0) {
      }
      dropped = port.foreign_datagrams();  // (the reports read it from the sessions' threads)
      ++shared.drained;
    }
  });
  accept_sessions(
      listen_fd, o, stop, report,
      [&](int fd, std::uint64_t index) { return serve_perftest_one(fd, o, *verb, index, stop, shared); },
      [](const std::string&) { return std::string(); }, [] {});
}

}  // namespace rdmaconf::interop::ib

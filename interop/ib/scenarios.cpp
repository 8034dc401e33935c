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

#include "captures/io/pcap_tap.hpp"
#include "engines/common/socket.hpp"
#include "engines/ib/udp_link.hpp"
#include "interop/control.hpp"
#include "interop/ib/control.hpp"
#include "interop/ib/perftest.hpp"
#include "interop/pattern.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::ib {

using namespace engine;
using engine::ib::QpConfig, engine::ib::QpType, engine::ib::QueuePair, engine::ib::QpState, engine::ib::UdpLink,
    engine::ib::Mailbox;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {


const std::vector<ScenarioInfo> kScenarios = {
    {"write", "RC RDMA WRITEs of --size octets, the responder's buffer digest compared", QpType::rc, 65536, 64, {}},
    {"read", "RC RDMA READs of the responder's pattern, compared here", QpType::rc, 65536, 64, {}},
    {"send", "RC SENDs (every other with Immediate) into posted receives, digest compared", QpType::rc, 4096, 64, {}},
    {"atomic", "RC Fetch and Add, then Compare and Swap, originals checked", QpType::rc, 8, 64, {}},
    {"uc-write", "UC RDMA WRITEs, the responder's buffer digest compared", QpType::uc, 16384, 16, {}},
    {"ud-send", "UD SENDs with Q_Key and source QP checked at the responder", QpType::ud, 1024, 64, {}},
    {"fault-psn-gap", "one request packet skipped: one sequence-error NAK, the resend, data intact", QpType::rc, 8192, 1,
     "a responder sends one NAK PSN Sequence Error carrying the expected PSN per gap and accepts the resend "
     "(IBTA Vol.1 ch. 9: ledger ib-nak-once, ib-nak-psn)"},
    {"fault-icrc", "one packet with a wrong ICRC: dropped silently, recovered by the requester's timer", QpType::rc, 100, 1,
     "a packet whose ICRC is wrong is dropped without any answer (IBTA Vol.1 §7.8: ledger ib-icrc-drop)", {"roce.icrc"}},
    {"fault-bad-rkey", "RDMA WRITE with an R_Key the responder does not know: NAK Remote Access Error", QpType::rc, 64, 1,
     "an invalid R_Key draws NAK Remote Access Error and the responder's QP goes to error (IBTA Vol.1 ch. 9: ledger ib-rkey-nak)"},
    {"fault-oversize", "a packet longer than the path MTU: NAK Invalid Request", QpType::rc, 1024, 1,
     "a payload beyond the path MTU is an invalid request (IBTA Vol.1 ch. 9: ledger ib-length-nak)", {"ib.payload.pmtu", "ib.reth.dma_length"}},
    {"fault-wrong-pad", "a pad count one more than the pad: the WRITE's length disagrees, NAK Invalid Request", QpType::rc,
     30, 1, "the packet's length must equal what the RETH announced (IBTA Vol.1 ch. 9: ledger ib-length-nak)", {"ib.reth.dma_length"}},
    {"fault-no-receive", "SEND with no receive posted: RNR NAKs until the retry count runs out", QpType::rc, 64, 1,
     "a responder with no receive posted answers RNR NAK and executes nothing (IBTA Vol.1 ch. 9: ledger ib-rnr-nak)"},
};

// ---- the control connection: one JSON object per line
bool send_json(int fd, const json& j) {
  std::string s = interop::safe_dump(j) + "\n";
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

struct LineReader {
  int fd;
  std::string buf;
  std::stop_token stop = {};  // a peer's session: a stop ends a wait as a timeout does
  // A complete line if one is there or arrives within timeout_ms; "" on
  // timeout; nullopt when the peer closed or sent something that is no JSON.
  std::optional<json> read(int timeout_ms, std::string& err) {
    const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (const auto nl = buf.find('\n'); nl != std::string::npos) {
        const std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return interop::parse_control_line(line, err);
      }
      if (buf.size() > 1 << 20) {
        err = "control connection: line longer than 1 MiB";
        return std::nullopt;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::clamp<decltype(left)>(left, 0, 100))) <= 0) {
        if (left <= 0 || stop.stop_requested()) return json();
        continue;
      }
      char tmp[4096];
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = "control connection closed by the other side";
        return std::nullopt;
      }
      buf.append(tmp, static_cast<std::size_t>(n));
    }
  }
};

}  // namespace

const std::vector<ScenarioInfo>& scenarios() { return kScenarios; }

const ScenarioInfo* find_scenario(std::string_view name) {
  for (const auto& s : kScenarios)
    if (s.name == name) return &s;
  return nullptr;
}

void plant_fault(std::string_view name, eng::QpConfig& cfg) {
  if (name == "fault-psn-gap") cfg.faults.skip_packet = 2;
  if (name == "fault-icrc") cfg.faults.corrupt_icrc = 1;
  if (name == "fault-oversize") cfg.faults.oversize_packet = 1;
  if (name == "fault-wrong-pad") cfg.faults.wrong_pad = 1;
  if (name == "fault-no-receive") cfg.rnr_retry = 2;
}

json counters_json(const eng::Counters& c, const eng::UdpLink& link) {
  return {{"kernel_dropped_datagrams", link.kernel_drops()},
          {"packets_sent", c.packets_sent},       {"packets_received", c.packets_received},
          {"dropped_icrc", c.dropped_icrc},       {"dropped_header", c.dropped_header},
          {"dropped_sequence", c.dropped_sequence}, {"dropped_uc_ud", c.dropped_uc_ud},
          {"duplicates", c.duplicates},           {"retransmitted", c.retransmitted},
          {"timeouts", c.timeouts},               {"acks_sent", c.acks_sent},
          {"naks_sent", c.naks_sent},             {"rnr_naks_sent", c.rnr_naks_sent},
          {"naks_received", c.naks_received},     {"rnr_naks_received", c.rnr_naks_received}};
}

namespace {
// What the QP refused (the first 32), for reports.
json refusals_json(const eng::QueuePair& qp) {
  json v = json::array();
  for (const auto& f : qp.refusals()) {
    if (v.size() >= 32) break;
    v.push_back({{"what", f.what}, {"why", f.why}, {"psn", f.psn}});
  }
  return v;
}
}  // namespace

json RunResult::to_json() const {
  json j = {{"scenario", scenario}, {"transport", "roce"}, {"verdict", ok ? "PASS" : "FAIL"}, {"message", message},
            {"size", size},         {"iterations", iterations}, {"bytes", bytes}, {"seconds", seconds},
            {"counters", counters}, {"peer", peer}};
  if (seconds > 0 && iterations > 0) {
    j["messages_per_s"] = static_cast<double>(iterations) / seconds;
    j["gbit_per_s"] = static_cast<double>(bytes) * 8 / seconds / 1e9;
  }
  return j;
}

// ---------------------------------------------------------------- requester

RunResult run_initiator(std::string_view control_peer, const RunOptions& o) {
  RunResult r;
  r.scenario = o.scenario;
  const ScenarioInfo* info = find_scenario(o.scenario);
  if (!info) {
    r.message = fmt::format("unknown scenario '{}'", o.scenario);
    return r;
  }
  const std::uint32_t size = o.size ? o.size : info->default_size;
  const std::uint64_t iters = o.iterations ? o.iterations : info->default_iterations;
  r.size = size;
  std::string err;
  Fd ctl = tcp_connect(control_peer, o.timeout_ms, err);
  if (!ctl) {
    r.message = err;
    return r;
  }
  UdpLink link;
  if (!link.open(o.udp_local, err) || (!o.pcap.empty() && !link.record(captures::io::pcap_tap(o.pcap, err))) ||
      (o.raw_receive && !link.raw_receive(err))) {
    r.message = err;
    return r;
  }
  QpConfig cfg = o.qp;
  cfg.type = info->type;
  cfg.sq_psn = static_cast<std::uint32_t>(Clock::now().time_since_epoch().count()) & 0xffffff;
  // A fresh QPN per run, as a new QP would get: captures of several runs
  // between the same addresses then keep their conversations apart.
  cfg.qpn = 0x1000 + static_cast<std::uint32_t>((Clock::now().time_since_epoch().count() >> 12) & 0xffff);
  const std::string& name = o.scenario;
  const bool sends = name == "send" || name == "ud-send" || name == "fault-no-receive";
  // The responder's buffer: one slot per message, at most 64 MiB.
  const std::uint64_t slots = std::max<std::uint64_t>(1, std::min<std::uint64_t>(iters, (64u << 20) / std::max(1u, size)));
  const std::uint64_t seed = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) | 1;
  const json hello = {{"hello",
                       {{"scenario", name},
                        {"type", type_name(cfg.type)},
                        {"qpn", cfg.qpn},
                        {"psn", cfg.sq_psn},
                        {"udp", link.local_name()},
                        {"mtu", cfg.pmtu},
                        {"size", size},
                        {"buffer", slots * size},
                        {"recvs", sends && name != "fault-no-receive" ? iters : 0},
                        {"seed", seed}}}};
  LineReader rd{ctl.get(), {}};
  if (!send_json(ctl.get(), hello)) {
    r.message = "control connection: cannot send the hello";
    return r;
  }
  auto ready_msg = rd.read(o.timeout_ms, err);
  const std::optional<Ready> ready = ready_msg && !ready_msg->is_null() ? read_ready(*ready_msg, control_peer, err) : std::nullopt;
  if (!ready) {
    r.message = err.empty() ? "no ready from the responder" : err;
    return r;
  }
  cfg.dest_qpn = ready->qpn;
  cfg.rq_psn = ready->psn;
  const auto rkey = ready->rkey, akey = ready->atomic_rkey, qkey = ready->qkey;
  const std::uint64_t peer_va = ready->va, peer_atomic_va = ready->atomic_va;
  if (!link.set_peer(ready->udp, err, true)) {
    r.message = "ready: " + err;
    return r;
  }
  plant_fault(name, cfg);
  if (const std::string bad = eng::validate(cfg); !bad.empty()) {
    r.message = "configuration: " + bad;
    return r;
  }

  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> src(slots * size), sink(slots * size), peer_view(slots * size), results(8 * (iters + 1));
  fill_pattern(src, seed);
  fill_pattern(peer_view, seed + 1);  // what the responder's buffer holds before we write
  const auto src_key = pd.register_mr(src, 0), sink_key = pd.register_mr(sink, kLocalWrite);
  const auto res_key = pd.register_mr(results, kLocalWrite);
  QueuePair qp(pd, scq, rcq, cfg);

  // Posts work requests from make(i), at most `window` in flight, until all
  // `n` completed; the completions in order.
  std::vector<Completion> done;
  done.reserve(iters + 2);
  Clock::time_point finished;  // when the last pump ended: what follows is our own checking, not the engine's work
  auto pump = [&](std::uint64_t n, const std::function<SendWr(std::uint64_t)>& make) {
    std::uint64_t posted = 0;
    const std::uint64_t start = done.size();
    const bool ok = link.run_until(qp, [&] {
      while (auto c = scq.poll()) done.push_back(*c);
      while (posted < n && posted - (done.size() - start) < o.window) qp.post_send(make(posted++));
      return done.size() - start >= n;
    }, o.timeout_ms);
    finished = Clock::now();
    return ok;
  };
  std::string bad;
  auto want_success = [&] {
    for (const auto& c : done)
      if (c.status != WcStatus::success) return fmt::format("work request {}: {}", c.wr_id, wc_status_name(c.status));
    return std::string();
  };
  const auto t0 = Clock::now();
  finished = t0;
  bool ran = true;
  std::uint64_t expect_recv_digest = interop::kDigestInit;
  if (name == "write" || name == "uc-write" || name == "fault-psn-gap" || name == "fault-icrc") {
    ran = pump(iters, [&](std::uint64_t i) {
      const std::uint64_t k = i % slots;
      SendWr w{};
      w.wr_id = i;
      w.op = WrOpcode::write;
      w.local = {src_key, k * size, size};
      w.remote_stag = rkey;
      w.remote_to = peer_va + k * size;
      return w;
    });
    std::memcpy(peer_view.data(), src.data(), std::min<std::size_t>(iters, slots) * size);
    r.bytes = iters * size;
  } else if (name == "read") {
    ran = pump(iters, [&](std::uint64_t i) {
      const std::uint64_t k = i % slots;
      SendWr w{};
      w.wr_id = i;
      w.op = WrOpcode::read;
      w.local = {sink_key, k * size, size};
      w.remote_stag = rkey;
      w.remote_to = peer_va + k * size;
      return w;
    });
    if (const auto at = check_pattern(std::span(sink).first(std::min<std::size_t>(iters, slots) * size), seed + 1))
      bad = fmt::format("read data differs from the responder's pattern at octet {}", *at);
    r.bytes = iters * size;
  } else if (sends) {
    ran = pump(iters, [&](std::uint64_t i) {
      SendWr w{};
      w.wr_id = i;
      w.op = i % 2 ? WrOpcode::send_imm : WrOpcode::send;
      w.imm = static_cast<std::uint32_t>(i * 7 + 1);
      w.local = {src_key, (i % slots) * size, size};
      w.remote_qpn = cfg.dest_qpn;
      w.remote_qkey = qkey;
      return w;
    });
    for (std::uint64_t i = 0; i < iters; ++i)
      expect_recv_digest = digest(std::span(src).subspan((i % slots) * size, size), expect_recv_digest);
    r.bytes = iters * size;
  } else if (name == "atomic") {
    ran = pump(iters + 1, [&](std::uint64_t i) {
      SendWr w{};
      w.wr_id = i;
      w.op = i < iters ? WrOpcode::atomic_fetch_add : WrOpcode::atomic_compare_swap;
      w.local = {res_key, i * 8, 8};
      w.remote_stag = akey;
      w.remote_to = peer_atomic_va;
      w.add_swap = i < iters ? 1 : 0xdead;
      w.compare = iters;
      return w;
    });
    // Fetch and Adds of one: the originals are 0 .. n-1 in some order of
    // execution, which is the order of the requests on one QP.
    for (std::uint64_t i = 0; ran && bad.empty() && i < done.size(); ++i)
      if (done[i].atomic_original.value_or(~0ull) != i)
        bad = fmt::format("atomic {} found {}, expected {}", i, done[i].atomic_original.value_or(~0ull), i);
    r.bytes = 8 * (iters + 1);
  } else if (name == "fault-bad-rkey" || name == "fault-oversize" || name == "fault-wrong-pad") {
    ran = pump(1, [&](std::uint64_t) {
      SendWr w{};
      w.op = WrOpcode::write;
      w.local = {src_key, 0, size};
      w.remote_stag = name == "fault-bad-rkey" ? rkey ^ 0x100 : rkey;
      w.remote_to = peer_va;
      return w;
    });
  }
  r.seconds = std::chrono::duration<double>(finished - t0).count();
  r.iterations = iters;
  const bool fault = name.starts_with("fault-");
  const bool fatal_fault = fault && name != "fault-psn-gap" && name != "fault-icrc";
  if (!ran && !fatal_fault) {
    r.message = fmt::format("{}: {}", name, link.error());
    r.counters = counters_json(qp.counters(), link);
    return r;
  }
  // The responder's account.
  if (!send_json(ctl.get(), {{"done", true}, {"packets_sent", qp.counters().packets_sent}})) {
    r.message = "control connection: cannot send done";
    return r;
  }
  auto res = rd.read(o.timeout_ms, err);
  r.counters = counters_json(qp.counters(), link);
  if (!res || res->is_null() || !res->contains("result")) {
    r.message = err.empty() ? "no result from the responder" : err;
    return r;
  }
  if (!check_result((*res)["result"], err)) {
    r.message = err;
    return r;
  }
  r.peer = (*res)["result"];
  const json& pr = r.peer;
  const json pc = pr.value("counters", json::object());
  auto refused = [&](std::string_view what) {
    for (const auto& f : pr.value("refusals", json::array()))
      if (f.value("what", "") == what) return true;
    return false;
  };
  auto status_of_first = [&] { return done.empty() ? std::string("no completion") : std::string(wc_status_name(done[0].status)); };
  if (bad.empty() && !fatal_fault) bad = want_success();
  if (bad.empty()) {
    if (name == "write" || name == "uc-write" || name == "fault-psn-gap" || name == "fault-icrc") {
      if (pr.value("buffer_digest", 0ull) != digest(peer_view)) bad = "the responder's buffer does not hold what we wrote";
    } else if (sends) {
      if (name != "fault-no-receive" && pr.value("recv_count", 0ull) != iters)
        bad = fmt::format("the responder received {} messages, we sent {}", pr.value("recv_count", 0ull), iters);
      else if (name != "fault-no-receive" && pr.value("recv_digest", 0ull) != expect_recv_digest)
        bad = "the responder's received data differs from what we sent";
      else if (name == "ud-send" && pr.value("src_qp", 0u) != cfg.qpn)
        bad = fmt::format("the responder saw source QP {}, ours is {}", pr.value("src_qp", 0u), cfg.qpn);
    } else if (name == "atomic") {
      if (pr.value("atomic_value", 0ull) != 0xdeadu) bad = fmt::format("the responder's atomic holds {}", pr.value("atomic_value", 0ull));
    }
  }
  // The reactions the fault-* scenarios require.
  if (bad.empty() && name == "fault-psn-gap") {
    if (pc.value("naks_sent", 0) != 1 || !refused("NAK PSN Sequence Error") || qp.counters().naks_received != 1)
      bad = fmt::format("expected exactly one NAK PSN Sequence Error; the responder sent {} NAKs, we received {}",
                        pc.value("naks_sent", 0), qp.counters().naks_received);
  } else if (bad.empty() && name == "fault-icrc") {
    if (pc.value("dropped_icrc", 0) != 1 || pc.value("naks_sent", 0) != 0)
      bad = fmt::format("expected one silent drop; the responder dropped {} for ICRC and sent {} NAKs",
                        pc.value("dropped_icrc", 0), pc.value("naks_sent", 0));
  } else if (fatal_fault) {
    const WcStatus want = name == "fault-bad-rkey"     ? WcStatus::remote_access_error
                          : name == "fault-no-receive" ? WcStatus::rnr_retry_exceeded
                                                       : WcStatus::remote_invalid_request;
    const std::string_view nak = name == "fault-bad-rkey"     ? "NAK Remote Access Error"
                                 : name == "fault-no-receive" ? "RNR NAK"
                                                              : "NAK Invalid Request";
    if (done.empty() || done[0].status != want)
      bad = fmt::format("our request completed with '{}', a conforming responder gives '{}'", status_of_first(),
                        wc_status_name(want));
    else if (!refused(nak))
      bad = fmt::format("the responder did not report a {}", nak);
    else if (name != "fault-no-receive" && pr.value("state", "") != "error")
      bad = "the responder's QP did not go to error after its fatal NAK";
  }
  r.ok = bad.empty();
  r.message = r.ok ? (fault ? fmt::format("conforming reaction: {}", info->rule) : std::string("data verified end to end"))
                   : bad;
  return r;
}

// ---------------------------------------------------------------- responder

namespace {

// What the sessions of one serve() share: the memory budget, and the client
// UDP endpoints that live sessions have claimed (the kernel hands a
// datagram to one connected socket only, so two sessions may not share one).
struct Shared {
  int send_fd;  // the unconnected socket on the peer's port: every session sends through it
  MemoryBudget budget;
  std::mutex mu;
  std::set<std::string> claimed;
};

// A client UDP endpoint held for the life of a session.
class Claim {
 public:
  Claim(Shared& s, std::string endpoint) : s_(s), endpoint_(std::move(endpoint)) {
    std::lock_guard g(s_.mu);
    held_ = s_.claimed.insert(endpoint_).second;
  }
  ~Claim() { release(); }
  void release() {
    if (!held_) return;
    std::lock_guard g(s_.mu);
    s_.claimed.erase(endpoint_);
    held_ = false;
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  bool held() const { return held_; }

 private:
  Shared& s_;
  std::string endpoint_;
  bool held_ = false;
};

json serve_one(int cfd, const PeerOptions& o, std::uint64_t index, std::stop_token stop, Shared& shared) {
  json rep = {{"connection", index}, {"ok", false}};
  std::string err;
  LineReader rd{cfd, {}, stop};
  auto hello_msg = rd.read(o.idle_timeout_ms, err);
  if (!hello_msg || hello_msg->is_null()) {
    if (hello_msg) err = stop.stop_requested() ? "the peer was stopped (a signal)" : "no hello within the idle timeout";
    send_json(cfd, {{"error", err}});
    rep["error"] = err;
    return rep;
  }
  auto refuse = [&](std::string why) {
    send_json(cfd, {{"error", why}});
    rep["error"] = why;
    return rep;
  };
  const std::optional<Hello> h = read_hello(*hello_msg, o.max_size, remote_endpoint(cfd), err);
  if (!h) return refuse(err);
  rep["scenario"] = h->scenario;
  QpConfig cfg = o.qp;
  cfg.type = h->type;
  // QPN and PSN unguessable, so that nothing but this session's requester
  // can aim datagrams at it (QPN 0 and 1 are the special QPs).
  cfg.qpn = 2 + static_cast<std::uint32_t>(random_u64() % (kMaxQpn - 1));
  cfg.dest_qpn = h->qpn;
  cfg.rq_psn = h->psn;
  cfg.sq_psn = static_cast<std::uint32_t>(random_u64() & kMaxPsn);
  cfg.pmtu = h->mtu;
  if (const std::string bad = eng::validate(cfg); !bad.empty()) return refuse("hello: " + bad);
  // This session's own socket on the peer's address and port, connected to
  // the client's endpoint: the kernel hands it that endpoint's datagrams and
  // no one else's, whatever other sessions run.
  UdpLink link;
  if (!link.open(o.udp_local, err, true) || (o.raw_receive && !link.raw_receive(err))) return refuse(err);
  if (!link.set_peer(h->udp, err, true)) return refuse("hello: " + err);
  Claim claim(shared, link.peer_name());
  if (!claim.held()) return refuse(fmt::format("hello: udp {} is in use by another session", link.peer_name()));
  // The endpoint and the socket are let go before the session's last word
  // to its client, so that a client that starts its next session from the
  // same endpoint on hearing it finds the endpoint free.
  auto let_go = [&] {
    link.stop_recording();
    link.close();
    claim.release();
  };
  auto refuse_held = [&](std::string why) {
    let_go();
    return refuse(std::move(why));
  };
  if (!link.connect_peer(err)) return refuse_held(err);
  link.send_through(shared.send_fd);
  const std::uint64_t size = h->size, recvs = h->recvs;
  Reservation mem(&shared.budget);
  if (!mem.add(h->buffer + recvs * size + 8))
    return refuse_held(fmt::format("hello: {} octets of buffers are beyond the peer's memory budget ({} of {} in use)",
                              h->buffer + recvs * size + 8, shared.budget.used(), shared.budget.limit()));
  if (!o.pcap_dir.empty() &&
      !link.record(captures::io::pcap_tap((std::filesystem::path(o.pcap_dir) / fmt::format("peer-roce-{}.pcap", index)).string(), err)))
    return refuse_held(err);

  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> data(h->buffer), recv(recvs * size), atom(8);
  fill_pattern(data, h->seed + 1);
  // Virtual addresses as unguessable as the keys: page-aligned, anywhere
  // below 2^47 (the region never wraps), the atomic one 8-aligned.
  const std::uint64_t va = random_u64() & 0x00007FFFFFFFF000ull, atomic_va = random_u64() & 0x00007FFFFFFFFFF8ull;
  const auto dkey = pd.register_mr(data, kRemoteRead | kRemoteWrite | kLocalWrite, va);
  const auto akey = pd.register_mr(atom, kRemoteAtomic | kLocalWrite, atomic_va);
  const auto rkey = pd.register_mr(recv, kLocalWrite);
  QueuePair qp(pd, scq, rcq, cfg);
  for (std::uint64_t i = 0; i < recvs; ++i) qp.post_recv({i, {rkey, i * size, static_cast<std::uint32_t>(size)}});
  const json ready = {{"ready",
                       {{"qpn", cfg.qpn},
                        {"psn", cfg.sq_psn},
                        {"udp", link.local_name()},
                        {"rkey", dkey},
                        {"va", va},
                        {"length", h->buffer},
                        {"atomic_rkey", akey},
                        {"atomic_va", atomic_va},
                        {"qkey", cfg.qkey}}}};
  // What reached the socket before this session's ready belongs to no session.
  rep["stale_datagrams_dropped"] = link.discard_pending();
  const std::uint64_t foreign_before = link.foreign_datagrams();
  if (!send_json(cfd, ready)) {
    rep["error"] = "control connection: cannot send ready";
    return rep;
  }
  // Receive completions, taken as they come (memory stays bounded): their
  // count, the digest of their data in order, Immediate data, source QP.
  std::uint64_t recv_digest = interop::kDigestInit, recv_count = 0;
  std::uint32_t src_qp = 0;
  json imms = json::array(), statuses = json::object();
  auto take_receives = [&] {
    while (auto c = rcq.poll()) {
      const std::string st(wc_status_name(c->status));
      statuses[st] = statuses.value(st, 0) + 1;
      if (c->status != WcStatus::success) continue;
      ++recv_count;
      recv_digest = digest(std::span(recv).subspan(c->wr_id * size, c->byte_len), recv_digest);
      if (c->imm && imms.size() < 16) imms.push_back(*c->imm);
      if (c->src_qp) src_qp = *c->src_qp;
    }
  };
  // Serve until the requester says done (or goes quiet, or we are stopped).
  bool finished = false;
  std::uint64_t requester_sent = 0;
  std::uint64_t last_activity = engine::ib::now_ms();
  std::uint64_t seen = 0, last_control = 0;
  link.run_until(qp, [&] {
    if (stop.stop_requested()) return true;
    take_receives();
    const std::uint64_t t = engine::ib::now_ms();
    if (qp.counters().packets_received != seen) {
      seen = qp.counters().packets_received;
      last_activity = t;
    }
    // The control connection is looked at every few milliseconds, not on
    // every batch of packets.
    if (t - last_control < 2) return false;
    last_control = t;
    pollfd p{cfd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      auto m = rd.read(0, err);
      if (!m) return true;
      if (const auto d = read_done(*m, err)) {
        finished = true;
        requester_sent = d->packets_sent;
        return true;
      }
      if (!err.empty()) return true;  // a done that does not fit its schema ends the session
    }
    return t - last_activity > static_cast<std::uint64_t>(o.idle_timeout_ms);
  }, o.idle_timeout_ms * 4);
  if (!finished && qp.state() == QpState::error && !stop.stop_requested()) {
    // After a fatal NAK our QP is in error; the requester still ends the
    // exchange with its done.
    auto m = rd.read(o.idle_timeout_ms, err);
    if (const auto d = m ? read_done(*m, err) : std::nullopt) {
      finished = true;
      requester_sent = d->packets_sent;
    }
  }
  // A control message that broke its schema (a done that is not
  // {"done": true, "packets_sent": N}, a line that is no JSON object) is
  // answered with the error, not with a result.
  if (!finished && !err.empty() && !stop.stop_requested()) {
    let_go();
    return refuse(err);
  }
  // Datagrams still queued behind the "done" (UC and UD complete at the
  // requester when sent) are taken in, and our last answers go out, before
  // we report.
  link.run_until(qp, [&] { return qp.counters().packets_received >= requester_sent && qp.idle(); }, 500);
  take_receives();
  std::uint64_t atomic_value = 0;
  std::memcpy(&atomic_value, atom.data(), 8);
  const json refusals = refusals_json(qp);
  const json result = {{"recv_count", recv_count},
                       {"recv_digest", recv_digest},
                       {"recv_statuses", statuses},
                       {"immediates", imms},
                       {"src_qp", src_qp},
                       {"buffer_digest", digest(data)},
                       {"atomic_value", atomic_value},
                       {"counters", counters_json(qp.counters(), link)},
                       {"refusals", refusals},
                       {"state", qp.state() == QpState::rts ? "rts" : "error"},
                       {"error", qp.error()}};
  rep["foreign_datagrams_dropped"] = link.foreign_datagrams() - foreign_before;
  let_go();
  send_json(cfd, {{"result", result}});
  rep["ok"] = finished;
  rep["result"] = result;
  if (!finished) rep["error"] = err.empty() ? "the requester went quiet" : err;
  return rep;
}

}  // namespace

namespace {

// The accept loop both servers share: each connection is a session in a
// thread of its own, at most max_sessions at once; beyond, a polite refusal
// (`busy` sends it in the client's protocol, if it has a way to say it).
// `between` runs around every accept. Returns once every session has ended.
void accept_sessions(int listen_fd, const PeerOptions& o, std::stop_token stop,
                     const std::function<void(json)>& report, const std::function<json(int fd, std::uint64_t index)>& serve_one,
                     const std::function<std::string(const std::string& why)>& busy, const std::function<void()>& between) {
  const std::string why = fmt::format("busy: {} sessions in progress", o.max_sessions);
  const std::string answer = busy(why);
  Refuser refuser([&answer](std::string_view) { return std::optional<std::string>(answer); },
                  [&](std::uint64_t index, bool, const std::string& outcome) {
                    report({{"connection", index}, {"ok", false}, {"refused", true}, {"error", why + " (" + outcome + ")"}});
                  });
  SessionPool pool(o.max_sessions, &refuser);
  std::string err;
  for (std::uint64_t n = 0; !stop.stop_requested() && (o.connections == 0 || n < o.connections);) {
    between();
    Fd c = tcp_accept(listen_fd, 200, err);
    if (!c) continue;
    between();
    const std::uint64_t index = n++;
    pool.admit(
        std::move(c),
        [&, index](Fd& f) {
          // Whatever a session throws ends that session, with an error to its
          // client, and never the peer.
          try {
            report(serve_one(f.get(), index));
          } catch (const std::exception& e) {
            const std::string internal = fmt::format("internal error: {}", e.what());
            send_json(f.get(), {{"error", internal}});
            report({{"connection", index}, {"ok", false}, {"error", internal}});
          }
        },
        index);
  }
}

}  // namespace

void serve(int listen_fd, const PeerOptions& o, const std::function<void(const json&)>& on_connection,
           std::stop_token stop) {
  // Datagrams no live session claims reach this socket (it shares the port
  // with the sessions' connected ones); they are dropped and counted.
  UdpLink unclaimed;
  std::string err;
  if (!unclaimed.open(o.udp_local, err, true)) {
    on_connection({{"ok", false}, {"error", err}});
    return;
  }
  std::atomic<std::uint64_t> dropped{0};
  std::mutex report_mu;
  auto report = [&](json j) {
    j["datagrams_for_no_session"] = dropped.load();
    std::lock_guard g(report_mu);
    on_connection(j);
  };
  Shared shared{unclaimed.fd(), MemoryBudget(o.memory_budget), {}, {}};
  accept_sessions(
      listen_fd, o, stop, report, [&](int fd, std::uint64_t index) { return serve_one(fd, o, index, stop, shared); },
      [](const std::string& why) { return interop::safe_dump(json{{"error", why}}) + "\n"; },
      [&] { dropped += unclaimed.discard_pending(); });
}

// ---------------------------------------------------------------- perftest

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

}  // namespace

RunResult run_perftest_client(std::string_view server, std::string_view program, const RunOptions& o) {
  RunResult r;
  r.scenario = std::string(program);
  const auto verb = perftest_verb(program);
  if (!verb) {
    r.message = fmt::format("perftest program '{}': {}", program, kPerftestPrograms);
    return r;
  }
  if (!o.fault.empty() && o.fault != "fault-psn-gap" && o.fault != "fault-icrc") {
    r.message = fmt::format("fault '{}' against perftest: fault-psn-gap or fault-icrc (the faults a conforming "
                            "responder recovers from)", o.fault);
    return r;
  }
  if (const auto bad = perftest_type_problem(*verb, o.qp.type, program); !bad.empty()) {
    r.message = bad;
    return r;
  }
  if (!o.fault.empty() && o.qp.type != QpType::rc) {
    r.message = fmt::format("fault '{}' against perftest: RC only (over UC and UD nothing is resent)", o.fault);
    return r;
  }
  if (o.qp.type != QpType::rc) r.scenario += fmt::format(".{}", qp_type_name(o.qp.type));
  if (!o.fault.empty()) r.scenario += "." + o.fault;
  const char* what = *verb == PerftestVerb::read     ? "READ"
                     : *verb == PerftestVerb::send   ? "SEND"
                     : *verb == PerftestVerb::atomic ? "FETCH_ADD"
                                                     : "WRITE";
  const std::uint32_t size = *verb == PerftestVerb::atomic ? 8 : o.size ? o.size : 65536;
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
  std::uint64_t posted = 0, completed = 0;
  std::string bad;
  const auto t0 = Clock::now();
  const bool ran = link.run_until(qp, [&] {
    while (auto c = run.scq.poll()) {
      ++completed;
      if (c->status != WcStatus::success && bad.empty())
        bad = fmt::format("{} {} completed with '{}'", what, c->wr_id, wc_status_name(c->status));
    }
    while (posted < iters && posted - completed < o.window) {
      SendWr w{};
      w.wr_id = posted++;
      w.op = *verb == PerftestVerb::read     ? WrOpcode::read
             : *verb == PerftestVerb::send   ? WrOpcode::send
             : *verb == PerftestVerb::atomic ? WrOpcode::atomic_fetch_add
                                             : WrOpcode::write;
      w.add_swap = 1;
      w.local = {run.key, 0, size};
      w.remote_stag = run.theirs.rkey;
      w.remote_to = run.theirs.vaddr;
      w.remote_qpn = run.theirs.qpn;
      w.remote_qkey = kPerftestQkey;
      qp.post_send(w);
    }
    return completed >= iters;
  }, o.timeout_ms);
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
    if (k.retransmitted == 0 && bad.empty()) bad = fmt::format("{}: the lost packet was never resent", o.fault);
    if (o.fault == "fault-psn-gap" && k.naks_received == 0 && bad.empty())
      bad = "fault-psn-gap: the responder sent no NAK for the gap (a PSN Sequence Error NAK is required)";
    reaction = fmt::format("; reaction: {} NAK(s), {} timeout(s), {} packet(s) resent", k.naks_received, k.timeouts,
                           k.retransmitted);
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

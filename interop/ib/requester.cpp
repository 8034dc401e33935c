// Our InfiniBand engine as the requester of a scenario over RoCEv2, against our responder (docs/interop.md).
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
#include "interop/channel.hpp"
#include "interop/control.hpp"
#include "interop/ib/control.hpp"
#include "interop/ib/detail.hpp"
#include "interop/ib/perftest.hpp"
#include "interop/pattern.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::ib {

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
  const bool sends = name == "send" || name == "ud-send" || name == "fault-no-receive" || name == "fault-duplicate-send" ||
                     name == "fault-qkey";
  const bool writes = name == "write" || name == "uc-write" || name == "fault-psn-gap" || name == "fault-icrc" ||
                      name == "fault-duplicate" || name == "fault-pkey" || name == "fault-qp-type" || name == "fault-opseq-uc";
  const bool reads = name == "read" || name == "fault-duplicate-read";
  const bool atomics = name == "atomic" || name == "fault-duplicate-atomic";
  // fault-qkey: the SEND that carries a Q_Key not the responder's.
  constexpr std::uint64_t kBadQkeyMessage = 1;
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
  ControlChannel rd(ctl.get());
  if (!send_message(ctl.get(), hello)) {
    r.message = "control connection: cannot send the hello";
    return r;
  }
  auto ready_msg = rd.receive(o.timeout_ms, err);
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
  if (writes) {
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
    // fault-opseq-uc: the first WRITE went as a Middle and must have been dropped.
    const std::size_t skip = name == "fault-opseq-uc" ? size : 0;
    std::memcpy(peer_view.data() + skip, src.data() + skip, std::min<std::size_t>(iters, slots) * size - skip);
    r.bytes = iters * size;
  } else if (reads) {
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
      w.remote_qkey = name == "fault-qkey" && i == kBadQkeyMessage ? qkey ^ 0x0100 : qkey;
      return w;
    });
    for (std::uint64_t i = 0; i < iters; ++i)
      if (name != "fault-qkey" || i != kBadQkeyMessage)
        expect_recv_digest = digest(std::span(src).subspan((i % slots) * size, size), expect_recv_digest);
    r.bytes = iters * size;
  } else if (atomics) {
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
  } else if (name == "fault-zero-length-rkey") {
    // Neither names anything of the responder's: an R_Key it never issued,
    // an address near the top of the 64-bit space.
    ran = pump(2, [&](std::uint64_t i) {
      SendWr w{};
      w.wr_id = i;
      w.op = i == 0 ? WrOpcode::write : WrOpcode::read;
      w.local = {i == 0 ? src_key : sink_key, 0, 0};
      w.remote_stag = rkey ^ 0x5a5a00;
      w.remote_to = ~0ull - 15;
      return w;
    });
  } else if (name == "fault-bad-rkey" || name == "fault-oversize" || name == "fault-wrong-pad" || name == "fault-opseq") {
    ran = pump(iters, [&](std::uint64_t i) {
      SendWr w{};
      w.wr_id = i;
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
  const std::optional<WcStatus> fatal = fatal_completion(name);
  const bool fatal_fault = fatal.has_value();
  if (!ran && !fatal_fault) {
    r.message = fmt::format("{}: {}", name, link.error());
    r.counters = counters_json(qp.counters(), link);
    return r;
  }
  // The responder's account.
  if (!send_message(ctl.get(), {{"done", true}, {"packets_sent", qp.counters().packets_sent}})) {
    r.message = "control connection: cannot send done";
    return r;
  }
  auto res = rd.receive(o.timeout_ms, err);
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
  // The faulty request is the last one posted; what came before it must have succeeded.
  const Completion* faulty = done.empty() ? nullptr : &done.back();
  for (const auto& c : done)
    if (c.status != WcStatus::success) {
      faulty = &c;
      break;
    }
  auto status_of_first = [&] { return faulty ? std::string(wc_status_name(faulty->status)) : std::string("no completion"); };
  if (bad.empty() && !fatal_fault) bad = want_success();
  if (bad.empty()) {
    if (writes) {
      if (pr.value("buffer_digest", 0ull) != digest(peer_view)) bad = "the responder's buffer does not hold what we wrote";
    } else if (sends) {
      const std::uint64_t want = name == "fault-qkey" ? iters - 1 : iters;
      if (name != "fault-no-receive" && pr.value("recv_count", 0ull) != want)
        bad = fmt::format("the responder received {} messages, {} should have arrived", pr.value("recv_count", 0ull), want);
      else if (name != "fault-no-receive" && pr.value("recv_digest", 0ull) != expect_recv_digest)
        bad = "the responder's received data differs from what we sent";
      else if (name == "ud-send" && pr.value("src_qp", 0u) != cfg.qpn)
        bad = fmt::format("the responder saw source QP {}, ours is {}", pr.value("src_qp", 0u), cfg.qpn);
    } else if (atomics) {
      if (pr.value("atomic_value", 0ull) != 0xdeadu) bad = fmt::format("the responder's atomic holds {}", pr.value("atomic_value", 0ull));
    }
  }
  // The reactions the fault-* scenarios require.
  if (bad.empty() && name == "fault-psn-gap") {
    if (pc.value("naks_sent", 0) != 1 || !refused("NAK PSN Sequence Error") || qp.counters().naks_received != 1)
      bad = fmt::format("expected exactly one NAK PSN Sequence Error; the responder sent {} NAKs, we received {}",
                        pc.value("naks_sent", 0), qp.counters().naks_received);
  } else if (bad.empty() && (name == "fault-icrc" || name == "fault-pkey" || name == "fault-qp-type" ||
                             name == "fault-opseq-uc" || name == "fault-qkey")) {
    // One silent drop: counted where the responder counts it, no NAK, and
    // (RC) recovered by our retransmission timer.
    const char* counter = name == "fault-icrc" ? "dropped_icrc" : name == "fault-pkey" || name == "fault-qp-type" ? "dropped_header"
                                                                                                             : "dropped_uc_ud";
    if (pc.value(counter, 0) != 1 || pc.value("naks_sent", 0) != 0)
      bad = fmt::format("expected one silent drop; the responder counted {} in {} and sent {} NAKs", pc.value(counter, 0),
                        counter, pc.value("naks_sent", 0));
    else if (info->type == QpType::rc && qp.counters().retransmitted == 0)
      bad = "the dropped packet was never resent";
  } else if (bad.empty() && name.starts_with("fault-duplicate")) {
    const auto& k = qp.counters();
    if (pc.value("duplicates", 0) != 1 || pc.value("naks_sent", 0) != 0)
      bad = fmt::format("the responder counted {} duplicate requests and sent {} NAKs; one duplicate and no NAK were due",
                        pc.value("duplicates", 0), pc.value("naks_sent", 0));
    else if (name == "fault-duplicate-read" && k.duplicates == 0)
      bad = "the responder did not answer the duplicate READ request again";
    else if (name == "fault-duplicate-atomic" && (k.atomic_replays != 1 || k.atomic_replays_differing != 0))
      bad = fmt::format("the duplicate Atomic was answered {} times again, {} of them with another original value",
                        k.atomic_replays, k.atomic_replays_differing);
  } else if (bad.empty() && name == "fault-zero-length-rkey") {
    if (pc.value("naks_sent", 0) != 0 || !pr.value("refusals", json::array()).empty())
      bad = fmt::format("the responder refused a zero-length request ({} NAKs): {}", pc.value("naks_sent", 0),
                        pr.value("refusals", json::array()).dump());
  } else if (fatal_fault) {
    const WcStatus want = *fatal;
    const std::string_view nak = name == "fault-bad-rkey"     ? "NAK Remote Access Error"
                                 : name == "fault-no-receive" ? "RNR NAK"
                                                              : "NAK Invalid Request";
    if (!faulty || faulty->status != want || faulty != &done.back())
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


}  // namespace rdmaconf::interop::ib

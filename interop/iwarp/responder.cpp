// Our engine as the responder: each connection in its own thread, the
// scenario named by the initiator's hello.
#include <mutex>

#include "captures/io/pcap_tap.hpp"
#include "interop/iwarp/session.hpp"

namespace rdmaconf::interop::iwarp {

using namespace detail;

namespace {

// ---------------------------------------------------------- responder side

struct Responder {
  Session& s;
  const PeerOptions& o;
  nlohmann::json& rep;
  Reservation& mem;

  bool fail(std::string_view step) {
    rep["message"] = s.why(step);
    return false;
  }

  // With a fault planted in our Reply the initiator must close the
  // connection, with no FPDU and no Terminate (ReplyFault's rule).
  bool faulty_reply() {
    const ReplyFault* f = nullptr;
    for (const auto& x : reply_faults())
      if (x.frame == o.qp.faults.reply) f = &x;
    if (!f) return false;
    rep["scenario"] = fmt::format("reply-fault {}", f->name);
    const bool withheld = f->frame == Faults::Frame::withheld;
    const auto t0 = Clock::now();
    s.link->run_until([&] { return s.dead() || s.qp.fpdus_received() > 0 || s.qp.terminate_received().has_value(); },
                      withheld ? std::max(s.timeout_ms, kStartupWaitMs) : s.timeout_ms);
    if (withheld && !s.link->ended()) {  // a SHOULD: not met, not failed
      rep["should_not_met"] = {fmt::format("RFC 5044 §7.1.2 rule 10: no timeout on the missing MPA Reply within {} s",
                                           std::max(s.timeout_ms, kStartupWaitMs) / 1000)};
      rep["message"] = fmt::format("the initiator still held the connection without a Reply; SHOULD not met: {}",
                                   rep["should_not_met"][0].get<std::string>());
      return true;
    }
    if (f->expect) {  // a Terminate first, then the close
      const auto& t = s.qp.terminate_received();
      if (!t) return fail(fmt::format("waiting for the initiator's Terminate {} after {}", f->expect->text(), f->summary));
      if (!f->expect->matches(*t)) {
        rep["message"] = fmt::format("the initiator answered {} with Terminate {}/{}/{:#04x}; expected {} ({})", f->summary,
                                     t->layer, t->etype, t->code, f->expect->text(), f->rule);
        return false;
      }
      s.link->run_until([&] { return s.link->ended(); }, s.timeout_ms);
      if (!s.link->ended()) return fail(fmt::format("waiting for the initiator to close after its Terminate"));
      rep["message"] = fmt::format("the initiator answered {} with Terminate {} and closed, as required", f->summary,
                                   f->expect->text());
      return true;
    }
    if (s.qp.terminate_received()) {
      rep["message"] = fmt::format("the initiator answered {} with a Terminate; it must close without one ({})", f->summary, f->rule);
      return false;
    }
    if (s.qp.fpdus_received() > 0) {
      rep["message"] = fmt::format("the initiator took {}: it sent an FPDU; it must close the connection ({})", f->summary, f->rule);
      return false;
    }
    if (!s.link->peer_eof() && !s.link->peer_reset()) return fail(fmt::format("waiting for the initiator to close after {}", f->summary));
    rep["message"] = fmt::format("the initiator {} the connection after {}, as required", s.link->peer_reset() ? "reset" : "closed",
                                 f->summary);
    if (withheld)
      rep["message"] = fmt::format("the initiator {} the connection {:.1f} s after its Request, with no Reply sent: a startup "
                                   "timeout, as RFC 5044 §7.1.2 rule 10 recommends",
                                   s.link->peer_reset() ? "reset" : "closed",
                                   std::chrono::duration<double>(Clock::now() - t0).count());
    return true;
  }

  bool result(std::optional<std::size_t> bad_at) {
    Ctl m;
    m.kind = kResult;
    m.status = bad_at ? kMismatch : kOk;
    m.to = bad_at.value_or(0);
    if (bad_at) rep["message"] = fmt::format("data differ at octet {} of our buffer", *bad_at);
    return s.send(m.encode()) && !bad_at;
  }

  bool wait_done() {
    const auto m = s.receive();
    if (!m) return fail("waiting for done");
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kDone) {
      rep["message"] = "expected the initiator's done message";
      return false;
    }
    return true;
  }

  // The fault of terminate-* scenario `f`, planted by post() in the
  // buffers an rping client advertised; then its Terminate (layer, type,
  // code, copied headers) and the close are required.
  bool rping_fault(const ScenarioInfo& f, const std::function<void()>& post) {
    rep["scenario"] = fmt::format("rping {}", f.name);
    post();
    const SentSegment bad = s.qp.last_segment_sent();
    s.link->run_until([&] { return s.dead() || s.qp.terminate_received().has_value(); }, s.timeout_ms);
    const auto& t = s.qp.terminate_received();
    const auto& e = *f.expect;
    if (!t) return fail(fmt::format("waiting for Terminate {} after the fault of {} (planted in the buffers the initiator advertised)", e.text(), f.name));
    std::string msg = fmt::format("the initiator answered the fault of {} (planted in the buffers it advertised) with "
                                  "Terminate {}/{}/{:#04x}", f.name, t->layer, t->etype, t->code);
    if (!e.matches(*t)) {
      rep["message"] = fmt::format("{}; expected {} ({})", msg, e.text(), f.rule);
      return false;
    }
    std::vector<std::string> should_not_met;
    if (const std::string wrong = copied_headers_problem(*t, bad, should_not_met); !wrong.empty()) {
      rep["message"] = fmt::format("{}; {}", msg, wrong);
      return false;
    }
    s.link->run_until([&] { return s.link->peer_eof() || s.link->peer_reset(); }, s.timeout_ms);
    if (!s.link->peer_eof() && !s.link->peer_reset()) {
      rep["message"] = msg + ", but did not close the connection";
      return false;
    }
    msg += " and closed, as required";
    for (const auto& n : should_not_met) msg += fmt::format("; SHOULD not met: {}", n);
    if (!should_not_met.empty()) rep["should_not_met"] = should_not_met;
    rep["message"] = msg;
    return true;
  }

  // rping's server: Read the advertised buffer, say so, Write it back to the
  // next advertised buffer, say so; until the client closes.
  bool rping(Bytes first) {
    const ScenarioInfo* fault = o.rping_fault.empty() ? nullptr : find_scenario(o.rping_fault);
    // The sink grows to the largest buffer advertised (up to --max-size and
    // the peer's memory budget), not beyond; null when the budget says no.
    std::vector<std::byte>* sink_p = nullptr;
    std::uint32_t stag = 0;
    auto sink_for = [&](std::uint32_t len) -> std::vector<std::byte>* {
      if (sink_p && sink_p->size() >= len) return sink_p;
      if (!mem.add(len - (sink_p ? sink_p->size() : 0))) return nullptr;
      if (sink_p) {
        s.pd.deregister(stag);
        s.release(*sink_p);
      }
      sink_p = &s.buffer(len);
      stag = s.pd.register_mr(*sink_p, kLocalWrite, random_to());
      return sink_p;
    };
    const std::array<std::byte, kRpingInfo> go{};
    std::vector<std::byte> m(first.begin(), first.end());
    std::uint64_t pings = 0;
    for (;;) {
      if (m.size() != kRpingInfo) {
        rep["message"] = fmt::format("ping {}: expected a 16-octet buffer advertisement, got {} octets", pings, m.size());
        return false;
      }
      const std::uint64_t addr = protocols::be64(m, 0);
      const std::uint32_t rkey = protocols::be32(m, 8), len = protocols::be32(m, 12);
      if (len > o.max_size) {
        rep["message"] = fmt::format("ping {}: buffer of {} octets exceeds our limit {}", pings, len, o.max_size);
        return false;
      }
      if (!sink_for(len)) {
        rep["message"] = fmt::format("ping {}: a buffer of {} octets is beyond the peer's memory budget", pings, len);
        return false;
      }
      auto& sink = *sink_p;
      SendWr rd{kDataBase, WrOpcode::read, {stag, 0, len}};
      rd.remote_stag = rkey;
      rd.remote_to = addr;
      if (fault && fault->code == kTermReadBounds)  // 32 octets in, 32 past the end
        return rping_fault(*fault, [&] {
          rd.local.length = std::min<std::uint32_t>(64, len);
          rd.remote_to = addr + len - rd.local.length / 2;
          s.post(rd);
        });
      if (fault && fault->code == kTermOrd) {
        if (s.qp.effective_ord() == 0) {
          rep["message"] = "terminate-ord: the negotiated ORD is 0, so there is no IRD of the client's to go one past";
          return false;
        }
        return rping_fault(*fault, [&] {  // one Read Request more than the client's IRD allows in flight
          s.qp.faults().ignore_ord = true;
          for (unsigned k = 0; k <= s.qp.effective_ord(); ++k) {
            rd.wr_id = kDataBase + k;
            s.post(rd);
          }
        });
      }
      const std::uint64_t target = s.completed + 1;
      s.post(rd);
      if (!s.wait([&] { return s.completed >= target; })) return fail(fmt::format("ping {}: RDMA Read", pings));
      if (!s.send(go)) return fail("go-ahead after the Read");
      const auto w = s.receive();
      if (!w || w->size() != kRpingInfo) return fail(fmt::format("ping {}: waiting for the sink advertisement", pings));
      const std::uint32_t wlen = std::min<std::uint32_t>(
          protocols::be32(*w, 12), static_cast<std::uint32_t>(strnlen(reinterpret_cast<const char*>(sink.data()), len) + 1));
      SendWr wr{kDataBase, WrOpcode::write, {stag, 0, std::min(wlen, len)}};
      wr.remote_stag = protocols::be32(*w, 8);
      wr.remote_to = protocols::be64(*w, 0);
      if (fault && fault->code == kTermBounds)  // 32 octets in, 32 past the end of the sink
        return rping_fault(*fault, [&] {
          const std::uint32_t sink_len = protocols::be32(*w, 12);
          wr.local.length = std::min<std::uint32_t>(64, len);
          wr.remote_to += sink_len - wr.local.length / 2;
          s.post(wr);
        });
      const std::uint64_t target2 = s.completed + 1;
      s.post(wr);
      if (!s.wait([&] { return s.completed >= target2; })) return fail(fmt::format("ping {}: RDMA Write", pings));
      if (!s.send(go)) return fail("go-ahead after the Write");
      ++pings;
      rep["iterations"] = pings;
      const auto next = s.receive();
      if (!next) {  // the client is done when it closes
        if (s.link->peer_eof() && s.failure.empty() && !s.qp.terminate_received()) return true;
        return fail("waiting for the next ping");
      }
      m = *next;
    }
  }

  bool scenario(const Ctl& h) {
    const ScenarioInfo* info = nullptr;
    for (const auto& i : scenarios())
      if (i.code == h.scenario) info = &i;
    Ctl ready;
    ready.kind = kReady;
    ready.scenario = h.scenario;
    if (!info || h.size > o.max_size || (h.size == 0 && !info->expect) || info->code == kRping) {
      ready.status = kRefused;
      s.send(ready.encode());
      rep["message"] = fmt::format("refused scenario {} size {}", h.scenario, h.size);
      return false;
    }
    rep["scenario"] = info->name;
    rep["size"] = h.size;
    rep["iterations"] = h.iterations;
    const bool term = info->expect.has_value();
    const std::uint32_t size = h.size;
    // Receive slots for what follows (none when the scenario wants "no
    // buffer"); the send-lat pings come one at a time, each after our answer
    // to the one before, which we send after reposting its slot: one slot of
    // their size (one credit) is all they need. We send only control
    // messages from our own slots.
    const bool send_lat = info->code == kSendLat;
    const unsigned count = send_lat ? 1 : kSlots;
    ready.credits = static_cast<std::uint16_t>(info->code == kTermNoBuffer ? 0 : count);
    ready.ird = s.qp.effective_ird();
    const std::uint32_t slots = bw_slots(size, h.iterations);
    // The write target and the read-only source.
    const std::size_t rw_len = info->code == kWriteBw ? std::size_t(size) * slots : term ? 4096 : send_lat ? 0 : size;
    const std::size_t ro_len = info->code == kReadBw ? std::size_t(size) * slots : term ? 256 * 1024 : 0;
    // All this session will hold (the latency tests add the message they
    // send, which is also the reference a ping is compared with: the two
    // differ only in the stamped octets, which the comparison leaves out),
    // taken from the peer's budget before anything is allocated.
    const std::size_t lat = send_lat || info->code == kWriteLat ? std::size_t(size) : 0;
    if (!mem.add(rw_len + ro_len + lat + std::max<std::size_t>(send_lat ? size : 0, kMinSlot) * count + kMinSlot * kSlots)) {
      ready.status = kRefused;
      s.send(ready.encode());
      rep["message"] = fmt::format("refused scenario {} size {}: beyond the peer's memory budget", h.scenario, h.size);
      return false;
    }
    s.setup_slots(send_lat ? size : kMinSlot, info->code == kTermNoBuffer ? 0 : count, count, kMinSlot);
    ready.recv_size = static_cast<std::uint32_t>(s.slot_size);
    auto& rw = s.buffer(rw_len);
    auto& ro = s.buffer(ro_len);
    for (std::uint32_t k = 0; info->code == kReadBw && k < slots; ++k)
      fill_pattern(std::span(ro).subspan(std::size_t(k) * size, size), k + 1);
    // Canaries: what a terminate-* scenario sends may not land in our
    // buffers (nothing the catalog sends there is legal), so they are filled
    // with a pattern that must still be there at the end.
    if (term) {
      fill_pattern(rw, kCanarySeed);
      fill_pattern(ro, kCanarySeed + 1);
    }
    ready.to = random_to();
    ready.stag = s.pd.register_mr(rw, kRemoteWrite | kLocalWrite | (info->needs_rfc7306 ? unsigned{kRemoteAtomic} : 0u), ready.to);
    ready.len = static_cast<std::uint32_t>(rw_len);
    if (ro_len) {
      ready.to_ro = random_to();
      ready.stag_ro = s.pd.register_mr(ro, kRemoteRead, ready.to_ro);
      ready.len_ro = static_cast<std::uint32_t>(ro_len);
    }
    if (!s.send(ready.encode())) return fail("sending ready");
    const std::uint64_t iters = h.iterations;
    switch (info->code) {
      case kWriteBw: {
        if (!wait_done()) return false;
        for (std::uint32_t k = 0; k < std::min<std::uint64_t>(slots, iters); ++k)
          if (const auto at = check_pattern(std::span(rw).subspan(std::size_t(k) * size, size), k + 1))
            return result(std::size_t(k) * size + *at);
        return result(std::nullopt);
      }
      case kReadBw:
      case kZeroLength:
        return wait_done() && result(std::nullopt);
      case kAtomic: {
        if (!wait_done()) return false;
        std::uint64_t word;
        std::memcpy(&word, rw.data(), 8);
        if (word != kAtomicFinal) {
          (void)result(0);
          rep["message"] = fmt::format("after the Atomic Operations our word holds {:#018x}, expected {:#018x}", word, kAtomicFinal);
          return false;
        }
        return result(std::nullopt);
      }
      case kImmediate: {
        const std::uint64_t batch = std::max<std::uint16_t>(ready.credits, 1);
        const std::array<std::byte, 8> ack{};
        for (std::uint64_t i = 0; i < iters; ++i) {
          const auto c = s.next_receive();
          if (!c) return fail(fmt::format("waiting for Immediate Data {}", i));
          if (c->op != WcOpcode::recv_immediate || c->imm != immediate_value(i)) {
            (void)result(i);
            rep["message"] = fmt::format("message {} is not Immediate Data {:#018x} (RFC 7306 §6.3: in order, one per buffer)",
                                         i, immediate_value(i));
            return false;
          }
          if (((i + 1) % batch == 0 || i + 1 == iters) && !s.send(ack)) return fail("acknowledging Immediate Data");
        }
        return wait_done() && result(std::nullopt);
      }
      case kSendLat: {
        auto& msg = s.buffer(size);
        fill_pattern(msg, kSeedLat);
        const auto stag = s.pd.register_mr(msg, 0);
        for (std::uint64_t i = 0; i < iters; ++i) {
          const auto got = s.receive_in_place();
          if (!got) return fail(fmt::format("waiting for ping {}", i));
          const bool same = same_message(got->second, msg, i, true);
          s.repost(got->first);
          if (!same) return result(i);
          stamp_send(msg, i);
          if (!s.post({kDataBase + i, WrOpcode::send, {stag, 0, size}})) return fail("Send");
        }
        return wait_done() && result(std::nullopt);
      }
      case kWriteLat: {
        auto& src = s.buffer(size);
        fill_pattern(src, kSeedLat);
        const auto stag = s.pd.register_mr(src, 0);
        for (std::uint64_t i = 0; i < iters; ++i) {
          if (!s.wait([&] { return rw.back() == write_tag(i); })) return fail(fmt::format("waiting for ping {}", i));
          if (!same_message(Bytes(rw), src, i, false)) return result(i);
          src.back() = write_tag(i);
          SendWr w{kDataBase + i, WrOpcode::write, {stag, 0, size}};
          w.remote_stag = h.stag;
          w.remote_to = h.to;
          if (!s.post(w)) return fail("RDMA Write");
        }
        return wait_done() && result(std::nullopt);
      }
      default:  // terminate-*: the initiator breaks a rule; we must answer
        s.link->run_until([&] { return s.dead(); }, s.timeout_ms);
        if (!s.qp.terminate_sent()) return fail("waiting for the initiator's violation");
        rep["message"] = fmt::format("sent Terminate {}/{}/{:#04x}: {}", s.qp.terminate_sent()->layer,
                                     s.qp.terminate_sent()->etype, s.qp.terminate_sent()->code,
                                     s.qp.terminate_sent()->reason);
        if (const auto at = check_pattern(rw, kCanarySeed)) {
          rep["message"] = fmt::format("{}; yet octet {} of our buffer changed (nothing of a faulty message may be placed)",
                                       rep["message"].get<std::string>(), *at);
          return false;
        }
        if (const auto at = check_pattern(ro, kCanarySeed + 1)) {
          rep["message"] = fmt::format("{}; yet octet {} of our read-only buffer changed", rep["message"].get<std::string>(), *at);
          return false;
        }
        rep["canaries"] = "intact";
        return true;
    }
  }
};


}  // namespace


namespace detail {

nlohmann::json serve_one(Fd fd, const PeerOptions& o, const std::string& pcap, MemoryBudget* budget, std::stop_token stop) {
  nlohmann::json rep = {{"scenario", nullptr}, {"ok", false}};
  QpConfig cfg = o.qp;
  cfg.initiator = false;
  Session s(cfg, std::move(fd), o.wait, o.idle_timeout_ms);
  s.stop = stop;
  sockaddr_storage peer{};
  socklen_t pl = sizeof peer;
  ::getpeername(s.link->fd(), reinterpret_cast<sockaddr*>(&peer), &pl);
  rep["peer"] = endpoint_name(peer);
  std::string err;
  if (!pcap.empty() && !s.link->record(captures::io::pcap_tap(pcap, err))) rep["pcap_error"] = err;
  if (!pcap.empty()) rep["pcap"] = pcap;
  s.setup_slots(kMinSlot, 1);
  s.qp.connect();
  Reservation mem(budget);
  Responder resp{s, o, rep, mem};
  bool ok = false;
  if (o.qp.faults.reply != Faults::Frame::none) {
    ok = resp.faulty_reply();
  } else if (!s.wait([&] { return s.qp.state() == QpState::connected; })) {
    ok = resp.fail("MPA setup");
    ok = ok || (o.qp.reject && s.qp.state() == QpState::closed);
    if (o.qp.reject) rep["message"] = "rejected the MPA Request, as configured";
  } else if (const auto first = s.receive_in_place(); !first) {
    resp.fail("waiting for the first message");
  } else if (first->second.size() == kRpingInfo) {
    // rping goes on in the slots it started in; a hello sets up its own.
    rep["scenario"] = "rping";
    const std::vector<std::byte> m(first->second.begin(), first->second.end());
    s.repost(first->first);
    ok = resp.rping(m);
  } else if (const auto h = Ctl::decode(first->second); h && h->kind == kHello) {
    ok = resp.scenario(*h);
  } else {
    rep["message"] = fmt::format("the first message ({} octets) is neither an rping advertisement nor a hello",
                                 first->second.size());
  }
  rep["negotiated"] = s.negotiated();
  rep["terminate_sent"] = terminate_json(s.qp.terminate_sent());
  rep["terminate_received"] = terminate_json(s.qp.terminate_received());
  // (Stopped: the client is not waited for beyond a moment.)
  s.link->close(stop.stop_requested() ? 200 : std::min(o.idle_timeout_ms, 5000));
  rep["ok"] = ok;
  return rep;
}


// A connection beyond max_sessions: once its MPA Request is in, a
// rejecting MPA Reply that says why (the Reply our responder would give,
// with R set and the reason as private data); a client whose first octets
// are no Request key is closed without one.
std::optional<std::string> busy_reply(std::string_view received, const PeerOptions& o) {
  const Bytes in{reinterpret_cast<const std::byte*>(received.data()), received.size()};
  if (in.empty()) return std::nullopt;
  if (!pi::looks_like_mpa_key(in, pi::MpaFrameKind::request)) return std::string();
  if (in.size() < pi::kMpaRr.size || in.size() < pi::kMpaRr.size + protocols::be16(in, 18)) return std::nullopt;
  const auto request = pi::decode_mpa_rr(in);
  if (!request) return std::string();
  auto plan = engine::iwarp::plan_reply(*request, o.qp);
  if (!plan.problem.empty()) return std::string();
  const std::string why = fmt::format("busy: {} sessions in progress", o.max_sessions);
  plan.params.reject = true;
  plan.params.private_data.assign(reinterpret_cast<const std::byte*>(why.data()), reinterpret_cast<const std::byte*>(why.data()) + why.size());
  std::vector<std::byte> reply;
  pi::encode_mpa_rr(reply, plan.params);
  return std::string(reinterpret_cast<const char*>(reply.data()), reply.size());
}

}  // namespace detail

void serve(int listen_fd, const PeerOptions& o, const std::function<void(const nlohmann::json&)>& on_connection,
           std::stop_token stop) {
  std::mutex report_mu;
  auto report = [&](const nlohmann::json& j) {
    std::lock_guard g(report_mu);
    on_connection(j);
  };
  MemoryBudget budget(o.memory_budget);
  Refuser refuser([&o](std::string_view got) { return busy_reply(got, o); }, refusal_report(report, o));
  Acceptor acceptor(listen_fd, "serve iwarp", o.log);
  SessionPool pool(o.max_sessions, &refuser, o.max_per_source);  // last: its sessions use the above
  for (std::uint64_t n = 0; (o.connections == 0 || n < o.connections) && !stop.stop_requested();) {
    Fd fd = acceptor.next(200);
    if (!fd) continue;
    ++n;
    const std::string pcap = o.pcap_dir.empty() ? "" : fmt::format("{}/peer-{}.pcap", o.pcap_dir, n);
    pool.admit(
        std::move(fd),
        [&, pcap](Fd& f) {
          // Whatever a session throws ends that session (its connection
          // closed) and never the peer.
          try {
            report(serve_one(std::move(f), o, pcap, &budget, stop));
          } catch (const std::exception& e) {
            report({{"scenario", nullptr}, {"ok", false}, {"message", fmt::format("internal error: {}", e.what())}});
          }
        },
        n);
  }
}

}  // namespace rdmaconf::interop::iwarp

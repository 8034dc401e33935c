// RFC 5040 (RDMAP) §4 header formats, §5 data transfer (queues, Read
// Request/Response), §7 error management (Terminate); RFC 7306 extensions
// (Immediate Data, Atomic operations).
#include <algorithm>
#include <array>
#include <deque>
#include <optional>

#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"
#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

bool is_invalidate(std::uint8_t op) { return rdmap_op(op).invalidate; }

// RDMA Read Requests a side has sent and not yet seen answered, oldest first.
struct Reads : Orphans {
  struct Req {
    std::uint32_t stag;
    std::uint64_t to;
    std::uint32_t size;
  };
  std::deque<Req> outstanding[2];  // by the direction that sent the Request
  // The response being received in a direction (answering the other side's oldest Request).
  bool active[2] = {false, false};
  Req cur[2]{};
  std::uint64_t got[2] = {0, 0};
};

// Atomic Requests a side has sent and not yet seen answered, by identifier, oldest first.
struct AtomicIds : Orphans {
  std::deque<std::uint64_t> open[2];
};

// Requests each side sent and no answer has yet come for, by kind (0 Read, 1
// Atomic), as the stream offsets where they end; how far each side had
// received the other's stream; whether a Terminate was sent.
struct Unanswered : CaseState {
  struct Request {
    std::uint64_t end, first_frame, last_frame;  // where it ends in its stream, the frames it came in
  };
  std::deque<Request> open[2][2];
  std::uint64_t acked[2] = {0, 0};
  bool terminated = false;
};

// The first Terminate of a connection.
struct TerminateSeen : CaseState {
  std::uint64_t frame = 0;
  int dir = 0;
  TerminateSeen() = default;
  TerminateSeen(std::uint64_t f, int d) : frame(f), dir(d) {}
};

// Read Requests each side sent and Read Responses it received, for the IRD/ORD limit.
struct ReadCounts : CaseState {
  std::uint64_t sent[2] = {0, 0}, received[2] = {0, 0};  // by the requester's direction
  std::deque<std::uint64_t> completed[2];  // stream ends of Read Responses sent in a direction, not yet acknowledged
};

// Keeps the outstanding-Read bookkeeping; returns the segment's role.
enum class ReadRole { none, request, response };
ReadRole track_reads(Reads& r, const iwarp::FpduEvent& e, const Seg& g, const DdpSegment& s) {
  if (!g.tagged() && g.opcode() == kOpReadRequest && s.body) {
    r.outstanding[e.dir].push_back({static_cast<std::uint32_t>(s.body->get(ReadRequest::sink_stag)),
                                    s.body->get(ReadRequest::sink_to),
                                    static_cast<std::uint32_t>(s.body->get(ReadRequest::size))});
    return ReadRole::request;
  }
  if (g.tagged() && g.opcode() == kOpReadResponse) return ReadRole::response;
  return ReadRole::none;
}

}  // namespace

void add_iwarp_rdmap_cases(IwarpCases& k) {
  on_segments(add(k, {"iwarp.rdmap.version", "RFC 5040", "§4.1; RFC 5041 §5.2; RFC 5044 §C.1; RFC 7306 §4.1", Level::must,
                      "Every RDMAP message carries RDMAP version 1 (RV = 01b)."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, g.get(DdpTagged::rv) == 1, "RV 1", fmt::format("RV {}", g.get(DdpTagged::rv)));
              });

  on_segments(add(k, {"iwarp.rdmap.reserved", "RFC 5040", "§4.1; RFC 5041 §5.2", Level::must,
                      "The two reserved bits of the RDMAP control field are sent as zero."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                const auto v = g.get(DdpTagged::rdmap_rsvd);
                RDMACONF_JUDGE(ctx, e, v == 0, "0", fmt::format("0x{:x}", v));
              });

  on_segments(add(k, {"iwarp.rdmap.opcode", "RFC 5040", "§4.1; RFC 5041 §5.2; RFC 7306 §4.1", Level::must,
                      "The RDMAP opcode is one RFC 5040 (0x0 to 0x7) or RFC 7306 (0x8 to 0xB) defines."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, rdmap_op(g.opcode()).valid, "opcode 0x0 to 0xB", fmt::format("opcode 0x{:x}", g.opcode()));
              });

  on_segments(add(k, {"iwarp.rdmap.buffer_model", "RFC 5040", "§4.1, §5.1, §5.2.1, §5.2.2, §5.3, §5.4; RFC 7306 §5, §5.2.1, §5.2.2, §6.3", Level::must,
                      "RDMA Write and RDMA Read Response travel as tagged DDP segments; every other RDMAP message as "
                      "untagged."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                const auto& op = rdmap_op(g.opcode());
                if (!op.valid) return;
                const bool want = op.tagged;
                RDMACONF_JUDGE(ctx, e, g.tagged() == want, want ? "tagged" : "untagged", g.tagged() ? "tagged" : "untagged",
                      fmt::format("opcode 0x{:x}", g.opcode()));
              });

  on_segments(add(k, {"iwarp.rdmap.queue", "RFC 5040", "§4.1, §5.2.1, §5.3, §5.4; RFC 7306 §5, §5.2, §5.2.1, §5.2.2, §6.3", Level::must,
                      "Each untagged RDMAP message uses its queue: the Send family and Immediate Data on 0, RDMA Read "
                      "Request and Atomic Request on 1, Terminate on 2, Atomic Response on 3."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                // Every untagged message whose opcode names a queue, whatever queue it came on (one RDMAP does
                // not use at all is also iwarp.ddp.qn's finding).
                const auto& op = rdmap_op(g.opcode());
                if (g.tagged() || !op.valid || op.tagged || op.queue == kNoQueue) return;
                RDMACONF_JUDGE(ctx, e, g.qn() == op.queue, fmt::format("QN {}", op.queue), fmt::format("QN {}", g.qn()),
                               fmt::format("opcode 0x{:x}", g.opcode()));
              });

  on_segments(add(k, {"iwarp.rdmap.read_request.format", "RFC 5040", "§4.2, §4.4, §5.2.1", Level::must,
                      "An RDMA Read Request is a single untagged segment (L set, MO 0) whose payload is exactly the "
                      "28-octet Read Request header."}), untagged_ops({kOpReadRequest}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || g.opcode() != kOpReadRequest) return;
                const auto n = g.ddp_payload(e);
                RDMACONF_JUDGE(ctx, e, n == kReadRequest.size && g.last() && g.mo() == 0, "28 octets, L = 1, MO 0",
                      fmt::format("{} octets, L = {}, MO {}", n, g.last(), g.mo()));
              });

  on_segments(add(k, {"iwarp.rdmap.read_response.match", "RFC 5040", "§4.4, §5.2, §5.2.1, §5.2.2, §5.5; RFC 5041 §5.2", Level::must,
                      "Each RDMA Read Response answers the oldest outstanding Read Request of the other side: it "
                      "writes to that Request's data sink STag from its sink tagged offset, contiguously, and carries "
                      "exactly the requested number of octets."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                auto& r = ctx.state<Reads>();
                if (track_reads(r, e, g, g.s) != ReadRole::response) return;
                const int d = e.dir;
                auto& pending = r.outstanding[1 - d];
                if (!r.active[d]) {
                  if (pending.empty()) return unmatched(ctx, r, e, "an outstanding Read Request from the other side");
                  r.cur[d] = pending.front();
                  pending.pop_front();
                  r.active[d] = true;
                  r.got[d] = 0;
                }
                const auto& q = r.cur[d];
                const std::uint64_t n = g.ddp_payload(e);
                const std::uint64_t want_to = q.to + r.got[d];
                r.got[d] += n;
                if (g.last()) r.active[d] = false;
                // A Request or a Response segment the capture lacks pairs the
                // rest wrongly: a mismatch then proves nothing.
                auto mismatch = [&](std::string expected, std::string actual) {
                  Evidence ev = evidence_at(e, ctx.side(d));
                  ev.expected = std::move(expected);
                  ev.actual = std::move(actual);
                  ctx.tally.doubtful(std::move(ev));
                };
                if (g.stag() != q.stag || g.to() != want_to)
                  return mismatch(fmt::format("STag 0x{:x}, TO 0x{:x}", q.stag, want_to),
                                  fmt::format("STag 0x{:x}, TO 0x{:x}", g.stag(), g.to()));
                if (r.got[d] > q.size || (g.last() && r.got[d] != q.size))
                  return mismatch(fmt::format("{} octets in all", q.size),
                                  fmt::format("{} octets{}", r.got[d], g.last() ? "" : " so far"));
                ctx.tally.pass();
              })
      .close(settle_orphans<Reads>);

  // Counted from the requester's side: the Read Requests it had sent, less
  // the Read Responses it had wholly received when it sent this one (its
  // acknowledgement number says how far it had received the other
  // direction), so neither file order nor a lost frame inflates the count.
  on_segments(add(k, {"iwarp.rdmap.ird_ord", "RFC 6581", "§9.1; RFC 5040 §6.1", Level::must,
                      "A side never has more RDMA Read Requests outstanding than the IRD its peer announced in "
                      "enhanced setup."}),
              [](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e, const Seg& g) {
                const auto& n = c.mpa->negotiated();
                if (!n.enhanced) return;
                auto& r = ctx.state<ReadCounts>();
                const int d = e.dir;
                if (g.tagged() && g.opcode() == kOpReadResponse && g.last()) r.completed[d].push_back(e.offset + e.wire_size);
                if (e.acked != captures::io::kAckUnknown)
                  while (!r.completed[1 - d].empty() && r.completed[1 - d].front() <= e.acked) {
                    r.completed[1 - d].pop_front();
                    ++r.received[d];
                  }
                if (g.tagged() || g.opcode() != kOpReadRequest) return;
                ++r.sent[d];
                const std::uint16_t ird = e.from_initiator ? n.rep.ird.value_or(0) : n.req.ird.value_or(0);
                const std::uint64_t out = r.sent[d] > r.received[d] ? r.sent[d] - r.received[d] : 0;
                if (out <= ird) return ctx.tally.pass();
                Evidence ev = evidence_at(e, ctx.side(d));
                ev.expected = fmt::format("at most {} outstanding (peer's IRD)", ird);
                ev.actual = fmt::format("{} outstanding", out);
                // Responses the capture lacks, or an order known only from the file, could explain it.
                if (e.acked == captures::io::kAckUnknown) return ctx.tally.doubtful(std::move(ev));
                if (c.mpa->partial(1 - d)) {
                  ev.detail = "the other direction is not wholly in the capture: responses may be missing";
                  return ctx.tally.inconclusive(std::move(ev));
                }
                fail_shown(ctx, d, std::move(ev));
              });

  // (Send with Invalidate carries the STag to invalidate there: any value
  // is an STag, whose validity is the receiver's to judge, RFC 5040 §7.2.)
  on_segments(add(k, {"iwarp.rdmap.inv_stag", "RFC 5040", "§4.1; RFC 7306 §4.1", Level::must,
                      "Every untagged message but Send with Invalidate (with or without SE) sends the Invalidate STag "
                      "field, the word after the RDMAP control octet, as zero."}), kAnyUntagged,
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || is_invalidate(g.opcode())) return;
                const auto v = g.get(DdpUntagged::rsvd_ulp);
                RDMACONF_JUDGE(ctx, e, v == 0, "0", fmt::format("0x{:x}", v), fmt::format("opcode 0x{:x}", g.opcode()));
              });

  on_segments(add(k, {"iwarp.rdmap.terminate.code", "RFC 5040", "§4.8; RFC 5041 §7.2", Level::must,
                      "A Terminate names a layer, error type and error code combination the RFCs define, and sends "
                      "its reserved bits as zero."}), untagged_ops({kOpTerminate}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || g.opcode() != kOpTerminate || !g.s.body) return;
                const protocols::Header& t = *g.s.body;
                const unsigned l = static_cast<unsigned>(t.get(Terminate::layer)),
                               et = static_cast<unsigned>(t.get(Terminate::etype)),
                               ec = static_cast<unsigned>(t.get(Terminate::ecode));
                const auto rsvd = t.get(Terminate::rsvd);
                RDMACONF_JUDGE(ctx, e, terminate_code_defined(l, et, ec) && rsvd == 0, "a defined layer/type/code, reserved 0",
                      fmt::format("layer {}, type {}, code 0x{:02x}, reserved 0x{:x}", l, et, ec, rsvd));
              });

  on_segments(add(k, {"iwarp.rdmap.terminate.headers", "RFC 5040", "§4.8; RFC 5041 §7.1", Level::must,
                      "A Terminate carries the parts its M, D and R bits announce: the offending segment's length, "
                      "its DDP header and, for an untagged one, its RDMAP header."}), untagged_ops({kOpTerminate}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || g.opcode() != kOpTerminate || !g.s.body) return;
                RDMACONF_JUDGE(ctx, e, !g.s.term_incomplete, "every announced copied header", "some missing",
                      fmt::format("M={} D={} R={}", g.s.body->get(Terminate::m), g.s.body->get(Terminate::d),
                                  g.s.body->get(Terminate::r)));
              });

  // Figure 10's "Yes" without condition: a DDP-layer error's Terminate
  // includes the DDP header and segment length. (Its "No" cells say what a
  // Terminate need not carry, not that a bit may not be set; "Yes, if
  // possible" and the RDMA header rules, which §4.8 limits to Read
  // Requests, fix nothing a capture can hold a sender to.)
  on_segments(add(k, {"iwarp.rdmap.terminate.flags", "RFC 5040", "§4.8", Level::should,
                      "A Terminate for a DDP-layer error sets M and D: it includes the DDP segment length and the "
                      "offending DDP header, as Figure 10 has it."}), untagged_ops({kOpTerminate}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || g.opcode() != kOpTerminate || !g.s.body) return;
                const protocols::Header& t = *g.s.body;
                if (t.get(Terminate::layer) != kTermLayerDdp) return;
                const auto m = t.get(Terminate::m), d = t.get(Terminate::d);
                RDMACONF_JUDGE(ctx, e, m && d, "M = 1, D = 1", fmt::format("M = {}, D = {}", m, d),
                               fmt::format("DDP layer, error type {}, code 0x{:02x}", t.get(Terminate::etype), t.get(Terminate::ecode)));
              });

  // After a Terminate the connection should end gracefully (FIN), so that
  // the Terminate is delivered, not by a reset.
  add(k, {"iwarp.rdmap.terminate.graceful", "RFC 5040", "§6.2.1", Level::should,
          "After a Terminate the connection is closed gracefully (FIN), not reset, so that the Terminate is "
          "delivered."})
      .only(untagged_ops({kOpTerminate}))
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        const auto* s = segment_of(e);
        if (!s || s->tagged || s->opcode != kOpTerminate || ctx.state<TerminateSeen>().frame) return;
        ctx.state<TerminateSeen>() = TerminateSeen{e.first_frame, e.dir};
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        const auto& t = ctx.state<TerminateSeen>();
        if (!t.frame) return;
        if (!c.reset) {
          if (c.info->fin[0] || c.info->fin[1]) ctx.tally.pass();
          return;  // (neither FIN nor reset: the capture ended first)
        }
        Evidence ev;
        ev.frames = {t.frame};
        ev.side = ctx.side(t.dir);
        ev.expected = "a graceful close (FIN) after the Terminate";
        ev.actual = "the connection was reset";
        ctx.tally.fail(std::move(ev));
      });

  on_segments(add(k, {"iwarp.rdmap.terminate.last", "RFC 5040", "§5.4", Level::must,
                      "A Terminate is the last message its sender puts on the stream: nothing follows it."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                struct Sent : CaseState {
                  bool term[2] = {false, false};
                };
                auto& st = ctx.state<Sent>();
                if (st.term[e.dir])
                  return fail_at(ctx, e, "nothing after the Terminate", fmt::format("opcode 0x{:x}", g.opcode()));
                if (!g.tagged() && g.opcode() == kOpTerminate) {
                  st.term[e.dir] = true;
                  ctx.tally.pass();
                }
              });

  on_segments(add(k, {"iwarp.rdmap.immediate.format", "RFC 7306", "§6.3", Level::must,
                      "An Immediate Data message is a single untagged segment (L set, MO 0) carrying exactly 8 octets "
                      "of data."}), untagged_ops({kOpImmediate, kOpImmediateSe}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || (g.opcode() != kOpImmediate && g.opcode() != kOpImmediateSe)) return;
                const auto n = g.ddp_payload(e);
                RDMACONF_JUDGE(ctx, e, n == kImmediate.size && g.last() && g.mo() == 0, "8 octets, L = 1, MO 0",
                      fmt::format("{} octets, L = {}, MO {}", n, g.last(), g.mo()));
              });

  on_segments(add(k, {"iwarp.rdmap.atomic.format", "RFC 7306", "§5.2.1, §5.2.2", Level::must,
                      "An Atomic Request is a single untagged segment of exactly the 52-octet request header naming "
                      "FetchAdd (0000b) or CmpSwap (0010b) with its reserved bits zero; an Atomic Response is exactly "
                      "the 12-octet response header."}), kAnyUntagged,
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || !g.s.body) return;
                const auto n = g.ddp_payload(e);
                if (g.opcode() == kOpAtomicRequest) {
                  const auto op = g.s.body->get(AtomicRequest::op), rsvd = g.s.body->get(AtomicRequest::rsvd);
                  const bool known = op == kAtomicFetchAdd || op == kAtomicCmpSwap;
                  return RDMACONF_JUDGE(ctx, e, n == kAtomicRequest.size && g.last() && known && rsvd == 0,
                               "52 octets, L = 1, operation code 0 (FetchAdd) or 2 (CmpSwap), reserved 0",
                               fmt::format("{} octets, L = {}, operation code {}, reserved 0x{:x}", n, g.last(), op, rsvd));
                }
                if (g.opcode() == kOpAtomicResponse)
                  RDMACONF_JUDGE(ctx, e, n == kAtomicResponse.size && g.last(), "12 octets, L = 1",
                        fmt::format("{} octets, L = {}", n, g.last()));
              });

  on_segments(add(k, {"iwarp.rdmap.atomic.alignment", "RFC 7306", "§5.1.1, §5.1.2, §5.2.1", Level::must,
                      "The remote tagged offset of an Atomic Request is aligned to 8 octets."}), untagged_ops({kOpAtomicRequest}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || g.opcode() != kOpAtomicRequest || !g.s.body) return;
                const auto to = g.s.body->get(AtomicRequest::to);
                RDMACONF_JUDGE(ctx, e, to % 8 == 0, "a multiple of 8", fmt::format("TO 0x{:x}", to));
              });

  on_segments(add(k, {"iwarp.rdmap.atomic.response_match", "RFC 7306", "§5.2.1, §5.2.2, §5.4", Level::must,
                      "An Atomic Response answers the oldest Atomic Request of the other side not yet answered: it "
                      "carries that Request's identifier, so responses come in the order of the requests."}), kAnyUntagged,
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged() || !g.s.body) return;
                auto& ids = ctx.state<AtomicIds>();
                if (g.opcode() == kOpAtomicRequest) ids.open[e.dir].push_back(g.s.body->get(AtomicRequest::req_id));
                if (g.opcode() != kOpAtomicResponse) return;
                auto& pending = ids.open[1 - e.dir];
                const auto id = g.s.body->get(AtomicResponse::req_id);
                const auto it = std::find(pending.begin(), pending.end(), id);
                if (it == pending.end()) return unmatched(ctx, ids, e, fmt::format("an outstanding Atomic Request with identifier {}", id));
                if (it != pending.begin()) {
                  // An older request left unanswered: the order of §5.2.2 item 8 is broken, unless the capture
                  // lacks the response to it.
                  Evidence ev = evidence_at(e, ctx.side(e.dir));
                  ev.expected = fmt::format("the response to request {} first", pending.front());
                  ev.actual = fmt::format("request {}", id);
                  pending.erase(it);
                  return ctx.tally.doubtful(std::move(ev));
                }
                pending.pop_front();
                ctx.tally.pass();
              })
      .close(settle_orphans<AtomicIds>);

  // Proof that a request went unanswered: the responder's direction is whole
  // in the capture and ends with its FIN, no Terminate was sent either way,
  // and the responder's own acknowledgements show it had received the
  // request before it stopped sending.
  on_segments(add(k, {"iwarp.rdmap.answered", "RFC 5040", "§5.2.1; RFC 7306 §5.2.1", Level::must,
                      "Every RDMA Read Request and Atomic Request is answered (Read Response, Atomic Response) unless a "
                      "Terminate ends the stream: a responder that received one does not close without answering."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                auto& st = ctx.state<Unanswered>();
                const int d = e.dir;
                if (e.acked != captures::io::kAckUnknown) st.acked[d] = std::max(st.acked[d], e.acked);
                if (!g.tagged() && g.opcode() == kOpTerminate) st.terminated = true;
                const std::uint64_t end = e.offset + e.wire_size;
                if (!g.tagged() && g.opcode() == kOpReadRequest) st.open[d][0].push_back({end, e.first_frame, e.last_frame});
                if (!g.tagged() && g.opcode() == kOpAtomicRequest) st.open[d][1].push_back({end, e.first_frame, e.last_frame});
                auto answer = [&](int kind) {
                  auto& q = st.open[1 - d][kind];
                  if (q.empty()) return;  // (an answer to nothing is the match cases' finding)
                  q.pop_front();
                  ctx.tally.pass();
                };
                if (g.tagged() && g.opcode() == kOpReadResponse && g.last()) answer(0);
                if (!g.tagged() && g.opcode() == kOpAtomicResponse) answer(1);
              })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        auto& st = ctx.state<Unanswered>();
        // A Terminate ends the obligation; octets missing from the capture
        // (a gap either way, recorded as inconclusive) may hold the answer.
        if (st.terminated || ctx.tally.inconclusive_count()) return;
        for (int d = 0; d < 2; ++d) {
          const int r = 1 - d;  // the responder
          if (!c.info->fin[r] || c.mpa->partial(r)) continue;
          // Octets of the responder's stream left unjudged (its framing
          // stopped before its FIN) may hold the answers.
          const auto cov = c.mpa->coverage(r);
          for (int kind = 0; kind < 2; ++kind)
            for (const auto& [end, first_frame, last_frame] : st.open[d][kind]) {
              if (st.acked[r] < end) continue;  // not shown to have reached the responder
              Evidence ev;
              ev.frames = first_frame == last_frame ? std::vector<std::uint64_t>{first_frame} : std::vector<std::uint64_t>{first_frame, last_frame};
              ev.stream_offset = end;
              ev.side = ctx.side(d);
              ev.expected = kind == 0 ? "an RDMA Read Response" : "an Atomic Response";
              ev.actual = "the responder closed its half of the connection without one or a Terminate";
              ev.detail = fmt::format("the {} ending at offset {} of the requester's stream", kind == 0 ? "Read Request" : "Atomic Request", end);
              if (cov.judged < cov.captured) {
                ev.detail += fmt::format("; {} octets of the responder's stream were not judged, and may hold it", cov.captured - cov.judged);
                ctx.tally.inconclusive(std::move(ev));
                continue;
              }
              // (A copy of the request's octets with other content, say, leaves open what the responder took.)
              ctx.tally.doubtful(std::move(ev));
            }
        }
      });
}

}  // namespace rdmaconf::conformance

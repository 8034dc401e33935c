// RFC 5041 (DDP) §4 header format, §5 data transfer (untagged queues, MSN and
// MO; tagged offsets), as RDMAP (RFC 5040) uses it.
#include <map>

#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"
#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

// Untagged message state per direction and queue.
struct Queues : CaseState {
  struct Q {
    bool synced = false;        // false until the first segment seen in sequence
    std::uint32_t msn = 0;      // MSN of the current (or last) message; 0 before the first
    bool open = false;          // its last segment (L) not seen yet
    std::uint64_t next_mo = 0;  // MO the next segment of the open message must carry
  };
  std::map<std::uint32_t, Q> q[2];
  std::uint64_t next_index[2] = {0, 0};  // FPDU number expected next in each direction
};

// Tagged message state per direction.
struct Tagged : CaseState {
  struct T {
    bool open = false;
    std::uint32_t stag = 0;
    std::uint64_t next_to = 0;
  };
  T t[2];
  std::uint64_t next_index[2] = {0, 0};  // FPDU number expected next in each direction
};

// Runs `f(queue state, segment)` for each untagged segment, then updates the queue.
template <class F>
void each_untagged(BuiltIwarpCase& c, F f) {
  on_segments(c, [f](CaseCtx& ctx, const IwarpConn& k, const iwarp::FpduEvent& e, const Seg& g) {
    auto& st = ctx.state<Queues>();
    // An FPDU that was not a decodable segment hides a message: judge again
    // from the next segment of each queue. The same when framing was found mid-stream.
    if (e.index != st.next_index[e.dir])
      for (auto& [qn, q] : st.q[e.dir]) q.synced = false;
    st.next_index[e.dir] = e.index + 1;
    if (g.tagged() || g.qn() > kMaxRdmapQueue) return;  // a queue RDMAP does not use: iwarp.ddp.qn's finding
    auto& q = st.q[e.dir][g.qn()];
    // A queue's first message is judged only where the direction is whole from its start.
    if (q.synced || (q.msn == 0 && !k.mpa->partial(e.dir))) f(ctx, e, g, q);
    q.synced = true;
    q.next_mo = g.mo() + g.ddp_payload(e);  // follows what was sent, so one error is reported once
    q.msn = g.msn();
    q.open = !g.last();
  });
}

template <class F>
void each_tagged(BuiltIwarpCase& c, F f) {
  on_segments(c, [f](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
    auto& st = ctx.state<Tagged>();
    auto& t = st.t[e.dir];
    // A segment not seen (an FPDU that was no decodable segment, or not judged) may have been this message's.
    if (e.index != st.next_index[e.dir]) t.open = false;
    st.next_index[e.dir] = e.index + 1;
    if (!g.tagged()) return;
    if (t.open) f(ctx, e, g, t);
    t.open = !g.last();
    t.stag = g.stag();
    t.next_to = g.to() + g.ddp_payload(e);
  });
}

}  // namespace

void add_iwarp_ddp_cases(IwarpCases& k) {
  add(k, {"iwarp.ddp.segment.header", "RFC 5041", "§4; RFC 5040 §4", Level::must,
          "Every ULPDU is a DDP segment that holds its whole DDP header (14 octets tagged, 18 untagged) and the "
          "RDMAP header its opcode calls for (Read Request, Terminate, Immediate, Atomic)."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        RDMACONF_JUDGE(ctx, e, e.ddp->ok(), "a complete DDP/RDMAP header", e.ddp->ok() ? "" : e.ddp->error().message(),
              fmt::format("ULPDU length {}", e.fpdu->ulpdu_len));
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });

  on_segments(add(k, {"iwarp.ddp.version", "RFC 5041", "§4.1", Level::must,
                      "Every DDP segment carries DDP version 1 (DV = 01b)."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, g.get(DdpTagged::dv) == 1, "DV 1", fmt::format("DV {}", g.get(DdpTagged::dv)));
              });

  on_segments(add(k, {"iwarp.ddp.reserved", "RFC 5041", "§4.1", Level::must,
                      "The four reserved bits of the DDP control field are sent as zero."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, g.get(DdpTagged::rsvd) == 0, "0", fmt::format("0x{:x}", g.get(DdpTagged::rsvd)));
              });

  on_segments(add(k, {"iwarp.ddp.qn", "RFC 5041", "§4.3; RFC 5040 §4.2; RFC 7306 §10.2", Level::must,
                      "An untagged segment names a queue RDMAP uses: 0 (Send family, Immediate Data), 1 (RDMA Read "
                      "Request, Atomic Request), 2 (Terminate) or 3 (Atomic Response, the one queue RFC 7306 adds)."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged()) return;
                RDMACONF_JUDGE(ctx, e, g.qn() <= kMaxRdmapQueue, fmt::format("QN 0 to {}", kMaxRdmapQueue), fmt::format("QN {}", g.qn()),
                      fmt::format("opcode 0x{:x}, MSN {}", g.opcode(), g.msn()));
              });

  each_untagged(add(k, {"iwarp.ddp.msn", "RFC 5041", "§5.3", Level::must,
                        "On each untagged queue the first message has MSN 1 and each new message the next MSN; all "
                        "segments of one message carry the same MSN."}),
                [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q) {
                  const std::uint32_t next = q.msn + 1;
                  // The same MSN again is a further segment of the open message; after that message's last
                  // segment, a segment with MO 0 and the same MSN is a new message that did not advance it.
                  const bool ok = g.msn() == next || (q.msn != 0 && g.msn() == q.msn && (q.open || g.mo() != 0));
                  RDMACONF_JUDGE(ctx, e, ok, q.msn == 0 ? std::string("MSN 1") : fmt::format("MSN {} or {}", q.msn, next),
                        fmt::format("MSN {}", g.msn()), fmt::format("queue {}", g.qn()));
                });

  each_untagged(add(k, {"iwarp.ddp.mo", "RFC 5041", "§5.3", Level::must,
                        "The message offset of an untagged segment is 0 for a message's first segment and grows by "
                        "each segment's payload: the segments of a message are contiguous."}),
                [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q) {
                  const bool continuation = q.open && g.msn() == q.msn;
                  const std::uint64_t want = continuation ? q.next_mo : 0;
                  RDMACONF_JUDGE(ctx, e, g.mo() == want, fmt::format("MO {}", want), fmt::format("MO {}", g.mo()),
                        fmt::format("queue {}, MSN {}", g.qn(), g.msn()));
                });

  each_untagged(add(k, {"iwarp.ddp.last", "RFC 5041", "§4.1, §5.3", Level::must,
                        "The L bit is set on the last segment of a message and only there: a new message on a queue "
                        "starts only after the previous one's last segment, and nothing of a message follows it."}),
                [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q) {
                  if (q.msn == 0) return ctx.tally.pass();
                  if (q.open && g.msn() == q.msn + 1)
                    return fail_at(ctx, e, fmt::format("a segment of message {} with L set first", q.msn),
                                   fmt::format("message {} starts", g.msn()), fmt::format("queue {}", g.qn()));
                  if (!q.open && g.msn() == q.msn && g.mo() == 0) return;  // a new message reusing the MSN: iwarp.ddp.msn
                  if (!q.open && g.msn() == q.msn)
                    return fail_at(ctx, e, fmt::format("message {} ended (L set)", q.msn),
                                   "another segment of it", fmt::format("queue {}", g.qn()));
                  ctx.tally.pass();
                });

  each_tagged(add(k, {"iwarp.ddp.tagged.stag", "RFC 5041", "§5.2", Level::must,
                      "All segments of one tagged message carry the same STag."}),
              [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Tagged::T& t) {
                RDMACONF_JUDGE(ctx, e, g.stag() == t.stag, fmt::format("STag 0x{:x}", t.stag), fmt::format("STag 0x{:x}", g.stag()));
              });

  each_tagged(add(k, {"iwarp.ddp.tagged.to", "RFC 5041", "§5.2", Level::must,
                      "The segments of one tagged message are contiguous: each tagged offset is the previous one "
                      "plus the previous segment's payload."}),
              [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Tagged::T& t) {
                if (g.stag() != t.stag) return;  // iwarp.ddp.tagged.stag's finding
                RDMACONF_JUDGE(ctx, e, g.to() == t.next_to, fmt::format("TO 0x{:x}", t.next_to), fmt::format("TO 0x{:x}", g.to()),
                      fmt::format("STag 0x{:x}", g.stag()));
              });
}

}  // namespace rdmaconf::conformance

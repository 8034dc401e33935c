// RFC 5044 §7.1.1 and §7.1.2: what may be sent when, around the MPA
// Request/Reply exchange.
#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"

namespace rdmaconf::conformance {

namespace {

using captures::io::kAckUnknown;

// The first FPDU of each side: where it ends in its stream, what its sender
// had received of the other direction, and whether the FPDUs before it are
// all in the capture.
struct FirstFpdus : CaseState {
  bool seen[2] = {false, false};
  bool whole[2] = {false, false};  // the direction is in the capture from its start up to this FPDU
  std::uint64_t end[2] = {0, 0};
  iwarp::FpduEvent first[2];  // copies without the pointers (frames, offset, acked)
};

}  // namespace

void add_iwarp_mpa_order_cases(IwarpCases& k) {
  add(k, {"iwarp.mpa.reject.close", "RFC 5044", "§7.1.2", Level::must,
          "After a Reply that rejects the connection (R set) both sides leave MPA: the TCP connection may carry "
          "the ULP's streaming data, but no more FPDUs (judged where CRCs prove an FPDU)."})
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) {
        if (e.fpdu_after_reject) fail_at_stop(ctx, e, "no FPDU after the rejecting Reply", "an FPDU whose CRC checks");
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        if (c.mpa->negotiated().rejected() && ctx.tally.failed() == 0 && !ctx.tally.unsettled()) ctx.tally.pass();
      });

  add(k, {"iwarp.mpa.fpdu.before_exchange", "RFC 5044", "§7.1.2", Level::must,
          "No FPDU is sent before the Request/Reply exchange has completed: the initiator waits for the Reply "
          "before its first FPDU."})
      // Proof from the initiator's TCP: its acknowledgement number when it
      // sent the FPDU says how much of the responder's stream, and so of the
      // Reply, it had received. File order is no proof (a capture may record
      // the two directions out of order).
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        const auto& n = c.mpa->negotiated();
        if (n.inferred || !n.complete() || !e.from_initiator) return;
        // Formatted only for evidence: this runs for every FPDU of the initiator.
        const auto expected = [&] {
          return fmt::format("FPDU sent after the whole Reply arrived ({} octets of the responder's stream)", n.reply_end);
        };
        if (e.acked == kAckUnknown) {
          // No acknowledgement number to go by: file order, which a capture artefact could explain.
          if (e.first_frame > n.frame) return ctx.tally.pass();
          Evidence ev = evidence_at(e, ctx.side(e.dir));
          ev.expected = expected();
          ev.actual = fmt::format("FPDU #{} in frame {}, before frame {} (which completed the exchange)", e.index, e.first_frame, n.frame);
          return ctx.tally.doubtful(std::move(ev));
        }
        RDMACONF_JUDGE(ctx, e, e.acked >= n.reply_end, expected(),
                       fmt::format("FPDU #{} sent when the initiator had received {} octets", e.index, e.acked));
      })
      // The initiator sent octets after its Request and the responder never
      // replied (it closed or reset, as §7.1.2 lets it): those octets came
      // before the exchange completed, whatever they hold.
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        const int dir = c.mpa->initiator_dir();
        if (dir < 0 || !c.mpa->unanswered(dir)) return;
        const auto& u = *c.mpa->unanswered(dir);
        Evidence ev;
        ev.frames = {u.frame};
        ev.stream_offset = u.offset;
        ev.side = ctx.side(dir);
        ev.expected = "nothing after the Request until the Reply";
        ev.actual = fmt::format("{} octets after the Request, and no Reply before the connection ended", u.octets);
        if (u.acked_unseen == 0) return ctx.tally.fail(std::move(ev));
        // A capture of one side: its ACKs prove the other side sent octets the capture lacks.
        ev.detail = fmt::format("the capture holds no segment of the responder, whose octets the initiator acknowledged ({} at "
                                "least): the Reply may be among them",
                                u.acked_unseen);
        ctx.tally.inconclusive(std::move(ev));
      });

  add(k, {"iwarp.mpa.responder.first_fpdu", "RFC 5044", "§7.1.2", Level::must,
          "The responder sends no FPDU until it has received the initiator's first FPDU (in RFC 6581 "
          "peer-to-peer mode, the RTR message serves as that FPDU)."})
      // Proof from the responder's acknowledgement number when it sent its
      // first FPDU, against where the initiator's first FPDU ends.
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        if (c.mpa->negotiated().inferred) return;
        auto& st = ctx.state<FirstFpdus>();
        const int side = e.from_initiator ? 0 : 1;
        if (st.seen[side]) return;
        st.seen[side] = true;
        st.whole[side] = e.index == 0 && !c.mpa->partial(e.dir);
        st.end[side] = e.offset + e.wire_size;
        st.first[side].dir = e.dir;
        st.first[side].first_frame = e.first_frame;
        st.first[side].last_frame = e.last_frame;
        st.first[side].offset = e.offset;
        st.first[side].acked = e.acked;
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        auto& st = ctx.state<FirstFpdus>();
        if (!st.seen[1]) return;  // the responder sent no FPDU
        const auto& r = st.first[1];
        const auto& n = c.mpa->negotiated();
        if (r.acked == kAckUnknown) {
          // File order only: a capture artefact could explain it.
          if (st.seen[0] && st.first[0].last_frame < r.first_frame) return ctx.tally.pass();
          Evidence ev = evidence_at(r, ctx.side(r.dir));
          ev.expected = "the responder's first FPDU after the initiator's first";
          ev.actual = fmt::format("responder FPDU in frame {}", r.first_frame);
          return ctx.tally.doubtful(std::move(ev));
        }
        if (st.seen[0] && st.whole[0])
          return RDMACONF_JUDGE(ctx, r, r.acked >= st.end[0],
                                fmt::format("sent after the initiator's first FPDU arrived ({} octets of its stream)", st.end[0]),
                                fmt::format("sent when the responder had received {} octets", r.acked));
        // The initiator's first FPDU is not in the capture: only a responder
        // that had received nothing past the Request is proved early.
        if (n.req.seen && r.acked <= n.request_end)
          return fail_at(ctx, r, "sent after the initiator's first FPDU arrived",
                         fmt::format("sent when the responder had received only the {}-octet Request", n.request_end));
        Evidence ev = evidence_at(r, ctx.side(r.dir));
        ev.detail = "the initiator's first FPDU is not in the capture";
        ctx.tally.inconclusive(std::move(ev));
      });
}

}  // namespace rdmaconf::conformance

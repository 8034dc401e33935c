// RFC 5044 §7.1.1 and §7.1.2: what may be sent when, around the MPA
// Request/Reply exchange.
#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"

namespace rdmaconf::conformance {

namespace {

struct FirstFpdus : CaseState {
  bool seen[2] = {false, false};
  iwarp::FpduEvent first[2];  // copies without the pointers (frames and offsets only)
};

}  // namespace

void add_iwarp_mpa_order_cases(IwarpCases& k) {
  add(k, {"iwarp.mpa.reject.close", "RFC 5044", "§7.1.1", Level::must,
          "After a Reply that rejects the connection (R set) neither side sends FPDUs: the connection is only "
          "closed."})
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) {
        if (!e.after_reject) return;
        Evidence ev;
        ev.frames = {e.frame};
        ev.stream_offset = e.offset;
        ev.side = ctx.side(e.dir);
        ev.expected = "no octets after the rejecting Reply";
        ev.actual = "data";
        ctx.tally.fail(std::move(ev));
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        if (c.mpa->negotiated().rejected() && ctx.tally.failed() == 0) ctx.tally.pass();
      });

  add(k, {"iwarp.mpa.fpdu.before_exchange", "RFC 5044", "§7.1.2", Level::must,
          "No FPDU is sent before the Request/Reply exchange has completed: the initiator waits for the Reply "
          "before its first FPDU."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        const auto& n = c.mpa->negotiated();
        if (n.inferred) return;
        RDMACONF_JUDGE(ctx, e, e.first_frame > n.frame, fmt::format("FPDU after frame {} (which completed the exchange)", n.frame),
              fmt::format("FPDU starting in frame {}", e.first_frame), fmt::format("FPDU #{} of this direction", e.index));
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
        ctx.tally.fail(std::move(ev));
      });

  add(k, {"iwarp.mpa.responder.first_fpdu", "RFC 5044", "§7.1.2", Level::must,
          "The responder sends no FPDU until it has received the initiator's first FPDU (in RFC 6581 "
          "peer-to-peer mode, the RTR message serves as that FPDU)."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        if (c.mpa->negotiated().inferred) return;
        auto& st = ctx.state<FirstFpdus>();
        const int side = e.from_initiator ? 0 : 1;
        if (st.seen[side]) return;
        st.seen[side] = true;
        st.first[side].dir = e.dir;
        st.first[side].first_frame = e.first_frame;
        st.first[side].last_frame = e.last_frame;
        st.first[side].offset = e.offset;
      })
      .close([](CaseCtx& ctx, const IwarpConn&) {
        auto& st = ctx.state<FirstFpdus>();
        if (!st.seen[1]) return;  // the responder sent no FPDU
        const auto& r = st.first[1];
        if (st.seen[0] && st.first[0].last_frame < r.first_frame) return ctx.tally.pass();
        fail_at(ctx, r, st.seen[0] ? fmt::format("first responder FPDU after frame {}", st.first[0].last_frame)
                                   : std::string("no responder FPDU (the initiator sent none)"),
                fmt::format("responder FPDU in frame {}", r.first_frame));
      });
}

}  // namespace rdmaconf::conformance

// RFC 6581 §9 (enhanced MPA connection setup): the IRD/ORD word, peer-to-peer
// mode and the Ready-To-Receive (RTR) message.
#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

// The RTR types a side's IRD/ORD word names, as a bit set: 1 Send, 2 Write, 4 Read.
unsigned rtr_types(const MpaRrFrame& f) {
  if (!f.v2) return 0;
  return (f.v2->get(MpaV2::send_rtr) ? 1u : 0u) | (f.v2->get(MpaV2::write_rtr) ? 2u : 0u) |
         (f.v2->get(MpaV2::read_rtr) ? 4u : 0u);
}
std::string rtr_names(unsigned t) {
  std::string s;
  for (auto [bit, name] : {std::pair{1u, "Send"}, {2u, "Write"}, {4u, "Read"}})
    if (t & bit) {
      // Appended in two steps: GCC 12 at -O3 reports a false -Wrestrict on "+" + std::string.
      if (!s.empty()) s += '+';
      s += name;
    }
  return s.empty() ? "none" : s;
}

// Per connection: what the Request offered, for judging the Reply and the RTR.
struct Offer : CaseState {
  bool seen = false, enhanced = false, p2p = false;
  unsigned rev = 0, types = 0, selected = 0;
  std::uint16_t ird = 0;
  bool rtr_checked = false;
};

void remember_request(CaseCtx& ctx, const iwarp::RrEvent& e) {
  if (!e.frame || !e.from_initiator) return;
  auto& o = ctx.state<Offer>();
  o.seen = true;
  o.rev = static_cast<unsigned>(e.frame->hdr.get(MpaRr::rev));
  o.enhanced = e.frame->v2.has_value();
  o.p2p = e.frame->v2 && e.frame->v2->get(MpaV2::p2p);
  o.types = rtr_types(*e.frame);
  if (e.frame->v2) o.ird = static_cast<std::uint16_t>(e.frame->v2->get(MpaV2::ird));
}

// The Reply of a connection in which both frames carry the IRD/ORD word.
const MpaRrFrame* enhanced_reply(CaseCtx& ctx, const iwarp::RrEvent& e) {
  remember_request(ctx, e);
  if (!e.frame || e.from_initiator || !e.frame->v2 || e.frame->hdr.get(MpaRr::r)) return nullptr;
  const auto& o = ctx.state<Offer>();
  return o.seen && o.enhanced ? e.frame : nullptr;
}

}  // namespace

void add_iwarp_mpa_enhanced_cases(IwarpCases& k) {
  add(k, {"iwarp.mpa.v2.enhanced", "RFC 6581", "§9", Level::must,
          "A revision 2 frame that sets the enhanced bit starts its private data with the 4-octet IRD/ORD word."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame || e.frame->hdr.get(MpaRr::rev) != 2 || !e.frame->hdr.get(MpaRr::enhanced)) return;
        const auto n = e.frame->hdr.get(MpaRr::pd_len);
        RDMACONF_JUDGE(ctx, e, n >= kMpaV2.size, "private data length of at least 4", fmt::format("{}", n));
      });

  add(k, {"iwarp.mpa.v2.reply_revision", "RFC 6581", "§9", Level::must,
          "The responder answers with a revision no higher than the Request's, and uses enhanced setup only "
          "when the Request did."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        remember_request(ctx, e);
        const auto& o = ctx.state<Offer>();
        if (!e.frame || e.from_initiator || !o.seen || o.rev < 1 || o.rev > 2) return;  // else iwarp.mpa.rr.revision's
        const auto rev = e.frame->hdr.get(MpaRr::rev);
        const bool enh = e.frame->hdr.get(MpaRr::enhanced);
        RDMACONF_JUDGE(ctx, e, rev <= o.rev && (!enh || o.enhanced || e.frame->hdr.get(MpaRr::r)),
              fmt::format("revision at most {}{}", o.rev, o.enhanced ? "" : ", no enhanced bit"),
              fmt::format("revision {}{}", rev, enh ? " with the enhanced bit" : ""));
      });

  add(k, {"iwarp.mpa.v2.ird_ord", "RFC 6581", "§9.1", Level::must,
          "In enhanced setup the responder's ORD does not exceed the initiator's IRD: the responder never plans "
          "more outstanding RDMA Read Requests than the initiator said it can serve."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        if (!f) return;
        const auto ord = f->v2->get(MpaV2::ord);
        const auto ird = ctx.state<Offer>().ird;
        RDMACONF_JUDGE(ctx, e, ord <= ird, fmt::format("ORD at most {} (initiator's IRD)", ird), fmt::format("ORD {}", ord));
      });

  add(k, {"iwarp.mpa.v2.p2p_echo", "RFC 6581", "§9.2", Level::must,
          "When the initiator asks for peer-to-peer mode (A set), the responder's Reply sets A too."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        if (!f || !ctx.state<Offer>().p2p) return;
        RDMACONF_JUDGE(ctx, e, f->v2->get(MpaV2::p2p), "A = 1 (echoing the initiator)", "A = 0");
      });

  add(k, {"iwarp.mpa.v2.rtr_type", "RFC 6581", "§9.2", Level::must,
          "In peer-to-peer mode the Reply selects exactly one RTR message type (zero-length Send, Write or Read), "
          "and one the initiator offered."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        auto& o = ctx.state<Offer>();
        if (!f || !o.p2p || !f->v2->get(MpaV2::p2p)) return;
        const unsigned sel = rtr_types(*f);
        o.selected = sel;
        const bool one = sel == 1 || sel == 2 || sel == 4;
        RDMACONF_JUDGE(ctx, e, one && (sel & o.types), fmt::format("one of {}", rtr_names(o.types)), rtr_names(sel));
      });

  add(k, {"iwarp.mpa.v2.rtr_first", "RFC 6581", "§9.2", Level::must,
          "In peer-to-peer mode the initiator's first FPDU is the RTR message of the type the Reply selected: a "
          "zero-length Send, a zero-length RDMA Write, or an RDMA Read Request of size zero."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        if (f && ctx.state<Offer>().p2p && f->v2->get(MpaV2::p2p)) ctx.state<Offer>().selected = rtr_types(*f);
      })
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        auto& o = ctx.state<Offer>();
        // A Reply that selects no type, several, or one the initiator did not
        // offer is iwarp.mpa.v2.rtr_type's finding; the initiator then owes no RTR.
        const bool one = (o.selected == 1 || o.selected == 2 || o.selected == 4) && (o.selected & o.types);
        if (!e.from_initiator || o.rtr_checked || !one) return;
        o.rtr_checked = true;
        if (e.index != 0) {  // framing found again after a gap: the first FPDU is not in the capture
          Evidence ev = evidence_at(e, ctx.side(e.dir));
          ev.detail = "the initiator's first FPDU is not in the capture";
          return ctx.tally.inconclusive(std::move(ev));
        }
        const auto* s = segment_of(e);
        bool ok = false;
        std::string actual = "an undecodable segment";
        if (s) {
          const Seg g{*s};
          const std::size_t payload = g.ddp_payload(e);
          actual = fmt::format("opcode 0x{:x}, {} DDP payload octets", g.opcode(), payload);
          switch (o.selected) {
            case 1: ok = g.opcode() == kOpSend && !g.tagged() && payload == 0 && g.last(); break;
            case 2: ok = g.opcode() == kOpWrite && g.tagged() && payload == 0 && g.last(); break;
            case 4: ok = g.opcode() == kOpReadRequest && s->body && s->body->get(ReadRequest::size) == 0; break;
            default: break;
          }
        }
        RDMACONF_JUDGE(ctx, e, ok, fmt::format("zero-length {} RTR", rtr_names(o.selected)), actual);
      });
}

}  // namespace rdmaconf::conformance

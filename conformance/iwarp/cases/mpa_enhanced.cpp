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
  bool s_bit = false;  // the Request's S flag (revision 2 or higher): it asked for enhanced setup
  unsigned rev = 0, types = 0, selected = 0;
  std::uint16_t ird = 0, ord = 0;
  bool reply_p2p = false, rtr_checked = false;
};

// RFC 6581 §9.1: an IRD or ORD of all ones asks for no automatic negotiation.
constexpr std::uint64_t kNoAutoNegotiation = 0x3FFF;

void remember_request(CaseCtx& ctx, const iwarp::RrEvent& e) {
  if (!e.frame || !e.from_initiator) return;
  auto& o = ctx.state<Offer>();
  o.seen = true;
  o.rev = static_cast<unsigned>(e.frame->hdr.get(MpaRr::rev));
  o.enhanced = e.frame->v2.has_value();
  o.s_bit = e.frame->hdr.get(MpaRr::enhanced) && o.rev >= 2;
  o.p2p = e.frame->v2 && e.frame->v2->get(MpaV2::p2p);
  o.types = rtr_types(*e.frame);
  if (e.frame->v2) {
    o.ird = static_cast<std::uint16_t>(e.frame->v2->get(MpaV2::ird));
    o.ord = static_cast<std::uint16_t>(e.frame->v2->get(MpaV2::ord));
  }
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
  add(k, {"iwarp.mpa.v2.enhanced", "RFC 6581", "§6", Level::must,
          "A revision 2 frame that sets the enhanced bit starts its private data with the 4-octet IRD/ORD word."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame || e.frame->hdr.get(MpaRr::rev) != 2 || !e.frame->hdr.get(MpaRr::enhanced)) return;
        const auto n = e.frame->hdr.get(MpaRr::pd_len);
        RDMACONF_JUDGE(ctx, e, n >= kMpaV2.size, "private data length of at least 4", fmt::format("{}", n));
      });

  add(k, {"iwarp.mpa.v2.reply_enhanced", "RFC 6581", "§10", Level::must,
          "The responder answers an enhanced Request (S set, with the IRD/ORD word) with an enhanced Reply, and "
          "an unenhanced Request with an unenhanced Reply (a responder without enhanced setup closes instead of "
          "replying)."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        remember_request(ctx, e);
        const auto& o = ctx.state<Offer>();
        if (!e.frame || e.from_initiator || !o.seen) return;
        if (o.s_bit && !o.enhanced) return;  // S without the IRD/ORD word: a malformed Request (iwarp.mpa.v2.enhanced's finding)
        const bool enh = e.frame->hdr.get(MpaRr::enhanced);
        RDMACONF_JUDGE(ctx, e, enh == o.s_bit, o.s_bit ? "an enhanced Reply (S = 1)" : "an unenhanced Reply (S = 0)",
                       enh ? "S = 1" : "S = 0", fmt::format("the Request's revision {}", o.rev));
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

  add(k, {"iwarp.mpa.v2.ird_ord_auto", "RFC 6581", "§9.1", Level::must,
          "An initiator IRD or ORD of 0x3FFF (no automatic negotiation) is answered in kind: to an initiator ORD of "
          "0x3FFF the Reply's IRD is 0x3FFF, to an initiator IRD of 0x3FFF the Reply's ORD is 0x3FFF."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        if (!f) return;
        const auto& o = ctx.state<Offer>();
        if (o.ord == kNoAutoNegotiation) {
          const auto ird = f->v2->get(MpaV2::ird);
          RDMACONF_JUDGE(ctx, e, ird == kNoAutoNegotiation, "IRD 0x3FFF (the initiator's ORD is 0x3FFF)", fmt::format("IRD 0x{:x}", ird));
        }
        if (o.ird == kNoAutoNegotiation) {
          const auto ord = f->v2->get(MpaV2::ord);
          RDMACONF_JUDGE(ctx, e, ord == kNoAutoNegotiation, "ORD 0x3FFF (the initiator's IRD is 0x3FFF)", fmt::format("ORD 0x{:x}", ord));
        }
      });

  add(k, {"iwarp.mpa.v2.p2p_echo", "RFC 6581", "§9.2", Level::must,
          "The responder's Reply sets A as the initiator's Request did: 1 for the peer-to-peer model, 0 for "
          "client-server."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        if (!f) return;
        const bool want = ctx.state<Offer>().p2p, got = f->v2->get(MpaV2::p2p);
        RDMACONF_JUDGE(ctx, e, got == want, fmt::format("A = {} (echoing the initiator)", want ? 1 : 0), fmt::format("A = {}", got ? 1 : 0));
      });

  add(k, {"iwarp.mpa.v2.rtr_flags", "RFC 6581", "§9.2", Level::must,
          "A Request or Reply whose IRD/ORD word has A = 0 (client-server) sets none of the RTR flags B, C and D."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame || !e.frame->v2 || e.frame->v2->get(MpaV2::p2p)) return;
        const unsigned t = rtr_types(*e.frame);
        RDMACONF_JUDGE(ctx, e, t == 0, "no RTR flag (A = 0)", rtr_names(t));
      });

  add(k, {"iwarp.mpa.v2.rtr_type", "RFC 6581", "§9.2", Level::must,
          "A peer-to-peer Reply names at least one RTR type (B, C or D): those it supports among the offered "
          "ones, or when it supports none of them one it does support; naming types nobody offered is allowed."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        auto& o = ctx.state<Offer>();
        if (!f || !o.p2p || !f->v2->get(MpaV2::p2p)) return;
        const unsigned sel = rtr_types(*f);
        // The MUSTs of §9.2 leave one responder free to name nothing: one that
        // supports exactly one offered type (the SHOULD still asks it to name
        // it). A Reply naming none is proof only where nothing was offered: a
        // responder then supports none of the offered types and must name one.
        if (sel != 0) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = fmt::format("at least one RTR type (offered: {})", rtr_names(o.types));
        ev.actual = "none";
        if (o.types == 0) return fail_shown(ctx, e.dir, std::move(ev));
        ev.detail = "a MUST of RFC 6581 §9.2 is broken unless the responder supports exactly one offered type, whose flag §9.2 "
                    "then asks it (SHOULD) to set";
        ctx.tally.inconclusive(std::move(ev));
      });

  add(k, {"iwarp.mpa.v2.rtr_first", "RFC 6581", "§5, §9.2", Level::must,
          "After a peer-to-peer Reply the initiator's first FPDU is a zero-length RTR of a type the Reply names (a "
          "Send, an RDMA Write, or an RDMA Read Request of size zero), or, when it can send none of them, a "
          "Terminate naming LLP error type 0, code 7 (no matching RTR option)."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        const MpaRrFrame* f = enhanced_reply(ctx, e);
        auto& o = ctx.state<Offer>();
        if (f && o.p2p && f->v2->get(MpaV2::p2p)) {
          o.selected = rtr_types(*f);
          o.reply_p2p = true;
        }
      })
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        auto& o = ctx.state<Offer>();
        if (!e.from_initiator || o.rtr_checked || !o.reply_p2p) return;
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
          if ((o.selected & 1) && g.opcode() == kOpSend && !g.tagged() && payload == 0 && g.last()) ok = true;
          if ((o.selected & 2) && g.opcode() == kOpWrite && g.tagged() && payload == 0 && g.last()) ok = true;
          if ((o.selected & 4) && g.opcode() == kOpReadRequest && !g.tagged() && s->body && s->body->get(ReadRequest::size) == 0)
            ok = true;
          if (!g.tagged() && g.opcode() == kOpTerminate && s->body) {
            const protocols::Header& t = *s->body;
            const unsigned l = static_cast<unsigned>(t.get(Terminate::layer)), et = static_cast<unsigned>(t.get(Terminate::etype)),
                           ec = static_cast<unsigned>(t.get(Terminate::ecode));
            actual = fmt::format("a Terminate, layer {}, type {}, code 0x{:02x}", l, et, ec);
            ok = l == kTermLayerLlp && et == 0 && ec == kTermLlpNoMatchingRtr;
          }
        }
        RDMACONF_JUDGE(ctx, e, ok, fmt::format("a zero-length {} RTR, or a Terminate LLP/0/0x07", rtr_names(o.selected)), actual);
      });
}

}  // namespace rdmaconf::conformance

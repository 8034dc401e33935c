// RFC 5044 §7.1 (connection setup) and RFC 6581 §9 (enhanced setup):
// what the MPA Request and Reply frames must contain.
#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

std::string printable(protocols::Bytes b) {
  std::string s;
  for (auto x : b) {
    const auto c = static_cast<unsigned char>(x);
    s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
  }
  return s;
}

void check_key(CaseCtx& ctx, const iwarp::RrEvent& e, MpaFrameKind want) {
  const std::string_view key = want == MpaFrameKind::request ? kMpaRequestKey : kMpaReplyKey;
  if (e.frame && e.frame->kind() == want) return ctx.tally.pass();
  Evidence ev = evidence_at(e, ctx.side(e.dir));
  ev.expected = std::string(key);
  ev.actual = printable(e.head.first(std::min<std::size_t>(e.head.size(), key.size())));
  fail_shown(ctx, e.dir, std::move(ev));
}

}  // namespace

void add_iwarp_mpa_setup_cases(IwarpCases& k) {
  add(k, {"iwarp.mpa.req.key", "RFC 5044", "§7.1, §7.1.1, §7.1.2", Level::must,
          "The initiator's first octets on the connection are an MPA Request frame, which starts with the "
          "16-octet key \"MPA ID Req Frame\"."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (e.from_initiator) check_key(ctx, e, MpaFrameKind::request);
      });

  add(k, {"iwarp.mpa.rep.key", "RFC 5044", "§7.1, §7.1.1", Level::must,
          "The responder answers an MPA Request with an MPA Reply frame, which starts with the 16-octet key "
          "\"MPA ID Rep Frame\"."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.from_initiator) check_key(ctx, e, MpaFrameKind::reply);
      });

  add(k, {"iwarp.mpa.rr.reserved", "RFC 5044", "§7.1.1, §7.1.2; RFC 6581 §6", Level::must,
          "The reserved flag bits of an MPA Request or Reply are sent as zero. In a revision 1 frame the bit "
          "RFC 6581 uses for enhanced setup is still reserved."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame) return;
        const auto& h = e.frame->hdr;
        unsigned bits = static_cast<unsigned>(h.get(MpaRr::rsvd));
        const bool enh_reserved = h.get(MpaRr::rev) < 2 && h.get(MpaRr::enhanced);
        if (bits == 0 && !enh_reserved) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = "reserved flag bits 0";
        ev.actual = fmt::format("flags octet 0x{:02x}", protocols::u8(h.bytes(), 16));
        if (enh_reserved) ev.detail = "enhanced bit set in a revision 1 frame";
        fail_shown(ctx, e.dir, std::move(ev));
      });

  add(k, {"iwarp.mpa.rr.revision", "RFC 5044", "§7.1.1, §7.1.2", Level::must,
          "The revision of an MPA Request or Reply is 1 (RFC 5044), or 2 or higher where RFC 6581's enhanced "
          "setup is used; 0 is none. A revision above 2 no RFC this suite knows defines is inconclusive."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame) return;
        const auto rev = e.frame->hdr.get(MpaRr::rev);
        if (rev == 1 || rev == 2) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = "1 or 2";
        ev.actual = fmt::format("{}", rev);
        if (rev == 0) return fail_shown(ctx, e.dir, std::move(ev));
        // RFC 6581 §6 asks for "two or higher" to use enhanced setup: a later revision is not excluded.
        ev.detail = "RFC 6581 §6 allows revision two or higher; this suite knows no revision above 2";
        ctx.tally.inconclusive(std::move(ev));
      });

  add(k, {"iwarp.mpa.rr.pd_length", "RFC 5044", "§7.1.1, §7.1.2; RFC 6581 §7", Level::must,
          "The private data of an MPA Request or Reply is at most 512 octets."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame) return;
        const auto n = e.frame->hdr.get(MpaRr::pd_len);
        if (n <= kMpaMaxPrivateData) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = fmt::format("at most {}", kMpaMaxPrivateData);
        ev.actual = fmt::format("{}", n);
        fail_shown(ctx, e.dir, std::move(ev));
      });

  add(k, {"iwarp.mpa.rr.reject_flag", "RFC 5044", "§7.1.2", Level::must,
          "Only a Reply can reject a connection: an MPA Request sends the R (rejected) bit as zero."})
      .rr([](CaseCtx& ctx, const IwarpConn&, const iwarp::RrEvent& e) {
        if (!e.frame || e.frame->kind() != MpaFrameKind::request) return;
        RDMACONF_JUDGE(ctx, e, !e.frame->hdr.get(MpaRr::r), "R = 0 in a Request", "R = 1");
      });
}

}  // namespace rdmaconf::conformance

// RFC 5044 §4 and §5 (FPDU format, CRC) and the DDP/RDMAP header that every
// ULPDU carries (RFC 5041 §4, RFC 5040 §4).
#include <fmt/format.h>

#include "conformance/cases/case_builder.hpp"

namespace rdmaconf::conformance {

void add_iwarp_mpa_fpdu_cases(Catalog& k) {
  add(k, {"iwarp.mpa.fpdu.crc", "RFC 5044", "§4, §5", Level::must, Family::iwarp,
          "When CRCs are in use on the connection (either side set C), every FPDU carries the CRC32c of its "
          "length field, ULPDU, pad and markers."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        if (!e.crc_in_use) return;
        if (e.fpdu->crc_wire == e.crc_computed) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = fmt::format("0x{:08x}", e.crc_computed);
        ev.actual = fmt::format("0x{:08x}", e.fpdu->crc_wire);
        ev.detail = fmt::format("FPDU #{} of this direction, ULPDU length {}", e.index, e.fpdu->ulpdu_len);
        ctx.tally.fail(std::move(ev));
      })
      .stop([](CaseCtx& ctx, const IwarpConn& c, const iwarp::StopEvent& e) {
        if (c.mpa->negotiated().crc()) inconclusive_on_gap(ctx, e);
      });

  add(k, {"iwarp.ddp.segment.header", "RFC 5041", "§4; RFC 5040 §4", Level::must, Family::iwarp,
          "Every ULPDU is a DDP segment that holds its whole DDP header (14 octets tagged, 18 untagged) and the "
          "RDMAP header its opcode calls for (Read Request, Terminate, Immediate, Atomic)."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        if (e.ddp->ok()) return ctx.tally.pass();
        Evidence ev = evidence_at(e, ctx.side(e.dir));
        ev.expected = "a complete DDP/RDMAP header";
        ev.actual = e.ddp->error().message();
        ev.detail = fmt::format("ULPDU length {}", e.fpdu->ulpdu_len);
        ctx.tally.fail(std::move(ev));
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });
}

}  // namespace rdmaconf::conformance

// InfiniBand transport over RoCEv2: the BTH (IBTA Vol.1 §9.2), the extension
// headers an opcode calls for (§9.3) and the ICRC (§7.8.1, Annex A17).
#include <fmt/format.h>

#include "conformance/cases/case_builder.hpp"

namespace rdmaconf::conformance {

using namespace protocols::ib;

namespace {

Evidence packet_evidence(CaseCtx& ctx, const RocePacketEvent& e) {
  Evidence ev;
  ev.frames = {e.pkt->frame};
  ev.side = ctx.side(e.dir);
  if (e.ib->ok()) {
    const auto& b = (*e.ib)->bth;
    ev.detail = fmt::format("{} QP 0x{:06x} PSN {}", opcode_name(static_cast<std::uint8_t>(b.get(Bth::opcode))),
                            b.get(Bth::destqp), b.get(Bth::psn));
  }
  return ev;
}

void add_roce(Catalog& k, CaseInfo i, BuiltRoceCase::Packet f) {
  k.roce.push_back(std::make_unique<BuiltRoceCase>(i, std::move(f)));
}

}  // namespace

void add_roce_transport_cases(Catalog& k) {
  add_roce(k, {"roce.packet.headers", "IBTA Vol.1", "§9.2, §9.3", Level::must, Family::roce,
               "A RoCEv2 packet holds a whole BTH, every extension header its opcode calls for, and the 4-octet "
               "ICRC, with the pad count not exceeding what follows the headers."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (e.ib->ok()) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = "complete transport headers and ICRC";
             ev.actual = e.ib->error().message();
             ctx.tally.fail(std::move(ev));
           });

  add_roce(k, {"roce.icrc", "IBTA Vol.1", "§7.8.1; Annex A17", Level::must, Family::roce,
               "The ICRC is the CRC-32 of the packet with the variant fields (IP TOS/traffic class, TTL/hop limit, "
               "flow label, IP and UDP checksums, the BTH FECN/BECN/reserved octet) set to ones, preceded by eight "
               "octets of ones standing for the LRH."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             if ((*e.ib)->icrc == e.icrc_computed) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = fmt::format("0x{:08x}", e.icrc_computed);
             ev.actual = fmt::format("0x{:08x}", (*e.ib)->icrc);
             ctx.tally.fail(std::move(ev));
           });

  add_roce(k, {"ib.bth.tver", "IBTA Vol.1", "§9.2", Level::must, Family::roce,
               "The transport header version in the BTH is 0."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto v = (*e.ib)->bth.get(Bth::tver);
             if (v == 0) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = "0";
             ev.actual = fmt::format("{}", v);
             ctx.tally.fail(std::move(ev));
           });

  add_roce(k, {"ib.bth.opcode", "IBTA Vol.1", "§9.2.1; Annex A17", Level::must, Family::roce,
               "The BTH opcode is one the specification defines for its transport (RC, UC, RD, UD, XRC) or the "
               "RoCEv2 CNP."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto op = static_cast<std::uint8_t>((*e.ib)->bth.get(Bth::opcode));
             if (opcode_info(op).valid) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = "a defined opcode";
             ev.actual = fmt::format("0x{:02x}", op);
             ctx.tally.fail(std::move(ev));
           });

  add_roce(k, {"ib.bth.reserved", "IBTA Vol.1", "§9.2", Level::must, Family::roce,
               "The reserved bits of the BTH (six after FECN/BECN, seven after AckReq) are sent as zero."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto& b = (*e.ib)->bth;
             if (b.nonzero_reserved() == 0) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = "0";
             ev.actual = fmt::format("reserved 0x{:02x} / 0x{:02x}", b.get(Bth::rsvd1), b.get(Bth::rsvd2));
             ctx.tally.fail(std::move(ev));
           });

  add_roce(k, {"ib.bth.padcnt", "IBTA Vol.1", "§9.2.4", Level::must, Family::roce,
               "The pad count is the number of octets (0-3) that brings the payload to a multiple of four."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok() || !(*e.ib)->op->valid) return;
             const auto& p = **e.ib;
             // The pad count splits the octets after the headers into payload and pad;
             // it is right when that total is a multiple of four.
             const std::size_t total = p.payload.size() + p.pad;
             if (total % 4 == 0) return ctx.tally.pass();
             Evidence ev = packet_evidence(ctx, e);
             ev.expected = "payload plus pad a multiple of 4 octets";
             ev.actual = fmt::format("{} octets after the headers with pad count {}", total, p.pad);
             ctx.tally.fail(std::move(ev));
           });
}

}  // namespace rdmaconf::conformance

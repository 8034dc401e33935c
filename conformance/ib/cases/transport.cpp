// InfiniBand transport over RoCEv2, packet by packet: the BTH (IBTA Vol.1
// §9.2), the extension headers an opcode calls for (§9.3), the ICRC (§7.8.1,
// Annex A17), and the fields each packet must get right on its own.
#include <fmt/format.h>

#include "conformance/ib/case.hpp"

namespace rdmaconf::conformance {

using namespace protocols::ib;

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

namespace {
Evidence violation(CaseCtx& ctx, const RocePacketEvent& e, std::string expected, std::string actual, std::string detail) {
  Evidence ev = packet_evidence(ctx, e);
  ev.expected = std::move(expected);
  ev.actual = std::move(actual);
  if (!detail.empty()) ev.detail += "; " + detail;
  return ev;
}
}  // namespace

void roce_fail(CaseCtx& ctx, const RocePacketEvent& e, std::string expected, std::string actual, std::string detail) {
  ctx.tally.fail(violation(ctx, e, std::move(expected), std::move(actual), std::move(detail)));
}

void roce_doubt(CaseCtx& ctx, const RocePacketEvent& e, std::string expected, std::string actual, std::string detail,
                unsigned dirs) {
  ctx.tally.doubtful(violation(ctx, e, std::move(expected), std::move(actual), std::move(detail)), dirs);
}

namespace {

// A check on every packet that decoded with a defined opcode.
template <class F>
BuiltRoceCase::Packet decoded(F f) {
  return [f](CaseCtx& ctx, const RocePacketEvent& e) {
    if (e.ib->ok() && (*e.ib)->op->valid) f(ctx, e, **e.ib);
  };
}

std::string reserved_text(const IbPacket& p) {
  std::string s;
  for (std::size_t i = 0; i < kExtCount; ++i)
    if (p.ext[i] && p.ext[i]->nonzero_reserved()) s += fmt::format("{}{} reserved 0x{:x}", s.empty() ? "" : ", ", ext_def(i).abbrev, p.ext[i]->nonzero_reserved());
  return s;
}

}  // namespace

void add_roce_transport_cases(IbCases& k) {
  add_roce(k, {"roce.packet.headers", "IBTA Vol.1", "ch. 9", Level::must,
               "A RoCEv2 packet holds a whole BTH, every extension header its opcode calls for, and the 4-octet "
               "ICRC, with the pad count not exceeding what follows the headers."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (e.ib->ok()) return ctx.tally.pass();
             roce_fail(ctx, e, "complete transport headers and ICRC", e.ib->error().message());
           });

  add_roce(k, {"roce.icrc", "IBTA Vol.1", "§7.8", Level::must,
               "The ICRC is the CRC-32 of the packet with the variant fields (IP TOS/traffic class, TTL/hop limit, "
               "flow label, IP and UDP checksums, the BTH FECN/BECN/reserved octet) set to ones, preceded by eight "
               "octets of ones standing for the LRH. On native InfiniBand: the LRH with its VL set to ones when no "
               "GRH follows; eight octets of ones for the LRH and the GRH's traffic class, flow label and hop limit "
               "set to ones when one does."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             RDMACONF_ROCE_JUDGE(ctx, e, (*e.ib)->icrc == e.icrc_computed, fmt::format("0x{:08x}", e.icrc_computed),
                                 fmt::format("0x{:08x}", (*e.ib)->icrc));
           });

  add_roce(k, {"ib.bth.tver", "IBTA Vol.1", "ch. 9", Level::must,
               "The transport header version in the BTH is 0."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto v = (*e.ib)->bth.get(Bth::tver);
             RDMACONF_ROCE_JUDGE(ctx, e, v == 0, "0", fmt::format("{}", v));
           });

  add_roce(k, {"ib.bth.opcode", "IBTA Vol.1", "ch. 9", Level::must,
               "The BTH opcode is one the specification defines for its transport (RC, UC, RD, UD, XRC) or the "
               "RoCEv2 CNP."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto op = static_cast<std::uint8_t>((*e.ib)->bth.get(Bth::opcode));
             RDMACONF_ROCE_JUDGE(ctx, e, opcode_info(op).valid, "a defined opcode", fmt::format("0x{:02x}", op));
           });

  add_roce(k, {"ib.bth.reserved", "IBTA Vol.1", "ch. 9", Level::must,
               "The reserved bits of the BTH (six after FECN/BECN, seven after AckReq) are sent as zero."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             if (!e.ib->ok()) return;
             const auto& b = (*e.ib)->bth;
             RDMACONF_ROCE_JUDGE(ctx, e, b.nonzero_reserved() == 0, "0",
                                 fmt::format("reserved 0x{:02x} / 0x{:02x}", b.get(Bth::rsvd1), b.get(Bth::rsvd2)));
           });

  add_roce(k, {"ib.eth.reserved", "IBTA Vol.1", "ch. 9; Annex A14", Level::must,
               "The reserved fields of the extension headers (RDETH, DETH, XRCETH, FETH) are sent as zero."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             bool any = false;
             for (const auto& x : p.ext) any |= x && x->nonzero_reserved();
             RDMACONF_ROCE_JUDGE(ctx, e, !any, "0", reserved_text(p));
           }));

  add_roce(k, {"ib.bth.padcnt", "IBTA Vol.1", "ch. 9", Level::must,
               "The pad count is the number of octets (0-3) that brings the payload to a multiple of four."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             // The pad count splits the octets after the headers into payload and pad;
             // it is right when that total is a multiple of four.
             const std::size_t total = p.payload.size() + p.pad;
             RDMACONF_ROCE_JUDGE(ctx, e, total % 4 == 0, "payload plus pad a multiple of 4 octets",
                                 fmt::format("{} octets after the headers with pad count {}", total, p.pad));
           }));

  add_roce(k, {"ib.bth.pkey", "IBTA Vol.1", "ch. 9; ch. 10", Level::must,
               "The P_Key names a partition: its low 15 bits are not zero (0x0000 and 0x8000 are invalid)."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto pk = p.bth.get(Bth::pkey);
             RDMACONF_ROCE_JUDGE(ctx, e, (pk & 0x7fff) != 0, "a P_Key with a non-zero partition number",
                                 fmt::format("0x{:04x}", pk));
           }));

  add_roce(k, {"ib.payload.rule", "IBTA Vol.1", "ch. 9; Annex A17", Level::must,
               "Opcodes without a payload (RDMA READ Request, Acknowledge, ATOMIC Acknowledge, CmpSwap, FetchAdd, "
               "RESYNC, FLUSH) carry none; ATOMIC WRITE carries exactly 8 octets and a CNP exactly 16."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const std::size_t want = p.op->payload == PayloadRule::none     ? 0
                                      : p.op->payload == PayloadRule::fixed8 ? 8
                                      : p.op->payload == PayloadRule::fixed16 ? 16
                                                                              : p.payload.size();
             RDMACONF_ROCE_JUDGE(ctx, e, p.payload.size() == want, fmt::format("{} octets of payload", want),
                                 fmt::format("{} octets", p.payload.size()));
           }));

  add_roce(k, {"ib.cnp.format", "IBTA Vol.1", "Annex A17.9.3", Level::must,
               "A RoCEv2 Congestion Notification Packet carries, after its BTH, 16 reserved octets sent as zero."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             if (p.op->transport != Transport::cnp || p.payload.size() != 16) return;
             bool zero = true;
             for (auto b : p.payload) zero &= b == std::byte{0};
             RDMACONF_ROCE_JUDGE(ctx, e, zero, "16 zero octets", "non-zero reserved octets");
           }));

  add_roce(k, {"roce.qp0", "IBTA Vol.1", "Annex A16; Annex A17", Level::must,
               "RoCE has no subnet manager: no packet is addressed to QP0, the subnet management QP (on native "
               "InfiniBand QP0 is legitimate; ib.lrh.vl15 judges it there)."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             if (p.op->transport == Transport::cnp || e.pkt->native_ib) return;  // a CNP names the QP being notified
             RDMACONF_ROCE_JUDGE(ctx, e, p.bth.get(Bth::destqp) != 0, "a destination QP other than 0", "QP 0");
           }));

  add_roce(k, {"roce.deth.srcqp", "IBTA Vol.1", "ch. 9; Annex A16; Annex A17", Level::must,
               "Nor is QP0 the source of a datagram on RoCE: the DETH source QP is not 0."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto& d = p.get(kExtDeth);
             if (!d || e.pkt->native_ib) return;
             RDMACONF_ROCE_JUDGE(ctx, e, d->get(Deth::srcqp) != 0, "a source QP other than 0", "QP 0");
           }));

  add_roce(k, {"ib.bth.se", "IBTA Vol.1", "ch. 9", Level::must,
               "The Solicited Event bit is set only on the Last or Only packet of a SEND, or of an RDMA WRITE with "
               "Immediate: the packets that complete a receive."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             if (!p.bth.get(Bth::se)) return ctx.tally.pass();
             const bool end = p.op->seq == Seq::last || p.op->seq == Seq::only;
             const bool allowed = end && (p.op->kind == OpKind::send || (p.op->kind == OpKind::write && (p.op->exts & kExtImmDt)));
             RDMACONF_ROCE_JUDGE(ctx, e, allowed, "SE clear", "SE set");
           }));

  add_roce(k, {"ib.ud.gsi_qkey", "IBTA Vol.1", "ch. 13", Level::must,
               "Datagrams to QP1, the general services QP, carry the well-known Q_Key 0x80010000."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto& d = p.get(kExtDeth);
             if (!d || p.bth.get(Bth::destqp) != 1) return;
             const auto q = d->get(Deth::qkey);
             RDMACONF_ROCE_JUDGE(ctx, e, q == 0x80010000, "Q_Key 0x80010000", fmt::format("0x{:08x}", q));
           }));

  add_roce(k, {"ib.gsi.transport", "IBTA Vol.1", "ch. 13", Level::must,
               "QP1, the general services QP, is a datagram QP: every packet addressed to it carries a UD opcode."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             // A CNP names the QP being notified, whatever its service.
             if (p.bth.get(Bth::destqp) != 1 || p.op->transport == Transport::cnp) return;
             RDMACONF_ROCE_JUDGE(ctx, e, p.op->transport == Transport::ud, "a UD opcode",
                                 fmt::format("{} ({} opcode 0x{:02x})", p.op->op_name, transport_name(p.op->transport),
                                             p.bth.get(Bth::opcode)));
           }));

  add_roce(k, {"ib.atomic.alignment", "IBTA Vol.1", "ch. 9", Level::must,
               "The virtual address of a CmpSwap or FetchAdd is aligned to 8 octets."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto& a = p.get(kExtAtomicEth);
             if (!a) return;
             const auto va = a->get(AtomicEth::va);
             RDMACONF_ROCE_JUDGE(ctx, e, va % 8 == 0, "an address that is a multiple of 8", fmt::format("0x{:x}", va));
           }));

  add_roce(k, {"ib.reth.length", "IBTA Vol.1", "ch. 9", Level::must,
               "An RDMA WRITE or READ moves at most 2^31 octets: the RETH DMA length does not exceed it."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto& r = p.get(kExtReth);
             if (!r || p.op->kind == OpKind::flush) return;
             const auto len = r->get(Reth::dmalen);
             RDMACONF_ROCE_JUDGE(ctx, e, len <= 0x80000000ull, "at most 2^31 octets", fmt::format("{} octets", len));
           }));

  add_roce(k, {"ib.aeth.syndrome", "IBTA Vol.1", "ch. 9", Level::must,
               "An AETH syndrome is an ACK, an RNR NAK or a NAK with a defined code (PSN sequence error, invalid "
               "request, remote access error, remote operational error, invalid RD request), with bit 7 zero; "
               "Read Responses and ATOMIC Acknowledges carry an ACK syndrome."},
           decoded([](CaseCtx& ctx, const RocePacketEvent& e, const IbPacket& p) {
             const auto& a = p.get(kExtAeth);
             if (!a) return;
             const auto syn = static_cast<std::uint32_t>(a->get(Aeth::syndrome));
             const auto kind = ib::ack_kind(syn);
             const bool defined = !(syn & 0x80) && kind != ib::AckKind::reserved &&
                                  (kind != ib::AckKind::nak || (syn & 0x1f) <= ib::kNakInvalidRd);
             const bool fits = p.op->kind == OpKind::ack || kind == ib::AckKind::ack;
             RDMACONF_ROCE_JUDGE(ctx, e, defined && fits,
                                 fits ? "a defined syndrome" : "an ACK syndrome on a response carrying data",
                                 fmt::format("syndrome 0x{:02x}", syn));
           }));
}

}  // namespace rdmaconf::conformance

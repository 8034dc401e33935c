// Native InfiniBand link and network headers, for captures whose link type is
// LINKTYPE_INFINIBAND: the LRH (IBTA Vol.1 §7.7), the VCRC (§7.8.2), the GRH
// (§8.3, also RoCEv1's) and the virtual lane reserved for subnet management
// (§7.6.5). On RoCEv2 captures these cases are not applicable: RoCEv2 has
// neither LRH nor VCRC nor GRH.
#include <fmt/format.h>

#include "conformance/ib/case.hpp"
#include "protocols/ib/packet.hpp"

namespace rdmaconf::conformance {

using namespace protocols;
using namespace protocols::ib;

namespace {

// A check on every native InfiniBand packet, with its LRH (always decodable:
// the dissector has decoded it once already).
template <class F>
BuiltRoceCase::Packet native(F f) {
  return [f](CaseCtx& ctx, const RocePacketEvent& e) {
    if (!e.pkt->native_ib) return;
    auto lrh = Header::decode(kLrh, e.pkt->l3);
    if (lrh) f(ctx, e, *lrh);
  };
}

constexpr std::uint8_t kVlManagement = 15;

}  // namespace

void add_ib_link_cases(IbCases& k) {
  add_roce(k, {"ib.lrh.lver", "IBTA Vol.1", "ch. 7", Level::must,
               "The link version in the LRH is 0."},
           native([](CaseCtx& ctx, const RocePacketEvent& e, const Header& lrh) {
             const auto v = lrh.get(Lrh::lver);
             RDMACONF_ROCE_JUDGE(ctx, e, v == 0, "0", fmt::format("{}", v));
           }));

  add_roce(k, {"ib.lrh.reserved", "IBTA Vol.1", "ch. 7", Level::must,
               "The two reserved fields of the LRH (2 bits after the service level, 5 bits before the packet "
               "length) are sent as zero."},
           native([](CaseCtx& ctx, const RocePacketEvent& e, const Header& lrh) {
             const auto r1 = lrh.get(Lrh::rsvd1), r2 = lrh.get(Lrh::rsvd2);
             RDMACONF_ROCE_JUDGE(ctx, e, r1 == 0 && r2 == 0, "both zero",
                                 fmt::format("0x{:x} and 0x{:x}", r1, r2));
           }));

  add_roce(k, {"ib.lrh.pktlen", "IBTA Vol.1", "ch. 7", Level::must,
               "The LRH packet length counts, in 4-octet words, every octet from the first of the LRH through the "
               "last of the ICRC (the VCRC is not counted)."},
           native([](CaseCtx& ctx, const RocePacketEvent& e, const Header& lrh) {
             const std::size_t words = lrh.get(Lrh::pktlen), have = e.pkt->l3.size();
             RDMACONF_ROCE_JUDGE(ctx, e, words * 4 == have, fmt::format("{} octets from the LRH through the ICRC", have),
                                 fmt::format("{} words, {} octets", words, words * 4),
                                 e.pkt->has_vcrc ? "" : "the frame ends without a VCRC");
           }));

  add_roce(k, {"ib.vcrc", "IBTA Vol.1", "§7.8", Level::must,
               "The VCRC is the CRC-16 (polynomial 0x100B, seed all ones, inverted) of every octet from the LRH "
               "through the ICRC."},
           native([](CaseCtx& ctx, const RocePacketEvent& e, const Header&) {
             if (!e.pkt->has_vcrc) return;  // a capture that strips the VCRC leaves nothing to judge
             const auto want = vcrc(e.pkt->l3);
             RDMACONF_ROCE_JUDGE(ctx, e, e.pkt->vcrc == want, fmt::format("0x{:04x}", want),
                                 fmt::format("0x{:04x}", e.pkt->vcrc));
           }));

  add_roce(k, {"ib.grh.header", "IBTA Vol.1", "ch. 8; Annex A16", Level::must,
               "A GRH (native InfiniBand, or RoCEv1) carries IP version 6, and its payload length counts the "
               "octets after the GRH through the ICRC."},
           [](CaseCtx& ctx, const RocePacketEvent& e) {
             const auto at = e.pkt->grh_offset();
             if (!at) return;
             auto grh = Header::decode(kGrh, e.pkt->l3.subspan(*at));
             if (!grh) return;
             const auto ver = grh->get(Grh::ipver), len = grh->get(Grh::paylen);
             const std::size_t want = e.pkt->l3.size() - *at - kGrh.size;
             RDMACONF_ROCE_JUDGE(ctx, e, ver == 6 && len == want, fmt::format("IP version 6, payload length {}", want),
                                 fmt::format("IP version {}, payload length {}", ver, len));
           });

  add_roce(k, {"ib.lrh.vl15", "IBTA Vol.1", "ch. 7", Level::must,
               "Virtual lane 15 is the subnet management lane: packets on VL15 go to QP0, and packets to QP0 "
               "travel on VL15."},
           native([](CaseCtx& ctx, const RocePacketEvent& e, const Header& lrh) {
             if (!e.ib->ok()) return;
             const auto& p = **e.ib;
             if (p.op->transport == Transport::cnp) return;
             const bool vl15 = lrh.get(Lrh::vl) == kVlManagement, qp0 = p.bth.get(Bth::destqp) == 0;
             if (!vl15 && !qp0) return;
             RDMACONF_ROCE_JUDGE(ctx, e, vl15 == qp0, "VL15 and QP0 together",
                                 fmt::format("VL {} to QP 0x{:06x}", lrh.get(Lrh::vl), p.bth.get(Bth::destqp)));
           }));
}

}  // namespace rdmaconf::conformance

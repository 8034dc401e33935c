#pragma once
// InfiniBand transport traffic for the golden captures: a conversation as a
// list of packets that fault scenarios edit, written as RoCEv2, RoCEv1 or
// native InfiniBand.
#include "captures/gen/common.hpp"
#include "protocols/ib/packet.hpp"

namespace rdmaconf::captures::gen {

// ---- RoCEv2: a conversation as a list of packets, which fault scenarios edit
struct RocePkt {
  bool from_a = true;
  std::uint8_t opcode = 0;
  std::uint32_t qp = 0, psn = 0;
  Buf payload;
  std::vector<std::pair<ib::Ext, Header>> exts;
  bool ackreq = false;
  std::uint16_t pkey = 0xffff;
  std::function<void(Buf&)> mangle;  // edits the encoded transport packet (BTH to ICRC)
  bool corrupt_icrc = false;
  // Native InfiniBand only: the virtual lane, an edit of the LRH and GRH made
  // before the CRCs are computed, and a VCRC altered after.
  std::uint8_t vl = 0;
  std::function<void(Buf&)> link_edit;
  bool corrupt_vcrc = false;
};
// RoCEv2 over IP; native InfiniBand without / with a GRH; RoCEv1 (GRH over Ethernet)
enum class Link { roce, ib_local, ib_global, roce_v1 };
struct RoceTraffic {
  bool ipv6 = false;
  std::vector<RocePkt> pkts;
  std::string fault;
  std::function<void(RoceTraffic&)> edit;
  Link link = Link::roce;
};

inline Header reth(std::uint64_t va, std::uint32_t rkey, std::uint64_t len) { return ib::make_reth(va, rkey, len); }
inline Header aeth(std::uint32_t msn, std::uint32_t syndrome = 0) { return ib::make_aeth(syndrome, msn); }
inline Header deth(std::uint32_t qkey, std::uint32_t srcqp) { return ib::make_deth(qkey, srcqp); }
inline Header atomic_eth(std::uint64_t va) {
  return Header::with(ib::kAtomicEth, {{ib::AtomicEth::va, va}, {ib::AtomicEth::rkey, 0x99}, {ib::AtomicEth::swapadd, 1}});
}
inline Header imm_eth(std::uint32_t v) { return Header::with(ib::kImmDt, {{ib::ImmDt::imm, v}}); }

constexpr std::uint32_t kQa = 0x11, kQb = 0x12;  // A's and B's RC QPs
// AETH syndromes: NAK PSN sequence error; NAK remote access error; RNR NAK, timer 14
constexpr std::uint32_t kNakSeq = ib::syndrome(ib::AckKind::nak, ib::kNakPsnSequence);
constexpr std::uint32_t kNakRemoteAccess = ib::syndrome(ib::AckKind::nak, ib::kNakRemoteAccess);
constexpr std::uint32_t kRnrNak = ib::syndrome(ib::AckKind::rnr_nak, 14);

inline RocePkt req(std::uint8_t op, std::uint32_t psn, Buf payload, std::vector<std::pair<ib::Ext, Header>> exts = {}, bool ackreq = false) {
  return RocePkt{true, op, kQb, psn, std::move(payload), std::move(exts), ackreq, 0xffff, {}, false, 0, {}, false};
}
inline RocePkt resp(std::uint8_t op, std::uint32_t psn, Buf payload, std::vector<std::pair<ib::Ext, Header>> exts) {
  return RocePkt{false, op, kQa, psn, std::move(payload), std::move(exts), false, 0xffff, {}, false, 0, {}, false};
}
inline RocePkt ack(std::uint32_t psn, std::uint32_t msn, std::uint32_t syndrome = 0) { return resp(0x11, psn, {}, {{ib::kExtAeth, aeth(msn, syndrome)}}); }
inline RocePkt send_only(std::uint32_t psn, std::size_t n, bool ackreq = false) { return req(0x04, psn, pattern(n, psn), {}, ackreq); }

// Every RC operation with its answers (path MTU 1024), UC, UD, a datagram to
// the general services QP, and a CNP.
inline std::vector<RocePkt> roce_all_opcodes() {
  Header aa(ib::kAtomicAckEth);
  Header ieth(ib::kIeth);
  ieth.set(ib::Ieth::rkey, 0x77);
  std::vector<RocePkt> v = {
      req(0x06, 100, pattern(1024, 1), {{ib::kExtReth, reth(0x1000, 0x77, 2500)}}),   // 0 WRITE First
      req(0x07, 101, pattern(1024, 2)),                                               // 1 WRITE Middle
      req(0x08, 102, pattern(452, 3), {}, true),                                      // 2 WRITE Last
      ack(102, 1),                                                                    // 3
      send_only(103, 33),                                                             // 4 SEND Only, pad 3
      req(0x05, 104, pattern(7, 5), {{ib::kExtImmDt, imm_eth(0xfeedbeef)}}, true),    // 5 SEND Only with Immediate
      ack(104, 3),                                                                    // 6 (coalesced)
      req(0x0C, 105, {}, {{ib::kExtReth, reth(0x9000, 0x88, 1500)}}),                 // 7 READ Request, PSNs 105-106
      resp(0x0D, 105, pattern(1024, 6), {{ib::kExtAeth, aeth(3)}}),                   // 8 READ Response First
      resp(0x0F, 106, pattern(476, 7), {{ib::kExtAeth, aeth(4)}}),                    // 9 READ Response Last
      req(0x13, 107, {}, {{ib::kExtAtomicEth, atomic_eth(0x40)}}),                    // 10 CmpSwap
      resp(0x12, 107, {}, {{ib::kExtAeth, aeth(5)}, {ib::kExtAtomicAckEth, aa}}),     // 11 ATOMIC Acknowledge
      req(0x14, 108, {}, {{ib::kExtAtomicEth, atomic_eth(0x48)}}),                    // 12 FetchAdd
      resp(0x12, 108, {}, {{ib::kExtAeth, aeth(6)}, {ib::kExtAtomicAckEth, aa}}),     // 13
      req(0x17, 109, pattern(12, 8), {{ib::kExtIeth, ieth}}, true),                   // 14 SEND Only with Invalidate
      ack(109, 7),                                                                    // 15
      req(0x00, 110, pattern(1024, 10)),                                              // 16 SEND First
      req(0x01, 111, pattern(1024, 11)),                                              // 17 SEND Middle
      req(0x03, 112, pattern(100, 12), {{ib::kExtImmDt, imm_eth(7)}}, true),          // 18 SEND Last with Immediate
      ack(112, 8),                                                                    // 19
      req(0x0B, 113, pattern(64, 13), {{ib::kExtReth, reth(0x2000, 0x77, 64)}, {ib::kExtImmDt, imm_eth(8)}}, true),  // 20
      ack(113, 9),                                                                    // 21
      req(0x0A, 114, {}, {{ib::kExtReth, reth(0x3000, 0x77, 0)}}, true),              // 22 zero-length WRITE Only
      ack(114, 10),                                                                   // 23
      req(0x0C, 115, {}, {{ib::kExtReth, reth(0x9000, 0x88, 0)}}),                    // 24 zero-length READ
      resp(0x10, 115, {}, {{ib::kExtAeth, aeth(11)}}),                                // 25 READ Response Only
      req(0x0C, 116, {}, {{ib::kExtReth, reth(0x9400, 0x88, 200)}}),                  // 26
      resp(0x10, 116, pattern(200, 16), {{ib::kExtAeth, aeth(12)}}),                  // 27
      RocePkt{true, 0x26, 0x31, 500, pattern(1024, 17), {{ib::kExtReth, reth(0x5000, 0x55, 1124)}}, false, 0xffff, {}, false, 0, {}, false},  // 28 UC WRITE First
      RocePkt{true, 0x28, 0x31, 501, pattern(100, 18), {}, false, 0xffff, {}, false, 0, {}, false},  // 29 UC WRITE Last
      RocePkt{true, 0x24, 0x31, 502, pattern(40, 19), {}, false, 0xffff, {}, false, 0, {}, false},   // 30 UC SEND Only
      RocePkt{true, 0x64, 0x21, 1, pattern(256, 9), {{ib::kExtDeth, deth(0x11111111, 0x20)}}, false, 0xffff, {}, false, 0, {}, false},  // 31 UD SEND Only
      RocePkt{true, 0x65, 0x21, 2, pattern(16, 20), {{ib::kExtDeth, deth(0x11111111, 0x20)}, {ib::kExtImmDt, imm_eth(9)}}, false, 0xffff, {}, false, 0, {}, false},  // 32
      RocePkt{false, 0x64, 1, 7, pattern(256, 21), {{ib::kExtDeth, deth(0x80010000, 1)}}, false, 0xffff, {}, false, 0, {}, false},  // 33 UD to QP1 (GSI)
      RocePkt{false, 0x81, kQa, 0, Buf(16), {}, false, 0xffff, {}, false, 0, {}, false},           // 34 CNP
  };
  v[18].mangle = [](Buf& b) { b[1] |= std::byte{0x80}; };  // the SEND Last with Immediate asks for a solicited event
  return v;
}

// RC recovery: PSN 202 is lost on the link (not in the capture), the
// responder sends one sequence-error NAK and drops 204, the requester resends
// from 202; an RNR NAK and a resend; a READ Request repeated after a timeout
// and served twice; a READ refused with a remote access error NAK, after
// which the requester sends nothing more.
inline std::vector<RocePkt> roce_recovery() {
  return {
      send_only(200, 64), send_only(201, 64), send_only(203, 64),
      ack(202, 2, kNakSeq),                                      // 3 NAK: PSN sequence error, expected 202
      send_only(204, 64),                                        // 4 in flight before the NAK arrived; dropped
      send_only(202, 64), send_only(203, 64), send_only(204, 64, true),  // 5-7 resent
      ack(204, 5),                                               // 8
      send_only(205, 64, true),                                  // 9
      ack(205, 5, kRnrNak),                                      // 10 RNR NAK
      send_only(205, 64, true),                                  // 11 resent after the RNR timer
      ack(205, 6),                                               // 12
      req(0x0C, 206, {}, {{ib::kExtReth, reth(0x9000, 0x88, 100)}}),  // 13
      req(0x0C, 206, {}, {{ib::kExtReth, reth(0x9000, 0x88, 100)}}),  // 14 repeated after a timeout
      resp(0x10, 206, pattern(100, 22), {{ib::kExtAeth, aeth(7)}}),   // 15
      resp(0x10, 206, pattern(100, 22), {{ib::kExtAeth, aeth(7)}}),   // 16 served again for the duplicate
      send_only(207, 8, true), ack(207, 8),
      req(0x0C, 208, {}, {{ib::kExtReth, reth(0x9000, 0x66, 64)}}),  // 19 READ with an R_Key the responder does not know
      ack(208, 8, kNakRemoteAccess),                                 // 20 fatal: the requester's QP goes to error
  };
}

// The transport packet of `p`, BTH to ICRC (the ICRC left for the link to fill), with its mangle applied.
inline Buf encode_roce_pkt(const RocePkt& p) {
  ib::IbPacketSpec s;
  s.bth.set(ib::Bth::opcode, p.opcode);
  s.bth.set(ib::Bth::pkey, p.pkey);
  s.bth.set(ib::Bth::destqp, p.qp);
  s.bth.set(ib::Bth::psn, p.psn);
  s.bth.set(ib::Bth::ackreq, p.ackreq);
  for (const auto& [e, h] : p.exts) s.ext[static_cast<std::size_t>(__builtin_ctz(e))] = h;
  s.payload = p.payload;
  Buf tr;
  ib::encode_transport(tr, s);
  if (p.mangle) p.mangle(tr);
  return tr;
}

// Native InfiniBand frames (DLT_INFINIBAND): LRH (LIDs 0x0001 and 0x0002,
// service level 2), a GRH for Link::ib_global (the GIDs fe80::2:c903:0:1 and
// :2, a traffic class, flow label and hop limit that vary from packet to
// packet, as a router may change them), the transport packet, ICRC and VCRC.
// Link::roce_v1 has no LRH and no VCRC: an Ethernet header of type 0x8915,
// the GRH, the transport packet and the ICRC.
inline nlohmann::json ib_native_capture(const std::string& path, const RoceTraffic& t) {
  const bool v1 = t.link == Link::roce_v1, global = t.link == Link::ib_global || v1;
  PcapWriter w(path, v1 ? DLT_EN10MB : DLT_INFINIBAND);
  std::size_t n = 0;
  for (const auto& p : t.pkts) {
    const Buf tr = encode_roce_pkt(p);
    const std::size_t hdr = ib::kLrh.size + (global ? ib::kGrh.size : 0);
    Header lrh(ib::kLrh);
    lrh.set(ib::Lrh::vl, p.vl);
    lrh.set(ib::Lrh::sl, 2);
    lrh.set(ib::Lrh::lnh, global ? ib::kLnhGlobal : ib::kLnhLocal);
    lrh.set(ib::Lrh::dlid, p.from_a ? 2 : 1);
    lrh.set(ib::Lrh::slid, p.from_a ? 1 : 2);
    lrh.set(ib::Lrh::pktlen, (hdr + tr.size()) / 4);
    Buf f(lrh.bytes().begin(), lrh.bytes().end());
    if (global) {
      Header grh(ib::kGrh);
      grh.set(ib::Grh::ipver, 6);
      grh.set(ib::Grh::tclass, (n * 37) & 0xff);
      grh.set(ib::Grh::flow, (n * 7919) & 0xfffff);
      grh.set(ib::Grh::paylen, tr.size());
      grh.set(ib::Grh::nxthdr, ib::kGrhNextIba);
      grh.set(ib::Grh::hoplmt, 64 - n % 8);
      std::array<std::byte, 16> gid{std::byte{0xfe}, std::byte{0x80}};
      gid[9] = std::byte{0x02}, gid[10] = std::byte{0xc9}, gid[11] = std::byte{0x03};
      gid[15] = std::byte(p.from_a ? 1 : 2);
      grh.set_field_bytes(ib::Grh::sgid, gid);
      gid[15] = std::byte(p.from_a ? 2 : 1);
      grh.set_field_bytes(ib::Grh::dgid, gid);
      f.insert(f.end(), grh.bytes().begin(), grh.bytes().end());
    }
    f.insert(f.end(), tr.begin(), tr.end());
    if (v1) {  // no LRH on Ethernet: the GRH follows the Ethernet header
      const Buf eth = {std::byte{0x02}, {}, {}, {}, {}, std::byte(p.from_a ? 2 : 1),
                       std::byte{0x02}, {}, {}, {}, {}, std::byte(p.from_a ? 1 : 2), std::byte(ib::kRoceV1Ethertype >> 8),
                       std::byte(ib::kRoceV1Ethertype & 0xff)};
      f.erase(f.begin(), f.begin() + ib::kLrh.size);
      f.insert(f.begin(), eth.begin(), eth.end());
    }
    if (p.link_edit) p.link_edit(f);
    const Bytes ib_part = B(f).subspan(v1 ? 14 : 0);
    put_le32(f, f.size() - 4, v1 ? ib::roce_v1_icrc(ib_part) : ib::native_icrc(ib_part));
    if (p.corrupt_icrc) f[f.size() - 2] ^= std::byte{0x01};
    if (!v1) {
      f.resize(f.size() + ib::kVcrcSize);
      put_le16(f, f.size() - 2, ib::vcrc(B(f).first(f.size() - 2)));
    }
    if (p.corrupt_vcrc) f[f.size() - 1] ^= std::byte{0x10};
    w.frame(B(f));
    ++n;
  }
  nlohmann::json j = {{"link", v1       ? "RoCEv1: Ethernet type 0x8915, GRH"
                               : global ? "InfiniBand, LRH and GRH"
                                        : "InfiniBand, LRH only"},
                      {"packets", t.pkts.size()}, {"path_mtu", 1024}};
  if (!t.fault.empty()) j["fault"] = t.fault;
  return j;
}

inline nlohmann::json roce_capture(const std::string& path, RoceTraffic t) {
  if (t.edit) t.edit(t);
  if (t.link != Link::roce) return ib_native_capture(path, t);
  PcapWriter w(path);
  const Host a = t.ipv6 ? host_v6(0x11, 49152) : host_v4(198, 51, 100, 1, 49152);
  const Host b = t.ipv6 ? host_v6(0x12, ib::kRoceV2Port) : host_v4(198, 51, 100, 2, ib::kRoceV2Port);
  Host a_dst = a, b_src = b;
  a_dst.port = ib::kRoceV2Port;
  b_src.port = 49153;
  for (const auto& p : t.pkts) {
    const Buf tr = encode_roce_pkt(p);
    auto l3 = ip_udp(p.from_a ? a : b_src, p.from_a ? b : a_dst, B(tr), false);
    const std::size_t iph = t.ipv6 ? 40 : 20;
    put_le32(l3, l3.size() - 4, ib::roce_icrc(B(l3), t.ipv6, iph));
    if (p.corrupt_icrc) l3[l3.size() - 2] ^= std::byte{0x01};
    // IPv6 carries a UDP checksum, over the final octets, ICRC included
    // (the ICRC does not cover the checksum field). IPv4 carries none.
    if (t.ipv6) set_udp_checksum(l3);
    w.ip_packet(p.from_a ? a : b_src, p.from_a ? b : a_dst, B(l3));
  }
  nlohmann::json j = {{"ipv6", t.ipv6}, {"packets", t.pkts.size()}, {"path_mtu", 1024}};
  if (!t.fault.empty()) j["fault"] = t.fault;
  return j;
}

}  // namespace rdmaconf::captures::gen

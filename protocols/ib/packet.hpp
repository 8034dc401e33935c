#pragma once
// InfiniBand transport packet: BTH, the extension headers its opcode calls
// for, payload, pad and ICRC; plus the RoCEv2 ICRC hook.
#include <array>
#include <optional>
#include <vector>

#include "protocols/core/decoded.hpp"
#include "protocols/ib/headers.hpp"
#include "protocols/ib/opcodes.hpp"

namespace rdmaconf::protocols::ib {

inline constexpr std::size_t kIcrcSize = 4;

// Header definition of each extension, indexed by bit position in Ext.
const HeaderDef& ext_def(std::size_t index);

struct IbPacket {
  Header bth;
  const OpcodeInfo* op = nullptr;  // never null; op->valid false for undefined opcodes
  std::array<std::optional<Header>, kExtCount> ext{};
  Bytes payload;          // without pad
  std::size_t pad = 0;
  std::uint32_t icrc = 0; // ICRC field as a CRC-32 value (it travels little-endian)
  std::size_t header_bytes = 0;  // BTH plus extension headers

  const std::optional<Header>& get(Ext e) const;
};

// `in` runs from the BTH to the end of the ICRC. For an undefined opcode only
// the BTH is decoded and the rest up to the ICRC is payload.
Result<IbPacket> decode_transport(Bytes in);

// ---- RoCEv2 ICRC (IBTA Vol.1 §7.8.1 and Annex A17.3.3): CRC-32 over eight
// 0xFF octets standing for the LRH, then IP, UDP and the transport packet
// with the variant fields set to all ones: IPv4 TOS, TTL and checksum; IPv6
// traffic class, flow label and hop limit; UDP checksum; BTH FECN/BECN/reserved.
// `l3` starts at the IP header and ends with the ICRC field (excluded).
std::uint32_t roce_icrc(Bytes l3, bool ipv6, std::size_t ip_header_len);

// ---- Native InfiniBand (a LINKTYPE_INFINIBAND capture): LRH, GRH when the
// LRH's LNH says so, the transport packet, ICRC, VCRC. `pkt` runs from the
// LRH to the end of the ICRC field (the VCRC is not part of it).
inline constexpr std::size_t kVcrcSize = 2;
inline constexpr std::uint8_t kLnhLocal = 2, kLnhGlobal = 3;  // BTH follows the LRH / a GRH
inline constexpr std::uint8_t kGrhNextIba = 0x1B;            // GRH NxtHdr: BTH follows
// ICRC (IBTA Vol.1 §7.8.1): a local packet (no GRH) keeps its LRH with VL set
// to ones; a global packet has its whole LRH replaced by eight 0xFF octets and
// its GRH traffic class, flow label and hop limit set to ones; the BTH's
// FECN/BECN/reserved octet is set to ones in both. Global is decided by the
// LRH's LNH field. Returns 0 when `pkt` is too short for its headers.
std::uint32_t native_icrc(Bytes pkt);
// RoCEv1 (Ethernet type 0x8915): GRH, transport packet, ICRC; the ICRC is the
// one of a global native packet. `pkt` runs from the GRH to the end of the ICRC.
inline constexpr std::uint16_t kRoceV1Ethertype = 0x8915;
std::uint32_t roce_v1_icrc(Bytes pkt);
// VCRC (IBTA Vol.1 §7.8.2): CRC-16 with polynomial 0x100B, seed 0xFFFF,
// reflected like the ICRC, inverted, over every octet from the LRH through
// the ICRC. On the wire least significant octet first, as the ICRC.
std::uint16_t vcrc(Bytes pkt);
inline std::uint16_t read_vcrc(Bytes frame) { return le16(frame, frame.size() - kVcrcSize); }
inline std::uint32_t read_icrc(Bytes l3) { return le32(l3, l3.size() - kIcrcSize); }

// The addresses a RoCEv2 packet travels with, for an endpoint that sends and
// receives transport packets through a UDP socket and so never sees the IP
// header: the ICRC is computed over the IP and UDP headers the kernel builds
// for an unconnected socket with DF set (IPv4: identification 0, flags DF,
// protocol 17; IPv6: next header 17), which are the octets on the wire.
// Addresses in network order (4 octets for IPv4, 16 for IPv6).
struct RoceFlow {
  bool ipv6 = false;
  std::array<std::byte, 16> src{}, dst{};
  std::uint16_t sport = 0, dport = kRoceV2Port;
};
// `transport` runs from the BTH to the end of the ICRC field.
std::uint32_t roce_icrc(Bytes transport, const RoceFlow& f);
inline void seal_icrc(MutBytes transport, const RoceFlow& f) {
  put_le32(transport, transport.size() - kIcrcSize, roce_icrc(transport, f));
}

// Extension headers as a sender fills them (IBTA Vol.1 §9.3).
inline Header make_reth(std::uint64_t va, std::uint32_t rkey, std::uint64_t dma_length) {
  return Header::with(kReth, {{Reth::va, va}, {Reth::rkey, rkey}, {Reth::dmalen, dma_length}});
}
inline Header make_aeth(std::uint32_t syndrome, std::uint32_t msn) {
  return Header::with(kAeth, {{Aeth::syndrome, syndrome}, {Aeth::msn, msn & kPsnMask}});
}
inline Header make_deth(std::uint32_t qkey, std::uint32_t src_qp) {
  return Header::with(kDeth, {{Deth::qkey, qkey}, {Deth::srcqp, src_qp}});
}

// Appends BTH, extension headers, payload, zero pad; the ICRC is written by
// finish_roce_icrc once IP and UDP are in place.
struct IbPacketSpec {
  Header bth{kBth};
  std::array<std::optional<Header>, kExtCount> ext{};
  std::vector<std::byte> payload;
};
void encode_transport(std::vector<std::byte>& out, const IbPacketSpec& p);

}  // namespace rdmaconf::protocols::ib

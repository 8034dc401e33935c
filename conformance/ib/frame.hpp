#pragma once
// An InfiniBand transport packet as the family sees it in a capture, with
// what carried it: RoCEv2 (IP/UDP), RoCEv1 (a GRH after an Ethernet header of
// type 0x8915) or a native link frame (LINKTYPE_INFINIBAND: LRH, GRH when
// the LNH says so, transport packet, ICRC, VCRC).
#include <cstdint>
#include <optional>
#include <string>

#include "captures/io/packet.hpp"

namespace rdmaconf::conformance::ib {

struct IbFrame {
  std::uint64_t frame = 0;
  std::int64_t ts_us = 0;
  // 4 or 6: IP (RoCEv2), 6: GIDs of a GRH, 0: LIDs (in the first two octets).
  std::uint8_t ip_version = 0;
  captures::io::Address src{}, dst{};
  std::uint16_t sport = 0, dport = 0;  // RoCEv2 only
  // From the IP header, GRH (RoCEv1) or LRH (native) to the end of the ICRC.
  protocols::Bytes l3;
  std::size_t ip_header_len = 0;  // octets of l3 before the BTH
  protocols::Bytes payload;       // the transport packet, BTH to ICRC
  bool native_ib = false;
  bool roce_v1 = false;
  bool has_vcrc = false;   // a native frame that ends with its VCRC
  std::uint16_t vcrc = 0;  // as captured
  // Where the GRH starts in l3, if the packet has one.
  std::optional<std::size_t> grh_offset() const {
    if (roce_v1) return 0;
    if (native_ib && ip_header_len > 8) return 8;
    return std::nullopt;
  }
};

enum class FrameStatus { ok, other, error };
struct DecodedFrame {
  FrameStatus status = FrameStatus::other;  // other: not IBA transport (raw, IP over IB, another GRH next header)
  IbFrame f;
  std::string error;  // for error: what was wrong, with the frame number and offset
};

// A RoCEv2 datagram (UDP to the RoCE port).
IbFrame from_udp(const captures::io::Packet& p);
// A frame of EtherType 0x8915; p.l3 starts at the GRH.
DecodedFrame decode_roce_v1(const captures::io::Packet& p);
// A whole LINKTYPE_INFINIBAND frame in p.l3.
DecodedFrame decode_native(const captures::io::Packet& p);

}  // namespace rdmaconf::conformance::ib

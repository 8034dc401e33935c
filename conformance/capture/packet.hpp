#pragma once
// From a captured frame to the transport layer: link header (Ethernet with
// 802.1Q/802.1ad tags, Linux cooked v1/v2, raw IP), IPv4/IPv6, TCP/UDP; or a
// native InfiniBand frame (LRH, GRH) or a RoCEv1 frame (GRH) up to its
// transport packet.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "conformance/capture/pcap_reader.hpp"
#include "protocols/core/result.hpp"

namespace rdmaconf::conformance::capture {

using Address = std::array<std::uint8_t, 16>;  // IPv4 in the first four octets

struct Packet {
  std::uint64_t frame = 0;
  std::uint8_t ip_version = 0;
  Address src{}, dst{};
  std::uint8_t protocol = 0;  // 6 TCP, 17 UDP
  std::uint16_t sport = 0, dport = 0;
  std::uint32_t seq = 0, ack = 0;
  bool syn = false, fin = false, rst = false, ack_flag = false;
  std::uint16_t mss = 0;           // TCP MSS option of a SYN, 0 when absent
  protocols::Bytes l3;             // IP header to the end of the IP payload
  std::size_t ip_header_len = 0;   // octets before the transport header
  std::size_t l3_offset = 0;       // where l3 starts in the frame
  protocols::Bytes payload;        // transport payload
  // A LINKTYPE_INFINIBAND frame: l3 runs from the LRH to the end of the ICRC,
  // ip_header_len covers the LRH and any GRH, payload is the transport packet;
  // the addresses are the GIDs of the GRH (ip_version 6) or else the LIDs
  // (ip_version 0, in the first two octets).
  bool native_ib = false;
  bool has_vcrc = false;            // the frame ends with the VCRC
  std::uint16_t vcrc = 0;           // as captured
  // RoCEv1 (Ethernet type 0x8915): l3 runs from the GRH to the end of the
  // ICRC, ip_header_len is the GRH's, addresses are its GIDs (ip_version 6).
  bool roce_v1 = false;
  // InfiniBand transport carried without UDP (native or RoCEv1).
  bool ib_without_udp() const { return native_ib || roce_v1; }
  // Where the GRH starts in l3, if the packet has one.
  std::optional<std::size_t> grh_offset() const {
    if (roce_v1) return 0;
    if (native_ib && ip_header_len > 8) return 8;
    return std::nullopt;
  }
};

enum class DissectStatus { ok, other, error };

struct Dissected {
  DissectStatus status = DissectStatus::other;
  Packet pkt;
  std::string error;  // for status error: what was wrong, with the frame offset
};

// True for the link types we read.
bool supported_linktype(int linktype);
std::string linktype_name(int linktype);

Dissected dissect(int linktype, const Frame& f);

std::string format_address(std::uint8_t ip_version, const Address& a);

}  // namespace rdmaconf::conformance::capture

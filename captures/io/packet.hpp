#pragma once
// From a captured frame to the transport layer: link header (Ethernet with
// 802.1Q/802.1ad tags, Linux cooked v1/v2, raw IP), IPv4/IPv6, TCP/UDP.
// Frames of other network protocols (an EtherType that is not IP, or a link
// type without IP such as native InfiniBand) are handed on undecoded, for the
// protocol family that claims them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "captures/io/pcap_reader.hpp"
#include "protocols/core/result.hpp"

namespace rdmaconf::captures::io {

using Address = std::array<std::uint8_t, 16>;  // IPv4 in the first four octets

struct Packet {
  std::uint64_t frame = 0;
  std::int64_t ts_us = 0;  // capture timestamp, microseconds
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
  // For DissectStatus::link: the EtherType after the link header (0 for a
  // link type with no EtherType, whose whole frame is in l3), l3 runs from
  // the network header to the frame's end, orig_len is the frame's length
  // on the wire (more than l3 holds when the snap length cut it).
  std::uint16_t ethertype = 0;
  std::uint32_t orig_len = 0;
  // For DissectStatus::link on Ethernet: the frame's MAC addresses.
  bool has_mac = false;
  std::array<std::uint8_t, 6> mac_dst{}, mac_src{};
  // For DissectStatus::link on Linux cooked (SLL, SLL2), which keep no
  // destination address: whether the packet type says it went to a group
  // (broadcast or multicast), and the source MAC when the header holds one.
  std::optional<bool> dst_group;
  bool has_src_mac = false;
};

// ok: an IP packet carrying TCP or UDP; link: another network protocol (see
// Packet::ethertype); other: nothing to look at (an IP fragment, another IP
// protocol); error: a header that does not decode.
enum class DissectStatus { ok, link, other, error };

struct Dissected {
  DissectStatus status = DissectStatus::other;
  Packet pkt;
  std::string error;  // for status error: what was wrong, with the frame offset
  // For status error: a UDP datagram whose length field does not fit (below
  // 8, or beyond the IP payload); pkt holds it with no payload.
  bool udp_bad_length = false;
};

// True for the link types whose IP packets we read; frames of any other link
// type come back whole as DissectStatus::link.
bool supported_linktype(int linktype);
std::string linktype_name(int linktype);

Dissected dissect(int linktype, const Frame& f);

std::string format_address(std::uint8_t ip_version, const Address& a);

// "frame N: <what>", the decode error's offset moved by where its header starts in the frame.
std::string frame_error(std::uint64_t frame, std::size_t offset, protocols::DecodeError e);

}  // namespace rdmaconf::captures::io

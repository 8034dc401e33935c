#pragma once
// Link, network and transport headers that carry the families' traffic.
#include <iterator>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols::net {

// The EtherTypes of the network and tagging layers; each family names its
// own (ProtocolFamily::ether_types()), and the tables the registry hands out
// carry both.
inline constexpr ValueName kEtherTypes[] = {
    {0x0800, "IPv4"}, {0x86dd, "IPv6"}, {0x8100, "802.1Q"}, {0x88a8, "802.1ad"}, {0x0806, "ARP"},
};
inline constexpr ValueName kIpProtocols[] = {{6, "TCP"}, {17, "UDP"}, {1, "ICMP"}, {58, "ICMPv6"}};

// ---- Ethernet II (IEEE 802.3) ----
struct Eth { enum : std::size_t { dst, src, type, count_ }; };
inline constexpr FieldDef kEthFields[] = {
    {"eth.dst", "Destination", 0, 48, Display::mac},
    {"eth.src", "Source", 48, 48, Display::mac},
    {"eth.type", "EtherType", 96, 16, Display::hex, kEtherTypes},
};
inline constexpr HeaderDef kEth{"eth", "Ethernet II", "IEEE 802.3", 14, kEthFields};

// ---- 802.1Q tag (after the TPID that sits in the outer EtherType) ----
struct Vlan { enum : std::size_t { pcp, dei, vid, type, count_ }; };
inline constexpr FieldDef kVlanFields[] = {
    {"vlan.pcp", "Priority", 0, 3},
    {"vlan.dei", "Drop eligible", 3, 1, Display::flag},
    {"vlan.id", "VLAN ID", 4, 12},
    {"vlan.etype", "EtherType", 16, 16, Display::hex, kEtherTypes},
};
inline constexpr HeaderDef kVlan{"vlan", "802.1Q tag", "IEEE 802.1Q §9.6", 4, kVlanFields};

// ---- Linux cooked capture v1 (LINKTYPE_LINUX_SLL) ----
struct Sll { enum : std::size_t { pkttype, hatype, halen, addr, protocol, count_ }; };
inline constexpr FieldDef kSllFields[] = {
    {"sll.pkttype", "Packet type", 0, 16},
    {"sll.hatype", "Link-layer address type", 16, 16},
    {"sll.halen", "Link-layer address length", 32, 16},
    {"sll.src", "Source address", 48, 64, Display::bytes},
    {"sll.etype", "Protocol", 112, 16, Display::hex, kEtherTypes},
};
inline constexpr HeaderDef kSll{"sll", "Linux cooked capture v1", "tcpdump.org LINKTYPE_LINUX_SLL", 16, kSllFields};

// ---- Linux cooked capture v2 (LINKTYPE_LINUX_SLL2) ----
struct Sll2 { enum : std::size_t { protocol, rsvd, ifindex, hatype, pkttype, halen, addr, count_ }; };
inline constexpr FieldDef kSll2Fields[] = {
    {"sll2.etype", "Protocol", 0, 16, Display::hex, kEtherTypes},
    {"sll2.rsvd", "Reserved", 16, 16, Display::hex, {}, true},
    {"sll2.ifindex", "Interface index", 32, 32},
    {"sll2.hatype", "Link-layer address type", 64, 16},
    {"sll2.pkttype", "Packet type", 80, 8},
    {"sll2.halen", "Link-layer address length", 88, 8},
    {"sll2.src", "Source address", 96, 64, Display::bytes},
};
inline constexpr HeaderDef kSll2{"sll2", "Linux cooked capture v2", "tcpdump.org LINKTYPE_LINUX_SLL2", 20, kSll2Fields};

// ---- IPv4 (RFC 791) ----
struct Ipv4 {
  enum : std::size_t { version, ihl, dscp, ecn, total_len, id, rsvd, df, mf, frag_off, ttl, protocol, checksum, src, dst, count_ };
};
inline constexpr FieldDef kIpv4Fields[] = {
    {"ip.version", "Version", 0, 4},
    {"ip.hdr_len", "Header length (32-bit words)", 4, 4},
    {"ip.dscp", "DSCP", 8, 6},
    {"ip.ecn", "ECN", 14, 2},
    {"ip.len", "Total length", 16, 16},
    {"ip.id", "Identification", 32, 16, Display::hex},
    {"ip.flags.rb", "Reserved flag", 48, 1, Display::flag, {}, true, "RFC 791 §3.1"},
    {"ip.flags.df", "Don't fragment", 49, 1, Display::flag},
    {"ip.flags.mf", "More fragments", 50, 1, Display::flag},
    {"ip.frag_offset", "Fragment offset (8-octet units)", 51, 13},
    {"ip.ttl", "Time to live", 64, 8},
    {"ip.proto", "Protocol", 72, 8, Display::dec, kIpProtocols},
    {"ip.checksum", "Header checksum", 80, 16, Display::hex},
    {"ip.src", "Source", 96, 32, Display::ipv4},
    {"ip.dst", "Destination", 128, 32, Display::ipv4},
};
inline constexpr HeaderDef kIpv4{"ip", "IPv4", "RFC 791 §3.1", 20, kIpv4Fields};

// ---- IPv6 (RFC 8200) ----
struct Ipv6 { enum : std::size_t { version, tclass, flow, payload_len, next, hlim, src, dst, count_ }; };
inline constexpr FieldDef kIpv6Fields[] = {
    {"ipv6.version", "Version", 0, 4},
    {"ipv6.tclass", "Traffic class", 4, 8, Display::hex},
    {"ipv6.flow", "Flow label", 12, 20, Display::hex},
    {"ipv6.plen", "Payload length", 32, 16},
    {"ipv6.nxt", "Next header", 48, 8, Display::dec, kIpProtocols},
    {"ipv6.hlim", "Hop limit", 56, 8},
    {"ipv6.src", "Source", 64, 128, Display::ipv6},
    {"ipv6.dst", "Destination", 192, 128, Display::ipv6},
};
inline constexpr HeaderDef kIpv6{"ipv6", "IPv6", "RFC 8200 §3", 40, kIpv6Fields};

// ---- IPv6 extension header prefix (next header, length in 8-octet units beyond the first 8) ----
struct Ipv6Ext { enum : std::size_t { next, len, rest, count_ }; };
inline constexpr FieldDef kIpv6ExtFields[] = {
    {"ipv6.ext.nxt", "Next header", 0, 8, Display::dec, kIpProtocols},
    {"ipv6.ext.len", "Header extension length", 8, 8},
    {"ipv6.ext.data", "Option data", 16, 48, Display::bytes},
};
inline constexpr HeaderDef kIpv6Ext{"ipv6.ext", "IPv6 extension header", "RFC 8200 §4", 8, kIpv6ExtFields};

// ---- TCP (RFC 9293) ----
struct Tcp {
  enum : std::size_t { sport, dport, seq, ack, doff, rsvd, ae, cwr, ece, urg, ackf, psh, rst, syn, fin, window, checksum, urgent, count_ };
};
inline constexpr FieldDef kTcpFields[] = {
    {"tcp.srcport", "Source port", 0, 16},
    {"tcp.dstport", "Destination port", 16, 16},
    {"tcp.seq", "Sequence number", 32, 32},
    {"tcp.ack", "Acknowledgment number", 64, 32},
    {"tcp.hdr_len", "Data offset (32-bit words)", 96, 4},
    {"tcp.flags.res", "Reserved", 100, 3, Display::hex, {}, true, "RFC 9293 §3.1"},
    {"tcp.flags.ae", "AE", 103, 1, Display::flag},
    {"tcp.flags.cwr", "CWR", 104, 1, Display::flag},
    {"tcp.flags.ece", "ECE", 105, 1, Display::flag},
    {"tcp.flags.urg", "URG", 106, 1, Display::flag},
    {"tcp.flags.ack", "ACK", 107, 1, Display::flag},
    {"tcp.flags.push", "PSH", 108, 1, Display::flag},
    {"tcp.flags.reset", "RST", 109, 1, Display::flag},
    {"tcp.flags.syn", "SYN", 110, 1, Display::flag},
    {"tcp.flags.fin", "FIN", 111, 1, Display::flag},
    {"tcp.window_size", "Window", 112, 16},
    {"tcp.checksum", "Checksum", 128, 16, Display::hex},
    {"tcp.urgent_pointer", "Urgent pointer", 144, 16},
};
inline constexpr HeaderDef kTcp{"tcp", "TCP", "RFC 9293 §3.1", 20, kTcpFields};
// The most octets of options a TCP header holds (a 4-bit data offset: 60 - 20; RFC 9293 §3.1).
inline constexpr std::size_t kTcpOptionsMax = 40;

// ---- UDP (RFC 768) ----
struct Udp { enum : std::size_t { sport, dport, length, checksum, count_ }; };
inline constexpr FieldDef kUdpFields[] = {
    {"udp.srcport", "Source port", 0, 16},
    {"udp.dstport", "Destination port", 16, 16},
    {"udp.length", "Length", 32, 16},
    {"udp.checksum", "Checksum", 48, 16, Display::hex},
};
inline constexpr HeaderDef kUdp{"udp", "UDP", "RFC 768", 8, kUdpFields};

static_assert(table_is_sound(kEth) && std::size(kEthFields) == Eth::count_);
static_assert(table_is_sound(kVlan) && std::size(kVlanFields) == Vlan::count_);
static_assert(table_is_sound(kSll) && std::size(kSllFields) == Sll::count_);
static_assert(table_is_sound(kSll2) && std::size(kSll2Fields) == Sll2::count_);
static_assert(table_is_sound(kIpv4) && std::size(kIpv4Fields) == Ipv4::count_);
static_assert(table_is_sound(kIpv6) && std::size(kIpv6Fields) == Ipv6::count_);
static_assert(table_is_sound(kIpv6Ext) && std::size(kIpv6ExtFields) == Ipv6Ext::count_);
static_assert(table_is_sound(kTcp) && std::size(kTcpFields) == Tcp::count_);
static_assert(table_is_sound(kUdp) && std::size(kUdpFields) == Udp::count_);

}  // namespace rdmaconf::protocols::net

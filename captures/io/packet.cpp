#include "captures/io/packet.hpp"

#include <pcap/dlt.h>
#include <pcap/pcap.h>

#include <algorithm>

#include <fmt/format.h>

#include "protocols/net/codec.hpp"

namespace rdmaconf::captures::io {

using namespace protocols;
using namespace protocols::net;

namespace {
constexpr int kLinktypeIpv4 = 228;
constexpr int kLinktypeIpv6 = 229;
#ifndef DLT_LINUX_SLL2
constexpr int DLT_LINUX_SLL2 = 276;
#endif

Dissected fail(const Frame& f, std::size_t offset, const DecodeError& e) {
  Dissected d;
  d.status = DissectStatus::error;
  d.error = frame_error(f.number, offset, e);
  return d;
}

// Returns the EtherType of the network layer and its offset, or status other.
struct L2 {
  bool ok = false;
  std::uint16_t ethertype = 0;
  std::size_t offset = 0;
};

Result<L2> link_layer(int linktype, Bytes b) {
  switch (linktype) {
    case DLT_EN10MB: {
      auto eth = Header::decode(kEth, b);
      if (!eth) return eth.error();
      std::uint16_t type = static_cast<std::uint16_t>(eth->get(Eth::type));
      std::size_t off = kEth.size;
      for (int tags = 0; (type == 0x8100 || type == 0x88a8) && tags < 4; ++tags) {
        auto tag = Header::decode(kVlan, b.subspan(off));
        if (!tag) {
          auto e = tag.error();
          e.offset += off;
          return e;
        }
        type = static_cast<std::uint16_t>(tag->get(Vlan::type));
        off += kVlan.size;
      }
      return L2{true, type, off};
    }
    case DLT_LINUX_SLL: {
      auto h = Header::decode(kSll, b);
      if (!h) return h.error();
      return L2{true, static_cast<std::uint16_t>(h->get(Sll::protocol)), kSll.size};
    }
    case DLT_LINUX_SLL2: {
      auto h = Header::decode(kSll2, b);
      if (!h) return h.error();
      return L2{true, static_cast<std::uint16_t>(h->get(Sll2::protocol)), kSll2.size};
    }
    case DLT_RAW:
    case 14:  // DLT_RAW on some BSDs
    case 101: // LINKTYPE_RAW when libpcap does not map it
    case kLinktypeIpv4:
    case kLinktypeIpv6: {
      if (b.empty()) return truncated(&kIpv4, 1, 0);
      const unsigned v = u8(b, 0) >> 4;
      return L2{true, static_cast<std::uint16_t>(v == 6 ? 0x86dd : v == 4 ? 0x0800 : 0), 0};
    }
    default:
      return L2{};
  }
}

// A frame for a protocol family to decode: no IP in it.
Dissected link_frame(const Frame& f, std::uint16_t ethertype, std::size_t offset) {
  Dissected d;
  d.status = DissectStatus::link;
  d.pkt.frame = f.number;
  d.pkt.ts_us = f.ts_sec * 1000000 + f.ts_usec;
  d.pkt.ethertype = ethertype;
  d.pkt.l3 = f.data.subspan(offset);
  d.pkt.l3_offset = offset;
  d.pkt.orig_len = f.orig_len;
  return d;
}

void take_macs(int linktype, const Frame& f, Packet& p) {
  if (linktype == DLT_LINUX_SLL || linktype == DLT_LINUX_SLL2) {
    const bool v2 = linktype == DLT_LINUX_SLL2;
    const auto h = Header::decode(v2 ? kSll2 : kSll, f.data);
    if (!h) return;
    const std::size_t type_field = v2 ? std::size_t{Sll2::pkttype} : std::size_t{Sll::pkttype};
    const std::size_t len_field = v2 ? std::size_t{Sll2::halen} : std::size_t{Sll::halen};
    const std::size_t addr_field = v2 ? std::size_t{Sll2::addr} : std::size_t{Sll::addr};
    // Packet types 1 and 2 (Linux's PACKET_BROADCAST, PACKET_MULTICAST).
    const auto type = h->get(type_field);
    p.dst_group = type == 1 || type == 2;
    if (h->get(len_field) == 6) {
      p.has_src_mac = true;
      std::copy_n(reinterpret_cast<const std::uint8_t*>(h->field_bytes(addr_field).data()), 6, p.mac_src.begin());
    }
    return;
  }
  if (linktype != DLT_EN10MB || f.data.size() < 12) return;
  p.has_mac = true;
  p.has_src_mac = true;
  std::copy_n(reinterpret_cast<const std::uint8_t*>(f.data.data()), 6, p.mac_dst.begin());
  std::copy_n(reinterpret_cast<const std::uint8_t*>(f.data.data()) + 6, 6, p.mac_src.begin());
}

}  // namespace

bool supported_linktype(int lt) {
  return lt == DLT_EN10MB || lt == DLT_LINUX_SLL || lt == DLT_LINUX_SLL2 || lt == DLT_RAW || lt == 14 || lt == 101 ||
         lt == kLinktypeIpv4 || lt == kLinktypeIpv6;
}

std::string linktype_name(int lt) {
  const char* n = pcap_datalink_val_to_name(lt);
  return n ? std::string(n) : fmt::format("linktype {}", lt);
}

Dissected dissect(int linktype, const Frame& f) {
  Dissected d;
  auto l2 = link_layer(linktype, f.data);
  if (!l2) return fail(f, 0, l2.error());
  if (!l2->ok) return link_frame(f, 0, 0);
  Bytes b = f.data.subspan(l2->offset);
  Packet& p = d.pkt;
  p.frame = f.number;
  p.ts_us = f.ts_sec * 1000000 + f.ts_usec;
  p.l3_offset = l2->offset;
  std::size_t l4_off = 0;
  if (l2->ethertype == 0x0800) {
    auto ip = decode_ipv4(b);
    if (!ip) return fail(f, l2->offset, ip.error());
    const std::size_t total = ip->hdr.get(Ipv4::total_len);
    if (total < ip->consumed)
      return fail(f, l2->offset, DecodeError{Errc::bad_length, &kIpv4, 2, ip->consumed, total, "total length below header length"});
    if (total > b.size())
      return fail(f, l2->offset, DecodeError{Errc::truncated, &kIpv4, 0, total, b.size(), "IP total length beyond captured octets"});
    if (ip->hdr.get(Ipv4::mf) || ip->hdr.get(Ipv4::frag_off)) return d;  // fragments are not reassembled
    b = b.first(total);  // drop Ethernet padding
    p.ip_version = 4;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(ip->hdr.bytes().data()) + 12, 4, p.src.begin());
    std::copy_n(reinterpret_cast<const std::uint8_t*>(ip->hdr.bytes().data()) + 16, 4, p.dst.begin());
    p.protocol = static_cast<std::uint8_t>(ip->hdr.get(Ipv4::protocol));
    l4_off = ip->consumed;
  } else if (l2->ethertype == 0x86dd) {
    auto ip = decode_ipv6(b);
    if (!ip) return fail(f, l2->offset, ip.error());
    const std::size_t total = kIpv6.size + ip->hdr.get(Ipv6::payload_len);
    if (total > b.size())
      return fail(f, l2->offset, DecodeError{Errc::truncated, &kIpv6, 0, total, b.size(), "IPv6 payload length beyond captured octets"});
    b = b.first(total);
    auto up = skip_ipv6_extensions(static_cast<std::uint8_t>(ip->hdr.get(Ipv6::next)), b.subspan(kIpv6.size));
    if (!up) {
      if (up.error().code == Errc::unsupported) return d;
      return fail(f, l2->offset + kIpv6.size, up.error());
    }
    p.ip_version = 6;
    auto src = ip->hdr.field_bytes(Ipv6::src), dst = ip->hdr.field_bytes(Ipv6::dst);
    std::copy_n(reinterpret_cast<const std::uint8_t*>(src.data()), 16, p.src.begin());
    std::copy_n(reinterpret_cast<const std::uint8_t*>(dst.data()), 16, p.dst.begin());
    p.protocol = up->protocol;
    l4_off = kIpv6.size + up->offset;
  } else {
    Dissected l = link_frame(f, l2->ethertype, l2->offset);
    take_macs(linktype, f, l.pkt);
    return l;
  }
  p.l3 = b;
  p.ip_header_len = l4_off;
  const Bytes l4 = b.subspan(l4_off);
  if (p.protocol == 6) {
    auto tcp = decode_tcp(l4);
    if (!tcp) return fail(f, l2->offset + l4_off, tcp.error());
    const Header& t = tcp->hdr;
    p.sport = static_cast<std::uint16_t>(t.get(Tcp::sport));
    p.dport = static_cast<std::uint16_t>(t.get(Tcp::dport));
    p.seq = static_cast<std::uint32_t>(t.get(Tcp::seq));
    p.ack = static_cast<std::uint32_t>(t.get(Tcp::ack));
    p.syn = t.get(Tcp::syn);
    p.fin = t.get(Tcp::fin);
    p.rst = t.get(Tcp::rst);
    p.ack_flag = t.get(Tcp::ackf);
    p.payload = l4.subspan(tcp->consumed);
    if (p.syn) {
      // Options: kind 0 ends the list, kind 1 is one octet, others carry a length octet.
      const Bytes o = l4.subspan(kTcp.size, tcp->consumed - kTcp.size);
      for (std::size_t i = 0; i < o.size();) {
        const auto kind = static_cast<std::uint8_t>(o[i]);
        if (kind == 0) break;
        if (kind == 1) { ++i; continue; }
        if (i + 1 >= o.size()) break;
        const auto len = static_cast<std::uint8_t>(o[i + 1]);
        if (len < 2 || i + len > o.size()) break;
        if (kind == 2 && len == 4) p.mss = be16(o, i + 2);
        i += len;
      }
    }
  } else if (p.protocol == 17) {
    auto udp = decode_udp(l4);
    if (!udp) return fail(f, l2->offset + l4_off, udp.error());
    p.sport = static_cast<std::uint16_t>(udp->hdr.get(Udp::sport));
    p.dport = static_cast<std::uint16_t>(udp->hdr.get(Udp::dport));
    const std::size_t ulen = udp->hdr.get(Udp::length);
    if (ulen > l4.size() || ulen < kUdp.size) {
      // Undecodable for the families that read the payload; the packet is
      // kept for those that judge the UDP header itself.
      Dissected bad = fail(f, l2->offset + l4_off,
                           DecodeError{Errc::bad_length, &kUdp, 4, ulen, l4.size(),
                                       ulen < kUdp.size ? "UDP length below the header's 8 octets" : "UDP length beyond IP payload"});
      bad.udp_bad_length = true;
      bad.pkt = std::move(d.pkt);
      return bad;
    }
    p.payload = l4.subspan(kUdp.size, ulen - kUdp.size);
  } else {
    return d;
  }
  d.status = DissectStatus::ok;
  return d;
}

std::string frame_error(std::uint64_t frame, std::size_t offset, DecodeError e) {
  e.offset += offset;
  return fmt::format("frame {}: {}", frame, e.message());
}

std::string format_address(std::uint8_t v, const Address& a) {
  if (v == 0) return fmt::format("LID 0x{:04x}", (a[0] << 8) | a[1]);
  if (v == 4) return fmt::format("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
  // (Every group written, none compressed; one format call, not one per group.)
  const auto g = [&](int i) { return (a[i] << 8) | a[i + 1]; };
  return fmt::format("[{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}]", g(0), g(2), g(4), g(6), g(8), g(10), g(12), g(14));
}

}  // namespace rdmaconf::captures::io

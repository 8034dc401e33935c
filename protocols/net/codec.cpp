#include "protocols/net/codec.hpp"

namespace rdmaconf::protocols::net {

Result<Decoded> decode_ipv4(Bytes in) {
  auto h = Header::decode(kIpv4, in);
  if (!h) return h.error();
  if (h->get(Ipv4::version) != 4) return DecodeError{Errc::bad_value, &kIpv4, 0, 0, 0, "version is not 4"};
  const std::size_t hlen = h->get(Ipv4::ihl) * 4;
  if (hlen < kIpv4.size) return DecodeError{Errc::bad_length, &kIpv4, 0, kIpv4.size, hlen, "header length below 20"};
  if (hlen > in.size()) return DecodeError{Errc::truncated, &kIpv4, 0, hlen, in.size(), "options"};
  return Decoded{*h, hlen};
}

Result<Decoded> decode_ipv6(Bytes in) {
  auto h = Header::decode(kIpv6, in);
  if (!h) return h.error();
  if (h->get(Ipv6::version) != 6) return DecodeError{Errc::bad_value, &kIpv6, 0, 0, 0, "version is not 6"};
  return Decoded{*h, kIpv6.size};
}

Result<Ipv6Upper> skip_ipv6_extensions(std::uint8_t next, Bytes in) {
  std::size_t off = 0;
  for (int guard = 0; guard < 16; ++guard) {
    switch (next) {
      case 0:    // hop-by-hop options
      case 43:   // routing
      case 60:   // destination options
      case 51: { // authentication header (length in 4-octet units, minus 2)
        if (in.size() - off < 8) return truncated(&kIpv6Ext, 8, in.size() - off, off);
        const std::size_t len = next == 51 ? (u8(in, off + 1) + 2u) * 4u : (u8(in, off + 1) + 1u) * 8u;
        if (in.size() - off < len) return truncated(&kIpv6Ext, len, in.size() - off, off);
        next = u8(in, off);
        off += len;
        break;
      }
      case 44:
        return DecodeError{Errc::unsupported, &kIpv6Ext, off, 0, 0, "IPv6 fragment"};
      default:
        return Ipv6Upper{next, off};
    }
  }
  return DecodeError{Errc::bad_value, &kIpv6Ext, off, 0, 0, "more than 16 extension headers"};
}

Result<Decoded> decode_tcp(Bytes in) {
  auto h = Header::decode(kTcp, in);
  if (!h) return h.error();
  const std::size_t hlen = h->get(Tcp::doff) * 4;
  if (hlen < kTcp.size) return DecodeError{Errc::bad_length, &kTcp, 12, kTcp.size, hlen, "data offset below 5"};
  if (hlen > in.size()) return DecodeError{Errc::truncated, &kTcp, 0, hlen, in.size(), "options"};
  return Decoded{*h, hlen};
}

Result<Decoded> decode_udp(Bytes in) {
  auto h = Header::decode(kUdp, in);
  if (!h) return h.error();
  if (h->get(Udp::length) < kUdp.size) return DecodeError{Errc::bad_length, &kUdp, 4, kUdp.size, h->get(Udp::length), "length below 8"};
  return Decoded{*h, kUdp.size};
}

}  // namespace rdmaconf::protocols::net

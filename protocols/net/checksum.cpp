#include "protocols/net/checksum.hpp"

#include "protocols/net/headers.hpp"

namespace rdmaconf::protocols::net {

std::uint32_t sum16(Bytes b, std::uint32_t s) {
  std::size_t i = 0;
  for (; i + 1 < b.size(); i += 2) s += be16(b, i);
  if (i < b.size()) s += static_cast<std::uint32_t>(u8(b, i)) << 8;
  // Fold as we go, so that any length of input stays within 32 bits.
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return s;
}

std::uint16_t fold(std::uint32_t s) {
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint16_t>(~s);
}

std::uint16_t transport_checksum(Bytes src, Bytes dst, std::uint8_t protocol, Bytes l4) {
  std::uint32_t s = sum16(src);
  s = sum16(dst, s);
  s += protocol;
  // IPv4 sums a 16-bit length, IPv6 a 32-bit one: the same folded value.
  s += static_cast<std::uint32_t>(l4.size() >> 16) + static_cast<std::uint32_t>(l4.size() & 0xffff);
  return fold(sum16(l4, s));
}

std::pair<Bytes, Bytes> ip_addresses(Bytes l3) {
  const bool v6 = (u8(l3, 0) >> 4) == 6;
  const FieldDef& src = v6 ? kIpv6Fields[Ipv6::src] : kIpv4Fields[Ipv4::src];
  const FieldDef& dst = v6 ? kIpv6Fields[Ipv6::dst] : kIpv4Fields[Ipv4::dst];
  return {l3.subspan(src.bit_offset / 8u, src.bit_width / 8u), l3.subspan(dst.bit_offset / 8u, dst.bit_width / 8u)};
}

std::uint16_t udp_checksum(Bytes l3, Bytes l4) {
  const auto [src, dst] = ip_addresses(l3);
  return transport_checksum(src, dst, 17, l4);
}

}  // namespace rdmaconf::protocols::net

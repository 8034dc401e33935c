#pragma once
// The Internet checksum (RFC 1071) and the UDP/TCP pseudo-header sums of
// RFC 768 (IPv4) and RFC 8200 §8.1 (IPv6).
#include <cstdint>

#include <utility>

#include "protocols/core/bits.hpp"

namespace rdmaconf::protocols::net {

// Adds `b` as 16-bit big-endian words to `s` (an odd last octet padded with zero).
std::uint32_t sum16(Bytes b, std::uint32_t s = 0);
// The complemented ones'-complement fold of a sum.
std::uint16_t fold(std::uint32_t s);
// The transport checksum of `l4` (a TCP segment or UDP datagram, its
// checksum field as it is) between addresses `src` and `dst` (4 or 16
// octets each): 0 when the field holds the right checksum, and the value to
// put there when the field holds zero.
std::uint16_t transport_checksum(Bytes src, Bytes dst, std::uint8_t protocol, Bytes l4);
// The source and destination addresses of an IPv4 or IPv6 header (by its
// version nibble), where the header tables place them. `l3` holds at least
// the fixed header.
std::pair<Bytes, Bytes> ip_addresses(Bytes l3);
// The UDP checksum of the datagram at `l4` in IP packet `l3` (0 when its
// checksum field is right; the value to put there when the field is zero).
std::uint16_t udp_checksum(Bytes l3, Bytes l4);

}  // namespace rdmaconf::protocols::net

#pragma once
// The Internet checksum (RFC 1071) and the UDP/TCP pseudo-header sums of
// RFC 768 (IPv4) and RFC 8200 §8.1 (IPv6).
#include <cstdint>

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

}  // namespace rdmaconf::protocols::net

#pragma once
// Decoders with the length hooks of the variable-size network headers.
#include "protocols/core/decoded.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::protocols::net {

// IPv4: checks version 4, IHL >= 5 and that the options fit; consumed = IHL*4.
Result<Decoded> decode_ipv4(Bytes in);
// IPv6 fixed header (consumed = 40); extension headers are walked by
// skip_ipv6_extensions.
Result<Decoded> decode_ipv6(Bytes in);
struct Ipv6Upper {
  std::uint8_t protocol = 0;
  std::size_t offset = 0;  // of the upper-layer header, from the start of `in`
};
// Walks hop-by-hop, routing, destination-options and AH headers starting at
// `next` in `in` (the bytes after the fixed header). A fragment header is
// reported as unsupported: reassembly of IP fragments is out of scope.
Result<Ipv6Upper> skip_ipv6_extensions(std::uint8_t next, Bytes in);
// TCP: data offset >= 5 and inside the input; options are skipped.
Result<Decoded> decode_tcp(Bytes in);
// UDP: fixed 8 octets; the length field is checked by the caller against the IP payload.
Result<Decoded> decode_udp(Bytes in);

}  // namespace rdmaconf::protocols::net

#pragma once
// The toy family (docs/design.md, "Adding a family"): a family that lives
// only in this folder and reaches every part of the suite through the
// registries. Its wire format: UDP datagrams to port 9, each a one-octet
// count followed by that many octets.
//   capture case toy.length: the count matches the octets that follow;
//   live case toy.live.echo: messages sent over loopback come back whole.
#include <cstdint>

namespace rdmaconf::toy {

inline constexpr std::uint16_t kPort = 9;

}  // namespace rdmaconf::toy

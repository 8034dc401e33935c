#pragma once
// The UDP family of `rdmaconf check`: every UDP datagram's checksum and
// length (RFC 768, RFC 8200 §8.1), aware of what NIC offloads do to
// captures taken on the sending host (checksums not yet filled in, GSO
// super-datagrams), which it names as INCONCLUSIVE and never FAILs.
#include "conformance/family.hpp"

namespace rdmaconf::conformance::fastudp {

const ProtocolFamily& family();

}  // namespace rdmaconf::conformance::fastudp

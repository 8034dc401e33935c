// The Fast UDP NIC model's receive and transmit paths through the harness:
// any frames, with receives posted on the ports they name, may not crash the
// model or the harness, and the model may never break the contract the
// harness enforces (no write outside posted memory or over an unconsumed
// ring slot, no misused entry point).
//
// Input: a configuration octet (bits 0-2 receives per port, bit 3
// coalescing, bits 4-5 ring size, bit 6 the driver paused until the end),
// then frames, each a flags octet (bit 0 fix the IPv4 header and UDP
// checksums so that mutations get past them, bit 1 post a receive of the
// frame's length on its destination port first, bit 2 transmit instead of
// receive, with checksum offload; bits 4-7 the frame arrives that many
// times 256 cycles after the last arrival, with the jobs due before it run
// first, instead of when the NIC is idle), a big-endian 16-bit length and
// the frame.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "engines/fastudp/harness.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/net/checksum.hpp"

namespace fu = rdmaconf::engine::fastudp;
namespace net = rdmaconf::protocols::net;
using rdmaconf::protocols::be16;
using rdmaconf::protocols::put_be16;

namespace {

const fu::Plugin& model() {
  static std::unique_ptr<fu::Plugin> p = [] {
    std::string err;
    auto q = fu::Plugin::open(RDMACONF_NIC_MODEL, err);
    if (!q) {
      fprintf(stderr, "%s\n", err.c_str());
      std::abort();
    }
    return q;
  }();
  return *p;
}

// The UDP header's offset in an Ethernet frame, or 0.
std::size_t udp_at(std::vector<std::byte>& f, bool& v6) {
  if (f.size() < 14) return 0;
  const std::uint16_t type = be16(f, 12);
  if (type == 0x0800 && f.size() >= 34 && (static_cast<unsigned>(f[14]) >> 4) == 4 && f[23] == std::byte{17}) {
    v6 = false;
    const std::size_t ihl = (static_cast<unsigned>(f[14]) & 15u) * 4;
    return ihl >= 20 && f.size() >= 14 + ihl + 8 ? 14 + ihl : 0;
  }
  if (type == 0x86dd && f.size() >= 62 && f[20] == std::byte{17}) {
    v6 = true;
    return 54;
  }
  return 0;
}

void fix_checksums(std::vector<std::byte>& f) {
  bool v6 = false;
  const std::size_t u = udp_at(f, v6);
  if (!u) return;
  if (!v6) {
    put_be16(f, 24, 0);
    put_be16(f, 24, net::fold(net::sum16({f.data() + 14, u - 14})));
  }
  const std::size_t len = std::min<std::size_t>(be16(f, u + 4), f.size() - u);
  if (len < 8) return;
  put_be16(f, u + 6, 0);
  const rdmaconf::protocols::Bytes b(f);
  std::uint16_t c = net::udp_checksum(b.subspan(14), b.subspan(u, len));
  put_be16(f, u + 6, c ? c : 0xffff);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t cfg = data[0];
  fu::HarnessOptions o;
  o.ring_slots = 4u << (2 * ((cfg >> 4) & 3u));
  o.coalesce = (cfg & 8u) ? (3u | (500ull << 16)) : 0;
  fu::Harness h(model(), o);
  if (!h.ok()) std::abort();
  for (std::uint16_t port = 5001; port <= 5004; ++port)
    for (unsigned i = 0; i < (cfg & 7u); ++i) h.post_receive(port, 256u * (i + 1));
  if (cfg & 0x40u) h.pause_driver(true);
  std::size_t at = 1;
  std::uint64_t arrival = 0;
  while (at + 3 <= size) {
    const std::uint8_t flags = data[at];
    const std::size_t len = std::min<std::size_t>((data[at + 1] << 8) | data[at + 2], size - at - 3);
    std::vector<std::byte> f(reinterpret_cast<const std::byte*>(data + at + 3), reinterpret_cast<const std::byte*>(data + at + 3 + len));
    at += 3 + len;
    if (flags & 1u) fix_checksums(f);
    bool v6 = false;
    if (const std::size_t u = (flags & 2u) ? udp_at(f, v6) : 0) h.post_receive(be16(f, u + 2), static_cast<std::uint32_t>(len));
    if (flags & 4u) {
      h.transmit(f, true);
    } else if (flags >> 4) {
      arrival = std::max(arrival, h.cycles()) + 256u * (flags >> 4);
      h.arrive(f, arrival);
    } else {
      h.wire_receive(f);
    }
  }
  if (cfg & 0x40u) h.pause_driver(false);
  h.run_until_idle();
  if (!h.violations().empty()) {
    for (const auto& v : h.violations()) fprintf(stderr, "violation: %s: %s\n", std::string(fu::violation_name(v.kind)).c_str(), v.what.c_str());
    std::abort();
  }
  return 0;
}

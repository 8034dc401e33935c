// The U-Net core's receive path: any frames may not crash a node, and its
// protection rules must hold whatever arrives: a buffer is written only
// while it is on the free queue, a delivered message names a buffer that
// was given and fits it, and nothing is delivered to a torn-down endpoint.
//
// Input: a configuration octet (bits 0-2: buffers given at the start, from
// 0 to 7 of 8; bit 3: 256-octet buffers instead of 2048), then frames, each
// a flags octet (bit 0: give the next buffer first; bit 1: open a channel
// from the named endpoint to the frame's source first; bit 2: make the
// header well formed (version 1, reserved zero, a length that fits) so that
// mutations reach delivery; bit 3: tear endpoint 9 down and create it
// again first), a big-endian 16-bit length and the frame.
#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "engines/unet/unet.hpp"
#include "fuzz/unet/frame.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/core/header.hpp"
#include "protocols/unet/headers.hpp"

namespace u = rdmaconf::engine::unet;
namespace pu = rdmaconf::protocols::unet;

namespace {

const u::Mac kMe{0x02, 0, 0x0a, 0x55, 0, 2};
constexpr std::byte kCanary{0xcc};

struct State {
  u::Endpoint* ep = nullptr;
  std::set<std::uint32_t> given;  // on the free queue
  std::uint32_t next = 0;
};

void fresh(u::Node& n, State& s, u::SegmentConfig cfg) {
  s.ep = n.create_endpoint(9, cfg);
  if (!s.ep) std::abort();
  for (std::uint32_t i = 0; i < cfg.buffers; ++i) std::fill(s.ep->buffer(i).begin(), s.ep->buffer(i).end(), kCanary);
  s.given.clear();
  s.next = 0;
}

void give(State& s) {
  const std::uint32_t b = s.next++ % s.ep->config().buffers;
  if (s.given.count(b)) return;
  if (s.ep->give(b)) s.given.insert(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t cfg_octet = data[0];
  u::SegmentConfig cfg;
  cfg.buffers = 8;
  cfg.buffer_size = (cfg_octet & 8u) ? 256 : 2048;
  cfg.queue_depth = 8;
  u::Node node(kMe);
  State s;
  fresh(node, s, cfg);
  for (unsigned i = 0; i < (cfg_octet & 7u); ++i) give(s);
  std::size_t at = 1;
  while (at + 3 <= size) {
    const std::uint8_t flags = data[at];
    const std::size_t len = std::min<std::size_t>((data[at + 1] << 8) | data[at + 2], size - at - 3);
    std::vector<std::byte> f(reinterpret_cast<const std::byte*>(data + at + 3), reinterpret_cast<const std::byte*>(data + at + 3 + len));
    at += 3 + len;
    if (flags & 8u) {
      node.destroy_endpoint(9);
      fresh(node, s, cfg);
    }
    if (flags & 1u) give(s);
    const bool unet = rdmaconf::fuzz::is_unet(f);
    if (unet && (flags & 4u)) rdmaconf::fuzz::make_well_formed(f);
    if (unet && (flags & 2u)) {
      const auto a = rdmaconf::fuzz::addresses(f);
      (void)node.open_channel(*s.ep, a.src_mac, a.src_tag);
    }
    const auto before = s.ep->counters().rx_delivered;
    node.receive(f);
    // What was delivered went into a given buffer and fits it.
    while (auto d = s.ep->poll()) {
      if (!s.given.count(d->buffer) || d->length > cfg.buffer_size || d->length > d->message) std::abort();
      if ((d->length < d->message) != ((d->flags & u::RxDesc::truncated) != 0)) std::abort();
      s.given.erase(d->buffer);
      std::fill(s.ep->buffer(d->buffer).begin(), s.ep->buffer(d->buffer).end(), kCanary);  // the user is done with it
    }
    if (s.ep->counters().rx_delivered > before + 1) std::abort();
    // Buffers the node does not own still hold the canary.
    for (std::uint32_t b = 0; b < cfg.buffers; ++b) {
      if (s.given.count(b)) continue;
      const auto buf = s.ep->buffer(b);
      if (std::any_of(buf.begin(), buf.end(), [](std::byte x) { return x != kCanary; })) std::abort();
    }
  }
  return 0;
}

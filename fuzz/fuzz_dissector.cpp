// The Wireshark plugin's receive path without Wireshark: frames pushed one
// at a time as Wireshark's first pass hands them over (a link type that may
// change between frames, as in a pcapng with several interfaces), the pass
// ended, then every frame's stored units and verdicts read back as the
// plugin shows them. Input: a link type choice octet, then records of a
// 2-octet big-endian length, a link type change bit in its top bit, and the frame.
#include <cstdint>
#include <string>

#include "dissectors/capture_checks.hpp"

using namespace rdmaconf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr int kLinktypes[] = {1, 113, 276, 101, 228, 229, 247, 0};
  if (size < 1) return 0;
  dissectors::CaptureChecks checks(data[0] & 0x80);
  int linktype = kLinktypes[data[0] & 7];
  std::size_t at = 1;
  std::uint64_t frame = 0;
  while (at + 2 <= size) {
    const unsigned word = (static_cast<unsigned>(data[at]) << 8) | data[at + 1];
    at += 2;
    if (word & 0x8000) linktype = kLinktypes[(linktype + 1) & 7];
    const std::size_t len = std::min<std::size_t>(word & 0x7fff, size - at);
    ++frame;
    checks.frame(frame, linktype, static_cast<std::int64_t>(frame), 0, static_cast<std::uint32_t>(len),
                 protocols::as_bytes(data + at, len));
    at += len;
  }
  checks.finish();
  std::size_t shown = 0;
  for (std::uint64_t f = 1; f <= frame; ++f)
    if (const auto* n = checks.notes(f)) {
      for (const auto& u : n->units) shown += u.unit.dump().size();
      for (const auto& v : n->verdicts) shown += v.evidence.expected.size() + v.scope.size();
    }
  return shown == SIZE_MAX;
}

// The shared MPA receive framer: any octets, cut anywhere, give the same
// FPDUs as the same octets in one piece, and every octet is accounted for
// (in an FPDU, or in the one still open).
// Input: a flags octet (bit 0 markers, bit 1 CRC), a cut seed octet, the stream.
#include <cstdlib>
#include <vector>

#include "protocols/iwarp/framer.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::iwarp;

namespace {

struct Seen {
  std::vector<std::byte> octets;
  std::uint64_t start, wire_size;
  std::uint32_t crc;
  std::vector<std::uint64_t> marker_pos;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> run(Bytes stream, bool markers, bool crc, unsigned seed, std::uint64_t& open_at) {
  MpaFramer<> f(markers, crc);
  std::vector<Seen> out;
  std::uint64_t wire = 0;
  unsigned x = seed | 1;
  while (!stream.empty()) {
    std::size_t n = stream.size();
    if (seed) {
      x = x * 1103515245u + 12345u;
      n = std::min<std::size_t>(n, 1 + (x >> 16) % 600);
    }
    Bytes in = stream.first(n);
    stream = stream.subspan(n);
    while (auto g = f.next(in)) {
      if (g->start != wire || g->wire_size != g->octets.size() + 4 * g->markers.size()) std::abort();
      if (g->octets.size() != fpdu_size(be16(g->octets, 0))) std::abort();
      Seen s{{g->octets.begin(), g->octets.end()}, g->start, g->wire_size, g->crc, {}};
      for (const auto& m : g->markers) {
        if (!markers || m.pos % kMpaMarkerInterval != 0 || m.pos < g->start || m.pos >= g->start + g->wire_size) std::abort();
        s.marker_pos.push_back(m.pos);
      }
      wire += g->wire_size;
      out.push_back(std::move(s));
    }
    if (!in.empty()) std::abort();  // without a whole FPDU, every octet is taken
  }
  if (f.position() < wire) std::abort();
  if (const auto p = f.partial(); p && p->start != wire) std::abort();
  open_at = f.position() - wire;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool markers = data[0] & 1, crc = data[0] & 2;
  const Bytes stream = as_bytes(data + 2, size - 2);
  std::uint64_t open_whole = 0, open_cut = 0;
  const auto whole = run(stream, markers, crc, 0, open_whole);
  const auto cut = run(stream, markers, crc, data[1], open_cut);
  if (!(whole == cut) || open_whole != open_cut) std::abort();
  return 0;
}

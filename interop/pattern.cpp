#include "interop/pattern.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace rdmaconf::interop {

namespace {

// A xorshift stream; blocks of a multiple of 8 octets continue it exactly.
struct PatternGen {
  std::uint64_t x;
  explicit PatternGen(std::uint64_t seed) : x(seed * 0x9e3779b97f4a7c15ull + 1) {}
  void fill(std::span<std::byte> b) {
    std::size_t i = 0;
    for (; i + 8 <= b.size(); i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(b.data() + i, &x, 8);
    }
    if (i == b.size()) return;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    for (unsigned k = 0; i < b.size(); ++i, ++k) b[i] = std::byte((x >> (8 * k)) & 0xff);
  }
};
}  // namespace

void fill_pattern(std::span<std::byte> b, std::uint64_t seed) { PatternGen(seed).fill(b); }

std::optional<std::size_t> check_pattern(std::span<const std::byte> b, std::uint64_t seed) {
  PatternGen g(seed);
  std::array<std::byte, 4096> want;
  for (std::size_t off = 0; off < b.size(); off += want.size()) {
    const std::size_t n = std::min(want.size(), b.size() - off);
    g.fill(std::span(want).first(n));
    if (std::memcmp(b.data() + off, want.data(), n) != 0)
      return off + static_cast<std::size_t>(std::mismatch(want.begin(), want.begin() + n, b.begin() + off).first - want.begin());
  }
  return std::nullopt;
}


std::uint64_t digest(std::span<const std::byte> b, std::uint64_t h) {
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  std::size_t i = 0;
  for (; i + 8 <= b.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b.data() + i, 8);
    h = (h ^ w) * kPrime;
  }
  for (; i < b.size(); ++i) h = (h ^ std::to_integer<std::uint64_t>(b[i])) * kPrime;
  return h;
}

}  // namespace rdmaconf::interop

#pragma once
// Explicit big-endian readers and writers. No casts onto packed structs:
// every multi-octet value is assembled byte by byte from a bounds-checked span.
#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmaconf::protocols {

using Bytes = std::span<const std::byte>;
using MutBytes = std::span<std::byte>;

inline Bytes as_bytes(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

constexpr std::uint8_t u8(Bytes b, std::size_t off) { return static_cast<std::uint8_t>(b[off]); }
constexpr std::uint16_t be16(Bytes b, std::size_t off) {
  return static_cast<std::uint16_t>((u8(b, off) << 8) | u8(b, off + 1));
}
constexpr std::uint32_t be32(Bytes b, std::size_t off) {
  return (std::uint32_t{u8(b, off)} << 24) | (std::uint32_t{u8(b, off + 1)} << 16) |
         (std::uint32_t{u8(b, off + 2)} << 8) | std::uint32_t{u8(b, off + 3)};
}
constexpr std::uint64_t be64(Bytes b, std::size_t off) {
  return (std::uint64_t{be32(b, off)} << 32) | be32(b, off + 4);
}
constexpr std::uint16_t le16(Bytes b, std::size_t off) {
  return static_cast<std::uint16_t>((u8(b, off + 1) << 8) | u8(b, off));
}
constexpr std::uint32_t le32(Bytes b, std::size_t off) {
  return (std::uint32_t{u8(b, off + 3)} << 24) | (std::uint32_t{u8(b, off + 2)} << 16) |
         (std::uint32_t{u8(b, off + 1)} << 8) | std::uint32_t{u8(b, off)};
}

inline void put_be16(MutBytes b, std::size_t off, std::uint16_t v) {
  b[off] = std::byte(v >> 8);
  b[off + 1] = std::byte(v & 0xff);
}
inline void put_be32(MutBytes b, std::size_t off, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = std::byte((v >> (24 - 8 * i)) & 0xff);
}
inline void put_be64(MutBytes b, std::size_t off, std::uint64_t v) {
  put_be32(b, off, static_cast<std::uint32_t>(v >> 32));
  put_be32(b, off + 4, static_cast<std::uint32_t>(v));
}
inline void put_le16(MutBytes b, std::size_t off, std::uint16_t v) {
  b[off] = std::byte(v & 0xff);
  b[off + 1] = std::byte(v >> 8);
}
inline void put_le32(MutBytes b, std::size_t off, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = std::byte((v >> (8 * i)) & 0xff);
}

// Reads `width` (1..64) bits starting `bit_off` bits into `b`, MSB first.
// The caller guarantees the bits lie inside `b`.
constexpr std::uint64_t read_bits_across(Bytes b, std::size_t bit_off, unsigned width);
// (Inline: every header field read of the checker's per-FPDU path comes
// here, and the one-window case is a load and two shifts.)
[[gnu::always_inline]] constexpr std::uint64_t read_bits(Bytes b, std::size_t bit_off, unsigned width) {
  const std::size_t first = bit_off / 8;
  const unsigned lead = static_cast<unsigned>(bit_off % 8);
  if (lead + width <= 64 && first + 8 <= b.size()) [[likely]] {
    // The common case: the field lies in one 8-octet window.
    const std::uint64_t w = be64(b, first);
    const std::uint64_t v = w >> (64 - lead - width);
    return width == 64 ? v : v & ((std::uint64_t{1} << width) - 1);
  }
  return read_bits_across(b, bit_off, width);
}
// read_bits for a field no 8-octet window holds, or near the end of `b`.
constexpr std::uint64_t read_bits_across(Bytes b, std::size_t bit_off, unsigned width) {
  const std::size_t first = bit_off / 8;
  const std::size_t last = (bit_off + width - 1) / 8;
  unsigned __int128 acc = 0;
  for (std::size_t i = first; i <= last; ++i) acc = (acc << 8) | u8(b, i);
  const unsigned tail = static_cast<unsigned>(7 - (bit_off + width - 1) % 8);
  acc >>= tail;
  const unsigned __int128 mask = (static_cast<unsigned __int128>(1) << width) - 1;
  return static_cast<std::uint64_t>(acc & mask);
}

// Writes the low `width` bits of v at `bit_off`, leaving other bits alone.
inline void write_bits(MutBytes b, std::size_t bit_off, unsigned width, std::uint64_t v) {
  const std::size_t first = bit_off / 8;
  const unsigned lead = static_cast<unsigned>(bit_off % 8);
  if (lead + width <= 64 && first + 8 <= b.size()) {
    // As in read_bits: one 8-octet window, read, masked and written back.
    const unsigned shift = 64 - lead - width;
    const std::uint64_t mask = (width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1) << shift;
    put_be64(b, first, (be64(b, first) & ~mask) | ((v << shift) & mask));
    return;
  }
  for (unsigned i = 0; i < width; ++i) {
    const std::size_t bit = bit_off + i;
    const unsigned shift = 7 - static_cast<unsigned>(bit % 8);
    const bool set = (v >> (width - 1 - i)) & 1u;
    auto& byte = b[bit / 8];
    byte = set ? (byte | std::byte(1u << shift)) : (byte & ~std::byte(1u << shift));
  }
}

}  // namespace rdmaconf::protocols

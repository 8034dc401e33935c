#pragma once
// The data pattern both sides of an interop scenario derive from a seed
// (docs/interop.md), and the digest the RoCE peer reports its buffers with.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace rdmaconf::interop {

void fill_pattern(std::span<std::byte> b, std::uint64_t seed);
// Offset of the first octet that differs from the pattern, if any.
std::optional<std::size_t> check_pattern(std::span<const std::byte> b, std::uint64_t seed);
// A digest of received data, continuing from h: the FNV-1a step taken over
// 8-octet little-endian words (then the remaining octets one by one), a
// word at a time because the responder digests every message it receives
// while the benchmark times it. Both ends compute it; it is no standard.
inline constexpr std::uint64_t kDigestInit = 0xcbf29ce484222325ull;
std::uint64_t digest(std::span<const std::byte> b, std::uint64_t h = kDigestInit);

}  // namespace rdmaconf::interop

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
// 64-bit FNV-1a, continuing from h.
std::uint64_t fnv1a(std::span<const std::byte> b, std::uint64_t h = 0xcbf29ce484222325ull);

}  // namespace rdmaconf::interop

#pragma once
// CRC32c (Castagnoli), as MPA uses it (RFC 5044 §5.2 (?) / RFC 3385): seed
// 0xFFFFFFFF, reflected, final inversion; crc32c("123456789") = 0xE3069283.
// Several engines compute the same function; `crc32c` uses the fastest one
// this CPU and build have, and the tests hold all of them equal.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocols/core/bits.hpp"

namespace rdmaconf::protocols::crc {

enum class Crc32cEngine { portable, sse42, isal };

// Incremental form: state starts at kCrc32cInit, finish with crc32c_final.
inline constexpr std::uint32_t kCrc32cInit = 0xFFFFFFFFu;
std::uint32_t crc32c_update(std::uint32_t state, Bytes data);
inline std::uint32_t crc32c_final(std::uint32_t state) { return ~state; }
inline std::uint32_t crc32c(Bytes data) { return crc32c_final(crc32c_update(kCrc32cInit, data)); }

// One engine explicitly (for tests and benchmarks). Returns false in `ok`
// when that engine is not available here.
std::uint32_t crc32c_update_with(Crc32cEngine e, std::uint32_t state, Bytes data, bool* ok = nullptr);
std::vector<Crc32cEngine> available_crc32c_engines();
std::string_view engine_name(Crc32cEngine e);
Crc32cEngine active_crc32c_engine();

// CRC-32 (IEEE 802.3, reflected 0xEDB88320), the base of the InfiniBand ICRC
// and VCRC... The VCRC is a CRC-16; see ib/icrc.hpp.
inline constexpr std::uint32_t kCrc32Init = 0xFFFFFFFFu;
// ISA-L's folding CRC when built with it, else slicing-by-8; the state is
// the raw (uninverted) register either way.
std::uint32_t crc32_update(std::uint32_t state, Bytes data);
std::uint32_t crc32_update_portable(std::uint32_t state, Bytes data);  // slicing-by-8 always (tests)
inline std::uint32_t crc32(Bytes data) { return ~crc32_update(kCrc32Init, data); }

}  // namespace rdmaconf::protocols::crc

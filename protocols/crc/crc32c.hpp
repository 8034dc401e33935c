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

// The CRC-32C of any slice of one buffer, each in constant time once the
// buffer has been read: for scans that try a CRC at every offset (MPA framing
// looked for mid-stream), where computing each slice's CRC afresh made the
// scan quadratic in the stream's length.
//
// It rests on the CRC register being linear: the register after a slice,
// started from the register before it, is that start shifted through as
// many zero octets, xored with the slice's CRC from zero; shifting through n
// zero octets is a multiplication by x^(8n) modulo the polynomial.
class Crc32cSlices {
 public:
  // (`e`: portable multiplies one coefficient at a time, for tests; any
  // other uses the CPU's carry-less multiplication where it has one.)
  explicit Crc32cSlices(Bytes b, Crc32cEngine e = Crc32cEngine::isal);
  // crc32c(b.subspan(from, to - from)), for from <= to <= b.size().
  std::uint32_t crc(std::size_t from, std::size_t to) const;

 private:
  std::vector<std::uint32_t> reg_;  // reg_[i]: the register after b's first i octets, from kCrc32cInit
  bool portable_;
};

// CRC-32 (IEEE 802.3, reflected 0xEDB88320), the base of the InfiniBand ICRC
// and VCRC... The VCRC is a CRC-16; see ib/icrc.hpp.
inline constexpr std::uint32_t kCrc32Init = 0xFFFFFFFFu;
// ISA-L's folding CRC when built with it, else slicing-by-8; the state is
// the raw (uninverted) register either way.
std::uint32_t crc32_update(std::uint32_t state, Bytes data);
std::uint32_t crc32_update_portable(std::uint32_t state, Bytes data);  // slicing-by-8 always (tests)
inline std::uint32_t crc32(Bytes data) { return ~crc32_update(kCrc32Init, data); }

}  // namespace rdmaconf::protocols::crc

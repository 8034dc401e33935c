#include <boost/test/unit_test.hpp>

#include <random>
#include <string_view>

#include "protocols/crc/crc32c.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::crc;

namespace {
Bytes text(std::string_view s) { return as_bytes(s.data(), s.size()); }
}  // namespace

BOOST_AUTO_TEST_SUITE(crc)

// Published check values: the CRC catalogue's CRC-32C and CRC-32 "123456789"
// checks, and the iSCSI test vectors of RFC 3720 Appendix B.4.
BOOST_AUTO_TEST_CASE(published_vectors_every_engine) {
  std::vector<std::byte> zeros(32, std::byte{0}), ones(32, std::byte{0xff}), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) inc[i] = std::byte(i), dec[i] = std::byte(31 - i);
  BOOST_TEST(available_crc32c_engines().size() >= 1u);
  for (auto e : available_crc32c_engines()) {
    BOOST_TEST_CONTEXT(engine_name(e)) {
      auto c = [&](Bytes b) { return crc32c_final(crc32c_update_with(e, kCrc32cInit, b)); };
      BOOST_TEST(c(text("123456789")) == 0xE3069283u);
      BOOST_TEST(c(zeros) == 0x8A9136AAu);
      BOOST_TEST(c(ones) == 0x62A8AB43u);
      BOOST_TEST(c(inc) == 0x46DD794Eu);
      BOOST_TEST(c(dec) == 0x113FDB5Cu);
      BOOST_TEST(c({}) == 0u);
    }
  }
  BOOST_TEST(crc32(text("123456789")) == 0xCBF43926u);
}

BOOST_AUTO_TEST_CASE(engines_agree_on_random_data_and_splits) {
  std::mt19937 rng(1);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::byte> d(rng() % 3000);
    for (auto& b : d) b = std::byte(rng() & 0xff);
    const std::uint32_t ref = crc32c(d);
    const std::size_t split = d.empty() ? 0 : rng() % d.size();
    for (auto e : available_crc32c_engines()) {
      // Unaligned starts and incremental updates must not matter.
      std::uint32_t s = crc32c_update_with(e, kCrc32cInit, Bytes(d).first(split));
      s = crc32c_update_with(e, s, Bytes(d).subspan(split));
      BOOST_TEST(crc32c_final(s) == ref, engine_name(e));
    }
    // CRC-32 (the ICRC's): the library path and slicing-by-8 agree, split anywhere.
    std::uint32_t s = crc32_update(kCrc32Init, Bytes(d).first(split));
    s = crc32_update(s, Bytes(d).subspan(split));
    BOOST_TEST(s == crc32_update_portable(kCrc32Init, d));
  }
}

// Every slice's CRC from the buffer's registers equals the CRC computed over
// the slice alone (by the active engine: ISA-L or SSE4.2 here), at both ends
// of the buffer, empty, and longer than the table of zero-octet shifts.
BOOST_AUTO_TEST_CASE(slices_match_the_crc_of_each_slice) {
  std::mt19937 rng(2);
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{300}, std::size_t{70000},
                                 std::size_t{200000}}) {
    std::vector<std::byte> d(size);
    for (auto& b : d) b = std::byte(rng() & 0xff);
    // (The portable multiplication and the CPU's carry-less one.)
    for (const auto e : {Crc32cEngine::portable, Crc32cEngine::sse42}) {
      const Crc32cSlices slices(d, e);
      BOOST_TEST_CONTEXT(engine_name(e) << ", size " << size) {
        BOOST_TEST(slices.crc(0, size) == crc32c(d));
        BOOST_TEST(slices.crc(size, size) == 0u);
        for (int round = 0; round < 300; ++round) {
          std::size_t from = size ? rng() % (size + 1) : 0, to = size ? rng() % (size + 1) : 0;
          if (from > to) std::swap(from, to);
          BOOST_TEST(slices.crc(from, to) == crc32c(Bytes(d).subspan(from, to - from)), "slice " << from << ".." << to);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

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

BOOST_AUTO_TEST_SUITE_END()

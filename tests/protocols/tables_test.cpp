// Every header table: sound layout, unique keys, and for each header a
// round trip through decode/encode and a clean rejection of every truncation.
#include <boost/test/unit_test.hpp>

#include <random>
#include <set>

#include "protocols/core/header.hpp"
#include "conformance/family.hpp"
#include "protocols/net/headers.hpp"

using namespace rdmaconf::protocols;

BOOST_AUTO_TEST_SUITE(tables)

BOOST_AUTO_TEST_CASE(every_table_is_sound_and_keys_are_unique) {
  std::set<std::string_view> headers;
  std::set<std::string_view> keys;
  BOOST_TEST(rdmaconf::conformance::Registry::get().headers().size() >= 30u);
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers()) {
    BOOST_TEST_CONTEXT(h->name) {
      BOOST_TEST(table_is_sound(*h));
      BOOST_TEST(h->size <= Header::kMaxSize);
      BOOST_TEST(headers.insert(h->abbrev).second);
      BOOST_TEST(!h->ref.empty());
      std::uint32_t bits = 0;
      for (const auto& f : h->fields) {
        bits += f.bit_width;
        BOOST_TEST(!f.name.empty());
        // Filter keys are unique across all tables except the shared DDP/RDMAP control rows.
        if (!keys.insert(f.abbrev).second)
          BOOST_TEST((f.abbrev.starts_with("ddp.") || f.abbrev.starts_with("rdmap.")), f.abbrev);
      }
      BOOST_TEST(bits == h->size * 8u);
    }
  }
}

// The EtherType names come from the families: protocols/net names only the
// network and tagging layers', and the tables the registry hands out name
// every family's too, each value once, in every field that carries an EtherType.
BOOST_AUTO_TEST_CASE(ethertype_names_come_from_the_families) {
  auto named = [](const FieldDef& f, std::uint64_t v) { return std::string(value_name(f, v)); };
  BOOST_TEST(named(net::kEthFields[net::Eth::type], 0x8915) == "");
  std::set<std::string_view> fields;
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers())
    for (const auto& f : h->fields) {
      if (!named(f, 0x86dd).starts_with("IPv6")) continue;  // (the fields that name EtherTypes)
      fields.insert(f.abbrev);
      BOOST_TEST(named(f, 0x0800) == "IPv4", f.abbrev);
      BOOST_TEST(named(f, 0x8915) == "RoCE v1", f.abbrev);
      BOOST_TEST(named(f, 0x88b5) == "U-Net (local experimental)", f.abbrev);
      std::set<std::uint64_t> values;
      for (const auto& vn : f.values) BOOST_TEST(values.insert(vn.value).second, f.abbrev << " names " << vn.value << " twice");
    }
  BOOST_TEST(fields == (std::set<std::string_view>{"eth.type", "vlan.etype", "sll.etype", "sll2.etype"}));
}

BOOST_AUTO_TEST_CASE(round_trip_every_header_random_octets) {
  std::mt19937 rng(7);
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers()) {
    for (int round = 0; round < 50; ++round) {
      std::vector<std::byte> in(h->size);
      for (auto& b : in) b = std::byte(rng() & 0xff);
      auto d = Header::decode(*h, in);
      BOOST_TEST_REQUIRE(d.ok());
      // Re-encode field by field into a blank header: the table must cover every bit.
      Header e(*h);
      for (std::size_t i = 0; i < h->fields.size(); ++i) {
        if (h->fields[i].is_wide())
          e.set_field_bytes(i, d->field_bytes(i));
        else
          e.set(i, d->get(i));
      }
      std::vector<std::byte> out(h->size);
      e.encode(out);
      BOOST_TEST_CONTEXT(h->name) { BOOST_TEST(out == in); }
    }
  }
}

BOOST_AUTO_TEST_CASE(set_get_each_field_independently) {
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers()) {
    for (std::size_t i = 0; i < h->fields.size(); ++i) {
      const auto& f = h->fields[i];
      if (f.is_wide()) continue;
      Header x(*h);
      const std::uint64_t max = f.bit_width == 64 ? ~0ull : (1ull << f.bit_width) - 1;
      x.set(i, max);
      BOOST_TEST(x.get(i) == max, h->name << "." << f.abbrev);
      for (std::size_t j = 0; j < h->fields.size(); ++j)
        if (j != i && !h->fields[j].is_wide()) BOOST_TEST(x.get(j) == 0u, h->name << ": " << f.abbrev << " leaks into " << h->fields[j].abbrev);
      x.set(i, max + 1);  // wider values are masked, not spilled
      BOOST_TEST(x.get(i) == ((max + 1) & max));
    }
  }
}

BOOST_AUTO_TEST_CASE(every_truncation_is_rejected_cleanly) {
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers()) {
    std::vector<std::byte> in(h->size, std::byte{0xa5});
    for (std::size_t n = 0; n < h->size; ++n) {
      auto d = Header::decode(*h, std::span<const std::byte>(in).first(n));
      BOOST_TEST_REQUIRE(!d.ok());
      BOOST_TEST((d.error().code == Errc::truncated));
      BOOST_TEST(d.error().needed == h->size);
      BOOST_TEST(d.error().available == n);
      BOOST_TEST(d.error().message().find(std::string(h->name)) != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(must_be_zero_fields_are_reported) {
  for (const HeaderDef* h : rdmaconf::conformance::Registry::get().headers()) {
    Header x(*h);
    BOOST_TEST(x.nonzero_reserved() == 0u);
    for (std::size_t i = 0; i < h->fields.size(); ++i) {
      if (!h->fields[i].must_be_zero) continue;
      Header y(*h);
      y.set(i, 1);
      BOOST_TEST(y.nonzero_reserved() == (1ull << i), h->name);
    }
  }
}

BOOST_AUTO_TEST_CASE(pretty_printer_and_json_use_table_names) {
  Header x(*rdmaconf::conformance::Registry::get().headers()[0]);
  const std::string t = to_text(x);
  for (const auto& f : x.def().fields) BOOST_TEST(t.find(std::string(f.name)) != std::string::npos);
}

// read_bits has a one-window fast path and a byte loop; both must agree with
// a bit-by-bit reading at every offset and width, near the end of the span too.
BOOST_AUTO_TEST_CASE(read_bits_agrees_with_bitwise_reading) {
  std::mt19937 rng(11);
  std::vector<std::byte> buf(20);
  for (auto& b : buf) b = std::byte(rng() & 0xff);
  const Bytes all(buf);
  for (std::size_t size = 9; size <= buf.size(); ++size) {
    const Bytes b = all.first(size);
    for (std::size_t off = 0; off < size * 8; ++off)
      for (unsigned w = 1; w <= 64 && off + w <= size * 8; ++w) {
        std::uint64_t want = 0;
        for (unsigned i = 0; i < w; ++i) {
          const std::size_t bit = off + i;
          want = (want << 1) | ((static_cast<unsigned>(b[bit / 8]) >> (7 - bit % 8)) & 1u);
        }
        BOOST_REQUIRE_MESSAGE(read_bits(b, off, w) == want, "size " << size << " offset " << off << " width " << w);
      }
  }
}

BOOST_AUTO_TEST_SUITE_END()

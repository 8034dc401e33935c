// The shared MPA receive framer (protocols/iwarp/framer.hpp): a stream laid
// out by hand from RFC 5044's rules, streams of every shape from the encoder
// cut at every split, faults it must report and not hide, and what it holds
// when the stream stops inside an FPDU.
#include <boost/test/unit_test.hpp>

#include <random>

#include "protocols/crc/crc32c.hpp"
#include "protocols/iwarp/codec.hpp"
#include "protocols/iwarp/framer.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::iwarp;

namespace {

struct Got {
  std::vector<std::byte> octets;
  std::uint64_t start, wire_size, tag;
  std::uint32_t crc;
  std::vector<MpaFramer<>::Marker> markers;
  bool operator==(const Got& o) const {
    if (markers.size() != o.markers.size()) return false;
    for (std::size_t i = 0; i < markers.size(); ++i)
      if (markers[i].pos != o.markers[i].pos || markers[i].fpduptr != o.markers[i].fpduptr ||
          markers[i].rsvd != o.markers[i].rsvd || markers[i].expected_ptr != o.markers[i].expected_ptr)
        return false;
    return octets == o.octets && start == o.start && wire_size == o.wire_size && crc == o.crc;
  }
};

// Feeds `stream` in pieces of the sizes `cuts` gives (cycled), each piece tagged with its number.
std::vector<Got> frame(Bytes stream, bool markers, bool crc, const std::vector<std::size_t>& cuts) {
  MpaFramer<> f(markers, crc);
  std::vector<Got> out;
  std::size_t at = 0, piece = 0;
  while (at < stream.size()) {
    const std::size_t n = std::min(cuts[piece % cuts.size()], stream.size() - at);
    Bytes in = stream.subspan(at, n);
    while (auto g = f.next(in, piece))
      out.push_back(Got{{g->octets.begin(), g->octets.end()}, g->start, g->wire_size, g->tag, g->crc, {g->markers.begin(), g->markers.end()}});
    at += n;
    ++piece;
  }
  return out;
}

std::vector<std::byte> ulpdu_of(std::size_t len, std::uint8_t seed) {
  std::vector<std::byte> u(len);
  for (std::size_t i = 0; i < len; ++i) u[i] = static_cast<std::byte>(seed + i * 7);
  return u;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(iwarp_framer)

// Laid out octet by octet from RFC 5044 §4.3 and §4.4: a marker at every 512th
// position from the first FPDU, its pointer the distance back to the ULPDU
// Length field of the FPDU it sits in (RFC 5044 §4.3: 0 for a marker right
// before that field, which then belongs to the FPDU), the CRC over
// everything before the CRC field, markers included.
BOOST_AUTO_TEST_CASE(hand_laid_marked_stream) {
  const std::size_t len_a = 594;  // 2 + 594 = 596, no pad: 600 octets without markers
  std::vector<std::byte> wire = {std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}};  // marker, pointer 0
  wire.push_back(std::byte{0x02});
  wire.push_back(std::byte{0x52});
  const auto ua = ulpdu_of(len_a, 3);
  // Positions 6..511 hold the ULPDU's first 506 octets; the marker due at
  // position 512 points 508 back, to the length field at position 4 (not to
  // the leading marker); then the rest.
  wire.insert(wire.end(), ua.begin(), ua.begin() + 506);
  for (unsigned o : {0u, 0u, 0x01u, 0xfcu}) wire.push_back(static_cast<std::byte>(o));
  wire.insert(wire.end(), ua.begin() + 506, ua.end());
  const std::uint32_t crc_a = crc::crc32c(Bytes(wire));
  for (int i = 0; i < 4; ++i) wire.push_back(static_cast<std::byte>(crc_a >> (8 * i)));  // the field travels little-endian
  BOOST_TEST_REQUIRE(wire.size() == 608u);
  // A 4-octet ULPDU: 2 pad octets, no marker before position 1024.
  const std::size_t b_at = wire.size();
  const std::byte ub[6] = {std::byte{0}, std::byte{4}, std::byte{'a'}, std::byte{'b'}, std::byte{'c'}, std::byte{'d'}};
  wire.insert(wire.end(), ub, ub + 6);
  wire.insert(wire.end(), 2, std::byte{0});
  const std::uint32_t crc_b = crc::crc32c(Bytes(wire).subspan(b_at));
  for (int i = 0; i < 4; ++i) wire.push_back(static_cast<std::byte>(crc_b >> (8 * i)));

  for (std::size_t cut : {std::size_t{1}, std::size_t{3}, std::size_t{512}, wire.size()}) {
    const auto got = frame(wire, true, true, {cut});
    BOOST_TEST_REQUIRE(got.size() == 2u);
    BOOST_TEST(got[0].start == 0u);
    BOOST_TEST(got[0].wire_size == 608u);
    BOOST_TEST(got[0].octets.size() == 600u);
    BOOST_TEST(got[0].crc == crc_a);
    BOOST_TEST(le32(Bytes(got[0].octets), 596) == crc_a);
    BOOST_TEST((std::vector<std::byte>(got[0].octets.begin() + 2, got[0].octets.begin() + 2 + len_a) == ua));
    BOOST_TEST_REQUIRE(got[0].markers.size() == 2u);
    BOOST_TEST(got[0].markers[0].pos == 0u);
    BOOST_TEST(got[0].markers[0].fpduptr == 0u);
    BOOST_TEST(got[0].markers[1].pos == 512u);
    BOOST_TEST(got[0].markers[1].fpduptr == 508u);
    BOOST_TEST(got[0].markers[1].expected_ptr == 508u);
    BOOST_TEST(got[1].start == 608u);
    BOOST_TEST(got[1].wire_size == 12u);
    BOOST_TEST(got[1].crc == crc_b);
    BOOST_TEST(got[1].markers.empty());
  }
  // The encoder lays out the same octets.
  std::vector<std::byte> enc;
  MarkerStream ms;
  encode_fpdu_marked(enc, ua, true, ms);
  const std::byte abcd[4] = {std::byte{'a'}, std::byte{'b'}, std::byte{'c'}, std::byte{'d'}};
  encode_fpdu_marked(enc, Bytes(abcd, 4), true, ms);
  BOOST_TEST((enc == wire));
}

// Streams from the encoder, with and without markers and CRC, ULPDU sizes
// that put markers at an FPDU's first octet, right before its CRC field and
// anywhere else: every way of cutting them gives the same FPDUs.
BOOST_AUTO_TEST_CASE(any_split_same_fpdus) {
  std::mt19937 rng(7);
  for (int markers = 0; markers < 2; ++markers)
    for (int crc_on = 0; crc_on < 2; ++crc_on) {
      std::vector<std::byte> stream;
      std::vector<std::vector<std::byte>> sent;
      MarkerStream ms;
      for (std::size_t len : {0, 1, 2, 3, 502, 506, 4, 1018, 1500, 9000, 65535, 14, 0}) {
        sent.push_back(ulpdu_of(len, static_cast<std::uint8_t>(sent.size())));
        if (markers) encode_fpdu_marked(stream, sent.back(), crc_on, ms);
        else encode_fpdu(stream, sent.back(), crc_on);
      }
      const auto whole = frame(stream, markers, crc_on, {stream.size()});
      BOOST_TEST_REQUIRE(whole.size() == sent.size());
      std::uint64_t wire = 0, marks = 0;
      for (std::size_t i = 0; i < sent.size(); ++i) {
        const Bytes o(whole[i].octets);
        BOOST_TEST(whole[i].start == wire);
        BOOST_TEST(be16(o, 0) == sent[i].size());
        BOOST_TEST((std::vector<std::byte>(o.begin() + 2, o.begin() + 2 + static_cast<std::ptrdiff_t>(sent[i].size())) == sent[i]));
        BOOST_TEST(whole[i].crc == (crc_on ? le32(o, o.size() - 4) : 0u));
        for (const auto& m : whole[i].markers) {
          BOOST_TEST(m.pos % kMpaMarkerInterval == 0u);
          BOOST_TEST(m.fpduptr == m.expected_ptr);
          BOOST_TEST(m.expected_ptr == static_cast<std::uint16_t>(m.pos - whole[i].start));  // (16 bits: FPDUs over 64 KiB with markers wrap)
        }
        marks += whole[i].markers.size();
        wire += whole[i].wire_size;
      }
      BOOST_TEST(wire == stream.size());
      BOOST_TEST(marks == (markers ? ms.written : 0u));
      for (const std::vector<std::size_t>& cuts : std::vector<std::vector<std::size_t>>{{1}, {2}, {3}, {511}, {513}, {4096}})
        BOOST_TEST((frame(stream, markers, crc_on, cuts) == whole));
      for (int round = 0; round < 20; ++round) {
        std::vector<std::size_t> cuts(50);
        for (auto& c : cuts) c = 1 + rng() % 700;
        BOOST_TEST((frame(stream, markers, crc_on, cuts) == whole));
      }
    }
}

// Resumed at any position (the checker resumes where it finds an FPDU after
// lost octets, not always 4-aligned), a marked stream framed whole gives what
// it gives octet by octet, however markers fall: inside a length field, in a
// CRC field. (An unaligned resume once let the whole-FPDU sweep read a marker
// past the end of its input.)
BOOST_AUTO_TEST_CASE(resumed_anywhere_whole_equals_octet_by_octet) {
  std::vector<std::byte> stream;
  MarkerStream ms;
  for (int i = 0; i < 6; ++i) encode_fpdu_marked(stream, ulpdu_of(150 + 97 * i, static_cast<std::uint8_t>(i)), true, ms);
  auto run = [&](std::uint64_t pos, std::size_t skip, std::size_t cut) {
    MpaFramer<> f;
    f.resume_at(true, true, pos);
    std::vector<Got> out;
    for (std::size_t at = skip; at < stream.size(); at += cut) {
      Bytes in = Bytes(stream).subspan(at, std::min(cut, stream.size() - at));
      while (auto g = f.next(in, 0))
        out.push_back(Got{{g->octets.begin(), g->octets.end()}, g->start, g->wire_size, g->tag, g->crc,
                          {g->markers.begin(), g->markers.end()}});
    }
    return out;
  };
  for (std::uint64_t pos : {1u, 2u, 3u, 498u, 505u, 509u, 510u, 511u, 1021u})
    for (std::size_t skip : {0u, 1u, 2u, 3u, 412u}) {
      BOOST_TEST_CONTEXT("resumed at " << pos << ", " << skip << " octets in") {
        BOOST_TEST((run(pos, skip, stream.size()) == run(pos, skip, 1)));
      }
    }
}

// A wrong CRC and a wrong marker are handed to the caller as they are.
BOOST_AUTO_TEST_CASE(faults_are_reported_not_hidden) {
  std::vector<std::byte> stream;
  MarkerStream ms;
  ms.fault_index = 1;  // the marker at 512
  ms.fault_ptr_xor = 0x10;
  ms.fault_rsvd = 0x8000;
  for (int i = 0; i < 3; ++i) encode_fpdu_marked(stream, ulpdu_of(400, 1), true, ms);
  stream[412 + 2 + 7] ^= std::byte{0x40};  // inside the second FPDU's ULPDU (the first took 412 octets)
  const auto got = frame(stream, true, true, {7});
  BOOST_TEST_REQUIRE(got.size() == 3u);
  BOOST_TEST(got[0].crc == le32(Bytes(got[0].octets), got[0].octets.size() - 4));
  BOOST_TEST(got[1].crc != le32(Bytes(got[1].octets), got[1].octets.size() - 4));
  BOOST_TEST_REQUIRE(got[1].markers.size() == 1u);
  BOOST_TEST(got[1].markers[0].pos == 512u);
  BOOST_TEST(got[1].markers[0].fpduptr != got[1].markers[0].expected_ptr);
  BOOST_TEST(got[1].markers[0].rsvd == 0x8000u);
}

// Stopped inside an FPDU: where it began, how much came, how much it needs;
// the FPDU and each marker carry the tag of the piece that began them; an
// unmarked FPDU that arrives whole is a view of the input, not a copy.
BOOST_AUTO_TEST_CASE(partial_tags_and_views) {
  std::vector<std::byte> stream;
  MarkerStream ms;
  encode_fpdu_marked(stream, ulpdu_of(600, 2), true, ms);  // 4 + 608 + 4 = 616 octets
  MpaFramer<> f(true, true);
  BOOST_TEST(!f.partial());
  Bytes a = Bytes(stream).first(3);
  BOOST_TEST(!f.next(a, 1));
  BOOST_TEST_REQUIRE(f.partial().has_value());
  BOOST_TEST(f.partial()->have == 0u);  // the leading marker is not the FPDU's octets
  Bytes b = Bytes(stream).subspan(3, 509);  // up to the marker at 512
  BOOST_TEST(!f.next(b, 2));
  BOOST_TEST(f.partial()->start == 0u);
  BOOST_TEST(f.partial()->have == 508u);
  BOOST_TEST(f.partial()->need == 608u);
  BOOST_TEST(f.partial()->tag == 1u);
  Bytes c = Bytes(stream).subspan(512);
  const auto g = f.next(c, 3);
  BOOST_TEST_REQUIRE(g.has_value());
  BOOST_TEST(g->tag == 1u);
  BOOST_TEST_REQUIRE(g->markers.size() == 2u);
  BOOST_TEST(g->markers[0].tag == 1u);
  BOOST_TEST(g->markers[1].tag == 3u);  // the marker at 512 came in the third piece
  BOOST_TEST(c.empty());
  BOOST_TEST(!f.partial());

  std::vector<std::byte> plain;
  encode_fpdu(plain, ulpdu_of(100, 3), false);
  encode_fpdu(plain, ulpdu_of(100, 4), false);
  MpaFramer<> u(false, false);
  Bytes in(plain);
  const auto first = u.next(in);
  BOOST_TEST_REQUIRE(first.has_value());
  BOOST_TEST(first->octets.data() == plain.data());
  BOOST_TEST(first->crc == 0u);
  BOOST_TEST(in.size() == plain.size() / 2);
}

BOOST_AUTO_TEST_SUITE_END()

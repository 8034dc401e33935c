// The MPA stream decoder gives the same events however the stream is cut.
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/iwarp/mpa_stream.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::iwarp;
namespace cf = rdmaconf::conformance;

namespace {

struct Log : cf::iwarp::MpaListener {
  std::vector<std::string> ev;
  void on_rr(const cf::iwarp::RrEvent& e) override {
    ev.push_back(fmt::format("rr d{} off{} ok{}", e.dir, e.offset, e.frame != nullptr));
  }
  void on_fpdu(const cf::iwarp::FpduEvent& e) override {
    ev.push_back(fmt::format("fpdu d{} off{} len{} crc{} ok{} ddp{}", e.dir, e.offset, e.fpdu->ulpdu_len,
                             e.crc_in_use ? e.fpdu->crc_wire == e.crc_computed : -1, e.index, e.ddp->ok()));
    for (const auto& m : e.markers) ev.push_back(fmt::format("marker off{} ptr{} want{}", m.offset, m.fpduptr, m.expected_ptr));
  }
  void on_stop(const cf::iwarp::StopEvent& e) override { ev.push_back(fmt::format("stop d{} {}", e.dir, e.reason)); }
};

// A one-segment Send with `extra` payload octets of value `fill`.
std::vector<std::byte> send_ulpdu(std::uint32_t msn, std::size_t extra, std::byte fill) {
  Header h(kDdpUntagged);
  h.set(DdpUntagged::l, 1);
  h.set(DdpUntagged::dv, 1);
  h.set(DdpUntagged::rv, 1);
  h.set(DdpUntagged::opcode, kOpSend);
  h.set(DdpUntagged::msn, msn);
  std::vector<std::byte> u(h.bytes().begin(), h.bytes().end());
  u.resize(u.size() + extra, fill);
  return u;
}

// The initiator's side of a connection whose Reply asks it for markers,
// with CRC: its Request, then `n` Sends of extra(i) payload octets; and the
// Reply.
struct Marked {
  std::vector<std::byte> stream, reply;
  std::size_t req = 0, markers = 0;
};
Marked marked_stream(int n, std::size_t (*extra)(int)) {
  Marked m;
  MpaRrParams p;
  p.crc = true;
  encode_mpa_rr(m.stream, p);
  m.req = m.stream.size();
  MarkerStream ms;
  for (int i = 0; i < n; ++i)
    encode_fpdu_marked(m.stream, send_ulpdu(static_cast<std::uint32_t>(i + 1), extra(i), std::byte{0x5c}), true, ms);
  m.markers = ms.written;
  MpaRrParams q;
  q.kind = MpaFrameKind::reply;
  q.markers = true;
  encode_mpa_rr(m.reply, q);
  return m;
}

std::vector<std::byte> initiator_stream(bool crc) {
  std::vector<std::byte> b;
  MpaRrParams p;
  p.crc = crc;
  p.revision = 2;
  p.enhanced = true;
  p.ird = p.ord = 4;
  encode_mpa_rr(b, p);
  for (int i = 0; i < 5; ++i) {
    const auto u = send_ulpdu(static_cast<std::uint32_t>(i + 1), static_cast<std::size_t>(i * 7), std::byte{0x33});
    encode_fpdu(b, u, crc);
  }
  return b;
}

std::vector<std::byte> reply() {
  std::vector<std::byte> b;
  MpaRrParams p;
  p.kind = MpaFrameKind::reply;
  p.revision = 2;
  p.enhanced = true;
  encode_mpa_rr(b, p);
  return b;
}

constexpr std::size_t kReq = 24;  // 20-octet frame + RFC 6581 IRD/ORD word

std::vector<std::string> run(const std::vector<std::byte>& s, std::size_t cut1, std::size_t cut2, bool reply_first) {
  Log log;
  rdmaconf::captures::io::TcpStreamInfo info;
  cf::iwarp::MpaConnection c(info, log);
  const auto r = reply();
  const Bytes all(s);
  if (reply_first) {
    c.data(0, 0, all.first(kReq), 1);  // the whole Request, then the Reply, then the rest
    c.data(1, 0, r, 2);
    c.data(0, kReq, all.subspan(kReq, cut1 - kReq), 3);
  } else {
    c.data(0, 0, all.first(cut1), 1);  // FPDUs may arrive before the Reply: they wait for it
    c.data(1, 0, r, 2);
  }
  c.data(0, cut1, all.subspan(cut1, cut2 - cut1), 4);
  c.data(0, cut2, all.subspan(cut2), 5);
  c.close(6);
  return log.ev;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mpa_stream)

BOOST_AUTO_TEST_CASE(same_events_at_every_split) {
  for (bool crc : {false, true}) {
    const auto s = initiator_stream(crc);
    const auto ref = run(s, kReq, kReq, true);
    BOOST_TEST(ref.size() == 7u);  // 2 frames, 5 FPDUs
    for (std::size_t a = kReq; a <= s.size(); ++a)
      for (std::size_t b = a; b <= s.size(); b += 3) {
        BOOST_TEST_REQUIRE((run(s, a, b, true) == ref), "split " << a << "/" << b);
        const auto held = run(s, a, b, false);
        BOOST_TEST_REQUIRE((held == ref), "held split " << a << "/" << b << ": " << fmt::format("{}", fmt::join(held, " | ")));
      }
  }
}

BOOST_AUTO_TEST_CASE(partial_fpdu_at_close_is_reported) {
  const auto s = initiator_stream(true);
  Log log;
  rdmaconf::captures::io::TcpStreamInfo info;
  cf::iwarp::MpaConnection c(info, log);
  c.data(0, 0, Bytes(s).first(s.size() - 3), 1);
  c.data(1, 0, reply(), 2);
  c.close(3);
  BOOST_TEST_REQUIRE(!log.ev.empty());
  BOOST_TEST(log.ev.back().find("stream ends inside a frame") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(non_mpa_connection_is_ignored) {
  Log log;
  rdmaconf::captures::io::TcpStreamInfo info;
  cf::iwarp::MpaConnection c(info, log);
  const std::string http = "GET / HTTP/1.1\r\n\r\n";
  c.data(0, 0, as_bytes(http.data(), http.size()), 1);
  c.close(2);
  BOOST_TEST(!c.is_mpa());
  BOOST_TEST(log.ev.empty());
}

// A connection whose start is in the capture: FPDUs from the first octet
// are iWARP that skipped the MPA exchange (the missing key is reported and
// the FPDUs judged); anything else stays ignored, and is not held long.
BOOST_AUTO_TEST_CASE(fpdus_without_mpa_exchange_are_recognised) {
  rdmaconf::captures::io::TcpStreamInfo info;
  info.start_known[0] = info.start_known[1] = true;
  {
    Log log;
    cf::iwarp::MpaConnection c(info, log);
    const auto s = initiator_stream(true);
    const Bytes fpdus = Bytes(s).subspan(kReq);  // the FPDUs without the Request before them
    c.data(0, 0, fpdus.first(9), 1);  // split inside the first header
    c.data(0, 9, fpdus.subspan(9), 2);
    c.close(3);
    BOOST_TEST(c.is_mpa());
    BOOST_TEST(c.skipped_exchange(0));
    BOOST_TEST_REQUIRE(log.ev.size() == 6u, fmt::format("{}", log.ev));
    BOOST_TEST(log.ev[0] == "rr d0 off0 okfalse");
    for (std::size_t i = 1; i < 6; ++i) BOOST_TEST(log.ev[i].rfind("fpdu d0", 0) == 0, log.ev[i]);
    BOOST_TEST(log.ev[1].find("crc1") != std::string::npos);
  }
  for (const std::string& other : {std::string("GET / HTTP/1.1\r\n\r\n"), std::string(70000, '\x55')}) {
    Log log;
    cf::iwarp::MpaConnection c(info, log);
    c.data(0, 0, as_bytes(other.data(), other.size()), 1);
    c.close(2);
    BOOST_TEST(!c.is_mpa());
    BOOST_TEST(log.ev.empty());
  }
}

// Markers: the initiator sends them (the Reply's M asks for it). FPDUs of
// varied sizes put markers at FPDU starts, inside headers and payloads and
// before CRC fields; every cut of the stream gives the same events, every
// marker points where it should, and the CRC (which covers the markers) holds.
BOOST_AUTO_TEST_CASE(markers_are_removed_and_checked_at_every_split) {
  const Marked m = marked_stream(12, [](int i) { return static_cast<std::size_t>(i * 97 % 700); });
  const auto& s = m.stream;
  const auto& r = m.reply;
  const std::size_t req = m.req;
  BOOST_TEST_REQUIRE(m.markers >= 8u);
  auto events = [&](std::size_t cut) {
    Log log;
    rdmaconf::captures::io::TcpStreamInfo info;
    cf::iwarp::MpaConnection c(info, log);
    c.data(0, 0, Bytes(s).first(req), 1);
    c.data(1, 0, r, 2);
    c.data(0, req, Bytes(s).subspan(req, cut - req), 3);
    c.data(0, cut, Bytes(s).subspan(cut), 4);
    c.close(5);
    return log.ev;
  };
  const auto ref = events(req);
  std::size_t markers = 0, fpdus = 0;
  for (const auto& e : ref) {
    if (e.starts_with("marker")) {
      ++markers;
      const auto ptr = e.substr(e.find(" ptr") + 4, e.find(" want") - e.find(" ptr") - 4);
      BOOST_TEST(ptr == e.substr(e.find(" want") + 5), e);
    }
    if (e.starts_with("fpdu")) {
      ++fpdus;
      BOOST_TEST(e.find("crc1") != std::string::npos, e);
      BOOST_TEST(e.find("ddptrue") != std::string::npos, e);
    }
  }
  BOOST_TEST(markers == m.markers);
  BOOST_TEST(fpdus == 12u);
  for (std::size_t cut = req; cut <= s.size(); ++cut) BOOST_TEST_REQUIRE((events(cut) == ref), "cut " << cut);
}

// Mid-stream start: FPDU boundaries are found after a partial FPDU, and CRC use is recognised.
BOOST_AUTO_TEST_CASE(alignment_is_inferred_mid_stream) {
  for (bool crc : {false, true}) {
    const auto s = initiator_stream(crc);
    // Start 7 octets into the first FPDU: the next FPDU begins after it.
    const std::size_t first = kReq + fpdu_size(18);
    const auto found = cf::iwarp::infer_alignment(Bytes(s).subspan(kReq + 7), true);
    BOOST_TEST_REQUIRE(found.has_value());
    BOOST_TEST(found->offset == first - kReq - 7);
    BOOST_TEST(found->fpdus == 4u);
    BOOST_TEST(found->crc == crc);
  }
  // Text is not FPDUs.
  const std::string text(4000, 'a');
  BOOST_TEST(!cf::iwarp::infer_alignment(as_bytes(text.data(), text.size()), true).has_value());
}

// Mid-stream: a bad header inside a consistent chain does not move the lock
// (it is reported), and a stream with markers is recognised as such.
BOOST_AUTO_TEST_CASE(mid_stream_lock_keeps_a_bad_header_and_sees_markers) {
  std::vector<std::byte> plain, marked;
  MarkerStream ms;
  for (int i = 0; i < 12; ++i) {
    auto u = send_ulpdu(static_cast<std::uint32_t>(i + 1), static_cast<std::size_t>(40 + i * 97 % 700), std::byte{0x5c});
    if (i == 2) u[0] = std::byte{0x42};  // the third FPDU: DDP version 2 (still untagged, last segment)
    encode_fpdu(plain, u, false);
    encode_fpdu_marked(marked, send_ulpdu(static_cast<std::uint32_t>(i + 1), static_cast<std::size_t>(i * 97 % 700), std::byte{0}), false, ms);
  }
  // Start 5 octets into the first FPDU: the lock is at the second, and the third's bad version stays inside the chain.
  const std::size_t second = fpdu_size(kDdpUntagged.size + 40);
  const auto found = cf::iwarp::infer_alignment(Bytes(plain).subspan(5), true);
  BOOST_TEST_REQUIRE(found.has_value());
  BOOST_TEST(found->offset == second - 5);
  BOOST_TEST(found->fpdus == 11u);
  BOOST_TEST(!found->crc);
  BOOST_TEST_REQUIRE(ms.written >= 8u);
  for (std::size_t cut : {0u, 3u, 700u})
    BOOST_TEST(cf::iwarp::markers_present(Bytes(marked).subspan(cut)), "cut " << cut);
  BOOST_TEST(!cf::iwarp::markers_present(Bytes(plain).subspan(5)));
  const std::vector<std::byte> zeros(8192);
  BOOST_TEST(!cf::iwarp::markers_present(Bytes(zeros)));
}

// A gap in a direction with markers: the first marker after it whose
// pointer names an FPDU that begins after the gap gives the framing back
// (RFC 5044 §5). Every FPDU that begins after that point is decoded as in
// the capture without the gap.
BOOST_AUTO_TEST_CASE(markers_find_framing_again_after_a_gap) {
  const Marked m = marked_stream(40, [](int i) { return static_cast<std::size_t>(40 + i * 37 % 300); });
  const auto& s = m.stream;
  const auto& r = m.reply;
  const std::size_t req = m.req;
  auto events = [&](std::size_t gap_at, std::size_t gap_len, std::vector<cf::iwarp::MpaConnection::Resync>* resyncs) {
    Log log;
    rdmaconf::captures::io::TcpStreamInfo info;
    cf::iwarp::MpaConnection c(info, log);
    c.data(0, 0, Bytes(s).first(req), 1);
    c.data(1, 0, r, 2);
    c.data(0, req, Bytes(s).subspan(req, gap_at - req), 3);
    if (gap_len) c.gap(0, gap_at, gap_len, 4);
    c.data(0, gap_at + gap_len, Bytes(s).subspan(gap_at + gap_len), 5);
    c.close(6);
    if (resyncs) *resyncs = c.resyncs(0);
    return log.ev;
  };
  const auto whole = events(req, 0, nullptr);
  auto offset_of = [](const std::string& e) { return std::stoull(e.substr(e.find(" off") + 4)); };
  for (const std::size_t gap_at : {req + 700, req + 1500, req + 2999}) {
    BOOST_TEST_CONTEXT("gap at " << gap_at) {
      std::vector<cf::iwarp::MpaConnection::Resync> rs;
      const auto ev = events(gap_at, 333, &rs);
      BOOST_TEST_REQUIRE(rs.size() == 1u);
      const std::uint64_t resumed = rs[0].resumed;
      BOOST_TEST(rs[0].gap_end == gap_at + 333);
      BOOST_TEST(resumed >= gap_at + 333);
      BOOST_TEST(resumed < gap_at + 333 + 3 * 512);  // within a few markers
      // Every FPDU of the whole stream that begins at or after `resumed`, and nothing else after the gap's stop.
      std::vector<std::string> want, got;
      for (const auto& e : whole)
        if (e.starts_with("fpdu") && offset_of(e) >= resumed) want.push_back(e.substr(0, e.find(" ok")) + e.substr(e.find(" ddp")));
      bool after_stop = false;
      for (const auto& e : ev) {
        if (e.starts_with("stop")) {
          BOOST_TEST(!after_stop, e);  // the gap's stop, and no other
          after_stop = true;
          continue;
        }
        if (after_stop && e.starts_with("fpdu")) got.push_back(e.substr(0, e.find(" ok")) + e.substr(e.find(" ddp")));
      }
      BOOST_TEST(!want.empty());
      BOOST_TEST(got == want);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

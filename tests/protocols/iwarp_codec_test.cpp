#include <boost/test/unit_test.hpp>

#include "protocols/iwarp/codec.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::iwarp;

BOOST_AUTO_TEST_SUITE(iwarp_codec)

BOOST_AUTO_TEST_CASE(mpa_request_reply_round_trip) {
  for (int rev = 1; rev <= 2; ++rev) {
    MpaRrParams p;
    p.kind = rev == 1 ? MpaFrameKind::request : MpaFrameKind::reply;
    p.crc = true;
    p.markers = rev == 1;
    p.revision = static_cast<std::uint8_t>(rev);
    p.enhanced = rev == 2;
    p.p2p = true;
    p.read_rtr = true;
    p.ird = 0x3fff;
    p.ord = 7;
    p.private_data = {std::byte{1}, std::byte{2}, std::byte{3}};
    std::vector<std::byte> b;
    encode_mpa_rr(b, p);
    auto f = decode_mpa_rr(b);
    BOOST_TEST_REQUIRE(f.ok());
    BOOST_TEST(f->consumed == b.size());
    BOOST_TEST((f->kind() == p.kind));
    BOOST_TEST(f->hdr.get(MpaRr::c) == 1u);
    BOOST_TEST(f->hdr.get(MpaRr::m) == (rev == 1 ? 1u : 0u));
    BOOST_TEST(f->hdr.get(MpaRr::rev) == static_cast<unsigned>(rev));
    BOOST_TEST(f->v2.has_value() == (rev == 2));
    if (rev == 2) {
      BOOST_TEST(f->v2->get(MpaV2::ird) == 0x3fffu);
      BOOST_TEST(f->v2->get(MpaV2::ord) == 7u);
      BOOST_TEST(f->v2->get(MpaV2::p2p) == 1u);
      BOOST_TEST(f->v2->get(MpaV2::read_rtr) == 1u);
      BOOST_TEST(f->v2->get(MpaV2::write_rtr) == 0u);
    }
    // Every truncation, including inside the private data, is a typed error.
    for (std::size_t n = 0; n < b.size(); ++n) {
      auto t = decode_mpa_rr(Bytes(b).first(n));
      BOOST_TEST_REQUIRE(!t.ok());
      BOOST_TEST((t.error().code == Errc::truncated));
    }
  }
}

BOOST_AUTO_TEST_CASE(mpa_key_text_is_on_the_wire) {
  std::vector<std::byte> b;
  encode_mpa_rr(b, MpaRrParams{});
  BOOST_TEST(std::string(reinterpret_cast<const char*>(b.data()), 16) == "MPA ID Req Frame");
  // Flags octet: C is 0x40, M 0x80, R 0x20 (RFC 5044 §7.1.1).
  MpaRrParams p;
  p.crc = true;
  b.clear();
  encode_mpa_rr(b, p);
  BOOST_TEST(static_cast<unsigned>(b[16]) == 0x40u);
}

BOOST_AUTO_TEST_CASE(fpdu_pad_crc_and_truncation) {
  for (std::size_t len = 0; len < 12; ++len) {
    BOOST_TEST((2 + len + mpa_pad(len)) % 4 == 0u);
    std::vector<std::byte> u(len, std::byte{0x42}), b;
    encode_fpdu(b, u, true);
    BOOST_TEST(b.size() == fpdu_size(len));
    auto f = decode_fpdu(b);
    BOOST_TEST_REQUIRE(f.ok());
    BOOST_TEST(f->ulpdu_len == len);
    BOOST_TEST(f->crc_wire == fpdu_crc(Bytes(b).first(b.size() - 4)));
    // The CRC travels least significant octet first.
    BOOST_TEST(static_cast<unsigned>(b[b.size() - 4]) == (f->crc_wire & 0xffu));
    for (std::size_t n = 0; n < b.size(); ++n) BOOST_TEST(!decode_fpdu(Bytes(b).first(n)).ok());
    std::vector<std::byte> z;
    encode_fpdu(z, u, false);
    BOOST_TEST(decode_fpdu(z)->crc_wire == 0u);
  }
}

BOOST_AUTO_TEST_CASE(ddp_segments_for_every_opcode) {
  for (std::uint8_t op = 0; op < 16; ++op) {
    const bool tagged = op == 0 || op == 2;
    Header h(tagged ? kDdpTagged : kDdpUntagged);
    h.set(DdpTagged::t, tagged);
    h.set(DdpTagged::l, 1);
    h.set(DdpTagged::dv, 1);
    h.set(DdpTagged::rv, 1);
    h.set(DdpTagged::opcode, op);
    std::vector<std::byte> b(h.bytes().begin(), h.bytes().end());
    std::size_t body = 0;
    switch (op) {
      case 1: body = kReadRequest.size; break;
      case 7: body = kTerminate.size; break;
      case 8: case 9: body = kImmediate.size; break;
      case 0xA: body = kAtomicRequest.size; break;
      case 0xB: body = kAtomicResponse.size; break;
      default: break;
    }
    b.resize(b.size() + body + 5, std::byte{0});
    auto s = decode_ddp(b);
    BOOST_TEST_REQUIRE(s.ok(), "opcode " << int(op));
    BOOST_TEST(s->tagged == tagged);
    BOOST_TEST(s->opcode == op);
    BOOST_TEST(s->body.has_value() == (body != 0));
    BOOST_TEST(s->payload.size() == 5u);
    for (std::size_t n = 0; n < h.size() + body; ++n) BOOST_TEST(!decode_ddp(Bytes(b).first(n)).ok(), "opcode " << int(op) << " len " << n);
  }
}

BOOST_AUTO_TEST_CASE(terminate_with_copied_headers) {
  Header ddp(kDdpUntagged);
  ddp.set(DdpUntagged::dv, 1);
  ddp.set(DdpUntagged::rv, 1);
  ddp.set(DdpUntagged::opcode, 7);
  ddp.set(DdpUntagged::qn, 2);
  Header t(kTerminate);
  t.set(Terminate::layer, 0);
  t.set(Terminate::etype, 1);
  t.set(Terminate::ecode, 2);
  t.set(Terminate::m, 1);
  t.set(Terminate::d, 1);
  t.set(Terminate::r, 1);
  std::vector<std::byte> b;
  append(b, ddp);
  append(b, t);
  b.insert(b.end(), {std::byte{0}, std::byte{44}});  // segment length
  Header copied(kDdpUntagged);
  copied.set(DdpUntagged::opcode, 1);
  copied.set(DdpUntagged::qn, 1);
  append(b, copied);
  Header rr(kReadRequest);
  rr.set(ReadRequest::size, 4096);
  append(b, rr);
  auto s = decode_ddp(b);
  BOOST_TEST_REQUIRE(s.ok());
  BOOST_TEST(s->term_seglen->get(DdpSegLen::len) == 44u);
  BOOST_TEST(s->term_ddp->get(DdpUntagged::qn) == 1u);
  BOOST_TEST(s->term_rdmap->get(ReadRequest::size) == 4096u);
  BOOST_TEST(s->payload.empty());
  BOOST_TEST(!s->term_incomplete);
  // The fixed headers are required; the copied ones are reported missing, not rejected.
  const std::size_t fixed = kDdpUntagged.size + kTerminate.size;
  for (std::size_t n = 0; n < b.size(); ++n) {
    auto cut = decode_ddp(Bytes(b).first(n));
    BOOST_TEST(cut.ok() == (n >= fixed), n);
    if (cut.ok()) BOOST_TEST(cut->term_incomplete);
  }
}

BOOST_AUTO_TEST_SUITE_END()

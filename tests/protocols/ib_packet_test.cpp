#include <boost/test/unit_test.hpp>

#include "protocols/ib/packet.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::ib;

BOOST_AUTO_TEST_SUITE(ib_packet)

BOOST_AUTO_TEST_CASE(opcode_table_counts_per_transport) {
  int n[6] = {};
  for (int op = 0; op < 256; ++op) {
    const auto& i = opcode_info(static_cast<std::uint8_t>(op));
    if (!i.valid) continue;
    BOOST_TEST(i.code == op);
    ++n[static_cast<int>(i.transport)];
  }
  BOOST_TEST(n[static_cast<int>(Transport::rc)] == 25);  // 0x00-0x14, 0x16, 0x17, FLUSH, ATOMIC WRITE
  BOOST_TEST(n[static_cast<int>(Transport::uc)] == 12);
  BOOST_TEST(n[static_cast<int>(Transport::rd)] == 22);
  BOOST_TEST(n[static_cast<int>(Transport::ud)] == 2);
  BOOST_TEST(n[static_cast<int>(Transport::cnp)] == 1);
  BOOST_TEST(n[static_cast<int>(Transport::xrc)] == 23);
  BOOST_TEST(opcode_name(0x0A) == "RC RDMA WRITE Only");
  BOOST_TEST(opcode_name(0x64) == "UD SEND Only");
  BOOST_TEST((opcode_info(0x64).exts == kExtDeth));
  BOOST_TEST((opcode_info(0x4C).exts == (kExtRdeth | kExtDeth | kExtReth)));
  BOOST_TEST((opcode_info(0xAC).exts == (kExtXrceth | kExtReth)));
  BOOST_TEST((opcode_info(0xB0).exts == kExtAeth));  // XRC responses carry no XRCETH
  BOOST_TEST(!opcode_info(0x15).valid);              // RESYNC is RD only
  BOOST_TEST(opcode_info(0x55).valid);
}

BOOST_AUTO_TEST_CASE(round_trip_every_defined_opcode_and_truncations) {
  for (int op = 0; op < 256; ++op) {
    const auto& info = opcode_info(static_cast<std::uint8_t>(op));
    if (!info.valid) continue;
    IbPacketSpec s;
    s.bth.set(Bth::opcode, op);
    s.bth.set(Bth::destqp, 0x123456);
    s.bth.set(Bth::psn, 0xabcdef);
    std::size_t hdr = kBth.size;
    for (std::size_t i = 0; i < kExtCount; ++i) {
      if (!(info.exts & (1u << i))) continue;
      Header h(ext_def(i));
      h.set(0, 0x55);
      s.ext[i] = h;
      hdr += ext_def(i).size;
    }
    if (info.payload == PayloadRule::any) s.payload.assign(13, std::byte{7});
    std::vector<std::byte> b;
    encode_transport(b, s);
    BOOST_TEST(b.size() % 4 == 0u);
    auto p = decode_transport(b);
    BOOST_TEST_REQUIRE(p.ok(), opcode_name(static_cast<std::uint8_t>(op)));
    BOOST_TEST(p->header_bytes == hdr);
    BOOST_TEST(p->payload.size() == s.payload.size());
    BOOST_TEST(p->bth.get(Bth::destqp) == 0x123456u);
    for (std::size_t i = 0; i < kExtCount; ++i) BOOST_TEST(p->ext[i].has_value() == bool(info.exts & (1u << i)));
    for (std::size_t n = 0; n < hdr + kIcrcSize; ++n) BOOST_TEST(!decode_transport(Bytes(b).first(n)).ok());
  }
}

BOOST_AUTO_TEST_CASE(pad_count_beyond_payload_is_an_error) {
  IbPacketSpec s;
  s.bth.set(Bth::opcode, 0x11);
  s.ext[6] = Header(kAeth);
  std::vector<std::byte> b;
  encode_transport(b, s);
  b[1] = std::byte{0x30};  // pad count 3 with nothing after the AETH
  auto p = decode_transport(b);
  BOOST_TEST_REQUIRE(!p.ok());
  BOOST_TEST((p.error().code == Errc::bad_length));
}

BOOST_AUTO_TEST_SUITE_END()

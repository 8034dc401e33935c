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

// A native InfiniBand packet: LRH (LNH local or global), GRH, SEND Only of 9 octets, ICRC.
std::vector<std::byte> native_packet(bool global) {
  IbPacketSpec s;
  s.bth.set(Bth::opcode, 0x04);
  s.bth.set(Bth::destqp, 0x42);
  s.payload.assign(9, std::byte{0x5a});
  std::vector<std::byte> tr;
  encode_transport(tr, s);
  const std::size_t hdr = kLrh.size + (global ? kGrh.size : 0);
  Header lrh(kLrh);
  lrh.set(Lrh::lnh, global ? kLnhGlobal : kLnhLocal);
  lrh.set(Lrh::dlid, 3);
  lrh.set(Lrh::slid, 4);
  lrh.set(Lrh::pktlen, (hdr + tr.size()) / 4);
  std::vector<std::byte> b(lrh.bytes().begin(), lrh.bytes().end());
  if (global) {
    Header grh(kGrh);
    grh.set(Grh::ipver, 6);
    grh.set(Grh::paylen, tr.size());
    grh.set(Grh::nxthdr, kGrhNextIba);
    b.insert(b.end(), grh.bytes().begin(), grh.bytes().end());
  }
  b.insert(b.end(), tr.begin(), tr.end());
  return b;
}

// The ICRC leaves out exactly the fields a switch or router may change: VL
// (and, behind a GRH, the whole LRH, traffic class, flow label and hop
// limit) and the BTH octet after the P_Key; every other octet counts. The
// VCRC covers every octet.
BOOST_AUTO_TEST_CASE(native_icrc_masks_only_the_variant_fields) {
  for (bool global : {false, true}) {
    BOOST_TEST_CONTEXT(std::string(global ? "global" : "local")) {
      const auto b = native_packet(global);
      const std::uint32_t icrc = native_icrc(b);
      const std::uint16_t v = vcrc(b);
      BOOST_TEST(icrc != 0u);
      const std::size_t bth = kLrh.size + (global ? kGrh.size : 0);
      for (std::size_t i = 0; i + kIcrcSize < b.size(); ++i) {
        for (std::uint8_t bit = 1; bit; bit = static_cast<std::uint8_t>(bit << 1)) {
          auto c = b;
          c[i] ^= std::byte{bit};
          if (i == 1 && (bit & 0x03)) continue;  // LNH decides which masks apply
          bool variant = i == bth + 4;
          if (global) variant |= i < kLrh.size || (i == kLrh.size && bit < 0x10) || i == kLrh.size + 1 ||
                                 i == kLrh.size + 2 || i == kLrh.size + 3 || i == kLrh.size + 7;
          else variant |= i == 0 && bit >= 0x10;
          BOOST_TEST((native_icrc(c) == icrc) == variant, "octet " << i << " bit 0x" << std::hex << int(bit));
          BOOST_TEST(vcrc(c) != v, "octet " << i);
        }
      }
      for (std::size_t n = 0; n < bth + kBth.size + kIcrcSize; ++n) BOOST_TEST(native_icrc(Bytes(b).first(n)) == 0u);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

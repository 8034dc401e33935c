// What carried an InfiniBand transport packet: a native link frame (LRH,
// GRH, VCRC) or a RoCEv1 frame (GRH after EtherType 0x8915), as the family
// decodes what the capture layer hands on.
#include <boost/test/unit_test.hpp>

#include <pcap/dlt.h>

#include "captures/io/packet.hpp"
#include "tests/captures/frames.hpp"
#include "conformance/ib/frame.hpp"

using namespace rdmaconf::captures::io;
using namespace rdmaconf::conformance::ib;
using rdmaconf::protocols::Bytes;
using rdmaconf::tests::v, rdmaconf::tests::cat, rdmaconf::tests::go;

namespace {

// A whole LINKTYPE_INFINIBAND frame, as the checker hands it to the family.
DecodedFrame native(const std::vector<std::byte>& b, std::uint32_t orig_len = 0) {
  Packet p;
  p.frame = 7;
  p.l3 = Bytes(b);
  p.orig_len = orig_len ? orig_len : static_cast<std::uint32_t>(b.size());
  return decode_native(p);
}

// An Ethernet frame through the capture layer, then the family's RoCEv1 decoder.
DecodedFrame roce_v1(const std::vector<std::byte>& b) {
  const Dissected d = go(DLT_EN10MB, b);
  if (d.status == DissectStatus::error) return DecodedFrame{FrameStatus::error, {}, d.error};
  BOOST_TEST_REQUIRE((d.status == DissectStatus::link));
  BOOST_TEST_REQUIRE(d.pkt.ethertype == 0x8915u);
  return decode_roce_v1(d.pkt);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ib_frame)

// LINKTYPE_INFINIBAND: LRH (VL 1, LNH local, DLID 2, PktLen 5 words, SLID 1),
// BTH of an ACK, AETH, ICRC, then the VCRC.
std::vector<std::byte> ib_ack() {
  return v({0x10, 0x02, 0, 2, 0, 7, 0, 1,                  // LRH
            0x11, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 5,  // BTH
            0, 0, 0, 1,                                      // AETH
            0xde, 0xad, 0xbe, 0xef,                          // ICRC
            0x12, 0x34});                                    // VCRC
}

BOOST_AUTO_TEST_CASE(native_infiniband_frames) {
  auto d = native(ib_ack());
  BOOST_TEST_REQUIRE((d.status == FrameStatus::ok));
  BOOST_TEST(d.f.native_ib);
  BOOST_TEST(d.f.has_vcrc);
  BOOST_TEST(d.f.vcrc == 0x3412);
  BOOST_TEST(d.f.l3.size() == 28u);
  BOOST_TEST(d.f.payload.size() == 20u);
  BOOST_TEST(d.f.ip_header_len == 8u);
  BOOST_TEST(format_address(d.f.ip_version, d.f.src) == "LID 0x0001");
  BOOST_TEST(format_address(d.f.ip_version, d.f.dst) == "LID 0x0002");
  // without the VCRC (PktLen matches the frame): no VCRC, nothing cut
  auto nov = ib_ack();
  nov.resize(nov.size() - 2);
  nov[7] = std::byte{7};
  d = native(nov);
  BOOST_TEST_REQUIRE((d.status == FrameStatus::ok));
  BOOST_TEST(!d.f.has_vcrc);
  BOOST_TEST(d.f.l3.size() == 28u);
  // raw and IPv6-over-IB packets (LNH 0, 1) and a GRH whose next header is not IBA are left alone
  auto raw = ib_ack();
  raw[1] = std::byte{0x00};
  BOOST_TEST((native(raw).status == FrameStatus::other));
  // a truncated LRH, and a frame cut by the snap length, are errors with the frame and offset
  d = native(v({0x10, 0x02, 0, 2}));
  BOOST_TEST_REQUIRE((d.status == FrameStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
  const auto b = ib_ack();
  d = native(b, static_cast<std::uint32_t>(b.size() + 100));
  BOOST_TEST_REQUIRE((d.status == FrameStatus::error));
  BOOST_TEST(d.error.find("snap length") != std::string::npos, d.error);
  // a GRH that does not fit
  auto g = v({0x10, 0x03, 0, 2, 0, 20, 0, 1, 0x60, 0, 0, 0});
  d = native(g);
  BOOST_TEST_REQUIRE((d.status == FrameStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
}

// RoCEv1: Ethernet type 0x8915, GRH (next header 0x1B), BTH of an ACK, AETH, ICRC.
BOOST_AUTO_TEST_CASE(roce_v1_frames) {
  std::vector<std::byte> grh = v({0x60, 0, 0, 0, 0, 20, 0x1b, 64});
  for (int i = 0; i < 32; ++i) grh.push_back(std::byte(i < 16 ? (i == 15 ? 1 : 0) : (i == 31 ? 2 : 0)));
  const auto transport = v({0x11, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 5, 0, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef});
  const auto eth = v({2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x89, 0x15});
  auto d = roce_v1(cat(cat(eth, grh), transport));
  BOOST_TEST_REQUIRE((d.status == FrameStatus::ok));
  BOOST_TEST(d.f.roce_v1);
  BOOST_TEST(!d.f.native_ib);
  BOOST_TEST(d.f.grh_offset().value_or(99) == 0u);
  BOOST_TEST(d.f.payload.size() == 20u);
  BOOST_TEST(format_address(d.f.ip_version, d.f.dst) == "[0:0:0:0:0:0:0:2]");
  // a GRH cut short is an error naming the frame
  d = roce_v1(cat(eth, v({0x60, 0, 0, 0})));
  BOOST_TEST_REQUIRE((d.status == FrameStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
  // another next header: not IBA transport, left alone
  grh[6] = std::byte{0x11};
  BOOST_TEST((roce_v1(cat(cat(eth, grh), transport)).status == FrameStatus::other));
}

BOOST_AUTO_TEST_SUITE_END()

// Frame dissection for each link type, VLAN tags, IPv6 extension headers,
// and precise errors for truncated frames.
#include <boost/test/unit_test.hpp>

#include <pcap/dlt.h>

#include "conformance/capture/packet.hpp"

using namespace rdmaconf::conformance::capture;
using rdmaconf::protocols::Bytes;

namespace {

std::vector<std::byte> v(std::initializer_list<int> l) {
  std::vector<std::byte> b;
  for (int x : l) b.push_back(std::byte(x));
  return b;
}

// IPv4 (20) + UDP (8) + 4 octets to port 4791.
std::vector<std::byte> ipv4_udp() {
  return v({0x45, 0, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            0x12, 0x34, 0x12, 0xb7, 0, 12, 0, 0, 1, 2, 3, 4});
}

Dissected go(int lt, const std::vector<std::byte>& b) {
  Frame f;
  f.number = 7;
  f.data = Bytes(b);
  return dissect(lt, f);
}

std::vector<std::byte> cat(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(link_layer)

BOOST_AUTO_TEST_CASE(every_link_type) {
  const auto ip = ipv4_udp();
  const auto eth = v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00});
  const auto vlan = v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0x20, 0x05, 0x08, 0x00});
  const auto sll = v({0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00});
  const auto sll2 = v({0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 4, 6, 1, 2, 3, 4, 5, 6, 0, 0});
  struct {
    int lt;
    std::vector<std::byte> frame;
  } cases[] = {{DLT_EN10MB, cat(eth, ip)}, {DLT_EN10MB, cat(vlan, ip)}, {DLT_LINUX_SLL, cat(sll, ip)},
               {276, cat(sll2, ip)}, {DLT_RAW, ip}, {228, ip}};
  for (const auto& c : cases) {
    const auto d = go(c.lt, c.frame);
    BOOST_TEST_REQUIRE((d.status == DissectStatus::ok), "linktype " << c.lt << ": " << d.error);
    BOOST_TEST(d.pkt.dport == 4791u);
    BOOST_TEST(d.pkt.payload.size() == 4u);
    BOOST_TEST(d.pkt.ip_version == 4u);
  }
}

BOOST_AUTO_TEST_CASE(ethernet_padding_is_dropped) {
  auto f = cat(v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}), ipv4_udp());
  f.resize(f.size() + 14, std::byte{0});
  const auto d = go(DLT_EN10MB, f);
  BOOST_TEST_REQUIRE((d.status == DissectStatus::ok));
  BOOST_TEST(d.pkt.l3.size() == 32u);
}

BOOST_AUTO_TEST_CASE(ipv6_with_extension_headers) {
  auto ip6 = v({0x60, 0, 0, 0, 0, 20, 0, 64});  // payload 8 (hop-by-hop) + 12 (UDP + 4), next header 0
  ip6.resize(40, std::byte{0});
  const auto hbh = v({17, 0, 1, 4, 0, 0, 0, 0});
  const auto udp = v({0x12, 0x34, 0x12, 0xb7, 0, 12, 0, 0, 9, 9, 9, 9});
  const auto d = go(DLT_RAW, cat(cat(ip6, hbh), udp));
  BOOST_TEST_REQUIRE((d.status == DissectStatus::ok), d.error);
  BOOST_TEST(d.pkt.ip_version == 6u);
  BOOST_TEST(d.pkt.ip_header_len == 48u);
  BOOST_TEST(d.pkt.payload.size() == 4u);
}

BOOST_AUTO_TEST_CASE(truncated_frames_give_precise_errors) {
  const auto full = cat(v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}), ipv4_udp());
  for (std::size_t n = 0; n < full.size(); ++n) {
    const auto d = go(DLT_EN10MB, std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
    BOOST_TEST((d.status == DissectStatus::error), "length " << n);
    BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
  }
}

BOOST_AUTO_TEST_CASE(non_ip_is_skipped_not_an_error) {
  auto arp = v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x06, 0, 1});
  BOOST_TEST((go(DLT_EN10MB, arp).status == DissectStatus::other));
  BOOST_TEST((go(147, arp).status == DissectStatus::other));  // an unknown link type
}

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
  BOOST_TEST(supported_linktype(DLT_INFINIBAND));
  auto d = go(DLT_INFINIBAND, ib_ack());
  BOOST_TEST_REQUIRE((d.status == DissectStatus::ok));
  BOOST_TEST(d.pkt.native_ib);
  BOOST_TEST(d.pkt.has_vcrc);
  BOOST_TEST(d.pkt.vcrc == 0x3412);
  BOOST_TEST(d.pkt.l3.size() == 28u);
  BOOST_TEST(d.pkt.payload.size() == 20u);
  BOOST_TEST(d.pkt.ip_header_len == 8u);
  BOOST_TEST(format_address(d.pkt.ip_version, d.pkt.src) == "LID 0x0001");
  BOOST_TEST(format_address(d.pkt.ip_version, d.pkt.dst) == "LID 0x0002");
  // without the VCRC (PktLen matches the frame): no VCRC, nothing cut
  auto nov = ib_ack();
  nov.resize(nov.size() - 2);
  nov[7] = std::byte{7};
  d = go(DLT_INFINIBAND, nov);
  BOOST_TEST_REQUIRE((d.status == DissectStatus::ok));
  BOOST_TEST(!d.pkt.has_vcrc);
  BOOST_TEST(d.pkt.l3.size() == 28u);
  // raw and IPv6-over-IB packets (LNH 0, 1) and a GRH whose next header is not IBA are left alone
  auto raw = ib_ack();
  raw[1] = std::byte{0x00};
  BOOST_TEST((go(DLT_INFINIBAND, raw).status == DissectStatus::other));
  // a truncated LRH, and a frame cut by the snap length, are errors with the frame and offset
  d = go(DLT_INFINIBAND, v({0x10, 0x02, 0, 2}));
  BOOST_TEST_REQUIRE((d.status == DissectStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
  Frame f;
  f.number = 9;
  const auto b = ib_ack();
  f.data = Bytes(b);
  f.orig_len = static_cast<std::uint32_t>(b.size() + 100);
  d = dissect(DLT_INFINIBAND, f);
  BOOST_TEST_REQUIRE((d.status == DissectStatus::error));
  BOOST_TEST(d.error.find("snap length") != std::string::npos, d.error);
  // a GRH that does not fit
  auto g = v({0x10, 0x03, 0, 2, 0, 20, 0, 1, 0x60, 0, 0, 0});
  d = go(DLT_INFINIBAND, g);
  BOOST_TEST_REQUIRE((d.status == DissectStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
}

// RoCEv1: Ethernet type 0x8915, GRH (next header 0x1B), BTH of an ACK, AETH, ICRC.
BOOST_AUTO_TEST_CASE(roce_v1_frames) {
  std::vector<std::byte> grh = v({0x60, 0, 0, 0, 0, 20, 0x1b, 64});
  for (int i = 0; i < 32; ++i) grh.push_back(std::byte(i < 16 ? (i == 15 ? 1 : 0) : (i == 31 ? 2 : 0)));
  const auto transport = v({0x11, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 5, 0, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef});
  const auto eth = v({2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x89, 0x15});
  auto d = go(DLT_EN10MB, cat(cat(eth, grh), transport));
  BOOST_TEST_REQUIRE((d.status == DissectStatus::ok));
  BOOST_TEST(d.pkt.roce_v1);
  BOOST_TEST(!d.pkt.native_ib);
  BOOST_TEST(d.pkt.ib_without_udp());
  BOOST_TEST(d.pkt.grh_offset().value_or(99) == 0u);
  BOOST_TEST(d.pkt.payload.size() == 20u);
  BOOST_TEST(format_address(d.pkt.ip_version, d.pkt.dst) == "[0:0:0:0:0:0:0:2]");
  // a GRH cut short is an error naming the frame
  d = go(DLT_EN10MB, cat(eth, v({0x60, 0, 0, 0})));
  BOOST_TEST_REQUIRE((d.status == DissectStatus::error));
  BOOST_TEST(d.error.find("frame 7") != std::string::npos, d.error);
  // another next header: not IBA transport, left alone
  grh[6] = std::byte{0x11};
  BOOST_TEST((go(DLT_EN10MB, cat(cat(eth, grh), transport)).status == DissectStatus::other));
}

BOOST_AUTO_TEST_SUITE_END()

// Frame dissection for each link type, VLAN tags, IPv6 extension headers,
// and precise errors for truncated frames.
#include <boost/test/unit_test.hpp>

#include <pcap/dlt.h>

#include "captures/io/packet.hpp"
#include "tests/captures/frames.hpp"

using namespace rdmaconf::captures::io;
using rdmaconf::protocols::Bytes;
using rdmaconf::tests::v, rdmaconf::tests::cat, rdmaconf::tests::go;

namespace {

// IPv4 (20) + UDP (8) + 4 octets to port 4791.
std::vector<std::byte> ipv4_udp() {
  return v({0x45, 0, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            0x12, 0x34, 0x12, 0xb7, 0, 12, 0, 0, 1, 2, 3, 4});
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

// Non-IP frames are not errors: they go, undecoded, to the family that claims
// their EtherType or link type.
BOOST_AUTO_TEST_CASE(non_ip_is_handed_on_not_an_error) {
  auto arp = v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x06, 0, 1});
  auto d = go(DLT_EN10MB, arp);
  BOOST_TEST_REQUIRE((d.status == DissectStatus::link));
  BOOST_TEST(d.pkt.ethertype == 0x0806u);
  BOOST_TEST(d.pkt.l3_offset == 14u);
  BOOST_TEST(d.pkt.l3.size() == 2u);
  BOOST_TEST(d.pkt.frame == 7u);
  d = go(147, arp);  // a link type without IP: the whole frame
  BOOST_TEST_REQUIRE((d.status == DissectStatus::link));
  BOOST_TEST(d.pkt.ethertype == 0u);
  BOOST_TEST(d.pkt.l3.size() == arp.size());
  BOOST_TEST(!supported_linktype(DLT_INFINIBAND));  // the InfiniBand family claims it
}

BOOST_AUTO_TEST_SUITE_END()

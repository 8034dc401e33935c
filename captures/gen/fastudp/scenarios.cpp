// Golden captures of the UDP family: plain datagrams over IPv4 and IPv6 both
// ways, one fault each (a wrong checksum, an IPv6 zero checksum, a length
// beyond the IP payload), and a capture as the sending host sees it with
// checksum offload and UDP GSO (checksums not yet filled in, a datagram
// larger than the MTU), which must be INCONCLUSIVE and never FAIL.
#include "captures/gen/scenarios.hpp"
#include "protocols/net/checksum.hpp"

namespace rdmaconf::captures::gen {

namespace {

struct Dgram {
  bool from_a = true;
  std::size_t size = 100;
  std::function<void(Buf& l3, std::size_t udp)> edit;  // after the checksum is computed
  bool checksum = true;
  std::size_t surplus = 0;  // octets after the datagram, inside the IP payload
};

struct UdpTraffic {
  bool ipv6 = false;
  std::vector<Dgram> dgrams;
};

nlohmann::json udp_capture(const std::string& path, const UdpTraffic& t) {
  PcapWriter w(path);
  const Host a = t.ipv6 ? host_v6(1, 40000) : host_v4(10, 0, 0, 1, 40000);
  const Host b = t.ipv6 ? host_v6(2, 7000) : host_v4(10, 0, 0, 2, 7000);
  unsigned n = 0;
  for (const auto& d : t.dgrams) {
    const Host& from = d.from_a ? a : b;
    const Host& to = d.from_a ? b : a;
    Buf l3 = ip_udp(from, to, B(pattern(d.size, 50 + n++)), d.checksum);
    const std::size_t udp = t.ipv6 ? 40 : 20;
    if (d.surplus) {
      l3.insert(l3.end(), d.surplus, std::byte{0});
      if (t.ipv6)
        put_be16(l3, 4, static_cast<std::uint16_t>(be16(B(l3), 4) + d.surplus));
      else
        put_be16(l3, 2, static_cast<std::uint16_t>(be16(B(l3), 2) + d.surplus));
    }
    if (d.edit) d.edit(l3, udp);
    if (!t.ipv6) {  // the IPv4 header checksum stays right whatever was edited
      put_be16(l3, 10, 0);
      put_be16(l3, 10, net::fold(net::sum16(Bytes(l3).first(20))));
    }
    w.ip_packet(from, to, B(l3));
  }
  return {{"ipv6", t.ipv6}, {"datagrams", t.dgrams.size()}};
}

// The sum the field holds when a NIC is to finish it (Linux's
// CHECKSUM_PARTIAL: the pseudo-header's ones'-complement sum, not complemented).
void partial_checksum(Buf& l3, std::size_t udp) {
  const auto [src, dst] = net::ip_addresses(l3);
  std::uint32_t s = net::sum16(src);
  s = net::sum16(dst, s);
  s += 17u + be16(B(l3), udp + 4);
  put_be16(l3, udp + 6, static_cast<std::uint16_t>(~net::fold(s)));
}

// Both ways, sizes from 1 to 1472 octets (one odd, so the padding octet counts).
std::vector<Dgram> plain() {
  std::vector<Dgram> v;
  for (std::size_t size : {1u, 64u, 333u, 1000u, 1472u}) {
    v.push_back(Dgram{true, size, {}, true, 0});
    v.push_back(Dgram{false, size, {}, true, 0});
  }
  return v;
}

void add_fastudp_scenarios(std::vector<Scenario>& v) {
  const std::string P = "PASS", F = "FAIL", I = "INCONCLUSIVE", N = "NOT_APPLICABLE";
  auto add = [&v](std::string name, std::string desc, UdpTraffic t, Expect e) {
    v.push_back({std::move(name), std::move(desc), [t](const std::string& p) { return udp_capture(p, t); }, std::move(e)});
  };
  {
    UdpTraffic t{false, plain()};
    t.dgrams.push_back(Dgram{true, 80, {}, false, 0});  // IPv4 may carry no checksum
    t.dgrams.push_back(Dgram{true, 90, {}, true, 12});  // octets after the datagram (RFC 9868's surplus area)
    add("udp-v4", "UDP over IPv4 both ways, 1 to 1472 octets; one datagram without a checksum, one with a surplus area", t,
        {{"udp.checksum", P}, {"udp.checksum.zero_ipv6", N}, {"udp.length", P}});
    UdpTraffic bad = t;
    bad.dgrams[3].edit = [](Buf& l3, std::size_t udp) { put_be16(l3, udp + 6, static_cast<std::uint16_t>(be16(B(l3), udp + 6) ^ 0x0100)); };
    add("udp-v4-fault-checksum", "as udp-v4; fault: the fourth datagram's checksum is off by one bit", bad,
        {{"udp.checksum", F}, {"udp.checksum.zero_ipv6", N}, {"udp.length", P}});
    UdpTraffic len = t;
    len.dgrams[2].edit = [](Buf& l3, std::size_t udp) { put_be16(l3, udp + 4, static_cast<std::uint16_t>(be16(B(l3), udp + 4) + 20)); };
    add("udp-v4-fault-length", "as udp-v4; fault: the third datagram's UDP length counts 20 octets the IP payload does not hold",
        len, {{"udp.checksum", P}, {"udp.checksum.zero_ipv6", N}, {"udp.length", F}});
  }
  {
    UdpTraffic t{true, plain()};
    add("udp-v6", "UDP over IPv6 both ways, 1 to 1472 octets", t,
        {{"udp.checksum", P}, {"udp.checksum.zero_ipv6", P}, {"udp.length", P}});
    UdpTraffic zero = t;
    zero.dgrams[5].checksum = false;
    add("udp-v6-fault-zero-checksum", "as udp-v6; fault: the sixth datagram carries checksum zero", zero,
        {{"udp.checksum", P}, {"udp.checksum.zero_ipv6", F}, {"udp.length", P}});
  }
  {
    // Captured on the sending host (10.0.0.1 / 2001:db8::1) with checksum
    // offload: its datagrams hold the partial sum; one 3000-octet UDP_SEGMENT
    // send is one 3008-octet datagram. The peer's answers are complete.
    for (bool v6 : {false, true}) {
      UdpTraffic t{v6, plain()};
      for (auto& d : t.dgrams)
        if (d.from_a) d.edit = [](Buf& l3, std::size_t udp) { partial_checksum(l3, udp); };
      t.dgrams.push_back(Dgram{true, 3000, [](Buf& l3, std::size_t udp) { partial_checksum(l3, udp); }, true, 0});
      add(v6 ? "udp-v6-sender-offload" : "udp-v4-sender-offload",
          "captured on the sending host with checksum offload and UDP GSO: its checksums not yet filled in, a 3000-octet "
          "datagram not yet segmented; the peer's datagrams complete",
          t, {{"udp.checksum", I}, {"udp.checksum.zero_ipv6", v6 ? P : N}, {"udp.length", P}});
    }
  }
}

}  // namespace

const RegisterScenarios registered_fastudp{"fastudp", &add_fastudp_scenarios};

}  // namespace rdmaconf::captures::gen

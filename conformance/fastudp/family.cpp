// A scope is a UDP conversation: the datagrams between two (address, port)
// endpoints, both ways. Every datagram is judged on its own, so that no
// capture artefact (a lost, repeated or reordered frame) can change a
// verdict; what offload can explain is INCONCLUSIVE with the reason.
#include "conformance/fastudp/family.hpp"
#include "conformance/fastudp/nic_cases.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "captures/io/packet.hpp"
#include "conformance/scope.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/net/checksum.hpp"

namespace rdmaconf::conformance::fastudp {

namespace {

using captures::io::Address;
using captures::io::format_address;

constexpr std::string_view kChecksum = "udp.checksum";
constexpr std::string_view kZeroIpv6 = "udp.checksum.zero_ipv6";
constexpr std::string_view kLength = "udp.length";

constexpr std::array kText{
    CaseText{kChecksum, "RFC 768", "Fields: Checksum; RFC 8200 §8.1", Level::must,
             "A non-zero UDP checksum is the ones'-complement sum over the pseudo-header, the UDP header and the data "
             "(odd length padded with a zero octet), with a computed zero sent as all ones."},
    CaseText{kZeroIpv6, "RFC 8200", "§8.1; RFC 6935, RFC 6936", Level::must,
             "A UDP datagram over IPv6 carries a checksum: zero is allowed only for tunnel protocols under the "
             "conditions of RFC 6935/6936 (RoCEv2 on port 4791 is one by IBTA Annex A17)."},
    CaseText{kLength, "RFC 768", "Fields: Length", Level::must,
             "The UDP length counts the header and the data: at least 8, and no more than the IP payload carries "
             "(octets after it, the surplus area, are not the datagram's)."},
};

// Destination ports of protocols whose specifications use the IPv6 zero
// checksum exception: RoCEv2 (IBTA Annex A17) is allowed outright; for the
// others the capture cannot show whether RFC 6936's conditions hold.
constexpr std::uint16_t kRoceV2Port = 4791;
constexpr std::array<std::pair<std::uint16_t, std::string_view>, 4> kTunnelPorts{{
    {4789, "VXLAN (RFC 7348)"}, {6081, "Geneve (RFC 8926)"}, {4754, "GRE-in-UDP (RFC 8086)"}, {6635, "MPLS-in-UDP (RFC 7510)"}}};

// IP payloads above an Ethernet MTU: on the sending host, a UDP GSO
// super-datagram not yet cut into segments; on the receiving host, GRO's
// coalesced datagram. Either way the checksum on the wire was another.
constexpr std::size_t kEthernetMtu = 1500;

class Family final : public ProtocolFamily {
 public:
  Family() {
    for (const auto& t : kText) infos_storage_.push_back(t.in(kFamily));
    for (const auto& i : infos_storage_) infos_.push_back(&i);
  }
  std::string_view name() const override { return kFamily; }
  std::string_view title() const override { return "UDP (checksums and lengths, NIC offload aware)"; }
  const std::vector<const CaseInfo*>& cases() const override { return infos_; }
  Claims claims(const FamilyOptions&) const override {
    Claims c;
    c.all_udp = true;
    return c;
  }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override;

 private:
  std::vector<CaseInfo> infos_storage_;
  std::vector<const CaseInfo*> infos_;
};

struct Endpoint {
  Address addr{};
  std::uint16_t port = 0;
  auto operator<=>(const Endpoint&) const = default;
};

class Run final : public FamilyRun {
 public:
  using Key = std::pair<Endpoint, Endpoint>;
  explicit Run(RunContext& ctx) : ctx_(ctx) {
    const auto& all = family().cases();
    for (std::size_t i : ctx.active()) {
      infos_.push_back(all[i]);
      if (all[i]->id == kChecksum) checksum_ = infos_.size() - 1;
      if (all[i]->id == kZeroIpv6) zero6_ = infos_.size() - 1;
      if (all[i]->id == kLength) length_ = infos_.size() - 1;
    }
  }

  void packet(const captures::io::Packet& p) override {
    if (p.protocol != 17) return;
    ++datagrams_;
    convs_.sweep(p.ts_us, [this](Conv& c) { return result(c); });
    const Endpoint a{p.src, p.sport}, b{p.dst, p.dport};
    const bool forward = a < b;
    const Key key = forward ? Key{a, b} : Key{b, a};
    Conv& c = convs_.get(
        key, p.frame,
        [&] {
          auto n = std::make_unique<Conv>(infos_.size());
          n->id = ids_++;
          n->first_frame = p.frame;
          n->ipv6 = p.ip_version == 6;
          const Endpoint& lo = forward ? a : b;
          const Endpoint& hi = forward ? b : a;
          n->scope.sides[0] = fmt::format("{}:{}", format_address(p.ip_version, lo.addr), lo.port);
          n->scope.sides[1] = fmt::format("{}:{}", format_address(p.ip_version, hi.addr), hi.port);
          return n;
        },
        // Past the open state's bound, the least recently active conversation
        // ends now (each datagram is judged alone: nothing is left unknown).
        [this](Conv& oldest, std::uint64_t frame, bool first) {
          if (first)
            ctx_.bound_reached(frame, fmt::format("UDP conversations: {}; the least recently active are reported early",
                                                  convs_.bound()));
          return result(oldest);
        });
    c.last_frame = p.frame;
    c.last_ts = p.ts_us;
    judge(c, p, forward ? 0 : 1);
  }

  void finish(std::vector<ScopeResult>&, std::vector<FamilyCount>& counts) override {
    convs_.finish([this](Conv& c) { return result(c); });
    counts.push_back({"udp_datagrams", "UDP datagrams", datagrams_});
  }

 private:
  struct Conv {
    ScopeState scope;
    std::uint64_t id = 0, first_frame = 0, last_frame = 0;
    std::int64_t last_ts = 0;
    bool ipv6 = false;
    std::uint64_t seen[2] = {0, 0}, unsummed[2] = {0, 0}, offloaded[2] = {0, 0};
    Recency<Key>::Entry recent;  // its place among the open conversations
    explicit Conv(std::size_t n) : scope(n) {}
  };

  Tally* tally(Conv& c, std::optional<std::size_t> i) { return i ? &c.scope.tally(*i) : nullptr; }

  void judge(Conv& c, const captures::io::Packet& p, int dir) {
    ++c.seen[dir];
    const protocols::Bytes l3 = p.l3;
    const std::size_t at = p.ip_header_len;  // the UDP header
    const std::size_t ip_payload = l3.size() - at;
    const std::uint16_t len = protocols::be16(l3, at + 4);
    const std::uint16_t field = protocols::be16(l3, at + 6);
    auto evidence = [&](std::string expected, std::string actual, std::string detail = {}) {
      Evidence e;
      e.frames = {p.frame};
      e.side = c.scope.sides[dir];
      e.expected = std::move(expected);
      e.actual = std::move(actual);
      e.detail = std::move(detail);
      return e;
    };
    if (Tally* t = tally(c, length_)) {
      if (len < 8 || len > ip_payload) {
        t->fail(evidence(fmt::format("a UDP length from 8 to the IP payload's {} octets", ip_payload), fmt::format("{}", len)));
        ++c.unsummed[dir];
        return;  // no datagram to sum
      }
      t->pass();
    } else if (len < 8 || len > ip_payload) {
      ++c.unsummed[dir];
      return;
    }
    const bool v6 = p.ip_version == 6;
    if (field == 0) {
      ++c.unsummed[dir];
      if (!v6) return;  // RFC 768: no checksum was computed
      if (Tally* t = tally(c, zero6_)) {
        const auto tunnel = std::find_if(kTunnelPorts.begin(), kTunnelPorts.end(), [&](const auto& x) { return x.first == p.dport; });
        if (p.dport == kRoceV2Port)
          t->pass();
        else if (tunnel != kTunnelPorts.end())
          t->inconclusive(evidence("a checksum, or a tunnel meeting RFC 6936's conditions", "checksum zero",
                                   fmt::format("port {} is {}, which may use the RFC 6935 zero-checksum exception; whether "
                                               "the path meets RFC 6936's conditions is not in the capture",
                                               p.dport, tunnel->second)));
        else
          t->fail(evidence("a non-zero checksum (IPv6)", "checksum zero"));
      }
      return;
    }
    if (v6)
      if (Tally* t = tally(c, zero6_)) t->pass();
    Tally* t = tally(c, checksum_);
    if (!t) return;
    const auto [src, dst] = protocols::net::ip_addresses(l3);
    const protocols::Bytes dgram = l3.subspan(at, len);
    const std::uint16_t sum = protocols::net::udp_checksum(l3, dgram);
    if (sum == 0) return t->pass();
    // What it should have been: the sum with the field taken out.
    std::uint16_t want = protocols::net::fold(
        protocols::net::sum16(dgram.subspan(8), protocols::net::sum16(dgram.first(6), pseudo_sum(src, dst, len))));
    if (want == 0) want = 0xffff;
    // Checksum offload on the sending host: the field holds the pseudo-header
    // sum the NIC completes (Linux's CHECKSUM_PARTIAL).
    const std::uint16_t partial = static_cast<std::uint16_t>(~protocols::net::fold(pseudo_sum(src, dst, len)));
    if (field == partial || ip_payload > kEthernetMtu) {
      ++c.offloaded[dir];
      t->inconclusive(evidence(
          fmt::format("checksum 0x{:04x}", want), fmt::format("0x{:04x}", field),
          field == partial
              ? fmt::format("the field holds the pseudo-header sum: captured on the sending host before its NIC filled the "
                            "checksum in (checksum offload){}",
                            ip_payload > kEthernetMtu ? fmt::format("; {} octets, a UDP GSO super-datagram not yet segmented", ip_payload) : "")
              : fmt::format("{} octets of IP payload, more than an Ethernet MTU: a GSO or GRO super-datagram, whose checksum "
                            "on the wire was each segment's",
                            ip_payload)));
      return;
    }
    t->fail(evidence(fmt::format("checksum 0x{:04x}", want), fmt::format("0x{:04x}", field)));
  }

  static std::uint32_t pseudo_sum(protocols::Bytes src, protocols::Bytes dst, std::uint16_t len) {
    std::uint32_t s = protocols::net::sum16(src);
    s = protocols::net::sum16(dst, s);
    return s + 17u + len;
  }

  ScopeResult result(Conv& c) {
    ScopeResult r;
    r.family = kFamily;
    r.id = fmt::format("udp/{}", c.id);
    r.order = c.id;
    r.label = fmt::format("{} <-> {}", c.scope.sides[0], c.scope.sides[1]);
    r.params = Params{}.set("ip_version", c.ipv6 ? 6 : 4).set("datagrams", c.seen[0] + c.seen[1]).text();
    r.first_frame = c.first_frame;
    r.last_frame = c.last_frame;
    for (int d = 0; d < 2; ++d) {
      Coverage cov{c.scope.sides[d], "packets", c.seen[d], c.seen[d] - c.unsummed[d] - c.offloaded[d], 0, {}};
      if (c.unsummed[d]) cov.why.push_back(fmt::format("{} without a checksum to verify (zero, or a length that does not fit)", c.unsummed[d]));
      if (c.offloaded[d]) cov.why.push_back(fmt::format("{} whose checksum offload could explain (INCONCLUSIVE)", c.offloaded[d]));
      r.coverage.push_back(std::move(cov));
    }
    r.outcomes = c.scope.outcomes(infos_);
    return r;
  }

  RunContext& ctx_;
  std::vector<const CaseInfo*> infos_;
  std::optional<std::size_t> checksum_, zero6_, length_;
  // What one open conversation takes (measured: bench/check_open_state.sh).
  static constexpr std::uint64_t kConversationBytes = 640;
  Conversations<Key, Conv> convs_{ctx_, kConversationBytes};
  std::uint64_t ids_ = 0, datagrams_ = 0;
};

std::unique_ptr<FamilyRun> Family::start(RunContext& ctx) const { return std::make_unique<Run>(ctx); }

}  // namespace

const ProtocolFamily& family() {
  static const Family f;
  return f;
}

}  // namespace rdmaconf::conformance::fastudp

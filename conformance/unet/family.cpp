// A scope is a channel: the messages between two endpoints, each named by
// its MAC address and its port (the tag), both ways. Every frame is judged
// on its own except `unet.channel.closed`, which follows each side's close.
// U-Net carries no sequence numbers, so nothing in the bytes proves the
// order of a side's frames: a second, different close from the same side is
// proof that the first was not its last message, whatever the order, while
// a message the capture shows after the close is INCONCLUSIVE (a capture
// that reordered frames shows the same). A frame with the same octets as
// one of the side's recent ones is a repeat (a capture artefact), never a
// second close.
// Captures without MAC addresses (Linux cooked) name endpoints by port only
// and leave `unet.channel.unicast` NOT_APPLICABLE.
#include "conformance/unet/family.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "conformance/scope.hpp"
#include "protocols/core/header.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::conformance::unet {

namespace {

namespace pu = protocols::unet;
using pu::Unet;

constexpr std::string_view kFamily = "unet";
constexpr std::string_view kSpec = "rdmaconf U-Net v1";
constexpr std::string_view kHeader = "unet.header";
constexpr std::string_view kTag = "unet.tag";
constexpr std::string_view kLength = "unet.length";
constexpr std::string_view kUnicast = "unet.channel.unicast";
constexpr std::string_view kClosed = "unet.channel.closed";

constexpr std::array kText{
    CaseText{kHeader, kSpec, "header", Level::must,
             "The header carries version 1, and its reserved flag bits and reserved octet are zero."},
    CaseText{kTag, kSpec, "ports", Level::must,
             "The destination and source ports name endpoints: neither is 0 nor 0xFFFF, which name none."},
    CaseText{kLength, kSpec, "message length", Level::must,
             "The length counts the message octets after the header, at most the MTU less the 8-octet header; the "
             "frame ends with the message, or, when shorter than Ethernet's 60-octet minimum, with zero padding to it."},
    CaseText{kUnicast, kSpec, "channels", Level::must,
             "A channel joins two endpoints: a U-Net frame's destination and source MAC addresses are unicast."},
    CaseText{kClosed, kSpec, "channels", Level::must,
             "After a side sends a message with the close flag set, it sends nothing more on that channel (so never a "
             "second close)."},
};

constexpr protocols::FieldDef kFrameFields[] = {
    {"frame", "Frame", 0, 32},
    {"eth_src", "Source MAC", 0, 48, protocols::Display::mac},
    {"eth_dst", "Destination MAC", 0, 48, protocols::Display::mac},
    {"message_length", "Message octets in the frame", 0, 16},
    {"padding", "Padding octets", 0, 16},
    {"error", "Not decoded", 0, 8, protocols::Display::ascii},
};
constexpr const protocols::HeaderDef* kHeaders[] = {&pu::kUnet};

struct Endpoint {
  std::array<std::uint8_t, 6> mac{};
  std::uint16_t port = 0;
  auto operator<=>(const Endpoint&) const = default;
};

std::string mac_text(const std::array<std::uint8_t, 6>& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

class Family final : public ProtocolFamily {
 public:
  Family() {
    for (const auto& t : kText) infos_storage_.push_back(t.in(kFamily));
    for (const auto& i : infos_storage_) infos_.push_back(&i);
  }
  std::string_view name() const override { return kFamily; }
  std::string_view title() const override { return "U-Net (tagged endpoints over Ethernet)"; }
  const std::vector<const CaseInfo*>& cases() const override { return infos_; }
  std::vector<OptionSpec> options() const override {
    return {OptionSpec{"--unet-mtu", "the link's MTU for U-Net frames (default 1500): the longest message is 8 octets less",
                       false, {}, 65535}};
  }
  Claims claims(const FamilyOptions&) const override {
    Claims c;
    c.ethertypes = {pu::kEthertype};
    return c;
  }
  std::vector<Listing> listings() const override {
    return {Listing{"unet-frames", "list every U-Net frame, one JSON object per line", "unet", "U-Net frame", kFrameFields}};
  }
  std::span<const protocols::HeaderDef* const> headers() const override { return kHeaders; }
  std::span<const protocols::ValueName> ether_types() const override {
    static constexpr protocols::ValueName kNames[] = {{pu::kEthertype, "U-Net (local experimental)"}};
    return kNames;
  }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override;

 private:
  std::vector<CaseInfo> infos_storage_;
  std::vector<const CaseInfo*> infos_;
};

class Run final : public FamilyRun {
 public:
  explicit Run(RunContext& ctx) : ctx_(ctx) {
    const auto& all = family().cases();
    for (std::size_t i : ctx.active()) {
      infos_.push_back(all[i]);
      const auto id = all[i]->id;
      const std::size_t k = infos_.size() - 1;
      if (id == kHeader) header_ = k;
      if (id == kTag) tag_ = k;
      if (id == kLength) length_ = k;
      if (id == kUnicast) unicast_ = k;
      if (id == kClosed) closed_ = k;
    }
    const auto mtu = ctx.option("--unet-mtu", {pu::kMtu});
    max_message_ = mtu.front() > pu::kHeaderSize ? mtu.front() - pu::kHeaderSize : 0;
  }

  void packet(const captures::io::Packet& p) override {
    if (p.ethertype != pu::kEthertype) return;
    ++frames_;
    channels_.sweep(p.ts_us, [this](Channel& c) { return result(c); });
    auto h = protocols::Header::decode(pu::kUnet, p.l3);
    if (!h) {
      ++undecoded_;
      const std::string msg = fmt::format("U-Net header: {} octets after the link header, the header has {}", p.l3.size(),
                                          pu::kHeaderSize);
      ctx_.undecodable(p.frame, msg);
      if (ctx_.on_unit) ctx_.on_unit("unet", nlohmann::json{{"frame", p.frame}, {"error", msg}});
      return;
    }
    const std::uint16_t dport = static_cast<std::uint16_t>(h->get(Unet::dst_port));
    const std::uint16_t sport = static_cast<std::uint16_t>(h->get(Unet::src_port));
    const Endpoint src{p.mac_src, sport}, dst{p.mac_dst, dport};
    const bool forward = src < dst;
    // (No bound on the open channels: each takes little, and U-Net traffic
    // is judged frame by frame.)
    Channel& c = channels_.get(
        forward ? std::pair{src, dst} : std::pair{dst, src}, p.frame,
        [&] {
          auto n = std::make_unique<Channel>(infos_.size());
          n->id = ids_++;
          n->first_frame = p.frame;
          n->has_mac = p.has_mac;
          const Endpoint& lo = forward ? src : dst;
          const Endpoint& hi = forward ? dst : src;
          n->scope.sides[0] = side_name(lo, p.has_mac);
          n->scope.sides[1] = side_name(hi, p.has_mac);
          return n;
        },
        [this](Channel& oldest, std::uint64_t, bool) { return result(oldest); });
    const int dir = forward ? 0 : 1;
    const std::uint64_t digest = hash(p);
    const bool repeat = std::find(std::begin(c.digests[dir]), std::end(c.digests[dir]), digest) != std::end(c.digests[dir]);
    c.digests[dir][c.digest_at[dir]++ % c.digests[dir].size()] = digest;
    c.last_frame = p.frame;
    c.last_ts = p.ts_us;
    judge(c, p, *h, dir, digest, repeat);
  }

  void finish(std::vector<ScopeResult>&, std::vector<FamilyCount>& counts) override {
    channels_.finish([this](Channel& c) { return result(c); });
    counts.push_back({"unet_frames", "U-Net frames", frames_});
    if (undecoded_) counts.push_back({"unet_undecoded", "U-Net frames too short for the header", undecoded_});
  }

 private:
  struct Channel {
    ScopeState scope;
    std::uint64_t id = 0, first_frame = 0, last_frame = 0;
    std::int64_t last_ts = 0;
    bool has_mac = false;
    std::uint64_t messages[2] = {0, 0}, octets[2] = {0, 0};
    std::optional<std::uint64_t> closed_at[2];  // the frame of each side's close
    std::uint64_t close_digest[2] = {0, 0};     // and its octets' hash
    // Each side's recent frames, by a hash of their octets (repeats are capture artefacts).
    std::array<std::uint64_t, 16> digests[2] = {};
    std::size_t digest_at[2] = {0, 0};
    Recency<std::pair<Endpoint, Endpoint>>::Entry recent;  // its place among the open channels
    explicit Channel(std::size_t n) : scope(n) {}
  };

  static std::string side_name(const Endpoint& e, bool has_mac) {
    return has_mac ? fmt::format("{}/{}", mac_text(e.mac), e.port) : fmt::format("port {}", e.port);
  }
  Tally* tally(Channel& c, std::optional<std::size_t> i) { return i ? &c.scope.tally(*i) : nullptr; }

  void judge(Channel& c, const captures::io::Packet& p, const protocols::Header& h, int dir, std::uint64_t digest, bool repeat) {
    ++c.messages[dir];
    auto evidence = [&](std::string expected, std::string actual, std::string detail = {}) {
      Evidence e;
      e.frames = {p.frame};
      e.side = c.scope.sides[dir];
      e.expected = std::move(expected);
      e.actual = std::move(actual);
      e.detail = std::move(detail);
      return e;
    };
    if (Tally* t = tally(c, header_)) {
      const auto version = h.get(Unet::version);
      if (version != pu::kVersion)
        t->fail(evidence(fmt::format("version {}", pu::kVersion), fmt::format("version {}", version)));
      else if (h.get(Unet::rsvd_flags) || h.get(Unet::rsvd))
        t->fail(evidence("reserved flag bits and octet zero",
                         fmt::format("flags 0x{:x}, octet 0x{:02x}", h.get(Unet::rsvd_flags), h.get(Unet::rsvd))));
      else
        t->pass();
    }
    if (Tally* t = tally(c, tag_)) {
      const auto bad = [](std::uint64_t port) { return port == pu::kPortNone || port == pu::kPortReserved; };
      if (bad(h.get(Unet::dst_port)) || bad(h.get(Unet::src_port)))
        t->fail(evidence("ports from 1 to 65534",
                         fmt::format("destination {}, source {}", h.get(Unet::dst_port), h.get(Unet::src_port))));
      else
        t->pass();
    }
    // The frame's length on the wire: what follows the header is the
    // message, then padding only up to Ethernet's minimum frame.
    const std::size_t length = h.get(Unet::length);
    const std::size_t wire = p.orig_len;
    const std::size_t after = wire - std::min<std::size_t>(wire, p.l3_offset + pu::kHeaderSize);
    const std::size_t captured_after = p.l3.size() - pu::kHeaderSize;
    if (Tally* t = tally(c, length_)) {
      // Padded to the minimum: a 60-octet frame, or (with VLAN tags added
      // after the padding, or a Linux cooked header for the MACs) 46 octets after the link header.
      const bool minimum = wire == pu::kMinFrame || wire - std::min(wire, p.l3_offset) == pu::kMinFrame - pu::kEthHeader;
      const bool padded = minimum && length < after;
      if (length > max_message_)
        t->fail(evidence(fmt::format("a message of at most {} octets", max_message_), fmt::format("length {}", length)));
      else if (length != after && !padded)
        t->fail(evidence(fmt::format("length {} (the octets after the header in a {}-octet frame){}", after, wire,
                                     minimum ? ", or less with padding to 60 octets" : ""),
                         fmt::format("length {}", length)));
      else if (padded && !zero_padding(p.l3.subspan(std::min(p.l3.size(), pu::kHeaderSize + length))))
        t->fail(evidence("zero padding after the message", "padding with non-zero octets"));
      else
        t->pass();
    }
    c.octets[dir] += std::min(length, captured_after);
    if (Tally* t = tally(c, unicast_); t && (c.has_mac || p.dst_group)) {
      // (A Linux cooked capture keeps no destination address: its packet type says whether it was a group's.)
      const bool src_group = p.has_src_mac && (p.mac_src[0] & 1u);
      const bool group = (c.has_mac ? (p.mac_dst[0] & 1u) != 0 : *p.dst_group) || src_group;
      const std::string src = p.has_src_mac ? mac_text(p.mac_src) : std::string("not captured");
      if (group)
        t->fail(evidence("unicast destination and source MAC addresses",
                         c.has_mac ? fmt::format("destination {}, source {}", mac_text(p.mac_dst), src)
                                   : fmt::format("destination {} (the Linux cooked packet type), source {}",
                                                 *p.dst_group ? "a broadcast or multicast address" : "unicast", src)));
      else
        t->pass();
    }
    const bool close = h.get(Unet::close) != 0;
    if (Tally* t = tally(c, closed_)) {
      const auto past_close = [&](std::string actual, std::string detail) {
        return Evidence{{*c.closed_at[dir], p.frame}, {}, c.scope.sides[dir], "nothing after the close", std::move(actual),
                        std::move(detail), {}};
      };
      if (!c.closed_at[dir] || (close && digest == c.close_digest[dir]) || repeat)
        t->pass();  // before the close, or the close or an earlier frame seen again
      else if (close)
        t->fail(past_close(fmt::format("a second close in frame {} (the first in frame {})", p.frame, *c.closed_at[dir]), {}));
      else
        t->inconclusive(past_close(fmt::format("a message in frame {} after the close in frame {}", p.frame, *c.closed_at[dir]),
                              "U-Net frames carry no sequence numbers: only the capture's order puts this message after "
                              "the close, and a capture that reordered frames would show the same"));
    }
    if (close && !c.closed_at[dir]) {
      c.closed_at[dir] = p.frame;
      c.close_digest[dir] = digest;
    }
    if (ctx_.on_unit) {
      nlohmann::json j = {{"frame", p.frame}, {"unet", h}, {"message_length", std::min(length, captured_after)},
                          {"padding", after > length ? after - length : 0}};
      if (p.has_mac) {
        j["eth_src"] = mac_text(p.mac_src);
        j["eth_dst"] = mac_text(p.mac_dst);
      }
      ctx_.on_unit("unet", std::move(j));
    }
  }

  // FNV-1a over the frame's octets from the MAC addresses on.
  static std::uint64_t hash(const captures::io::Packet& p) {
    std::uint64_t h = 1469598103934665603ull;
    const auto mix = [&](std::uint8_t x) { h = (h ^ x) * 1099511628211ull; };
    for (auto x : p.mac_dst) mix(x);
    for (auto x : p.mac_src) mix(x);
    for (auto x : p.l3) mix(static_cast<std::uint8_t>(x));
    return h;
  }

  static bool zero_padding(protocols::Bytes b) {
    return std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0}; });
  }

  ScopeResult result(Channel& c) {
    ScopeResult r;
    r.family = kFamily;
    r.id = fmt::format("unet/{}", c.id);
    r.order = c.id;
    r.label = fmt::format("{} <-> {}", c.scope.sides[0], c.scope.sides[1]);
    Params params;
    params.set("messages", c.messages[0] + c.messages[1]).set("octets", c.octets[0] + c.octets[1]);
    for (int d = 0; d < 2; ++d)
      if (c.closed_at[d]) params.set(d == 0 ? "closed_by_a" : "closed_by_b", *c.closed_at[d]);
    r.params = params.text();
    r.first_frame = c.first_frame;
    r.last_frame = c.last_frame;
    for (int d = 0; d < 2; ++d) r.coverage.push_back(Coverage{c.scope.sides[d], "packets", c.messages[d], c.messages[d], 0, {}});
    r.outcomes = c.scope.outcomes(infos_);
    return r;
  }

  RunContext& ctx_;
  std::vector<const CaseInfo*> infos_;
  std::optional<std::size_t> header_, tag_, length_, unicast_, closed_;
  std::size_t max_message_ = pu::kMaxMessage;
  Conversations<std::pair<Endpoint, Endpoint>, Channel> channels_{ctx_, 0};
  std::uint64_t ids_ = 0, frames_ = 0, undecoded_ = 0;
};

std::unique_ptr<FamilyRun> Family::start(RunContext& ctx) const { return std::make_unique<Run>(ctx); }

}  // namespace

const ProtocolFamily& family() {
  static const Family f;
  return f;
}

}  // namespace rdmaconf::conformance::unet

// The InfiniBand transport family: RoCEv2 (UDP to port 4791 and any port
// --roce-port adds), RoCEv1 (EtherType 0x8915) and native link frames
// (LINKTYPE_INFINIBAND). A conversation is a pair of addresses (IP, GID or
// LID); per-QP state built from its traffic feeds the IBTA Vol. 1 cases.
#include "conformance/ib/family.hpp"

#include <pcap/dlt.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "conformance/ib/case.hpp"
#include "conformance/ledger.hpp"

namespace rdmaconf::conformance::ib {

// The ledger's documents (conformance/ib/ledger/*.json, built in by CMake).
extern const std::string_view kLedgerDocuments[];
extern const std::size_t kLedgerDocumentCount;

using captures::io::Address;
using captures::io::format_address;
namespace pib = protocols::ib;

namespace {

constexpr std::string_view kPortOption = "--roce-port";           // ports beside 4791
constexpr std::string_view kPortOnlyOption = "--roce-port-only";  // ports in place of 4791
constexpr std::string_view kMtuOption = "--roce-mtu";

using protocols::Display;
using protocols::FieldDef;

// The values of a packet unit that are not header fields (packet_json's keys).
constexpr FieldDef kPacketFields[] = {
    {"frame", "Frame", 0, 32},
    {"dir", "Direction", 0, 1},
    {"error", "Not decoded", 0, 8, Display::ascii},
    {"payload_length", "Payload length", 0, 32},
    {"pad", "Pad count", 0, 8},
    {"icrc", "ICRC", 0, 32, Display::hex},
    {"icrc_ok", "ICRC correct", 0, 1, Display::flag},
    {"vcrc", "VCRC", 0, 16, Display::hex},
    {"vcrc_ok", "VCRC correct", 0, 1, Display::flag},
};

constexpr const protocols::HeaderDef* kHeaders[] = {
    &pib::kLrh, &pib::kGrh, &pib::kBth, &pib::kRdeth, &pib::kDeth, &pib::kXrceth, &pib::kReth,
    &pib::kAtomicEth, &pib::kAeth, &pib::kAtomicAckEth, &pib::kImmDt, &pib::kIeth, &pib::kFeth,
};

// `rdmaconf packets`: one packet, with the link and network headers of a native or RoCEv1 frame.
nlohmann::json packet_json(const RocePacketEvent& e) {
  nlohmann::json j = {{"frame", e.pkt->frame}, {"dir", e.dir}};
  if (!e.ib->ok()) {
    j["error"] = e.ib->error().message();
  } else {
    const auto& p = **e.ib;
    j["bth"] = p.bth;
    for (std::size_t i = 0; i < pib::kExtCount; ++i)
      if (p.ext[i]) j[std::string(pib::ext_def(i).abbrev)] = *p.ext[i];
    j["payload_length"] = p.payload.size();
    j["pad"] = p.pad;
    j["icrc"] = p.icrc;
    j["icrc_ok"] = p.icrc == e.icrc_computed;
  }
  const auto l3 = e.pkt->l3;
  if (e.pkt->native_ib)
    if (auto lrh = protocols::Header::decode(pib::kLrh, l3)) j["lrh"] = *lrh;
  if (const auto at = e.pkt->grh_offset())
    if (auto grh = protocols::Header::decode(pib::kGrh, l3.subspan(*at))) j["grh"] = *grh;
  if (e.pkt->native_ib && e.pkt->has_vcrc) {
    j["vcrc"] = e.pkt->vcrc;
    j["vcrc_ok"] = e.pkt->vcrc == pib::vcrc(l3);
  }
  return j;
}

class Family final : public ProtocolFamily {
 public:
  Family() : ledger_(Ledger::parse(std::span(kLedgerDocuments, kLedgerDocumentCount))) {
    add_roce_transport_cases(cases_);
    add_ib_link_cases(cases_);
    add_ib_reliable_cases(cases_);
    for (const auto& c : cases_) {
      infos_.push_back(&c->info());
      checksum_.push_back(c->info().id == "roce.icrc" || c->info().id == "ib.vcrc");
    }
  }
  std::string_view name() const override { return kIbFamily; }
  std::string_view title() const override { return "InfiniBand transport (RoCEv2, RoCEv1, native InfiniBand)"; }
  const std::vector<const CaseInfo*>& cases() const override { return infos_; }
  std::vector<OptionSpec> options() const override {
    return {{std::string(kPortOption), "UDP port(s) carrying RoCEv2 beside 4791", true, {}, 65535},
            {std::string(kPortOnlyOption), "UDP port(s) carrying RoCEv2 in place of 4791", true, {}, 65535},
            {std::string(kMtuOption), "Path MTU of the RoCE traffic (default: found from its First/Middle packets)", false,
             {256, 512, 1024, 2048, 4096}}};
  }
  Claims claims(const FamilyOptions& o) const override {
    Claims c;
    // 4791 and the --roce-port ones, or the --roce-port-only ones alone.
    std::vector<std::uint64_t> ports = option_values(o, kPortOnlyOption);
    if (ports.empty()) {
      ports = option_values(o, kPortOption);
      ports.push_back(pib::kRoceV2Port);
    }
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    for (auto p : ports) c.udp_ports.push_back(static_cast<std::uint16_t>(p));
    c.ethertypes = {pib::kRoceV1Ethertype};
    c.linktypes = {DLT_INFINIBAND};
    return c;
  }
  std::vector<Listing> listings() const override {
    return {{"packets", "list every RoCEv2, RoCEv1 or native InfiniBand packet decoded from a capture, one JSON object per line",
             "packet", "InfiniBand packet", kPacketFields}};
  }
  std::span<const protocols::HeaderDef* const> headers() const override { return kHeaders; }
  std::span<const protocols::ValueName> ether_types() const override {
    static constexpr protocols::ValueName kNames[] = {{pib::kRoceV1Ethertype, "RoCE v1"}};
    return kNames;
  }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override;
  const IbCases& impl() const { return cases_; }
  // Does case `i` (an index into cases()) judge the checksums alone, all that a damaged packet feeds?
  bool checksum(std::size_t i) const { return checksum_[i]; }
  const Ledger* ledger() const override { return &ledger_; }

 private:
  Ledger ledger_;
  IbCases cases_;
  std::vector<const CaseInfo*> infos_;
  std::vector<bool> checksum_;
};

class Run final : public FamilyRun {
 public:
  Run(const Family& f, RunContext& ctx) : ctx_(ctx) {
    take_active(f.impl(), f.cases(), ctx, cases_, infos_);
    for (std::size_t i = 0; i < ctx.active().size(); ++i)
      if (f.checksum(ctx.active()[i])) checksum_cases_.push_back(i);
    const auto mtu = ctx.option(kMtuOption, {0});
    mtu_ = static_cast<std::uint32_t>(mtu.front());
  }

  // What one open conversation takes, measured (bench/check_open_state.sh:
  // peak memory over open conversations, 100 000 and 1 000 000 of them with
  // no bound).
  static constexpr std::uint64_t kConversationBytes = 7 * 1024;

  using Key = std::pair<Address, Address>;
  struct Conv {
    ScopeState scope;
    std::uint64_t id = 0, first_frame = 0, last_frame = 0, packets = 0;
    // Per direction: the latest timestamp, and the latest packets' (frame,
    // timestamp) in a ring: how far back an inverted timestamp reaches.
    static constexpr std::size_t kTimes = 32;
    std::int64_t last_ts = 0;  // the latest timestamp of either direction (the idle sweep's)
    std::int64_t dir_ts[2] = {0, 0};
    std::array<std::pair<std::uint64_t, std::int64_t>, kTimes> times[2]{};
    std::size_t n_times[2] = {0, 0};
    // Per direction: packets seen, judged, and those the cases left out.
    std::uint64_t seen[2] = {0, 0}, copies[2] = {0, 0}, damaged[2] = {0, 0}, undecoded[2] = {0, 0};
    std::string label;
    std::map<std::uint32_t, std::uint64_t> qps;
    Conversation qp;
    // Each direction's latest packet (hash, timestamp), while the other
    // direction has sent nothing since.
    std::optional<std::pair<std::size_t, std::int64_t>> latest[2];
    Recency<Key>::Entry recent;  // its place among the open conversations
    bool closed_early = false;   // at the open state's bound, not by its end
    Conv(std::size_t n, std::uint32_t pmtu) : scope(n), qp(pmtu) {}
  };

  void packet(const captures::io::Packet& p) override {
    if (p.protocol == 17) return judge(from_udp(p));
    const DecodedFrame d = p.ethertype == pib::kRoceV1Ethertype ? decode_roce_v1(p) : decode_native(p);
    if (d.status == FrameStatus::error) return ctx_.undecodable(p.frame, d.error);
    if (d.status == FrameStatus::ok) judge(d.f);
  }

  void judge(const IbFrame& p) {
    ++packets_;
    // Conversations with no packet for the idle time (capture time) end now.
    convs_.sweep(p.ts_us, [this](Conv& c) { return result(&c); });
    const bool forward = std::make_pair(p.src, p.sport) <= std::make_pair(p.dst, p.dport);
    const Address& lo = forward ? p.src : p.dst;
    const Address& hi = forward ? p.dst : p.src;
    Conv& c = convs_.get(
        std::make_pair(lo, hi), p.frame,
        [&] {
          auto n = std::make_unique<Conv>(cases_.size(), mtu_);
          n->id = ++ids_;
          n->first_frame = p.frame;
          // Both ends on one address (a loopback run): the UDP ports tell the sides apart.
          const bool one_address = lo == hi;
          const std::string a = format_address(p.ip_version, lo) + (one_address ? fmt::format(":{}", forward ? p.sport : p.dport) : ""),
                            b = format_address(p.ip_version, hi) + (one_address ? fmt::format(":{}", forward ? p.dport : p.sport) : "");
          n->label = fmt::format("{} <-> {}", a, b);
          n->scope.sides[0] = fmt::format("{} -> {}", a, b);
          n->scope.sides[1] = fmt::format("{} -> {}", b, a);
          return n;
        },
        [this](Conv& oldest, std::uint64_t frame, bool first) { return close_early(oldest, frame, first); });
    // A frame stamped before an earlier frame of its own direction: the
    // file is not in the order the frames were captured in, and says nothing
    // about which of them was sent first. That doubt concerns the frames
    // this one's timestamp falls among, back to the direction's first one
    // stamped later than it (beyond the times kept, all of the conversation).
    // Stamps are compared within a direction only: two directions may be
    // stamped by two clocks (two capture points merged, a guest and a host),
    // and an exchange out of file order shows in the traffic itself.
    const int dir = forward ? 0 : 1;
    auto& times = c.times[dir];
    if (c.n_times[dir] && p.ts_us < c.dir_ts[dir]) {
      std::optional<std::uint64_t> from;               // the oldest frame kept that is stamped later
      bool bounded = c.n_times[dir] <= Conv::kTimes;  // the times kept reach the direction's start,
      for (std::size_t k = std::min(c.n_times[dir], Conv::kTimes); k-- > 0;) {
        const auto& [f, t] = times[(c.n_times[dir] - 1 - k) % Conv::kTimes];
        if (t > p.ts_us && !from) from = f;
        if (t <= p.ts_us && !from) bounded = true;  // or a frame before it is stamped no later
      }
      for (int d = 0; d < 2; ++d) {
        if (from && bounded)
          c.scope.artefact_between(d, *from, p.frame, "frame {}: timestamped before frame {} of its direction (frames {} to {} are not in capture order)",
                                   p.frame, *from, *from, p.frame);
        else
          c.scope.artefact(d, "frame {}: timestamped before earlier frames of its direction (the file is not in capture order)", p.frame);
      }
    }
    times[c.n_times[dir] % Conv::kTimes] = {p.frame, p.ts_us};
    ++c.n_times[dir];
    c.dir_ts[dir] = std::max(c.dir_ts[dir], p.ts_us);
    c.last_ts = std::max(c.last_ts, p.ts_us);
    c.last_frame = p.frame;
    ++c.packets;
    const auto pkt = pib::decode_transport(p.payload);
    RocePacketEvent e;
    e.pkt = &p;
    e.ib = &pkt;
    e.dir = forward ? 0 : 1;  // by address, or by UDP port when both ends share one
    ++c.seen[e.dir];
    if (!pkt.ok()) ++c.undecoded[e.dir];
    if (pkt.ok() && copy_of_latest(c, e.dir, p, *pkt)) {
      ++c.copies[e.dir];
      // Judged once: a second copy is the capture's doing or a retransmission, and proves nothing new.
      c.scope.artefact(e.dir, "frame {}: a copy of the packet before it", p.frame);
      return;
    }
    bool damaged = false;  // its ICRC is wrong: only the checksum cases judge it
    if (pkt.ok()) {
      c.qps[static_cast<std::uint32_t>(pkt->bth.get(pib::Bth::destqp))]++;
      const bool judged = !cases_.empty() || ctx_.on_unit;
      if (judged)
        e.icrc_computed = p.native_ib ? pib::native_icrc(p.l3)
                          : p.roce_v1 ? pib::roce_v1_icrc(p.l3)
                                      : pib::roce_icrc(p.l3, p.ip_version == 6, p.ip_header_len);
      damaged = judged && e.icrc_computed != pkt->icrc;
      c.damaged[e.dir] += damaged;
      e.facts = &c.qp.packet(e.dir, *pkt, p.frame, damaged);
    }
    if (e.facts) record_artefacts(c.scope, e, *pkt);
    if (ctx_.on_unit) ctx_.on_unit("packet", packet_json(e));
    auto run = [&](std::size_t i) {
      CaseCtx ctx = c.scope.ctx(i);
      cases_[i]->on_packet(ctx, e);
    };
    // A damaged packet's fields may be the link's doing, not the sender's.
    if (damaged) {
      for (std::size_t i : checksum_cases_) run(i);
    } else {
      for (std::size_t i = 0; i < cases_.size(); ++i) run(i);
    }
  }

  // The open conversations reached the --state-memory bound: the least
  // recently active one ends now. What it would have shown later (answers,
  // resends, its end) is unknown, so what waited for that is settled
  // INCONCLUSIVE, naming the bound; its later packets begin a new one.
  ScopeResult close_early(Conv& c, std::uint64_t frame, bool first) {
    c.closed_early = true;
    for (int d = 0; d < 2; ++d)
      c.scope.artefact(d, "frame {}: the least recently active conversation, closed early ({})", frame, convs_.bound());
    if (first)
      ctx_.bound_reached(frame, fmt::format("RoCE conversations: {}; the least recently active are closed early, and what "
                                            "needed their later packets is INCONCLUSIVE",
                                            convs_.bound()));
    return result(&c);
  }

  // A connected-service packet identical to the one just before it in its
  // direction, with nothing from the other side in between, and sooner after
  // it than any transport timer allows a resend (the shortest Local ACK
  // Timeout, IBTA Vol.1 §9.7.6.1.3, is 4.096 us x 2): a tap or mirror port
  // saw the frame twice. CNPs and UD datagrams may repeat by design.
  static bool copy_of_latest(Conv& c, int dir, const IbFrame& p, const pib::IbPacket& pkt) {
    constexpr std::int64_t kShortestResendUs = 8;
    const auto h = std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(p.payload.data()), p.payload.size()));
    const bool copy = c.latest[dir] && c.latest[dir]->first == h && p.ts_us - c.latest[dir]->second < kShortestResendUs &&
                      pkt.op->valid && pkt.op->transport != pib::Transport::ud && pkt.op->kind != pib::OpKind::cnp;
    c.latest[dir] = std::make_pair(h, p.ts_us);
    c.latest[1 - dir].reset();
    return copy;
  }

  // What the per-QP state shows that a lost, repeated or reordered packet
  // would also produce: the doubtful violations of this conversation are
  // settled against these. A hole in a requester's PSNs that the responder
  // NAKs is the link's loss, seen alike by both ends, and so no artefact of
  // the capture; one closed by a resend without a NAK, or acknowledged past,
  // may be the capture's.
  static void record_artefacts(ScopeState& s, const RocePacketEvent& e, const pib::IbPacket& pkt) {
    const Facts& f = *e.facts;
    const auto psn = static_cast<std::uint32_t>(pkt.bth.get(pib::Bth::psn));
    const auto frame = e.pkt->frame;
    if (f.gap_closed && f.gap_closed->naks == 0)
      s.artefact(e.dir, "frame {}: PSN {} resent with no NAK, so the hole before frame {} may be the capture's",
                                    frame, psn, f.gap_closed->frame);
    // (A repeat of a PSN the capture holds, with no NAK, is a timer's resend or a copy: it changes nothing judged.)
    if (f.psn == Facts::PsnClass::resend && f.resend_fills_gap && !f.resend_explained)
      s.artefact(e.dir, "frame {}: PSN {} after later PSNs, with no NAK asking for it (out of order)", frame, psn);
    if (f.answer_repeated)
      s.artefact(e.dir, "frame {}: an RNR NAK of PSN {} with no request of it since the answer before (out of order)", frame, psn);
    if (f.nak_in_hole)
      s.artefact(1 - e.dir, "frame {}: the NAK names PSN {}: the responder had the PSNs before it, which the capture lacks", frame, psn);
    if (f.gap_acked)
      s.artefact(e.dir, "frame {}: PSNs before {} missing, which frame {} acknowledged", frame, psn, *f.gap_acked);
    // An unreliable flow has no NAK to tell the link's losses from the capture's.
    if (f.psn == Facts::PsnClass::gap && f.req && f.req->transport != pib::Transport::rc && f.req->transport != pib::Transport::xrc)
      s.artefact(e.dir, "frame {}: PSN {} where {} was next", frame, psn, f.expected_psn);
    if (f.acked_before_sent)
      s.artefact(e.dir, "frame {}: request PSN {} comes after frame {} acknowledged it (file order is not the wire's)",
                                    frame, psn, *f.acked_before_sent);
    if (f.resp_psn_expected && *f.resp_psn_expected != psn && !f.resp_psn_proved && !f.resp_psn_reused)
      s.artefact(e.dir, "frame {}: response PSN {} where {} was next", frame, psn, *f.resp_psn_expected);
    if (f.match == Facts::Match::unmatched && !f.match_proved)
      s.artefact(1 - e.dir, "frame {}: answers PSN {}, whose request the capture lacks", frame, psn);
    if (f.msn_psn_back && f.msn_before && psn_diff(static_cast<std::uint32_t>(pkt.get(pib::kExtAeth)->get(pib::Aeth::msn)), *f.msn_before) < 0)
      s.artefact(e.dir, "frame {}: MSN back, on an answer to PSN {} no newer than the one before it (answers out of order)", frame, psn);
    if (f.gap_lost) s.artefact(1 - e.dir, "frame {}: the responder acknowledged PSNs the capture lacks", frame);
  }

  // The capture ends with a hole no NAK answered: the capture's loss, or the
  // responder's silence; which one, the packets cannot tell.
  static void record_artefacts(ScopeState& s, const Closing& c) {
    for (const auto& g : c.open_gaps)
      s.artefact(g.flow->dir, "frame {}: PSN {} missing before it, never NAKed in the capture", g.frame, g.psn);
  }

  // A conversation's result, when it ends (idle, or the end of the capture).
  ScopeResult result(Conv* c) {
    ScopeResult r;
    r.family = kIbFamily;
    r.id = fmt::format("ib/{}", c->id);
    r.order = c->id;
    r.label = c->label;
    Params params;
    params.set("packets", c->packets);
    std::vector<std::string> qps;
    for (auto& [qp, n] : c->qps) qps.push_back(Params{}.set("dest_qp", qp).set("packets", n).text());
    params.set_json("dest_qps", json_array(qps));
    if (c->qp.pmtu()) params.set("path_mtu", c->qp.pmtu());
    params.set("path_mtu_inferred", c->qp.pmtu_inferred());
    std::vector<std::string> flows;
    for (const auto* f : c->qp.request_flows()) {
      Params flow;
      flow.set_string("from", c->scope.sides[f->dir])
          .set("dest_qp", f->dqp)
          .set_string("transport", pib::transport_name(f->transport))
          .set("packets", f->packets);
      if (f->resp) flow.set("answered_by_qp", f->resp->dqp);
      else flow.set_json("answered_by_qp", "null");
      flows.push_back(flow.text());
    }
    params.set_json("request_flows", json_array(flows));
    r.params = params.text();
    Closing closing = c->qp.close();
    if (c->closed_early) {
      // What waited for the conversation's later packets (answers, resends)
      // is unknown, not the capture's end: the bound is named.
      const std::string why = fmt::format("unknown: the conversation was closed early ({})", convs_.bound());
      for (auto* items : {&closing.gaps, &closing.unanswered, &closing.not_resent, &closing.open_gaps, &closing.acked_ahead,
                          &closing.nak_unprovoked})
        for (auto& item : *items)
          if (item.state != Closing::Item::State::pass) {
            item.state = Closing::Item::State::inconclusive;
            item.detail = why;
          }
    }
    record_artefacts(c->scope, closing);
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      CaseCtx ctx = c->scope.ctx(i);
      cases_[i]->on_close(ctx, closing);
    }
    for (int d = 0; d < 2; ++d) {
      Coverage cov{c->scope.sides[d], "packets", c->seen[d], c->seen[d] - c->copies[d] - c->damaged[d] - c->undecoded[d], 0, {}};
      if (c->copies[d]) cov.why.push_back(fmt::format("{} copy(ies) of the packet before, judged once", c->copies[d]));
      if (c->damaged[d]) cov.why.push_back(fmt::format("{} with a wrong ICRC: only the checksum judged", c->damaged[d]));
      if (c->undecoded[d]) cov.why.push_back(fmt::format("{} whose transport headers did not decode", c->undecoded[d]));
      r.coverage.push_back(std::move(cov));
    }
    r.first_frame = c->first_frame;
    r.last_frame = c->last_frame;
    r.outcomes = c->scope.outcomes(infos_);
    return r;
  }

  void finish(std::vector<ScopeResult>&, std::vector<FamilyCount>& counts) override {
    convs_.finish([this](Conv& c) { return result(&c); });
    counts.push_back({"ib_packets", "InfiniBand transport packets (RoCEv2, RoCEv1 or native)", packets_});
    if (convs_.closed_early())
      counts.push_back({"ib_conversations_closed_early", "RoCE conversations closed early at the --state-memory bound",
                        convs_.closed_early()});
  }

 private:
  RunContext& ctx_;
  std::vector<const RoceCase*> cases_;
  std::vector<const CaseInfo*> infos_;
  std::vector<std::size_t> checksum_cases_;  // (indices into cases_)
  std::uint32_t mtu_ = 0;
  Conversations<Key, Conv> convs_{ctx_, kConversationBytes};
  std::uint64_t ids_ = 0, packets_ = 0;
};

std::unique_ptr<FamilyRun> Family::start(RunContext& ctx) const { return std::make_unique<Run>(*this, ctx); }

}  // namespace

const ProtocolFamily& family() {
  static const Family f;
  return f;
}

}  // namespace rdmaconf::conformance::ib

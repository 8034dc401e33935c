// The iWARP family: claims every TCP stream, keeps the ones that carry an
// MPA exchange (or, mid-connection, FPDUs), and judges each connection with
// the cases of RFC 5044, RFC 6581, RFC 5041, RFC 5040 and RFC 7306.
#include "conformance/iwarp/family.hpp"

#include <array>
#include <bit>
#include <map>

#include <fmt/format.h>

#include "captures/io/tcp_copies.hpp"
#include "conformance/iwarp/case.hpp"

namespace rdmaconf::conformance {

void inconclusive_on_gap(CaseCtx& ctx, const iwarp::StopEvent& e) {
  if (!e.gap && !e.caused_by) return;
  Evidence ev;
  if (e.frame) ev.frames = {e.frame};
  ev.stream_offset = e.offset;
  ev.side = ctx.side(e.dir);
  ev.detail = fmt::format("not checked after this point: {}", e.reason);
  ev.caused_by = e.caused_by;
  ctx.tally.inconclusive(std::move(ev));
}

namespace iwarp {

// The ledger's documents (conformance/iwarp/ledger/*.json, built in by CMake).
extern const std::string_view kLedgerDocuments[];
extern const std::size_t kLedgerDocumentCount;

using namespace captures::io;

namespace {

std::string endpoint_text(const Endpoint& e) { return fmt::format("{}:{}", format_address(e.ip_version, e.addr), e.port); }

Params side_params(const MpaSide& s) {
  Params j;
  j.set("revision", s.rev).set("crc", s.crc).set("markers", s.markers).set("rejected", s.reject);
  if (s.ird) j.set("ird", *s.ird).set("ord", *s.ord).set("p2p", s.p2p);
  return j;
}

Params negotiated_params(const Negotiated& n) {
  Params j;
  if (n.req.seen) j.set("initiator", side_params(n.req));
  if (n.rep.seen) j.set("responder", side_params(n.rep));
  j.set("crc", n.crc());
  j.set("markers_from_initiator", n.markers_from_initiator());
  j.set("markers_from_responder", n.markers_from_responder());
  j.set("enhanced", n.enhanced);
  j.set("inferred", n.inferred);  // true: no Request/Reply in the capture; CRC use found from the FPDUs
  return j;
}

namespace pi = protocols::iwarp;
using protocols::Display;
using protocols::FieldDef;

// Where a unit of a TCP stream sits: the first keys of every iWARP unit (place_json's).
constexpr FieldDef kPlaceFields[] = {
    {"frame", "Last frame", 0, 32},
    {"first_frame", "First frame", 0, 32},
    {"dir", "Direction", 0, 1},
    {"offset", "Stream offset", 0, 64},
};

nlohmann::json place_json(int dir, std::uint64_t first_frame, std::uint64_t last_frame, std::uint64_t offset) {
  return {{"frame", last_frame}, {"first_frame", first_frame}, {"dir", dir}, {"offset", offset}};
}

// A unit's declared values: its place, then its own.
template <std::size_t N>
constexpr std::array<FieldDef, std::size(kPlaceFields) + N> placed(const FieldDef (&own)[N]) {
  std::array<FieldDef, std::size(kPlaceFields) + N> all{};
  std::size_t i = 0;
  for (const auto& f : kPlaceFields) all[i++] = f;
  for (const auto& f : own) all[i++] = f;
  return all;
}

// The values of an FPDU unit that are not header fields (fpdu_json's keys).
constexpr FieldDef kFpduOwn[] = {
    {"ulpdu_length", "ULPDU length", 0, 16},
    {"crc", "CRC", 0, 32, Display::hex},
    {"crc_ok", "CRC correct", 0, 1, Display::flag},
    {"markers", "Markers", 0, 16},
    {"markers_ok", "Marker pointers correct", 0, 1, Display::flag},
};
constexpr auto kFpduFields = placed(kFpduOwn);

// The values of an MPA Request or Reply unit that are not header fields (rr_json's keys).
constexpr FieldDef kMpaOwn[] = {
    {"from_initiator", "From the initiator", 0, 1, Display::flag},
    {"kind", "Kind", 0, 8, Display::ascii},
    {"private_data", "Private data", 0, 8, Display::ascii},
    {"error", "Not decoded", 0, 8, Display::ascii},
};
constexpr auto kMpaFields = placed(kMpaOwn);

constexpr const protocols::HeaderDef* kHeaders[] = {
    &pi::kMpaRr, &pi::kMpaV2, &pi::kMpaFpdu, &pi::kMpaMarker, &pi::kDdpTagged, &pi::kDdpUntagged, &pi::kReadRequest,
    &pi::kTerminate, &pi::kDdpSegLen, &pi::kImmediate, &pi::kAtomicRequest, &pi::kAtomicResponse,
};

// `rdmaconf fpdus`: one FPDU as JSON.
nlohmann::json fpdu_json(const FpduEvent& e) {
  nlohmann::json j = place_json(e.dir, e.first_frame, e.last_frame, e.offset);
  j["ulpdu_length"] = e.fpdu->ulpdu_len;
  j["crc"] = e.fpdu->crc_wire;
  j["markers"] = e.markers.size();
  if (e.crc_in_use) j["crc_ok"] = e.fpdu->crc_wire == e.crc_computed;
  if (!e.markers.empty()) {
    // Each marker as its table gives it, and whether every one points back
    // to the start of its FPDU with zero reserved bits (RFC 5044 §5).
    bool ok = true;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : e.markers) {
      list.push_back(protocols::Header::with(pi::kMpaMarker, {{pi::MpaMarker::rsvd, m.rsvd}, {pi::MpaMarker::fpduptr, m.fpduptr}}));
      ok &= m.rsvd == 0 && m.fpduptr == m.expected_ptr;
    }
    j["marker_list"] = std::move(list);
    j["markers_ok"] = ok;
  }
  if (e.ddp->ok()) {
    const auto& s = **e.ddp;
    j["ddp"] = s.ddp;
    if (s.body) j["rdmap"] = *s.body;
  }
  return j;
}

// `rdmaconf mpa-frames`: one MPA Request or Reply as JSON.
nlohmann::json rr_json(const RrEvent& e) {
  nlohmann::json j = place_json(e.dir, e.first_frame, e.last_frame, e.offset);
  j["from_initiator"] = e.from_initiator;
  if (!e.frame) {
    j["error"] = "not a decodable MPA Request or Reply";
    return j;
  }
  const auto kind = e.frame->kind();
  j["kind"] = kind == pi::MpaFrameKind::request ? "request" : kind == pi::MpaFrameKind::reply ? "reply" : "unknown key";
  j["mpa"] = e.frame->hdr;
  if (e.frame->v2) j["mpa_v2"] = *e.frame->v2;
  // Private data as text where it is printable (what applications put there), else hex.
  const auto pd = e.frame->private_data.subspan(e.frame->v2 ? pi::kMpaV2.size : 0);
  std::string text;
  bool printable = true;
  for (auto b : pd) {
    const auto c = static_cast<unsigned char>(b);
    printable &= c >= 0x20 && c < 0x7f;
    text += fmt::format("{:02x}", c);
  }
  if (printable) text.assign(reinterpret_cast<const char*>(pd.data()), pd.size());
  if (!pd.empty()) j["private_data"] = text;
  return j;
}

class Family final : public ProtocolFamily {
 public:
  Family() : ledger_(Ledger::parse(std::span(kLedgerDocuments, kLedgerDocumentCount))) {
    add_iwarp_mpa_setup_cases(cases_);
    add_iwarp_mpa_order_cases(cases_);
    add_iwarp_mpa_enhanced_cases(cases_);
    add_iwarp_mpa_fpdu_cases(cases_);
    add_iwarp_ddp_cases(cases_);
    add_iwarp_rdmap_cases(cases_);
    for (const auto& c : cases_) infos_.push_back(&c->info());
    std::vector<std::size_t> all(cases_.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    all_ = dispatch(all);
  }
  std::string_view name() const override { return kIwarpFamily; }
  std::string_view title() const override { return "iWARP (MPA, DDP, RDMAP over TCP)"; }
  const std::vector<const CaseInfo*>& cases() const override { return infos_; }
  Claims claims(const FamilyOptions&) const override {
    Claims c;
    c.tcp_streams = true;
    return c;
  }
  std::vector<Listing> listings() const override {
    return {{"fpdus", "list every FPDU decoded from a capture, one JSON object per line", "fpdu", "FPDU", kFpduFields},
            {"mpa-frames", "list every MPA Request and Reply decoded from a capture, one JSON object per line", "mpa",
             "MPA Request/Reply", kMpaFields}};
  }
  std::span<const protocols::HeaderDef* const> headers() const override { return kHeaders; }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override;
  const Ledger* ledger() const override { return &ledger_; }
  const IwarpCases& impl() const { return cases_; }

  // Which of a run's cases (indices into `active`) handle each event, in
  // all of them and in those that judge the CRC alone (what a damaged FPDU
  // feeds). Made once for a run of every case, the usual one: each input
  // starts a run, and remaking it was a tenth of what the check of a small
  // input cost (fuzz_capture, callgrind).
  struct Dispatch {
    std::array<std::vector<std::size_t>, 4> handlers, checksum;  // per event bit
    // The FPDU handlers again per kind of FPDU (fpdu_kind): the cases that
    // asked for it, with the function their on_fpdu calls (null: call on_fpdu).
    std::array<std::vector<std::pair<std::size_t, const IwarpFpduFn*>>, kFpduKinds> fpdu;
  };
  Dispatch dispatch(const std::vector<std::size_t>& active) const {
    Dispatch d;
    for (std::size_t i = 0; i < active.size(); ++i) {
      const IwarpCase& c = *cases_[active[i]];
      const bool crc = c.info().id == "iwarp.mpa.fpdu.crc" || c.info().id == "iwarp.mpa.crc.used";
      for (unsigned b = 0; b < d.handlers.size(); ++b) {
        if (!(c.events() & (1u << b))) continue;
        d.handlers[b].push_back(i);
        if (crc) d.checksum[b].push_back(i);
      }
      if (c.events() & IwarpCase::fpdu)
        for (unsigned kind = 0; kind < kFpduKinds; ++kind)
          if (c.fpdu_kinds() >> kind & 1) d.fpdu[kind].emplace_back(i, c.fpdu_fn());
    }
    return d;
  }
  // The run's dispatch: the one made for every case, or `own` made for `active`.
  const Dispatch& dispatch_for(const std::vector<std::size_t>& active, Dispatch& own) const {
    bool every = active.size() == cases_.size();
    for (std::size_t i = 0; every && i < active.size(); ++i) every = active[i] == i;
    if (every) return all_;
    own = dispatch(active);
    return own;
  }

 private:
  Ledger ledger_;
  IwarpCases cases_;
  std::vector<const CaseInfo*> infos_;
  Dispatch all_;
};

class Run final : public FamilyRun, public TcpSink {
 public:
  Run(const Family& f, RunContext& ctx) : ctx_(ctx), dispatch_(f.dispatch_for(ctx.active(), own_dispatch_)) {
    take_active(f.impl(), f.cases(), ctx, cases_, infos_);
  }

  TcpSink* streams() override { return this; }

  struct Conn final : MpaListener {
    Run* run;
    TcpStreamInfo info;
    MpaConnection mpa;
    ScopeState scope;
    IwarpConn view;
    std::uint64_t first_frame = 0, last_frame = 0;
    std::uint64_t crc_failed[2] = {0, 0};  // FPDUs that failed their CRC
    // Each direction's later copies of its octets, compared with the first.
    captures::io::TcpCopies copies[2];
    std::vector<captures::io::TcpCopies::Finding> found;
    std::uint64_t copied[2][2] = {};  // octets per direction with a copy that differs [1] or was not compared [0]
    std::string endpoints[2];              // info.a's and info.b's text, once made (label())
    Conn(Run* r, const TcpStreamInfo& i)
        : run(r),
          info(i),
          mpa(info, *this),
          scope(r->cases_.size()),
          view{&info, &mpa},
          copies{captures::io::TcpCopies(&r->copies_budget_), captures::io::TcpCopies(&r->copies_budget_)} {}
    // Calls f on every case that handles `event` (with `checksum_only`, on
    // the cases that judge the CRC alone).
    template <class F>
    void each(IwarpCase::Event event, F f, bool checksum_only = false) {
      const auto bit = static_cast<unsigned>(std::countr_zero(static_cast<unsigned>(event)));
      for (std::size_t i : checksum_only ? run->dispatch_.checksum[bit] : run->dispatch_.handlers[bit]) {
        CaseCtx c = scope.ctx(i);
        f(*run->cases_[i], c);
      }
    }
    // Names the sides by their roles, once the MPA exchange tells them.
    void label() {
      const int init = mpa.initiator_dir();
      for (int d = 0; d < 2; ++d) {
        if (endpoints[d].empty()) endpoints[d] = endpoint_text(d == 0 ? info.a : info.b);
        scope.sides[d] = fmt::format("{} {}", init < 0 ? "endpoint" : (d == init ? "initiator" : "responder"), endpoints[d]);
      }
    }
    void on_rr(const RrEvent& e) override {
      if (run->ctx_.on_unit) run->ctx_.on_unit("mpa", rr_json(e));
      label();
      each(IwarpCase::rr, [&](const IwarpCase& k, CaseCtx& c) { k.on_rr(c, view, e); });
    }
    void on_fpdu(const FpduEvent& e) override {
      if (run->ctx_.on_unit) run->ctx_.on_unit("fpdu", fpdu_json(e));
      // An FPDU that fails its CRC may carry the link's damage: its content
      // feeds no case but the CRC's, and what it hides (a request, a segment)
      // is a hole the cases that need it see. (A CRC field of zero is one the
      // sender did not compute, iwarp.mpa.crc.used's finding, not damage.)
      crc_failed[e.dir] += e.damaged;
      if (e.damaged)
        scope.artefact(e.dir, "frame {}: the FPDU at stream offset {} failed its CRC, so its content is not used",
                                          e.first_frame, e.offset);
      if (e.damaged) return each(IwarpCase::fpdu, [&](const IwarpCase& k, CaseCtx& c) { k.on_fpdu(c, view, e); }, true);
      for (const auto& [i, fn] : run->dispatch_.fpdu[fpdu_kind(e)]) {
        CaseCtx c = scope.ctx(i);
        if (fn) (*fn)(c, view, e);
        else run->cases_[i]->on_fpdu(c, view, e);
      }
    }
    // Octets with another copy in the capture: what their frames show may
    // not be what the receiver took.
    void record_copies(int dir) {
      for (const auto& f : found) {
        copied[dir][f.compared] += f.len;
        const std::string first =
            f.first ? (f.first == f.last ? fmt::format("frame {}", f.first) : fmt::format("frames {} to {}", f.first, f.last))
                    : std::string("a frame no longer kept");
        // Both copies' frames: the octets the cases read may be either's.
        const std::uint64_t lo = f.first ? std::min(f.first, f.frame) : 0, hi = std::max(f.last, f.frame);
        if (f.compared)
          scope.copies_between(dir, lo, hi, true,
                               "frame {} retransmits stream offsets {} to {} with other octets than {}, before the peer "
                               "acknowledged them: which copy the receiver took the capture cannot tell",
                               f.frame, f.offset, f.offset + f.len - 1, first);
        else
          scope.copies_between(dir, lo, hi, false,
                               "frame {} retransmits stream offsets {} to {} (first sent in {}) before the peer acknowledged "
                               "them, too long after the first copy to be compared with it: which copy the receiver took "
                               "the capture cannot tell",
                               f.frame, f.offset, f.offset + f.len - 1, first);
      }
      found.clear();
    }
    void on_stop(const StopEvent& e) override {
      label();
      if (e.gap) scope.artefact(e.dir, "frame {}: {}", e.frame, e.reason);
      each(IwarpCase::stop, [&](const IwarpCase& k, CaseCtx& c) { k.on_stop(c, view, e); });
    }
  };

  void on_open(const TcpStreamInfo& c) override { conns_[c.id] = std::make_unique<Conn>(this, c); }
  void on_data(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes data, std::uint64_t frame,
               std::uint64_t acked) override {
    Conn& k = *conns_[c.id];
    k.info = c;  // the SYN-ACK's MSS and the directions' starts arrive after on_open
    if (!k.first_frame) k.first_frame = frame;
    k.last_frame = frame;
    k.copies[dir].data(off, data, frame, k.found);
    if (!k.found.empty()) k.record_copies(dir);
    k.mpa.data(dir, off, data, frame, acked);
  }
  void on_resent(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes copy, std::uint64_t frame) override {
    Conn& k = *conns_[c.id];
    k.copies[dir].resent(off, copy, frame, k.found);
    if (!k.found.empty()) k.record_copies(dir);
  }
  // Past a reassembly limit the octets no longer come in the order the
  // endpoints saw them: what the order could explain is no FAIL.
  void on_limit(const TcpStreamInfo& c, int dir, std::uint64_t frame, const char* why) override {
    Conn& k = *conns_[c.id];
    k.scope.artefact(dir, "frame {}: {}", frame, why);
    // (A jump is the traffic's; the buffer limits are this run's, and depend on how it was split over threads.)
    if (why == captures::io::kSequenceJump) k.mpa.note(dir, fmt::format("frame {}: {}", frame, why));
  }
  void on_gap(const TcpStreamInfo& c, int dir, std::uint64_t off, std::uint64_t len, std::uint64_t frame) override {
    Conn& k = *conns_[c.id];
    k.copies[dir].gap(off, len, k.found);
    if (!k.found.empty()) k.record_copies(dir);
    k.mpa.gap(dir, off, len, frame);
  }
  void on_close(const TcpStreamInfo& c, bool reset, std::uint64_t frame) override {
    auto it = conns_.find(c.id);
    Conn& k = *it->second;
    k.info = c;  // which directions ended with a FIN
    k.view.reset = reset;
    for (int d = 0; d < 2; ++d) {
      k.copies[d].finish(k.found);
      if (!k.found.empty()) k.record_copies(d);
    }
    k.mpa.close(frame);
    if (k.mpa.is_mpa()) {
      ++connections_;
      for (int d = 0; d < 2; ++d)
        if (!c.start_known[d]) k.scope.artefact(d, "the capture starts after this direction's first octets");
      k.each(IwarpCase::close, [&](const IwarpCase& cs, CaseCtx& ctx) { cs.on_close(ctx, k.view); });
      ScopeResult r;
      r.family = kIwarpFamily;
      r.id = fmt::format("tcp/{}", c.id);
      const int init = k.mpa.initiator_dir();
      k.label();
      r.label = fmt::format("{} -> {}", k.endpoints[init == 1 ? 1 : 0], k.endpoints[init == 1 ? 0 : 1]);
      Params params = negotiated_params(k.mpa.negotiated());
      params.set("fpdus_from_initiator", k.mpa.fpdus(init == 1 ? 1 : 0));
      params.set("fpdus_from_responder", k.mpa.fpdus(init == 1 ? 0 : 1));
      params.set("capture_starts_mid_connection", !c.saw_syn);
      for (int d = 0; d < 2; ++d) {
        const bool from_init = init < 0 ? d == 0 : d == init;
        const std::string who = init < 0 ? (d == 0 ? "a" : "b") : (from_init ? "initiator" : "responder");
        if (k.mpa.inferred_start(d) >= 0) params.set("framing_found_at_offset_" + who, k.mpa.inferred_start(d));
        if (k.mpa.markers(d)) params.set("markers_from_" + who, true);
        if (k.mpa.skipped_exchange(d)) params.set("fpdus_without_mpa_frame_from_" + who, true);
        if (!k.mpa.resyncs(d).empty()) {
          std::vector<std::string> v;
          for (const auto& x : k.mpa.resyncs(d))
            v.push_back(Params{}
                            .set("octets_again_at", x.gap_end)
                            .set("framing_found_at", x.resumed)
                            .set("octets_skipped", x.resumed - x.gap_end)
                            .text());
          params.set_json("framing_found_again_after_gaps_" + who, json_array(v));
        }
      }
      r.params = params.text();
      for (int d = 0; d < 2; ++d) {
        const auto cov = k.mpa.coverage(d);
        r.coverage.push_back({k.scope.sides[d], "octets", cov.captured, cov.judged, cov.missing, cov.why});
        if (k.crc_failed[d]) r.coverage.back().why.push_back(fmt::format("{} FPDU(s) failed their CRC: only the CRC judged", k.crc_failed[d]));
        if (k.copied[d][1])
          r.coverage.back().why.push_back(fmt::format(
              "{} octet(s) retransmitted with other content before the peer acknowledged them: FAILs they show are "
              "INCONCLUSIVE", k.copied[d][1]));
        if (k.copied[d][0])
          r.coverage.back().why.push_back(fmt::format(
              "{} octet(s) retransmitted before the peer acknowledged them, too long after the first copy to compare: "
              "FAILs they show are INCONCLUSIVE", k.copied[d][0]));
      }
      r.first_frame = k.first_frame;
      r.last_frame = k.last_frame;
      r.outcomes = k.scope.outcomes(infos_);
      r.order = c.id;
      r.tcp_stream = c.id;
      ctx_.scope_done(std::move(r));
    } else if (k.mpa.coverage(0).captured + k.mpa.coverage(1).captured > 0) {
      // Nothing skipped silently: a connection with data that is not read as
      // iWARP is named with the reason (at its close, where that is known).
      ++not_iwarp_;
      k.label();
      ctx_.notice(frame, fmt::format("TCP connection {} <-> {} (data in frames {} to {}) not read as iWARP: {}",
                                     k.endpoints[0], k.endpoints[1], k.first_frame, k.last_frame,
                                     c.start_known[0] || c.start_known[1]
                                         ? "neither side's first octets are an MPA Request or Reply, or an FPDU (a valid DDP "
                                           "header, or a CRC that checks)"
                                         : "the capture starts mid-connection and no run of FPDUs was found in it"));
    }
    conns_.erase(it);
  }

  void finish(std::vector<ScopeResult>&, std::vector<FamilyCount>& counts) override {
    // (Every connection was closed by the reassembler's finish and handed on.)
    counts.push_back({"iwarp_connections", "iWARP connections", connections_});
    counts.push_back({"tcp_not_iwarp", "TCP connections with data not read as iWARP", not_iwarp_});
  }

 private:
  RunContext& ctx_;
  std::vector<const IwarpCase*> cases_;
  std::vector<const CaseInfo*> infos_;
  Family::Dispatch own_dispatch_;  // (used when not every case runs)
  const Family::Dispatch& dispatch_;
  // What the connections keep to compare retransmitted octets with their
  // first copies, all together (declared before conns_, which give it back).
  captures::io::TcpCopies::Budget copies_budget_{32u << 20, 0};
  std::map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::uint64_t connections_ = 0;
  std::uint64_t not_iwarp_ = 0;
};

std::unique_ptr<FamilyRun> Family::start(RunContext& ctx) const { return std::make_unique<Run>(*this, ctx); }

}  // namespace

const ProtocolFamily& family() {
  static const Family f;
  return f;
}

}  // namespace iwarp
}  // namespace rdmaconf::conformance

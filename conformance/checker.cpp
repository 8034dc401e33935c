#include "conformance/checker.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "conformance/capture/pcap_reader.hpp"
#include "conformance/capture/tcp_reassembly.hpp"

namespace rdmaconf::conformance {

using namespace capture;
namespace ib = protocols::ib;

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict) {
  if (c.level != Level::must && !strict) return false;
  if (patterns.empty()) return true;
  const std::string id(c.id);
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return fnmatch(p.c_str(), id.c_str(), 0) == 0; });
}

Checker::Checker(CheckOptions o) : opt_(std::move(o)) {
  const auto& cat = Catalog::get();
  for (const auto& c : cat.iwarp)
    if (case_selected(c->info(), opt_.case_patterns, opt_.strict)) iwarp_.push_back(c.get());
  for (const auto& c : cat.roce)
    if (case_selected(c->info(), opt_.case_patterns, opt_.strict)) roce_.push_back(c.get());
}

std::vector<const CaseInfo*> Checker::active_cases() const {
  std::vector<const CaseInfo*> v;
  for (auto* c : iwarp_) v.push_back(&c->info());
  for (auto* c : roce_) v.push_back(&c->info());
  return v;
}

namespace {

std::string endpoint_text(const Endpoint& e) { return fmt::format("{}:{}", format_address(e.ip_version, e.addr), e.port); }

// Tallies and per-case state of one scope.
struct ScopeState {
  std::vector<Tally> tallies;
  std::vector<std::unique_ptr<CaseState>> slots;
  std::string sides[2];
  explicit ScopeState(std::size_t n) : tallies(n), slots(n) {}
  CaseCtx ctx(std::size_t i) { return CaseCtx{tallies[i], slots[i], sides}; }
};

template <class CaseT>
std::vector<CaseOutcome> outcomes(const std::vector<const CaseT*>& cases, ScopeState& s) {
  std::vector<CaseOutcome> v;
  for (std::size_t i = 0; i < cases.size(); ++i) v.push_back(CaseOutcome{&cases[i]->info(), std::move(s.tallies[i])});
  return v;
}

nlohmann::json side_json(const iwarp::MpaSide& s) {
  nlohmann::json j = {{"revision", s.rev}, {"crc", s.crc}, {"markers", s.markers}, {"rejected", s.reject}};
  if (s.ird) j["ird"] = *s.ird, j["ord"] = *s.ord, j["p2p"] = s.p2p;
  return j;
}

nlohmann::json negotiated_json(const iwarp::Negotiated& n) {
  nlohmann::json j;
  if (n.req.seen) j["initiator"] = side_json(n.req);
  if (n.rep.seen) j["responder"] = side_json(n.rep);
  j["crc"] = n.crc();
  j["markers_from_initiator"] = n.markers_from_initiator();
  j["markers_from_responder"] = n.markers_from_responder();
  j["enhanced"] = n.enhanced;
  j["inferred"] = n.inferred;  // true: no Request/Reply in the capture; CRC use found from the FPDUs
  return j;
}

class Run final : public TcpSink {
 public:
  Run(const std::vector<const IwarpCase*>& iw, const std::vector<const RoceCase*>& rc, InputResult& out,
      const CheckOptions& opt)
      : iwarp_(iw), roce_(rc), out_(out), fpdu_hook_(opt.on_fpdu), roce_hook_(opt.on_roce), roce_mtu_(opt.roce_mtu) {
    for (std::size_t i = 0; i < iw.size(); ++i)
      for (unsigned b = 0; b < handlers_.size(); ++b)
        if (iw[i]->events() & (1u << b)) handlers_[b].push_back(i);
  }

  struct Conn final : iwarp::MpaListener {
    Run* run;
    TcpStreamInfo info;
    iwarp::MpaConnection mpa;
    ScopeState scope;
    IwarpConn view;
    std::uint64_t first_frame = 0, last_frame = 0;
    Conn(Run* r, const TcpStreamInfo& i)
        : run(r), info(i), mpa(info, *this), scope(r->iwarp_.size()), view{&info, &mpa} {}
    // Calls f on every case that handles `event`.
    template <class F>
    void each(IwarpCase::Event event, F f) {
      for (std::size_t i : run->handlers_[static_cast<unsigned>(std::countr_zero(static_cast<unsigned>(event)))]) {
        CaseCtx c = scope.ctx(i);
        f(*run->iwarp_[i], c);
      }
    }
    void label() {
      const int init = mpa.initiator_dir();
      for (int d = 0; d < 2; ++d) {
        const Endpoint& e = d == 0 ? info.a : info.b;
        scope.sides[d] = fmt::format("{} {}", init < 0 ? "endpoint" : (d == init ? "initiator" : "responder"), endpoint_text(e));
      }
    }
    void on_rr(const iwarp::RrEvent& e) override {
      label();
      each(IwarpCase::rr, [&](const IwarpCase& k, CaseCtx& c) { k.on_rr(c, view, e); });
    }
    void on_fpdu(const iwarp::FpduEvent& e) override {
      if (run->fpdu_hook_) run->fpdu_hook_(e);
      each(IwarpCase::fpdu, [&](const IwarpCase& k, CaseCtx& c) { k.on_fpdu(c, view, e); });
    }
    void on_stop(const iwarp::StopEvent& e) override {
      label();
      each(IwarpCase::stop, [&](const IwarpCase& k, CaseCtx& c) { k.on_stop(c, view, e); });
    }
  };

  void on_open(const TcpStreamInfo& c) override {
    ++out_.stats.tcp_connections;
    conns_[c.id] = std::make_unique<Conn>(this, c);
  }
  void on_data(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes data, std::uint64_t frame) override {
    Conn& k = *conns_[c.id];
    k.info.mss[0] = c.mss[0];  // the SYN-ACK's MSS arrives after on_open
    k.info.mss[1] = c.mss[1];
    if (!k.first_frame) k.first_frame = frame;
    k.last_frame = frame;
    k.mpa.data(dir, off, data, frame);
  }
  void on_gap(const TcpStreamInfo& c, int dir, std::uint64_t off, std::uint64_t len, std::uint64_t frame) override {
    conns_[c.id]->mpa.gap(dir, off, len, frame);
  }
  void on_close(const TcpStreamInfo& c, bool, std::uint64_t frame) override {
    auto it = conns_.find(c.id);
    Conn& k = *it->second;
    k.mpa.close(frame);
    if (k.mpa.is_mpa()) {
      ++out_.stats.iwarp_connections;
      k.each(IwarpCase::close, [&](const IwarpCase& cs, CaseCtx& ctx) { cs.on_close(ctx, k.view); });
      ScopeResult r;
      r.family = Family::iwarp;
      r.id = fmt::format("tcp/{}", c.id);
      const int init = k.mpa.initiator_dir();
      const Endpoint& i = init == 1 ? c.b : c.a;
      const Endpoint& p = init == 1 ? c.a : c.b;
      r.label = fmt::format("{} -> {}", endpoint_text(i), endpoint_text(p));
      r.params = negotiated_json(k.mpa.negotiated());
      r.params["fpdus_from_initiator"] = k.mpa.fpdus(init == 1 ? 1 : 0);
      r.params["fpdus_from_responder"] = k.mpa.fpdus(init == 1 ? 0 : 1);
      r.params["capture_starts_mid_connection"] = !c.saw_syn;
      for (int d = 0; d < 2; ++d) {
        const bool from_init = init < 0 ? d == 0 : d == init;
        const char* who = init < 0 ? (d == 0 ? "a" : "b") : (from_init ? "initiator" : "responder");
        if (k.mpa.inferred_start(d) >= 0) r.params[fmt::format("framing_found_at_offset_{}", who)] = k.mpa.inferred_start(d);
        if (k.mpa.markers(d)) r.params[fmt::format("markers_from_{}", who)] = true;
      }
      r.first_frame = k.first_frame;
      r.last_frame = k.last_frame;
      r.outcomes = outcomes(iwarp_, k.scope);
      finished_.emplace(c.id, std::move(r));
    }
    conns_.erase(it);
  }

  // ---- RoCEv2
  struct RoceConv {
    ScopeState scope;
    std::uint64_t id = 0, first_frame = 0, last_frame = 0, packets = 0;
    std::string label;
    std::map<std::uint32_t, std::uint64_t> qps;
    roce::Conversation qp;
    RoceConv(std::size_t n, std::uint32_t pmtu) : scope(n), qp(pmtu) {}
  };

  void roce(const Packet& p) {
    ++out_.stats.roce_packets;
    const bool forward = std::make_pair(p.src, p.sport) <= std::make_pair(p.dst, p.dport);
    const Address& lo = forward ? p.src : p.dst;
    const Address& hi = forward ? p.dst : p.src;
    auto key = std::make_pair(lo, hi);
    auto it = roce_conv_.find(key);
    if (it == roce_conv_.end()) {
      auto c = std::make_unique<RoceConv>(roce_.size(), roce_mtu_);
      c->id = ++roce_ids_;
      c->first_frame = p.frame;
      // Both ends on one address (a loopback run): the UDP ports tell the sides apart.
      const bool one_address = lo == hi;
      const std::string a = format_address(p.ip_version, lo) + (one_address ? fmt::format(":{}", forward ? p.sport : p.dport) : ""),
                        b = format_address(p.ip_version, hi) + (one_address ? fmt::format(":{}", forward ? p.dport : p.sport) : "");
      c->label = fmt::format("{} <-> {}", a, b);
      c->scope.sides[0] = fmt::format("{} -> {}", a, b);
      c->scope.sides[1] = fmt::format("{} -> {}", b, a);
      it = roce_conv_.emplace(key, std::move(c)).first;
    }
    RoceConv& c = *it->second;
    c.last_frame = p.frame;
    ++c.packets;
    const auto pkt = ib::decode_transport(p.payload);
    RocePacketEvent e;
    e.pkt = &p;
    e.ib = &pkt;
    e.dir = forward ? 0 : 1;  // by address, or by UDP port when both ends share one
    if (pkt.ok()) {
      c.qps[static_cast<std::uint32_t>(pkt->bth.get(ib::Bth::destqp))]++;
      const bool judged = !roce_.empty() || roce_hook_;
      if (judged)
        e.icrc_computed = p.native_ib ? ib::native_icrc(p.l3)
                          : p.roce_v1 ? ib::roce_v1_icrc(p.l3)
                                      : ib::roce_icrc(p.l3, p.ip_version == 6, p.ip_header_len);
      e.facts = &c.qp.packet(e.dir, *pkt, p.frame, judged && e.icrc_computed != pkt->icrc);
    }
    if (roce_hook_) roce_hook_(e);
    for (std::size_t i = 0; i < roce_.size(); ++i) {
      CaseCtx ctx = c.scope.ctx(i);
      roce_[i]->on_packet(ctx, e);
    }
  }

  void finish() {
    for (auto& [id, r] : finished_) out_.scopes.push_back(std::move(r));
    std::vector<RoceConv*> convs;
    for (auto& [k, c] : roce_conv_) convs.push_back(c.get());
    std::sort(convs.begin(), convs.end(), [](auto* x, auto* y) { return x->id < y->id; });
    for (RoceConv* c : convs) {
      ScopeResult r;
      r.family = Family::roce;
      r.id = fmt::format("roce/{}", c->id);
      r.label = c->label;
      r.params["packets"] = c->packets;
      nlohmann::json qps = nlohmann::json::array();
      for (auto& [qp, n] : c->qps) qps.push_back({{"dest_qp", qp}, {"packets", n}});
      r.params["dest_qps"] = qps;
      if (c->qp.pmtu()) r.params["path_mtu"] = c->qp.pmtu();
      r.params["path_mtu_inferred"] = c->qp.pmtu_inferred();
      nlohmann::json flows = nlohmann::json::array();
      for (const auto* f : c->qp.request_flows())
        flows.push_back({{"from", c->scope.sides[f->dir]}, {"dest_qp", f->dqp}, {"transport", ib::transport_name(f->transport)},
                         {"packets", f->packets}, {"answered_by_qp", f->resp ? nlohmann::json(f->resp->dqp) : nlohmann::json()}});
      r.params["request_flows"] = flows;
      const roce::Closing closing = c->qp.close();
      for (std::size_t i = 0; i < roce_.size(); ++i) {
        CaseCtx ctx = c->scope.ctx(i);
        roce_[i]->on_close(ctx, closing);
      }
      r.first_frame = c->first_frame;
      r.last_frame = c->last_frame;
      r.outcomes = outcomes(roce_, c->scope);
      out_.scopes.push_back(std::move(r));
    }
  }

 private:
  const std::vector<const IwarpCase*>& iwarp_;
  const std::vector<const RoceCase*>& roce_;
  InputResult& out_;
  const std::function<void(const iwarp::FpduEvent&)>& fpdu_hook_;
  const std::function<void(const RocePacketEvent&)>& roce_hook_;
  std::uint32_t roce_mtu_;
  std::array<std::vector<std::size_t>, 4> handlers_;  // case indices per event bit
  std::map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::map<std::uint64_t, ScopeResult> finished_;  // by connection number, for a stable order
  std::map<std::pair<Address, Address>, std::unique_ptr<RoceConv>> roce_conv_;
  std::uint64_t roce_ids_ = 0;
};

constexpr std::size_t kMaxWarnings = 20;

void warn(InputResult& r, std::string w) {
  if (r.warnings.size() < kMaxWarnings) r.warnings.push_back(std::move(w));
  ++r.warnings_total;
}

}  // namespace

InputResult Checker::check_file(const std::string& path) const {
  InputResult out;
  out.path = path;
  std::string err;
  auto reader = PcapReader::open(path, err, opt_.hash);
  if (!reader) {
    out.error = err;
    return out;
  }
  out.linktype = linktype_name(reader->linktype());
  if (!supported_linktype(reader->linktype())) {
    out.error = fmt::format("{}: link type {} is not supported (Ethernet, Linux cooked v1/v2, raw IP and InfiniBand are)", path,
                            out.linktype);
    out.sha256 = reader->sha256();
    return out;
  }
  Run run(iwarp_, roce_, out, opt_);
  TcpReassembler tcp(run);
  std::uint64_t last = 0;
  while (auto f = reader->next()) {
    last = f->number;
    ++out.stats.frames;
    out.stats.octets += f->data.size();
    if (opt_.progress && (f->number & 0xfff) == 0) opt_.progress(reader->bytes_read(), reader->file_size());
    const Dissected d = dissect(reader->linktype(), *f);
    if (d.status == DissectStatus::error) {
      ++out.stats.undecodable_frames;
      warn(out, fmt::format("{}: {}", path, d.error));
      continue;
    }
    if (d.status != DissectStatus::ok) continue;
    if (d.pkt.ib_without_udp()) {
      run.roce(d.pkt);
    } else if (d.pkt.protocol == 6) {
      tcp.add(d.pkt);
    } else if (d.pkt.protocol == 17 &&
               std::find(opt_.roce_ports.begin(), opt_.roce_ports.end(), d.pkt.dport) != opt_.roce_ports.end()) {
      run.roce(d.pkt);
    }
  }
  if (!reader->error().empty()) out.error = reader->error();
  tcp.finish(last);
  run.finish();
  out.sha256 = reader->sha256();
  if (opt_.progress) opt_.progress(reader->file_size(), reader->file_size());
  return out;
}

}  // namespace rdmaconf::conformance

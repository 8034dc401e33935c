#include "conformance/checker.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "captures/io/pcap_reader.hpp"
#include "captures/io/tcp_reassembly.hpp"

namespace rdmaconf::conformance {

using namespace captures::io;

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict) {
  if (c.level != Level::must && !strict) return false;
  if (patterns.empty()) return true;
  const std::string id(c.id);
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return fnmatch(p.c_str(), id.c_str(), 0) == 0; });
}

Checker::Checker(CheckOptions o) : opt_(std::move(o)) {
  const auto& all = opt_.families.empty() ? Registry::get().families() : opt_.families;
  for (const auto* f : all) {
    Active a{f, {}, f->claims(opt_.family_options)};
    for (std::size_t i = 0; i < f->cases().size(); ++i)
      if (case_selected(*f->cases()[i], opt_.case_patterns, opt_.strict)) a.cases.push_back(i);
    families_.push_back(std::move(a));
  }
}

std::vector<const CaseInfo*> Checker::active_cases() const {
  std::vector<const CaseInfo*> v;
  for (const auto& a : families_)
    for (std::size_t i : a.cases) v.push_back(a.family->cases()[i]);
  return v;
}

namespace {

// Every TCP stream goes to each family that reads streams; the stream count
// is the capture's, whoever keeps the stream.
class StreamFanOut final : public TcpSink {
 public:
  StreamFanOut(std::vector<TcpSink*> sinks, std::uint64_t& opened) : sinks_(std::move(sinks)), opened_(opened) {}
  void on_open(const TcpStreamInfo& c) override {
    ++opened_;
    for (auto* s : sinks_) s->on_open(c);
  }
  void on_data(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes data, std::uint64_t frame,
               std::uint64_t acked) override {
    for (auto* s : sinks_) s->on_data(c, dir, off, data, frame, acked);
  }
  void on_gap(const TcpStreamInfo& c, int dir, std::uint64_t off, std::uint64_t len, std::uint64_t frame) override {
    for (auto* s : sinks_) s->on_gap(c, dir, off, len, frame);
  }
  void on_close(const TcpStreamInfo& c, bool reset, std::uint64_t frame) override {
    for (auto* s : sinks_) s->on_close(c, reset, frame);
  }
  void on_limit(const TcpStreamInfo& c, int dir, std::uint64_t frame, const char* why) override {
    for (auto* s : sinks_) s->on_limit(c, dir, frame, why);
  }

 private:
  std::vector<TcpSink*> sinks_;
  std::uint64_t& opened_;
};

template <class Key>
FamilyRun* owner(const std::vector<std::pair<Key, FamilyRun*>>& claims, Key k) {
  for (const auto& [key, run] : claims)
    if (key == k) return run;
  return nullptr;
}

}  // namespace

InputResult Checker::check_file(const std::string& path) const {
  std::string err;
  return check(path, PcapReader::open(path, err, opt_.hash), err);
}

InputResult Checker::check_memory(const std::string& name, protocols::Bytes data) const {
  std::string err;
  return check(name, PcapReader::open_memory(name, data, err, opt_.hash), err);
}

struct CheckRun::Impl {
  const Checker& checker;
  const CheckOptions& opt;
  std::string path;
  int linktype;
  InputResult& out;
  bool refused = false;  // no one reads the link type
  // Each family's run on this input, and who gets what.
  std::vector<std::unique_ptr<RunContext>> contexts;
  std::vector<std::unique_ptr<FamilyRun>> runs;
  std::vector<std::pair<std::uint16_t, FamilyRun*>> by_port, by_ethertype;
  std::vector<FamilyRun*> all_udp;  // families that see every UDP datagram
  FamilyRun* whole_link = nullptr;  // a family that owns the input's link type
  std::unique_ptr<StreamFanOut> fan;
  std::unique_ptr<TcpReassembler> tcp;
  std::unique_ptr<RunContext> capture_ctx;
  std::uint64_t last = 0;
  std::int64_t latest_ts = std::numeric_limits<std::int64_t>::min();
  std::uint64_t latest_frame = 0;

  Impl(const Checker& c, std::string p, int lt, InputResult& o)
      : checker(c), opt(c.opt_), path(std::move(p)), linktype(lt), out(o) {
    out.path = path;
    out.linktype = linktype_name(linktype);
    std::vector<TcpSink*> stream_sinks;
    for (const auto& a : checker.families_) {
      contexts.push_back(std::make_unique<RunContext>(out, opt.family_options, a.cases, [this](ScopeResult&& r) { sink(std::move(r)); },
                                                      opt.reassembly.idle_timeout_us));
      if (opt.on_unit && (opt.listing_family.empty() || a.family->name() == opt.listing_family))
        contexts.back()->on_unit = [this, f = a.family](std::string_view unit, nlohmann::json&& j) {
          if (opt.listing_unit.empty() || unit == opt.listing_unit) opt.on_unit(*f, unit, std::move(j));
        };
      contexts.back()->on_warning = opt.on_warning;
      runs.push_back(a.family->start(*contexts.back()));
      FamilyRun* run = runs.back().get();
      if (a.claims.tcp_streams)
        if (auto* s = run->streams()) stream_sinks.push_back(s);
      if (a.claims.all_udp) all_udp.push_back(run);
      for (auto port : a.claims.udp_ports)
        if (!owner(by_port, port)) by_port.emplace_back(port, run);
      for (auto t : a.claims.ethertypes)
        if (!owner(by_ethertype, t)) by_ethertype.emplace_back(t, run);
      if (!whole_link && std::find(a.claims.linktypes.begin(), a.claims.linktypes.end(), linktype) != a.claims.linktypes.end())
        whole_link = run;
    }
    if (!whole_link && !supported_linktype(linktype)) {
      std::string claimed;
      for (const auto& a : checker.families_)
        for (int t : a.claims.linktypes) claimed += ", " + linktype_name(t);
      out.error = fmt::format("{}: link type {} is not supported (Ethernet, Linux cooked v1/v2, raw IP{} are)", path,
                              out.linktype, claimed);
      refused = true;
      return;
    }
    fan = std::make_unique<StreamFanOut>(stream_sinks, out.stats.tcp_connections);
    tcp = std::make_unique<TcpReassembler>(*fan, opt.reassembly);
    capture_ctx = std::make_unique<RunContext>(out, opt.family_options, std::vector<std::size_t>{});
    capture_ctx->on_warning = opt.on_warning;
  }

  // Where ended scopes go: counted, then streamed out or kept.
  void sink(ScopeResult&& r) {
    for (const auto& o : r.outcomes) out.verdicts.add(o.tally.verdict());
    if (opt.on_scope) opt.on_scope(path, std::move(r));
    else out.scopes.push_back(std::move(r));
  }

  void frame(const Frame& f) {
    last = f.number;
    ++out.stats.frames;
    // File-level sanity: warned with the frame number, never silent.
    if (f.caplen > f.orig_len)
      capture_ctx->anomaly(f.number, fmt::format("frame {}: captured length {} is greater than the original length {} (an "
                                       "inconsistent record; judged as captured)",
                                       f.number, f.caplen, f.orig_len));
    if (const std::int64_t ts = f.ts_sec * 1000000 + f.ts_usec; ts < latest_ts)
      capture_ctx->anomaly(f.number, fmt::format("frame {}: timestamp {} us earlier than frame {}'s", f.number, latest_ts - ts, latest_frame));
    else {
      latest_ts = ts;
      latest_frame = f.number;
    }
    out.stats.octets += f.data.size();
    if (whole_link) {
      Packet p;
      p.frame = f.number;
      p.ts_us = f.ts_sec * 1000000 + f.ts_usec;
      p.l3 = f.data;
      p.orig_len = f.orig_len;
      whole_link->packet(p);
      return;
    }
    const Dissected d = dissect(linktype, f);
    switch (d.status) {
      case DissectStatus::error:
        capture_ctx->undecodable(f.number, d.error);
        if (d.udp_bad_length)
          for (auto* u : all_udp) u->packet(d.pkt);
        break;
      case DissectStatus::link:
        if (auto* r = owner(by_ethertype, d.pkt.ethertype)) r->packet(d.pkt);
        break;
      case DissectStatus::ok:
        if (d.pkt.protocol == 6) {
          tcp->add(d.pkt);
        } else if (d.pkt.protocol == 17) {
          auto* r = owner(by_port, d.pkt.dport);
          if (r) r->packet(d.pkt);
          for (auto* u : all_udp)
            if (u != r) u->packet(d.pkt);
        }
        break;
      case DissectStatus::other:
        break;
    }
  }

  void finish() {
    if (refused) return;
    tcp->finish(last);
    for (auto& r : runs) {
      std::vector<ScopeResult> open;
      r->finish(open, out.stats.families);
      for (auto& s : open) sink(std::move(s));
    }
    // Kept scopes: each family's, in the family's order, families in turn.
    const auto& fams = checker.families_;
    auto rank = [&](const ScopeResult& s) {
      std::size_t f = 0;
      while (f < fams.size() && fams[f].family->name() != s.family) ++f;
      return f;
    };
    std::stable_sort(out.scopes.begin(), out.scopes.end(), [&](const ScopeResult& x, const ScopeResult& y) {
      const auto fx = rank(x), fy = rank(y);
      return fx != fy ? fx < fy : x.order < y.order;
    });
  }
};

CheckRun::CheckRun(const Checker& c, std::string path, int linktype, InputResult& out)
    : impl_(std::make_unique<Impl>(c, std::move(path), linktype, out)) {}
CheckRun::~CheckRun() = default;
void CheckRun::frame(const Frame& f) {
  if (!impl_->refused) impl_->frame(f);
}
void CheckRun::finish() { impl_->finish(); }

InputResult Checker::check(const std::string& path, std::unique_ptr<PcapReader> reader, const std::string& open_error) const {
  InputResult out;
  out.path = path;
  if (!reader) {
    out.error = open_error;
    return out;
  }
  {
    CheckRun run(*this, path, reader->linktype(), out);
    if (!out.error.empty()) {
      out.sha256 = reader->sha256();
      return out;
    }
    while (auto f = reader->next()) {
      run.frame(*f);
      if (opt_.progress && (f->number & 0xfff) == 0) opt_.progress(reader->bytes_read(), reader->file_size());
    }
    if (!reader->error().empty()) out.error = reader->error();
    run.finish();
  }
  out.sha256 = reader->sha256();
  if (opt_.progress) opt_.progress(reader->file_size(), reader->file_size());
  return out;
}

}  // namespace rdmaconf::conformance

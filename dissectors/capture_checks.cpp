#include "dissectors/capture_checks.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace rdmaconf::dissectors {

using namespace conformance;

const std::vector<std::pair<const ProtocolFamily*, std::vector<Listing>>>& CaptureChecks::listings() {
  static const auto all = [] {
    std::vector<std::pair<const ProtocolFamily*, std::vector<Listing>>> v;
    for (const auto* f : Registry::get().families()) v.emplace_back(f, f->listings());
    return v;
  }();
  return all;
}

CaptureChecks::CaptureChecks(bool strict, FamilyOptions options) {
  CheckOptions o;
  o.strict = strict;
  o.family_options = std::move(options);
  o.hash = false;
  o.reassembly.idle_timeout_us = static_cast<std::int64_t>(kDefaultIdleTimeoutS) * 1000000;
  // Units of every family, each stored on the frame it ends in.
  o.on_unit = [this](const ProtocolFamily& f, std::string_view unit, nlohmann::json&& j) {
    const Listing* listing = nullptr;
    for (const auto& [fam, ls] : listings())
      if (fam == &f)
        for (const auto& l : ls)
          if (l.unit == unit) listing = &l;
    const auto frame = j.value("frame", std::uint64_t{0});
    if (frame) notes_[frame].units.push_back({listing, std::move(j)});
  };
  o.on_warning = [this](std::uint64_t frame, bool undecodable, const std::string& message) {
    notes_[frame].warnings.push_back({undecodable, message});
  };
  // Scopes that end (a connection closed, a conversation idle) are stored
  // at once; the rest when the pass ends.
  o.on_scope = [this](const std::string&, ScopeResult&& s) { scope_done(s); };
  checker_ = std::make_unique<Checker>(std::move(o));
}

CaptureChecks::~CaptureChecks() = default;

void CaptureChecks::scope_done(const ScopeResult& s) {
  const std::string scope = fmt::format("{} {}", s.id, s.label);
  const Evidence* last = nullptr;
  each_shown_verdict(s, [&](std::uint64_t frame, const CaseOutcome& o, const Evidence& e) {
    notes_[frame].verdicts.push_back({o.info, o.tally.verdict(), scope, e});
    if (&e == last) return;  // the evidence's other frames
    last = &e;
    if (finished_) ++at_finish_;
    else if (e.frames.empty() ? s.first_frame < last_frame_
                              : *std::max_element(e.frames.begin(), e.frames.end()) < last_frame_)
      late_.push_back({o.info, o.tally.verdict(), scope, e});
  });
}

void CaptureChecks::frame(std::uint64_t number, int linktype, std::int64_t ts_sec, std::int64_t ts_usec,
                          std::uint32_t orig_len, protocols::Bytes data) {
  if (finished_) {
    ++skipped_;
    return;
  }
  if (!run_) {
    linktype_ = linktype;
    run_ = std::make_unique<CheckRun>(*checker_, "capture", linktype, out_);
  }
  if (linktype != linktype_) {
    ++skipped_;
    return;
  }
  last_frame_ = number;
  captures::io::Frame f;
  f.number = number;
  f.ts_sec = ts_sec;
  f.ts_usec = ts_usec;
  f.orig_len = orig_len;
  f.caplen = static_cast<std::uint32_t>(data.size());
  f.data = data;
  run_->frame(f);
}

void CaptureChecks::finish() {
  if (finished_) return;
  finished_ = true;
  late_.clear();
  if (run_) run_->finish();
}

const FrameNotes* CaptureChecks::notes(std::uint64_t frame) const {
  auto it = notes_.find(frame);
  return it == notes_.end() ? nullptr : &it->second;
}

}  // namespace rdmaconf::dissectors

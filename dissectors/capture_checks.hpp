#pragma once
// What the Wireshark plugin knows of the capture it is shown: the checker
// (the same code `rdmaconf check` runs) fed with the frames of Wireshark's
// first, sequential pass, and what it found stored by frame number so that
// any later dissection of a frame (the GUI's random access, tshark's second
// pass) finds its decoded units and its verdicts. Nothing here depends on
// Wireshark, so that it is tested without it.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/checker.hpp"

namespace rdmaconf::dissectors {

// One case's verdict shown on one frame: a piece of its evidence names the frame.
struct FrameVerdict {
  const conformance::CaseInfo* info = nullptr;
  conformance::Verdict verdict = conformance::Verdict::pass;
  std::string scope;  // "tcp/3 10.0.0.1:40000 -> 10.0.0.2:4791"
  conformance::Evidence evidence;
};

// A decoded unit (an FPDU, a packet) that ends in a frame: the family's
// listing JSON and the listing that describes its keys.
struct FrameUnit {
  const conformance::Listing* listing = nullptr;
  nlohmann::json unit;
};

// A warning of the checker about a frame (as `rdmaconf check` reports the first few).
struct FrameWarning {
  bool undecodable = false;  // a frame not decoded; otherwise a file-level oddity
  std::string message;
};

struct FrameNotes {
  std::vector<FrameUnit> units;
  std::vector<FrameVerdict> verdicts;
  std::vector<FrameWarning> warnings;
};

// The frames each verdict of a scope is shown on: every frame its evidence
// names, and the scope's first frame for evidence that names none. Only
// FAIL and INCONCLUSIVE verdicts are shown. (The plugin's agreement test
// applies the same rule to `rdmaconf check --json`.)
template <class F>
void each_shown_verdict(const conformance::ScopeResult& s, F&& f) {
  for (const auto& o : s.outcomes) {
    const auto v = o.tally.verdict();
    if (v != conformance::Verdict::fail && v != conformance::Verdict::inconclusive) continue;
    for (const auto& e : o.tally.evidence()) {
      if (e.frames.empty()) {
        if (s.first_frame) f(s.first_frame, o, e);
      } else {
        for (auto fr : e.frames) f(fr, o, e);
      }
    }
  }
}

class CaptureChecks {
 public:
  // `strict`: SHOULD and MAY cases too, as `rdmaconf check --strict`;
  // `options`: the families' own (`--roce-port` ...).
  explicit CaptureChecks(bool strict, conformance::FamilyOptions options = {});
  ~CaptureChecks();
  // The next frame of the first pass. `linktype` is its pcap LINKTYPE_
  // value; the first frame's is the capture's, and frames of another are
  // skipped (counted in skipped_frames()).
  void frame(std::uint64_t number, int linktype, std::int64_t ts_sec, std::int64_t ts_usec, std::uint32_t orig_len,
             protocols::Bytes data);
  // The first pass is over: every open scope ends and its verdicts are stored.
  void finish();
  bool finished() const { return finished_; }
  // What is known of a frame so far, or null.
  const FrameNotes* notes(std::uint64_t frame) const;
  // The verdicts the last frame() made known whose evidence names only
  // earlier frames (one per piece of evidence), handed over once: what a
  // single pass (tshark without -2) can show, on the frame where a scope
  // ended, since the frames they name have been shown already.
  std::vector<FrameVerdict> take_late() { return std::exchange(late_, {}); }
  // The shown verdicts finish() made known (the scopes still open when the
  // pass ended); 0 before it.
  std::uint64_t verdicts_at_finish() const { return at_finish_; }
  std::uint64_t last_frame() const { return last_frame_; }
  const conformance::InputResult& result() const { return out_; }
  std::uint64_t skipped_frames() const { return skipped_; }
  // The listings, by family (the units' descriptions).
  static const std::vector<std::pair<const conformance::ProtocolFamily*, std::vector<conformance::Listing>>>& listings();

 private:
  void scope_done(const conformance::ScopeResult& s);
  std::unique_ptr<conformance::Checker> checker_;
  std::unique_ptr<conformance::CheckRun> run_;
  conformance::InputResult out_;
  std::unordered_map<std::uint64_t, FrameNotes> notes_;
  int linktype_ = -1;
  bool finished_ = false;
  std::uint64_t skipped_ = 0;
  std::uint64_t last_frame_ = 0;  // the number of the frame being fed
  std::vector<FrameVerdict> late_;
  std::uint64_t at_finish_ = 0;
};

}  // namespace rdmaconf::dissectors

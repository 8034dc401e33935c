#pragma once
// What checking a capture produces: per input, per scope (an iWARP TCP
// connection or a RoCE conversation), per case a verdict with evidence.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"
#include "conformance/params.hpp"

namespace rdmaconf::conformance {

struct CaseOutcome {
  const CaseInfo* info = nullptr;
  Tally tally;
};

// What of one direction of a scope the cases saw: its units (octets of a
// TCP stream, packets) in the capture, those the cases judged, those they
// did not, and why.
struct Coverage {
  std::string side;
  std::string unit = "octets";
  std::uint64_t captured = 0, judged = 0, missing = 0;  // missing: proven sent, absent from the capture
  std::vector<std::string> why;
  std::uint64_t skipped() const { return captured > judged ? captured - judged : 0; }
};

struct ScopeResult {
  std::string_view family;  // the family's name, as in its cases' CaseInfo
  std::string id;      // "tcp/3" or "ib/1": unique within the input
  // The family's stable order of its scopes (a report that keeps them lists
  // each family's by this; a streamed report lists them as they end).
  std::uint64_t order = 0;
  std::string label;   // "10.0.0.1:40000 -> 10.0.0.2:4791"
  // Negotiated or observed parameters: a JSON object's text (Params, params_text).
  std::string params = "{}";
  std::uint64_t first_frame = 0, last_frame = 0;
  std::vector<CaseOutcome> outcomes;
  std::vector<Coverage> coverage;  // per direction
  // The TCP connection a scope is (TcpStreamInfo::id; 0: the scope is no
  // TCP connection). Such a scope's id ends in "/<connection>" and its order
  // is the connection: a check that spreads connections over threads numbers
  // them again, as one thread that saw them all would have.
  std::uint64_t tcp_stream = 0;
};

// A per-input count a family keeps ("iwarp_connections": key in the JSON
// report's stats; label for the text summary).
struct FamilyCount {
  std::string key;
  std::string label;
  std::uint64_t value = 0;
};

struct InputStats {
  std::uint64_t frames = 0;
  std::uint64_t octets = 0;
  std::uint64_t tcp_connections = 0;
  std::uint64_t undecodable_frames = 0;
  // Frames the file itself describes oddly (captured length above the
  // original length, a timestamp earlier than one before it).
  std::uint64_t capture_anomalies = 0;
  std::vector<FamilyCount> families;  // in registration order
};

// Results by verdict, over every scope of an input (whether the scopes are
// kept in InputResult::scopes or streamed out as they end).
struct VerdictCounts {
  std::uint64_t pass = 0, fail = 0, not_applicable = 0, inconclusive = 0;
  void add(Verdict v) {
    switch (v) {
      case Verdict::pass: ++pass; break;
      case Verdict::fail: ++fail; break;
      case Verdict::not_applicable: ++not_applicable; break;
      case Verdict::inconclusive: ++inconclusive; break;
    }
  }
  void merge(const VerdictCounts& o) {
    pass += o.pass;
    fail += o.fail;
    not_applicable += o.not_applicable;
    inconclusive += o.inconclusive;
  }
};

// How many warnings an input's result keeps (it counts them all).
inline constexpr std::size_t kMaxInputWarnings = 20;

struct InputResult {
  std::string path;
  std::string sha256;
  std::string linktype;
  std::string error;  // non-empty: the input could not be read (completely)
  InputStats stats;
  std::vector<ScopeResult> scopes;  // empty when CheckOptions::on_scope took them
  VerdictCounts verdicts;
  std::vector<std::string> warnings;  // first few undecodable frames and capture problems
  std::vector<std::uint64_t> warning_frames;  // the frame of each warning
  // The threads that checked it (CheckOptions::threads; 1 when it was not
  // split, or when a split check had to start again on one thread).
  unsigned threads = 1;
  std::uint64_t warnings_total = 0;
  // When its check began (Unix time, milliseconds) and how long it took
  // (wall clock, seconds): what the JUnit report gives as the suite's
  // timestamp and time. 0 where nothing timed it.
  std::int64_t started_unix_ms = 0;
  double seconds = 0;
};

}  // namespace rdmaconf::conformance

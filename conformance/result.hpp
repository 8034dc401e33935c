#pragma once
// What checking a capture produces: per input, per scope (an iWARP TCP
// connection or a RoCE conversation), per case a verdict with evidence.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"

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
  std::string label;   // "10.0.0.1:40000 -> 10.0.0.2:4791"
  nlohmann::json params = nlohmann::json::object();  // negotiated or observed parameters
  std::uint64_t first_frame = 0, last_frame = 0;
  std::vector<CaseOutcome> outcomes;
  std::vector<Coverage> coverage;  // per direction
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

struct InputResult {
  std::string path;
  std::string sha256;
  std::string linktype;
  std::string error;  // non-empty: the input could not be read (completely)
  InputStats stats;
  std::vector<ScopeResult> scopes;
  std::vector<std::string> warnings;  // first few undecodable frames and capture problems
  std::uint64_t warnings_total = 0;
};

}  // namespace rdmaconf::conformance

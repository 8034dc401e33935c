#pragma once
// Report writers. The JSON report follows reports/schema/report-v1.schema.json;
// the JUnit XML maps each (scope, case) to a test case so CI dashboards can
// show verdicts; the text summary is what `rdmaconf check` prints.
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/result.hpp"
#include "reports/shard.hpp"

namespace rdmaconf::reports {

inline constexpr std::string_view kSchemaId = "https://rdmaconf.org/schema/report-v1.json";
inline constexpr int kSchemaVersion = 1;

struct RunInfo {
  std::string tool_version;
  std::vector<std::string> arguments;
  bool strict = false;
  std::vector<std::string> case_patterns;
  std::vector<const conformance::CaseInfo*> cases;  // the active catalog
  // A shard's report: which shard, and how many inputs all shards share
  // (`rdmaconf report merge` checks that every one appears once).
  std::optional<Shard> shard = std::nullopt;
  std::uint64_t inputs_in_all_shards = 0;
  // The folder the JUnit report names its inputs relative to (run_base), so
  // that a test's identity does not change with the workspace.
  std::string base = {};
  // JUnit: an INCONCLUSIVE case is a <failure> rather than <skipped>.
  bool junit_inconclusive_fails = false;
};

// The folder the paths named on a command line share, absolute: a directory
// counts as itself, a file as the folder it is in ("" for no paths).
std::string run_base(const std::vector<std::string>& paths);

struct Totals {
  std::uint64_t pass = 0, fail = 0, not_applicable = 0, inconclusive = 0, input_errors = 0;
  void add(const conformance::InputResult& in);
};
Totals totals(const std::vector<conformance::InputResult>& inputs);

// A report written as the check goes: begin_input, each of the input's
// scopes as it ends, end_input (the input's stats and errors; its scopes
// were streamed or are in InputResult::scopes, not both), end once. A
// writer keeps no scope, so its memory does not grow with the capture.
class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  virtual void begin_input(const std::string& path) = 0;
  virtual void scope(const conformance::ScopeResult& s) = 0;
  // The same, for a writer that would otherwise copy the scope.
  virtual void take(conformance::ScopeResult&& s) { scope(s); }
  // A writer whose output for a scope is text made from the scope alone may
  // make it on the caller's thread: it appends the text to `out` and returns
  // true, and the text reaches write_text() in its place among the events.
  // The background writer then never holds the scope, which stays with the
  // thread that made it (freed on another thread, a scope's memory costs
  // that thread's allocator a lock per free). render() runs beside the
  // writer's own thread, so it must not change the writer.
  virtual bool render(const conformance::ScopeResult&, std::string&) { return false; }
  virtual void write_text(std::string_view) {}
  virtual void end_input(const conformance::InputResult& in) = 0;
  virtual void end(const Totals& t) = 0;
};
// The JSON report: the document to_json builds, written in pieces (one
// scope per line).
std::unique_ptr<ReportWriter> json_writer(std::ostream& os, const RunInfo& run);
// JUnit XML in the form Jenkins' and GitLab's readers take (docs/reports.md,
// "JUnit"): a testsuite per input, named by its path relative to
// RunInfo::base, with its time, timestamp and host; a testcase per (scope,
// case), classname "INPUT.SCOPE" with the input's dots made '_' (a reader
// splits package from class at the last dot), name the case ID. Each
// input's test cases are held in a temporary file until its counts are
// known.
std::unique_ptr<ReportWriter> junit_writer(std::ostream& os, const RunInfo& run);
// The text summary `rdmaconf check` prints.
std::unique_ptr<ReportWriter> summary_writer(std::ostream& os, bool verbose);
// Runs writers on a thread of their own, fed through a bounded queue, so
// that serializing and writing a large report overlaps the check. end()
// waits for the thread and rethrows what a writer threw.
std::unique_ptr<ReportWriter> in_background(std::vector<std::unique_ptr<ReportWriter>> writers, std::size_t queue = 512);
// One scope as the JSON report writes it (an element of an input's
// "scopes"), and back: the scope of such an element, its cases found in
// `catalog` (its order, which the report does not carry, left 0). A value
// that is not such an element throws ReportError naming the field.
std::string scope_json(const conformance::ScopeResult& s);
conformance::ScopeResult scope_from_json(const nlohmann::json& j, const std::vector<const conformance::CaseInfo*>& catalog);

// Feeds inputs whose scopes were kept to a writer, and ends it.
void replay(ReportWriter& w, const std::vector<conformance::InputResult>& inputs);

// Puts the reports of a run's shards together into the report of the whole
// run: every shard 0..N-1 exactly once, every input in one shard only, the
// counts adding up; otherwise a ReportError names the missing or repeated
// shards and inputs.
nlohmann::json merge_shards(const std::vector<std::string>& reports);

// The whole JSON report as one document (for small runs and tests).
nlohmann::json to_json(const RunInfo& run, const std::vector<conformance::InputResult>& inputs);
void write_junit(std::ostream& os, const RunInfo& run, const std::vector<conformance::InputResult>& inputs);
void write_summary(std::ostream& os, const std::vector<conformance::InputResult>& inputs, bool verbose);
nlohmann::json case_json(const conformance::CaseInfo& c);

}  // namespace rdmaconf::reports

#pragma once
// Report writers. The JSON report follows reports/schema/report-v1.schema.json;
// the JUnit XML maps each (scope, case) to a test case so CI dashboards can
// show verdicts; the text summary is what `rdmaconf check` prints.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/result.hpp"

namespace rdmaconf::reports {

inline constexpr std::string_view kSchemaId = "https://rdmaconf.org/schema/report-v1.json";
inline constexpr int kSchemaVersion = 1;

struct RunInfo {
  std::string tool_version;
  std::vector<std::string> arguments;
  bool strict = false;
  std::vector<std::string> case_patterns;
  std::vector<const conformance::CaseInfo*> cases;  // the active catalog
};

struct Totals {
  std::uint64_t pass = 0, fail = 0, not_applicable = 0, inconclusive = 0, input_errors = 0;
};
Totals totals(const std::vector<conformance::InputResult>& inputs);

nlohmann::json to_json(const RunInfo& run, const std::vector<conformance::InputResult>& inputs);
void write_junit(std::ostream& os, const RunInfo& run, const std::vector<conformance::InputResult>& inputs);
void write_summary(std::ostream& os, const std::vector<conformance::InputResult>& inputs, bool verbose);
nlohmann::json case_json(const conformance::CaseInfo& c);

}  // namespace rdmaconf::reports

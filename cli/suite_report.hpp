#pragma once
// What the suites that drive traffic of their own (`rdmaconf live fastudp`,
// `rdmaconf live unet`) share with `rdmaconf check`: case patterns given as
// comma-separated globs, and the reports (JSON, JUnit, the text summary)
// with the same exit codes.
#include <string>
#include <string_view>
#include <vector>

#include "conformance/result.hpp"
#include "reports/report.hpp"

namespace rdmaconf::cli {

inline constexpr int kSuiteFail = 1;   // a case FAILed
inline constexpr int kSuiteUsage = 2;  // a usage or input error

// "a,b" "c" -> a, b, c.
std::vector<std::string> split_patterns(const std::vector<std::string>& given);

struct SuiteOutput {
  std::string json, junit;  // files; empty: none
  bool quiet = false, verbose = false;
};

// Writes the reports of one input and returns the exit code: 2 when the
// input has an error or a report could not be written, 1 when a case
// FAILed, else 0. `command` names the command in messages.
int report_suite(std::string_view command, const conformance::InputResult& in, const reports::RunInfo& run, const SuiteOutput& out);

}  // namespace rdmaconf::cli

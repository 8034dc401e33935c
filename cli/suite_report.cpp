#include "cli/suite_report.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

namespace rdmaconf::cli {

std::vector<std::string> split_patterns(const std::vector<std::string>& given) {
  std::vector<std::string> patterns;
  for (const auto& p : given) {
    std::size_t start = 0;
    for (;;) {
      const auto comma = p.find(',', start);
      const auto part = p.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!part.empty()) patterns.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return patterns;
}

int report_suite(std::string_view command, const conformance::InputResult& in, const reports::RunInfo& run, const SuiteOutput& out) {
  if (!in.error.empty()) std::cerr << "rdmaconf " << command << ": " << in.error << "\n";
  bool ok = true;
  for (const auto& [path, json] : {std::pair{out.json, true}, std::pair{out.junit, false}}) {
    if (path.empty()) continue;
    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    std::ofstream os(path, std::ios::binary);
    if (!os) {
      std::cerr << fmt::format("rdmaconf {}: cannot write the report to {}\n", command, path);
      return kSuiteUsage;
    }
    auto w = json ? reports::json_writer(os, run) : reports::junit_writer(os, run);
    reports::replay(*w, {in});
    os.flush();
    ok = ok && static_cast<bool>(os);
  }
  if (!out.quiet) {
    auto w = reports::summary_writer(std::cout, out.verbose);
    reports::replay(*w, {in});
  }
  if (!in.error.empty() || !ok) return kSuiteUsage;
  return in.verdicts.fail ? kSuiteFail : 0;
}

}  // namespace rdmaconf::cli

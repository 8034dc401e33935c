#include "cli/report_cmd.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "conformance/family.hpp"
#include "interop/lab/lab.hpp"
#include "reports/compare.hpp"
#include "reports/coverage.hpp"
#include "reports/report.hpp"

namespace rdmaconf::cli {

namespace {
constexpr int kExitUsage = 2;

// The commit a CI system names in its environment, if any.
std::string commit_from_environment() {
  for (const char* v : {"GITHUB_SHA", "CI_COMMIT_SHA", "GIT_COMMIT", "BUILD_VCS_NUMBER"})
    if (const char* s = std::getenv(v); s && *s) return s;
  return {};
}
}  // namespace

ReportCommands::ReportCommands(CLI::App& app, std::string lab_dir) : lab_dir_(std::move(lab_dir)) {
  auto* report = app.add_subcommand("report", "reports over time: regressions against a baseline, CI summaries, history");
  report->require_subcommand(1);
  diff_ = report->add_subcommand("diff", "what got worse from BASE to NEW (check or lab reports); exit 1 when something did");
  diff_->add_option("base", base_, "the baseline report (last night's)")->required();
  diff_->add_option("new", now_, "the new report")->required();
  diff_->add_option("--markdown", out_, "also write the Markdown summary of NEW against BASE to FILE");
  summary_ = report->add_subcommand("summary", "a Markdown summary of a report for a CI comment");
  summary_->add_option("report", now_, "a check or lab report")->required();
  summary_->add_option("--baseline", base_, "mark the regressions against this report");
  summary_->add_option("--title", title_, "the heading (default rdmaconf)");
  summary_->add_option("-o,--output", out_, "write to FILE (default: standard output)");
  history_ = report->add_subcommand("history", "append a report's verdicts to DIR/history.jsonl (one record per item)");
  history_->add_option("report", now_, "a check or lab report")->required();
  history_->add_option("--dir", dir_, "the history folder")->required();
  history_->add_option("--run-id", run_id_, "this run's name (default: the date and time)");
  history_->add_option("--commit", commit_, "the commit tested (default: $GITHUB_SHA, $CI_COMMIT_SHA, $GIT_COMMIT)");
  merge_ = report->add_subcommand("merge", "put the check reports of a run's shards (check --shard I/N) together");
  merge_->add_option("reports", parts_, "every shard's report")->required();
  merge_->add_option("-o,--output", out_, "the merged report")->required();
  coverage_ = report->add_subcommand(
      "coverage", "for every requirement the catalog cites: its cases, the captures that PASS and FAIL them, the lab cells");
  coverage_->add_option("--captures", capture_dirs_,
                        "folders of captures with manifests (repeatable; default: captures/ of the source tree)");
  coverage_->add_option("--cells", cells_, "the lab's table of cells (default: cells.json of the lab scripts)");
  coverage_->add_option("--json", out_, "write the coverage as JSON to FILE");
}

int ReportCommands::coverage() const {
  reports::CoverageInputs in;
  in.catalog = conformance::Registry::get().all_cases();
  std::vector<std::string> dirs = capture_dirs_;
  if (dirs.empty()) dirs.push_back(RDMACONF_SOURCE_DIR "/captures");
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(d, ec)) {
      std::cerr << "rdmaconf report coverage: " << d << " is not a folder of captures\n";
      return kExitUsage;
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(d, ec))
      if (e.path().string().ends_with(".manifest.json")) {
        std::ifstream f(e.path());
        auto m = nlohmann::json::parse(f, nullptr, false);
        if (m.is_discarded()) {
          std::cerr << "rdmaconf report coverage: " << e.path().string() << ": not JSON\n";
          return kExitUsage;
        }
        in.manifests.push_back(std::move(m));
      }
  }
  try {
    interop::lab::LabOptions lo;
    lo.lab_dir = lab_dir_;
    lo.cells_file = cells_;
    lo.sweep = true;
    for (const auto& c : interop::lab::cells_to_run(lo)) {
      auto fail = interop::lab::planted_failures(c);
      fail.insert(fail.end(), c.finding_cases.begin(), c.finding_cases.end());
      in.cells.push_back({c.id, c.kernel == "rxe" ? "ib" : "iwarp", std::move(fail)});
    }
  } catch (const interop::lab::CellsError& e) {
    std::cerr << "rdmaconf report coverage: " << e.what() << "\n";
    return kExitUsage;
  }
  const auto cov = reports::requirement_coverage(in);
  if (!out_.empty()) {
    std::ofstream f(out_);
    f << cov.dump(2) << "\n";
    if (!f) {
      std::cerr << "rdmaconf report: cannot write " << out_ << "\n";
      return kExitUsage;
    }
  }
  reports::write_coverage_text(std::cout, cov);
  return 0;
}

bool ReportCommands::selected() const { return *diff_ || *summary_ || *history_ || *merge_ || *coverage_; }

int ReportCommands::run() const {
  if (*coverage_) return coverage();
  try {
    if (*merge_) {
      const auto merged = reports::merge_shards(parts_);
      std::ofstream f(out_);
      f << merged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      if (!f) {
        std::cerr << "rdmaconf report: cannot write " << out_ << "\n";
        return kExitUsage;
      }
      const bool lab = merged.contains("cells");
      std::cout << fmt::format("{} shards, {} {}: {}\n", parts_.size(), merged[lab ? "cells" : "inputs"].size(),
                               lab ? "cells" : "inputs", out_);
      return merged["summary"].value(lab ? "regressions" : "fail", 0) ? 1 : 0;
    }
    const auto now = reports::read_snapshot(now_);
    if (*history_) {
      const auto t = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
      const std::string date = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t);
      const reports::RunStamp stamp{run_id_.empty() ? date : run_id_, date, now.tool_version,
                                    commit_.empty() ? commit_from_environment() : commit_};
      const auto n = reports::append_history(dir_, now, stamp);
      std::cout << fmt::format("{} records of run {} appended to {}/history.jsonl\n", n, stamp.run_id, dir_);
      return 0;
    }
    std::optional<reports::Diff> d;
    if (!base_.empty()) d = reports::diff(reports::read_snapshot(base_), now);
    auto markdown = [&](std::ostream& os) { reports::write_markdown(os, now, title_, d ? &*d : nullptr); };
    if (!out_.empty()) {
      std::ofstream f(out_);
      markdown(f);
      if (!f) {
        std::cerr << "rdmaconf report: cannot write " << out_ << "\n";
        return kExitUsage;
      }
    }
    if (*summary_) {
      if (out_.empty()) markdown(std::cout);
      return 0;
    }
    reports::write_diff(std::cout, *d);
    return d->regressions.empty() ? 0 : 1;
  } catch (const reports::ReportError& e) {
    std::cerr << "rdmaconf report: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace rdmaconf::cli

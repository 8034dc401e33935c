#include "cli/report_cmd.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <set>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/family.hpp"
#include "interop/lab/lab.hpp"
#include "reports/compare.hpp"
#include "reports/json_input.hpp"
#include "reports/coverage.hpp"
#include "interop/live_suite.hpp"
#include "reports/dashboard.hpp"
#include "reports/findings.hpp"
#include "reports/terminal.hpp"
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
  history_->add_option("--keep-runs", keep_runs_, "then keep only the last N runs (default: all)");
  history_->add_option("--keep-days", keep_days_, "then drop the runs dated more than N days ago (default: none)");
  merge_ = report->add_subcommand("merge", "put the check reports of a run's shards (check --shard I/N) together");
  merge_->add_option("reports", parts_, "every shard's report")->required();
  merge_->add_option("-o,--output", out_, "the merged report")->required();
  merge_->add_flag("--fail-on-fail", fail_on_fail_,
                   "exit 1 when the merged run holds a FAIL (a lab run: a regression); without it the exit status says "
                   "only whether the merge succeeded");
  coverage_ = report->add_subcommand(
      "coverage", "for every requirement the catalog cites: its cases, the captures that PASS and FAIL them, the lab cells");
  coverage_->add_option("--captures", capture_dirs_,
                        "folders of captures with manifests (repeatable; default: captures/ of the source tree)");
  coverage_->add_option("--cells", cells_, "the lab's table of cells (default: cells.json of the lab scripts)");
  coverage_->add_option("--json", out_, "write the coverage as JSON to FILE");
  html_ = report->add_subcommand("html", "the dashboard: one self-contained HTML page of check and lab reports");
  html_->add_option("reports", parts_, "check and lab reports")->required();
  html_->add_option("--baseline", base_, "mark the regressions against this report (last night's)");
  html_->add_option("--history", history_dir_, "a history folder (report history --dir): sparklines of past runs");
  html_->add_option("--coverage", coverage_json_, "a coverage file (report coverage --json) to show");
  html_->add_option("--title", title_, "the page's heading (default rdmaconf)");
  html_->add_option("-o,--output", out_, "the page to write")->required();
  html_->add_option("--link-base", link_base_,
                    "link captures and reports as this URL followed by their path relative to the page's folder "
                    "(default: the relative path alone)");
  html_->add_option("--history-runs", history_runs_, "how many of the history's last runs to show (default 30)")
      ->check(CLI::Range(1, 100000));
  findings_ = report->add_subcommand("findings", "one Markdown bug report per kernel peer finding a lab report shows");
  findings_->add_option("reports", finding_reports_,
                        "lab reports (lab run's lab-report.json), one for each kernel of the lab's matrix (lab run --kernel)")
      ->required();
  findings_->add_option("-o,--output", dir_, "the folder for the reports (NAME.md each)")->required();
  findings_->add_option("--json", out_, "also write the records as JSON to FILE");
}

namespace {
nlohmann::json read_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw reports::ReportError(fmt::format("{}: cannot open", path));
  auto j = reports::parse_input_json(f, path);
  if (j.is_discarded()) throw reports::ReportError(fmt::format("{}: not JSON", path));
  return j;
}
bool write_text(const std::string& path, const std::string& text) {
  std::error_code ec;
  if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) std::filesystem::create_directories(dir, ec);
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.flush();
  if (!f) std::cerr << "rdmaconf report: cannot write " << reports::term_text(path) << "\n";
  return static_cast<bool>(f);
}
}  // namespace

int ReportCommands::html() const {
  reports::DashboardInputs in;
  for (const auto& p : parts_) in.reports.emplace_back(p);
  if (!base_.empty()) in.baseline = base_;
  if (!history_dir_.empty()) in.history = history_dir_;
  in.title = title_;
  in.page_dir = std::filesystem::path(out_).parent_path();
  if (in.page_dir.empty()) in.page_dir = ".";
  in.link_base = link_base_;
  in.history_runs = history_runs_;
  in.catalog = conformance::Registry::get().all_cases();
  in.generated = fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  if (!coverage_json_.empty()) {
    in.coverage = read_json_file(coverage_json_);
    reports::validate_coverage(*in.coverage, coverage_json_);
  }
  const auto model = reports::dashboard_model(in);
  for (const auto& w : model["history_skipped"])
    std::cerr << "rdmaconf report html: warning: " << reports::term_text(w.get<std::string>()) << "\n";
  if (!write_text(out_, reports::dashboard_html(model))) return kExitUsage;
  std::cout << fmt::format("dashboard: {} lab cells, {} inputs, {} regression(s), {} finding(s): {}\n", model["lab"].size(),
                           model["inputs"].size(), model["regressions"].size(), model["findings"].size(), out_);
  return 0;
}

int ReportCommands::findings() const {
  std::vector<nlohmann::json> docs;
  std::set<std::string> seen;
  for (const auto& f : finding_reports_) {
    docs.push_back(read_json_file(f));
    if (!docs.back().is_object() || !docs.back().contains("cells"))
      throw reports::ReportError(fmt::format("{}: not a lab report (no cells)", f));
    reports::validate_lab_report(docs.back(), f);
    // Two reports of one kernel would list it twice, each with half the story.
    const auto lab = docs.back().value("lab", nlohmann::json::object());
    const std::string k = lab.is_object() ? lab.value("kernel_file", "") + "/" + lab.value("kernel", "") + "/" +
                                                docs.back().value("device", nlohmann::json()).dump()
                                          : std::string();
    if (!seen.insert(k).second)
      throw reports::ReportError(fmt::format("{}: a second report of the same kernel and device (give one report per kernel)", f));
  }
  const std::string given = fmt::format("{}", fmt::join(finding_reports_, ", "));
  std::vector<nlohmann::json> records;
  try {
    records = reports::finding_records_across(docs, conformance::Registry::get().all_cases());
  } catch (const nlohmann::json::exception& e) {
    throw reports::ReportError(fmt::format("{}: not a lab report of this tool's form: {}", given, e.what()));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::vector<std::string> names = reports::finding_file_names(records);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    std::ostringstream md;
    std::string title;
    try {  // (a field of another type, `"title": 5`, is refused by the finding's name, not an abort)
      reports::write_finding_markdown(md, r, RDMACONF_VERSION);
      title = r.value("title", "");
    } catch (const nlohmann::json::exception& e) {
      throw reports::ReportError(fmt::format("{}: finding {}: not of this tool's form: {}", given, nlohmann::json(r.value("name", "")).dump(),
                                             e.what()));
    }
    const auto path = (std::filesystem::path(dir_) / names[i]).string();
    if (!write_text(path, md.str())) return kExitUsage;
    std::cout << fmt::format("{}: {} ({} cell(s))\n", path, title, r["cells"].size());
  }
  if (!out_.empty() && !write_text(out_, nlohmann::json(records).dump(2) + "\n")) return kExitUsage;
  if (records.empty()) std::cout << "no finding in " << given << "\n";
  return 0;
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
        auto m = reports::parse_input_json(f, e.path().string());
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
      in.cells.push_back({c.id, std::string(interop::lab::family_of(c)), std::move(fail), interop::lab::provoked_scenario(c), c.kernel});
    }
  } catch (const interop::lab::CellsError& e) {
    std::cerr << "rdmaconf report coverage: " << e.what() << "\n";
    return kExitUsage;
  }
  for (const auto& s : interop::LiveSuites::get().all()) {
    reports::CoverageLiveSuite l{std::string(s->family()), s->cases(), {}};
    for (const auto& sc : s->scenarios()) l.scenarios.emplace_back(sc.name, sc.cases);
    in.live.push_back(std::move(l));
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

bool ReportCommands::selected() const { return *diff_ || *summary_ || *history_ || *merge_ || *coverage_ || *html_ || *findings_; }

int ReportCommands::run() const {
  if (*coverage_) return coverage();
  try {
    if (*html_) return html();
    if (*findings_) return findings();
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
      const auto bad = merged["summary"].value(lab ? "regressions" : "fail", std::uint64_t{0});
      if (bad) std::cout << fmt::format("the merged run holds {} {}\n", bad, lab ? "regression(s)" : "FAIL result(s)");
      return fail_on_fail_ && bad ? 1 : 0;
    }
    const auto now = reports::read_snapshot(now_);
    if (*history_) {
      const auto t = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
      const std::string date = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t);
      const reports::RunStamp stamp{run_id_.empty() ? date : run_id_, date, now.tool_version,
                                    commit_.empty() ? commit_from_environment() : commit_};
      const auto n = reports::append_history(dir_, now, stamp);
      std::cout << fmt::format("{} records of run {} appended to {}/history.jsonl\n", n, stamp.run_id, dir_);
      if (keep_runs_ || keep_days_)
        std::cout << fmt::format("{} older run(s) pruned\n", reports::prune_history(dir_, keep_runs_, keep_days_, date));
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
    std::cerr << "rdmaconf report: " << reports::term_text(e.what()) << "\n";
    return kExitUsage;
  }
}

}  // namespace rdmaconf::cli

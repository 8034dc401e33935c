#pragma once
// `rdmaconf report`: reports over time (reports/compare.hpp). `diff BASE NEW`
// prints what got worse and exits 1 when something did (a CI gate);
// `summary REPORT [--baseline BASE]` writes Markdown for a CI comment;
// `history --dir DIR REPORT` appends the report's verdicts to DIR/history.jsonl;
// `merge` joins shards' reports; `coverage` maps requirements to cases,
// captures and cells; `html` writes the dashboard; `findings` writes one
// Markdown bug report per kernel peer finding of a lab report.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rdmaconf::cli {

class ReportCommands {
 public:
  // `lab_dir`: where the lab's table of cells is found by default.
  ReportCommands(CLI::App& app, std::string lab_dir);
  bool selected() const;
  int run() const;

 private:
  CLI::App* diff_ = nullptr;
  CLI::App* summary_ = nullptr;
  CLI::App* history_ = nullptr;
  CLI::App* merge_ = nullptr;
  CLI::App* coverage_ = nullptr;
  CLI::App* html_ = nullptr;
  CLI::App* findings_ = nullptr;
  std::string lab_dir_, cells_;
  std::vector<std::string> capture_dirs_;
  int coverage() const;
  int html() const;
  int findings() const;
  std::string coverage_json_, history_dir_;
  std::vector<std::string> finding_reports_;  // report findings: one lab report per kernel
  std::string base_, now_, out_, title_ = "rdmaconf", dir_, run_id_, commit_;
  std::vector<std::string> parts_;
  bool fail_on_fail_ = false;
  std::string link_base_;
  std::size_t history_runs_ = 30, keep_runs_ = 0, keep_days_ = 0;
};

}  // namespace rdmaconf::cli

#pragma once
// `rdmaconf report`: reports over time (reports/compare.hpp). `diff BASE NEW`
// prints what got worse and exits 1 when something did (a CI gate);
// `summary REPORT [--baseline BASE]` writes Markdown for a CI comment;
// `history --dir DIR REPORT` appends the report's verdicts to DIR/history.jsonl.
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
  std::string lab_dir_, cells_;
  std::vector<std::string> capture_dirs_;
  int coverage() const;
  std::string base_, now_, out_, title_ = "rdmaconf", dir_, run_id_, commit_;
  std::vector<std::string> parts_;
};

}  // namespace rdmaconf::cli

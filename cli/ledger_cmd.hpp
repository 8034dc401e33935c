#pragma once
// `rdmaconf ledger`: the requirement ledgers of the registered families
// (conformance/ledger.hpp). `list` prints every statement with its class
// and status; `sentences RFC.txt` prints the keyword sentences of an RFC
// text (what a ledger must cover); `check DIR` holds every ledger against
// the RFC texts in DIR (rfcNNNN.txt) and exits 1 on a problem; `markdown`
// writes the specification references page (docs/spec-references.md).
#include <CLI/CLI.hpp>

#include <string>

namespace rdmaconf::cli {

class LedgerCommands {
 public:
  // `lab_dir`: where the lab's table of cells is found (the cells that provoke statements).
  LedgerCommands(CLI::App& app, std::string lab_dir);
  bool selected() const;
  int run() const;

 private:
  CLI::App* list_ = nullptr;
  CLI::App* sentences_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* markdown_ = nullptr;
  bool json_ = false;
  std::string path_, out_, lab_dir_;
};

}  // namespace rdmaconf::cli

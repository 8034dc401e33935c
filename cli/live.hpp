#pragma once
// The live commands, one shape for every family with a live suite
// (interop/live_suite.hpp):
//   rdmaconf live FAMILY [--scenario NAME]... [--cases GLOBS] [--json F] [--junit F] [--list] [family options]
//   rdmaconf serve FAMILY --listen ADDR:PORT [family options]
//   rdmaconf cleanup     (namespaces that a live run killed with SIGKILL left behind)
// and the spellings of earlier releases (`interop`, `peer`, `nic check`,
// `nic live`, `unet live`, `unet cleanup`), rewritten to these before parsing.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "interop/live_suite.hpp"

namespace rdmaconf::cli {

// The command line with an earlier release's live command rewritten to the
// present shape; unchanged when it has none. On a spelling that cannot be
// rewritten (`--transport` with a value other than iwarp or roce), `error`
// says why.
std::vector<std::string> rewrite_live_aliases(std::vector<std::string> args, std::string& error);

class LiveCommands {
 public:
  explicit LiveCommands(CLI::App& app);
  // True when one of the live commands was given.
  bool selected() const;
  // Runs it; returns the exit status. `arguments`: the command line, for the report.
  int run(const std::vector<std::string>& arguments) const;

 private:
  struct Command {
    CLI::App* app;
    interop::LiveSuite* suite;
    interop::LiveRole role;
  };
  std::vector<Command> commands_;
  CLI::App* cleanup_ = nullptr;
  std::unique_ptr<interop::LiveCommon> common_;
};

}  // namespace rdmaconf::cli

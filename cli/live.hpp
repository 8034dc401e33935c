#pragma once
// The live commands: `rdmaconf peer` (our engine as a responder) and
// `rdmaconf interop` (our engine as an initiator running a scenario).
#include <memory>

#include <CLI/CLI.hpp>

namespace rdmaconf::cli {

struct LiveOptions;

class LiveCommands {
 public:
  explicit LiveCommands(CLI::App& app);
  ~LiveCommands();
  // True when one of the live subcommands was given.
  bool selected() const;
  // Runs it; returns the exit status.
  int run();

 private:
  CLI::App* peer_ = nullptr;
  CLI::App* interop_ = nullptr;
  std::unique_ptr<LiveOptions> o_;
};

}  // namespace rdmaconf::cli

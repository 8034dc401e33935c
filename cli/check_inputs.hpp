#pragma once
// `rdmaconf check` over many inputs on several threads: each thread checks
// one input at a time with its own Checker, and the report hears exactly
// what one thread would have told it, in the same order. The input whose
// turn it is (the lowest one not yet reported) streams its scopes straight
// to the report as they end; the others hold theirs until their turn, and
// one that holds more than a memory budget waits for it, so that memory
// stays bounded per thread whatever the inputs' sizes. With fewer inputs
// than threads, each input's TCP connections are spread over the threads
// left (CheckOptions::threads), less one when a report writer needs a core.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "conformance/checker.hpp"
#include "reports/report.hpp"

namespace rdmaconf::cli {

struct CheckInputsOptions {
  unsigned jobs = 1;
  // A JSON or JUnit report is written: its writer keeps a core busy as the
  // check does (formatting and writing a scope costs about what checking it
  // does), so an input's connections are spread over one thread fewer.
  bool heavy_reports = false;
  std::size_t hold_budget = 32u << 20;  // octets of held scopes per thread (estimated), then it waits its turn
  // Called on the thread that checks `path` as it starts (one thread: the
  // progress bar's name).
  std::function<void(const std::string& path)> on_start;
};

// `opt.on_scope` is replaced. `report` may be null. Input errors are printed
// to `err` in input order. Rethrows what a report writer threw.
reports::Totals check_inputs(const conformance::CheckOptions& opt, const std::vector<std::string>& inputs,
                             const CheckInputsOptions& how, reports::ReportWriter* report, std::ostream& err);

}  // namespace rdmaconf::cli

#include "cli/live.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/suite_report.hpp"
#include "conformance/checker.hpp"
#include "interop/netns.hpp"
#include "reports/report.hpp"

#ifndef RDMACONF_VERSION
#define RDMACONF_VERSION "0.0.0"
#endif

namespace rdmaconf::cli {

namespace {

// Removes `--transport V` / `--transport=V` from args; the value, or empty.
std::string take_transport(std::vector<std::string>& args) {
  std::string value;
  for (std::size_t i = 0; i < args.size();) {
    if (args[i] == "--transport" && i + 1 < args.size()) {
      value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (args[i].starts_with("--transport=")) {
      value = args[i].substr(12);
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return value;
}

}  // namespace

std::vector<std::string> rewrite_live_aliases(std::vector<std::string> args, std::string& error) {
  // The spellings whose words begin the command line, the longest first.
  std::vector<interop::OldSpelling> match;
  for (const auto& s : interop::LiveSuites::get().all())
    for (auto& o : s->old_spellings())
      if (o.words.size() <= args.size() && std::equal(o.words.begin(), o.words.end(), args.begin())) {
        if (!match.empty() && o.words.size() > match.front().words.size()) match.clear();
        if (match.empty() || o.words.size() == match.front().words.size()) match.push_back(std::move(o));
      }
  if (match.empty()) return args;
  const std::size_t n = match.front().words.size();
  const interop::OldSpelling* chosen = &match.front();
  if (!match.front().transport.empty()) {
    const std::string t = take_transport(args);
    chosen = nullptr;
    std::vector<std::string> values;
    for (const auto& o : match) {
      values.push_back(o.transport);
      if (t.empty() ? o.transport_default : o.transport == t) chosen = &o;
    }
    if (!chosen) {
      error = fmt::format("rdmaconf {}: --transport: expected {}, got '{}'", fmt::join(match.front().words, " "),
                          fmt::join(values, " or "), t);
      return args;
    }
  }
  std::vector<std::string> out = chosen->now;
  out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(n), args.end());
  return out;
}

LiveCommands::LiveCommands(CLI::App& app) : common_(std::make_unique<interop::LiveCommon>()) {
  auto& suites = interop::LiveSuites::get();
  auto* live = app.add_subcommand("live", "run a family's live scenarios: our engine against a peer, a NIC plug-in in the "
                                          "harness, or nodes of our own (rdmaconf live FAMILY --help)");
  auto* serve = app.add_subcommand("serve", "our engine as a responder for a family's live scenarios (rdmaconf serve FAMILY --help)");
  live->require_subcommand(1);
  serve->require_subcommand(1);
  interop::LiveCommon& o = *common_;
  for (const auto& s : suites.all()) {
    for (const auto role : {interop::LiveRole::live, interop::LiveRole::serve}) {
      const auto help = s->help(role);
      if (help.empty()) continue;
      auto* c = (role == interop::LiveRole::live ? live : serve)->add_subcommand(std::string(s->family()), std::string(help));
      for (const auto& a : s->aliases()) c->alias(a);
      c->footer("Scenarios:\n" + interop::scenario_lines(*s));
      if (role == interop::LiveRole::live) {
        c->add_option("--scenario", o.scenarios, "run this scenario (repeatable where the family runs several; see --list)");
        c->add_option("--cases", o.patterns, "only cases whose ID matches the glob PATTERN (comma-separated; repeatable)");
        c->add_option("--junit", o.junit, "write a JUnit XML report to FILE (families reported by cases)");
        auto* q = c->add_flag("--quiet", o.quiet, "print nothing but errors");
        c->add_flag("--verbose", o.verbose, "list every verdict, not only failures")->excludes(q);
      }
      c->add_option("--json", o.json,
                    "write the result to FILE: the JSON report (reports/schema/report-v1.schema.json) of families "
                    "reported by cases, else the scenario's result");
      c->add_flag("--list", o.list, "list the scenarios and the live cases, and exit");
      s->add_options(*c, role);
      commands_.push_back({c, s.get(), role});
    }
  }
  cleanup_ = app.add_subcommand("cleanup",
                                "remove the network namespaces (with their veth pair and XDP program) that a live run "
                                "killed with SIGKILL left behind (rdmaconf-*-PID-*, PID gone)");
}

bool LiveCommands::selected() const {
  if (cleanup_->parsed()) return true;
  for (const auto& c : commands_)
    if (c.app->parsed()) return true;
  return false;
}

int LiveCommands::run(const std::vector<std::string>& arguments) const {
  if (cleanup_->parsed()) {
    const auto removed = interop::RunNamespaces::remove_stale();
    for (const auto& n : removed) std::cout << fmt::format("removed network namespace {}\n", n);
    if (removed.empty()) std::cout << "no namespace left by a run that died\n";
    return 0;
  }
  for (const auto& c : commands_) {
    if (!c.app->parsed()) continue;
    interop::LiveCommon common = *common_;
    common.patterns = split_patterns(common.patterns);
    common.arguments = arguments;
    const std::string name = fmt::format("{} {}", c.role == interop::LiveRole::live ? "live" : "serve", c.suite->family());
    if (common.list) {
      std::cout << "Scenarios:\n" << interop::scenario_lines(*c.suite);
      if (const auto cases = c.suite->cases(); !cases.empty()) {
        std::cout << "Cases:\n";
        for (const auto* k : cases)
          if (conformance::case_selected(*k, common.patterns, true))
            std::cout << fmt::format("  {:<28} {:<6} {:<18} {}\n", k->id, conformance::level_name(k->level), k->spec, k->requirement);
      }
      return 0;
    }
    const auto wall = std::chrono::system_clock::now();
    const auto t0 = std::chrono::steady_clock::now();
    auto out = c.suite->run(c.role, common);
    if (!out.input) return out.status;
    if (!out.input->started_unix_ms) {  // the suite's run as a whole, for the JUnit report
      out.input->started_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
      out.input->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const reports::RunInfo run{RDMACONF_VERSION, arguments, true, common.patterns, out.cases, std::nullopt, 1};
    return report_suite(name, *out.input, run, SuiteOutput{common.json, common.junit, common.quiet, common.verbose});
  }
  return kSuiteUsage;
}

}  // namespace rdmaconf::cli

#include "cli/unet_cmd.hpp"

#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/suite_report.hpp"
#include "conformance/checker.hpp"
#include "conformance/unet/live_cases.hpp"
#include "interop/netns.hpp"
#include "interop/unet/live.hpp"

#ifndef RDMACONF_VERSION
#define RDMACONF_VERSION "0.0.0"
#endif

namespace rdmaconf::cli {

UnetCommands::UnetCommands(CLI::App& app) {
  auto* unet = app.add_subcommand("unet", "U-Net tagged endpoints (docs/unet.md): live scenarios and fault injection");
  unet->require_subcommand(1);
  cleanup_ = unet->add_subcommand("cleanup",
                                  "remove the network namespaces (with their veth pair and XDP program) that a live run "
                                  "killed with SIGKILL left behind (unet live and nic live: rdmaconf-*-PID-*, PID gone)");
  live_ = unet->add_subcommand("live", "two U-Net nodes exchange traffic, with fault injection; the live cases judge them");
  live_->add_option("--path", path_, "memory (both nodes in this process), xdp (two namespaces, a veth pair, AF_XDP, the AF_PACKET fallback where it cannot run; root) or packet (the same on AF_PACKET)")
      ->check(CLI::IsMember({"memory", "xdp", "packet"}));
  live_->add_option("--scenario", scenarios_, "run only this scenario (repeatable; see --list)");
  live_->add_option("--cases", patterns_, "only cases whose ID matches the glob PATTERN (comma-separated; repeatable)");
  live_->add_option("--messages", messages_, "messages per data scenario")->check(CLI::Range(8u, 100000u));
  live_->add_option("--pcap", pcap_, "record every frame on the wire, seen from side A (sent, injected, received)");
  live_->add_option("--json", json_out_, "write the JSON report (reports/schema/report-v1.schema.json) to FILE");
  live_->add_option("--junit", junit_out_, "write a JUnit XML report to FILE");
  live_->add_option("--timeout", timeout_ms_, "milliseconds to wait for the peer")->check(CLI::Range(100, 600000));
  live_->add_option("--fault", fault_, "break one rule in both nodes, to see its case FAIL: forge (unchecked sends), "
                                       "ignore-channels (delivery from strangers), overflow (writes past a buffer)")
      ->check(CLI::IsMember({"forge", "ignore-channels", "overflow"}));
  live_->add_flag("--list", list_, "list the scenarios and cases, and exit");
  auto* q = live_->add_flag("--quiet", quiet_, "print nothing but errors");
  live_->add_flag("--verbose", verbose_, "list every verdict, not only failures")->excludes(q);
}

bool UnetCommands::selected() const { return live_->parsed() || cleanup_->parsed(); }

int UnetCommands::run(const std::vector<std::string>& arguments) const {
  if (cleanup_->parsed()) {
    const auto removed = interop::RunNamespaces::remove_stale();
    for (const auto& n : removed) std::cout << fmt::format("removed network namespace {}\n", n);
    if (removed.empty()) std::cout << "no namespace left by a run that died\n";
    return 0;
  }
  namespace iu = interop::unet;
  const auto patterns = split_patterns(patterns_);
  iu::UnetLiveOptions opt;
  for (const auto* c : conformance::unet::live_cases())
    if (conformance::case_selected(*c, patterns, true)) opt.cases.push_back(c);
  if (list_) {
    std::cout << "Scenarios:\n";
    for (const auto& s : iu::live_scenarios()) std::cout << fmt::format("  {:<12} {}\n", s.name, s.summary);
    std::cout << "Cases:\n";
    for (const auto* c : opt.cases)
      std::cout << fmt::format("  {:<24} {:<6} {}\n", c->id, conformance::level_name(c->level), c->requirement);
    return 0;
  }
  if (opt.cases.empty()) {
    std::cerr << fmt::format("rdmaconf unet live: no case matches --cases {}\n", fmt::join(patterns, ","));
    return kSuiteUsage;
  }
  opt.path = path_;
  opt.scenarios = scenarios_;
  opt.messages = messages_;
  opt.timeout_ms = timeout_ms_;
  opt.pcap = pcap_;
  opt.fault = fault_;
  std::ostringstream log;
  const auto in = iu::unet_live(opt, quiet_ ? log : std::cout);
  const reports::RunInfo run{RDMACONF_VERSION, arguments, true, patterns, opt.cases, std::nullopt, 1};
  return report_suite("unet live", in, run, SuiteOutput{json_out_, junit_out_, quiet_, verbose_});
}

}  // namespace rdmaconf::cli

#include "cli/nic_cmd.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "conformance/checker.hpp"
#include "conformance/fastudp/nic_cases.hpp"
#include "interop/fastudp/live.hpp"
#include "interop/fastudp/nic_suite.hpp"
#include "cli/suite_report.hpp"
#include "reports/report.hpp"

#ifndef RDMACONF_VERSION
#define RDMACONF_VERSION "0.0.0"
#endif

namespace rdmaconf::cli {

namespace {
constexpr int kExitFail = kSuiteFail;
constexpr int kExitUsage = kSuiteUsage;
}  // namespace

NicCommands::NicCommands(CLI::App& app) {
  auto* nic = app.add_subcommand("nic", "Fast UDP NIC plug-ins (rdmaconf/fastudp_shim.h): the conformance suite");
  nic->require_subcommand(1);
  check_ = nic->add_subcommand("check", "load a NIC plug-in into the harness, drive it with generated traffic, judge it");
  check_->add_option("--plugin", plugin_, "the plug-in's shared object (built against rdmaconf/fastudp_shim.h)");
  check_->add_option("--plugin-args", plugin_args_, "text handed to the plug-in's fudp_plugin_init");
  check_->add_option("--scenario", scenarios_, "run only this scenario (repeatable; see --list)");
  check_->add_option("--cases", patterns_, "only cases whose ID matches the glob PATTERN (comma-separated; repeatable)");
  check_->add_option("--json", json_out_, "write the JSON report (reports/schema/report-v1.schema.json) to FILE");
  check_->add_option("--junit", junit_out_, "write a JUnit XML report to FILE");
  check_->add_option("--pcap-dir", pcap_dir_, "record each scenario's wire traffic (both ways) to DIR/SCENARIO.pcap");
  check_->add_option("--timeout", timeout_ms_, "milliseconds a scenario may take before the plug-in is called hung")
      ->check(CLI::Range(100, 3600000));
  check_->add_option("--plugin-memory", plugin_memory_mib_,
                     "MiB of address space each scenario's child (the plug-in with the harness) may take; beyond, "
                     "its allocations fail and the scenario FAILs saying so (default 512; 0: no limit)")
      ->check(CLI::Range(0u, 1u << 20));
  check_->add_flag("--in-process", in_process_,
                   "run the plug-in in this process, not in a child per scenario (for a debugger; a crash is then ours)");
  check_->add_flag("--list", list_, "list the scenarios and cases, and exit");
  live_ = nic->add_subcommand("live", "the harness's wire on a veth pair: kernel UDP sockets in a namespace of our own send to "
                                      "and receive from the plug-in (root)");
  live_->add_option("--plugin", plugin_, "the plug-in's shared object")->required();
  live_->add_option("--count", live_count_, "datagrams each way")->check(CLI::Range(1u, 1000000u));
  live_->add_option("--size", live_size_, "payload octets")->check(CLI::Range(4u, 1472u));
  live_->add_option("--corrupt-every", live_corrupt_, "corrupt every Nth datagram from the kernel on the wire (0: none)");
  live_->add_option("--timeout", timeout_ms_, "milliseconds the exchange may take")->check(CLI::Range(100, 3600000));
  live_->add_option("--coalesce-entries", live_coalesce_entries_, "interrupt after this many ring entries")
      ->check(CLI::Range(1u, 65535u));
  live_->add_option("--coalesce-us", live_coalesce_us_, "or this many microseconds after the first unsignalled entry")
      ->check(CLI::Range(1u, 1000000u));
  auto* q = check_->add_flag("--quiet", quiet_, "print nothing but errors");
  check_->add_flag("--verbose", verbose_, "list every verdict, not only failures")->excludes(q);
}

bool NicCommands::selected() const { return check_->parsed() || live_->parsed(); }

int NicCommands::live_run() const {
  interop::fastudp::LiveOptions o;
  o.plugin = plugin_;
  o.count = live_count_;
  o.size = live_size_;
  o.corrupt_every = live_corrupt_;
  o.timeout_ms = timeout_ms_;
  o.coalesce_entries = live_coalesce_entries_;
  o.coalesce_us = live_coalesce_us_;
  const auto r = interop::fastudp::run_live(o, std::cout);
  if (!r.error.empty()) {
    std::cerr << "rdmaconf nic live: " << r.error << "\n";
    return kExitUsage;
  }
  return r.ok ? 0 : kExitFail;
}

int NicCommands::run(const std::vector<std::string>& arguments) const {
  if (live_->parsed()) return live_run();
  namespace fu = interop::fastudp;
  const std::vector<std::string> patterns = split_patterns(patterns_);
  fu::NicCheckOptions opt;
  for (const auto* c : conformance::fastudp::nic_cases())
    if (conformance::case_selected(*c, patterns, true)) opt.cases.push_back(c);
  if (list_) {
    std::cout << "Scenarios:\n";
    for (const auto& s : fu::nic_scenarios()) std::cout << fmt::format("  {:<20} {}\n", s.name, s.summary);
    std::cout << "Cases:\n";
    for (const auto* c : opt.cases)
      std::cout << fmt::format("  {:<28} {:<6} {:<18} {}\n", c->id, conformance::level_name(c->level), c->spec, c->requirement);
    return 0;
  }
  if (plugin_.empty()) {
    std::cerr << "rdmaconf nic check: --plugin PATH is required (the NIC plug-in's shared object)\n";
    return kExitUsage;
  }
  if (opt.cases.empty()) {
    std::cerr << fmt::format("rdmaconf nic check: no case matches --cases {}\n", fmt::join(patterns, ","));
    return kExitUsage;
  }
  opt.plugin = plugin_;
  opt.plugin_args = plugin_args_;
  opt.scenarios = scenarios_;
  opt.timeout_ms = timeout_ms_;
  opt.plugin_memory = std::uint64_t{plugin_memory_mib_} << 20;
  if (!pcap_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(pcap_dir_, ec);
    if (ec) {
      std::cerr << fmt::format("rdmaconf nic check: cannot make {}: {}\n", pcap_dir_, ec.message());
      return kExitUsage;
    }
    opt.pcap_dir = pcap_dir_;
  }
  opt.isolate = !in_process_;
  const auto in = fu::nic_check(opt);
  const reports::RunInfo run{RDMACONF_VERSION, arguments, true, patterns, opt.cases, std::nullopt, 1};
  return report_suite("nic check", in, run, SuiteOutput{json_out_, junit_out_, quiet_, verbose_});
}

}  // namespace rdmaconf::cli

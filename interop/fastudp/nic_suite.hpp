#pragma once
// `rdmaconf live fastudp`: drives a Fast UDP NIC plug-in through the harness
// with generated traffic, scenario by scenario, and judges the cases of
// conformance/fastudp/nic_cases.hpp. Each scenario's expectations come from
// the contract (which receive a datagram must reach, which frames go whole to
// the kernel, which are dropped), worked out as the traffic is generated,
// never from running a model.
//
// Every scenario runs in a child process of its own, so that a plug-in that
// crashes or hangs costs that scenario (a FAIL of fastudp.nic.shim naming the
// signal or the deadline), never the harness.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/result.hpp"
#include "engines/fastudp/harness.hpp"

namespace rdmaconf::interop::fastudp {

struct NicScenarioInfo {
  std::string_view name;
  std::string_view summary;
};
const std::vector<NicScenarioInfo>& nic_scenarios();

// One scenario run in this process: a scope with an outcome for each of
// `cases` (NOT_APPLICABLE where the scenario judged nothing of it). With
// `pcap`, every frame that reaches the NIC from the wire and every frame it
// sends is written there, in the order they happened.
conformance::ScopeResult run_scenario(const engine::fastudp::Plugin& plugin, std::string_view scenario,
                                      const std::vector<const conformance::CaseInfo*>& cases,
                                      const std::string& plugin_args = "", const std::string& pcap = "",
                                      volatile std::uint64_t* progress = nullptr);

struct NicCheckOptions {
  std::string plugin;
  std::string plugin_args;
  std::vector<std::string> scenarios;  // empty: all
  std::vector<const conformance::CaseInfo*> cases;  // the active catalog
  std::string pcap_dir;    // non-empty: DIR/<scenario>.pcap for each scenario
  int timeout_ms = 30000;  // per scenario
  bool isolate = true;     // false: run in this process (a crash is then ours)
  // Isolated: the address space each scenario's child may take (0: no
  // limit; a sanitizer build sets none). Its stdout and stderr land in the
  // scenario's params as "plugin_output" (the first 64 KiB).
  std::uint64_t plugin_memory = std::uint64_t{512} << 20;
};

// The plug-in's report as an input of the usual report: path and SHA-256 of
// the shared object, one scope per scenario. A plug-in that cannot be loaded
// (no such file, a missing symbol, another ABI version) or initialised is an
// input error that says why.
conformance::InputResult nic_check(const NicCheckOptions& opt);

}  // namespace rdmaconf::interop::fastudp

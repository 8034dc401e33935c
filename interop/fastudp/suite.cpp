// The Fast UDP live suite (`rdmaconf live fastudp`): a NIC plug-in loaded
// into the harness and driven scenario by scenario (interop/fastudp/
// nic_suite.hpp), or, as the scenario `veth`, its wire on a veth pair with
// kernel UDP sockets at the other end (interop/fastudp/live.hpp). Earlier
// releases spelled the family `nic` on the command line and `udp` in
// reports; both spellings still select it.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/checker.hpp"
#include "conformance/fastudp/nic_cases.hpp"
#include "interop/fastudp/live.hpp"
#include "interop/fastudp/nic_suite.hpp"
#include "interop/live_suite.hpp"
#include "interop/peer_cli.hpp"

namespace rdmaconf::interop::fastudp {

namespace {

constexpr std::string_view kVeth = "veth";

class Suite final : public LiveSuite {
 public:
  std::string_view family() const override { return conformance::fastudp::kFamily; }
  std::vector<std::string> aliases() const override { return {"nic", "udp"}; }
  std::vector<OldSpelling> old_spellings() const override {
    return {{{"nic", "check"}, "", false, {"live", "fastudp"}},
            {{"nic", "live"}, "", false, {"live", "fastudp", "--scenario", std::string(kVeth)}}};
  }
  std::string_view help(LiveRole role) const override {
    return role == LiveRole::live ? "a Fast UDP NIC plug-in (rdmaconf/fastudp_shim.h) in the harness, driven with generated "
                                    "traffic and judged; --scenario veth: its wire on a veth pair against kernel UDP sockets (root, ethtool)"
                                  : "";
  }
  std::vector<LiveScenario> scenarios() const override {
    std::vector<LiveScenario> v;
    for (const auto& s : nic_scenarios()) v.push_back({std::string(s.name), std::string(s.summary), {}});
    v.push_back({std::string(kVeth),
                 "run alone and asked for by name: the harness's wire on a veth pair in a namespace of our own, kernel "
                 "UDP sockets sending to and receiving from the plug-in (needs root and ethtool)",
                 {}});
    return v;
  }
  std::vector<const conformance::CaseInfo*> cases() const override { return conformance::fastudp::nic_cases(); }

  void add_options(CLI::App& c, LiveRole) override {
    c.add_option("--plugin", plugin_, "the plug-in's shared object (built against rdmaconf/fastudp_shim.h)");
    c.add_option("--plugin-args", plugin_args_, "text handed to the plug-in's fudp_plugin_init");
    c.add_option("--pcap-dir", pcap_dir_, "record each scenario's wire traffic (both ways) to DIR/SCENARIO.pcap");
    c.add_option("--timeout", timeout_ms_, "milliseconds a scenario may take before the plug-in is called hung")
        ->check(CLI::Range(100, 3600000));
    c.add_option("--plugin-memory", plugin_memory_mib_,
                 "MiB of address space each scenario's child (the plug-in with the harness) may take; beyond, its "
                 "allocations fail and the scenario FAILs saying so (default 512; 0: no limit)")
        ->check(CLI::Range(0u, 1u << 20));
    c.add_flag("--in-process", in_process_,
               "run the plug-in in this process, not in a child per scenario (for a debugger; a crash is then ours)");
    c.add_option("--count", veth_.count, "veth: datagrams each way")->check(CLI::Range(1u, 1000000u));
    c.add_option("--size", veth_.size, "veth: payload octets")->check(CLI::Range(4u, 1472u));
    c.add_option("--corrupt-every", veth_.corrupt_every, "veth: corrupt every Nth datagram from the kernel on the wire (0: none)");
    c.add_option("--coalesce-entries", veth_.coalesce_entries, "veth: interrupt after this many ring entries")
        ->check(CLI::Range(1u, 65535u));
    c.add_option("--coalesce-us", veth_.coalesce_us, "veth: or this many microseconds after the first unsignalled entry")
        ->check(CLI::Range(1u, 1000000u));
  }

  LiveOutcome run(LiveRole, const LiveCommon& common) override {
    LiveOutcome out;
    const bool veth = std::find(common.scenarios.begin(), common.scenarios.end(), kVeth) != common.scenarios.end();
    if (veth && common.scenarios.size() > 1) {
      std::cerr << "rdmaconf live fastudp: the veth scenario runs alone\n";
      out.status = kLiveUsage;
      return out;
    }
    if (plugin_.empty()) {
      std::cerr << "rdmaconf live fastudp: --plugin PATH is required (the NIC plug-in's shared object)\n";
      out.status = kLiveUsage;
      return out;
    }
    if (veth) {
      LiveOptions o = veth_;
      o.plugin = plugin_;
      o.timeout_ms = timeout_ms_;
      const auto r = run_live(o, std::cout);
      if (!r.error.empty()) std::cerr << "rdmaconf live fastudp: " << r.error << "\n";
      out.status = !r.error.empty() ? kLiveUsage : r.ok ? 0 : kLiveFail;
      return out;
    }
    NicCheckOptions opt;
    for (const auto* c : conformance::fastudp::nic_cases())
      if (conformance::case_selected(*c, common.patterns, true)) opt.cases.push_back(c);
    if (opt.cases.empty()) {
      std::cerr << fmt::format("rdmaconf live fastudp: no case matches --cases {}\n", fmt::join(common.patterns, ","));
      out.status = kLiveUsage;
      return out;
    }
    opt.plugin = plugin_;
    opt.plugin_args = plugin_args_;
    opt.scenarios = common.scenarios;
    opt.timeout_ms = timeout_ms_;
    opt.plugin_memory = std::uint64_t{plugin_memory_mib_} << 20;
    if (!pcap_dir_.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(pcap_dir_, ec);
      if (ec) {
        std::cerr << fmt::format("rdmaconf live fastudp: cannot make {}: {}\n", pcap_dir_, ec.message());
        out.status = kLiveUsage;
        return out;
      }
      opt.pcap_dir = pcap_dir_;
    }
    opt.isolate = !in_process_;
    out.input = nic_check(opt);
    out.cases = opt.cases;
    return out;
  }

 private:
  std::string plugin_, plugin_args_, pcap_dir_;
  int timeout_ms_ = 30000;
  unsigned plugin_memory_mib_ = 512;
  bool in_process_ = false;
  LiveOptions veth_;
};

}  // namespace

std::unique_ptr<LiveSuite> live_suite() { return std::make_unique<Suite>(); }

}  // namespace rdmaconf::interop::fastudp

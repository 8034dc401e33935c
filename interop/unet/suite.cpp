// The U-Net live suite (`rdmaconf live unet`): two U-Net nodes exchange
// traffic, in this process or in two namespaces of our own over a veth
// pair, with fault injection; the live cases judge them.
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/checker.hpp"
#include "conformance/unet/live_cases.hpp"
#include "interop/live_suite.hpp"
#include "interop/peer_cli.hpp"
#include "interop/unet/live.hpp"

namespace rdmaconf::interop::unet {

namespace {

class Suite final : public LiveSuite {
 public:
  std::string_view family() const override { return conformance::unet::kLiveFamily; }
  std::vector<OldSpelling> old_spellings() const override {
    return {{{"unet", "live"}, "", false, {"live", "unet"}}, {{"unet", "cleanup"}, "", false, {"cleanup"}}};
  }
  std::string_view help(LiveRole role) const override {
    return role == LiveRole::live ? "two U-Net nodes exchange traffic, with fault injection; the live cases judge them" : "";
  }
  std::vector<LiveScenario> scenarios() const override {
    std::vector<LiveScenario> v;
    for (const auto& s : live_scenarios()) v.push_back({std::string(s.name), std::string(s.summary), {}});
    return v;
  }
  std::vector<const conformance::CaseInfo*> cases() const override { return conformance::unet::live_cases(); }

  void add_options(CLI::App& c, LiveRole) override {
    c.add_option("--path", path_,
                 "memory (both nodes in this process), xdp (two namespaces, a veth pair, AF_XDP, the AF_PACKET "
                 "fallback where it cannot run; root) or packet (the same on AF_PACKET)")
        ->check(CLI::IsMember({"memory", "xdp", "packet"}));
    c.add_option("--messages", messages_, "messages per data scenario")->check(CLI::Range(8u, 100000u));
    c.add_option("--pcap", pcap_, "record every frame on the wire, seen from side A (sent, injected, received)");
    c.add_option("--timeout", timeout_ms_, "milliseconds to wait for the peer")->check(CLI::Range(100, 600000));
    c.add_option("--fault", fault_,
                 "break one rule in both nodes, to see its case FAIL: forge (unchecked sends), ignore-channels "
                 "(delivery from strangers), overflow (writes past a buffer)")
        ->check(CLI::IsMember({"forge", "ignore-channels", "overflow"}));
  }

  LiveOutcome run(LiveRole, const LiveCommon& common) override {
    LiveOutcome out;
    UnetLiveOptions opt;
    for (const auto* c : conformance::unet::live_cases())
      if (conformance::case_selected(*c, common.patterns, true)) opt.cases.push_back(c);
    if (opt.cases.empty()) {
      std::cerr << fmt::format("rdmaconf live unet: no case matches --cases {}\n", fmt::join(common.patterns, ","));
      out.status = kLiveUsage;
      return out;
    }
    opt.path = path_;
    opt.scenarios = common.scenarios;
    opt.messages = messages_;
    opt.timeout_ms = timeout_ms_;
    opt.pcap = pcap_;
    opt.fault = fault_;
    std::ostringstream log;
    out.input = unet_live(opt, common.quiet ? log : std::cout);
    out.cases = opt.cases;
    return out;
  }

 private:
  std::string path_ = "memory", pcap_, fault_;
  std::uint32_t messages_ = 64;
  int timeout_ms_ = 5000;
};

}  // namespace

std::unique_ptr<LiveSuite> live_suite() { return std::make_unique<Suite>(); }

}  // namespace rdmaconf::interop::unet

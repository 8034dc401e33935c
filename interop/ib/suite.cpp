// The InfiniBand transport's live suite over RoCEv2: our engine as the
// requester of a scenario (`rdmaconf live ib`) or as a responder
// (`rdmaconf serve ib`), against our own peer or perftest. Earlier releases
// spelled the family `roce` on the command line (`--transport roce`); the
// spelling still selects it.
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engines/common/socket.hpp"
#include "interop/ib/scenarios.hpp"
#include "interop/live_suite.hpp"
#include "interop/peer_cli.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::ib {

namespace {

class Suite final : public LiveSuite {
 public:
  std::string_view family() const override { return "ib"; }
  std::vector<std::string> aliases() const override { return {"roce"}; }
  std::vector<OldSpelling> old_spellings() const override {
    return {{{"interop"}, "roce", false, {"live", "ib"}}, {{"peer"}, "roce", false, {"serve", "ib"}}};
  }
  std::string_view help(LiveRole role) const override {
    return role == LiveRole::live ? "our RoCEv2 engine (InfiniBand transport over UDP) as the requester of a scenario"
                                  : "our RoCEv2 engine as a responder for live scenarios and perftest clients";
  }
  std::vector<LiveScenario> scenarios() const override {
    std::vector<LiveScenario> v;
    for (const auto& s : ib::scenarios())
      v.push_back({std::string(s.name), std::string(s.summary), {s.failing_cases.begin(), s.failing_cases.end()}});
    return v;
  }

  void add_options(CLI::App& c, LiveRole role) override {
    c.add_option("--udp", udp_, fmt::format("our RoCEv2 endpoint ADDR:PORT (default {})", default_udp(role)));
    c.add_option("--mtu", mtu_, "path MTU (256, 512, 1024, 2048 or 4096)")->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
    c.add_option("--connection-type", connection_type_,
                 "with a perftest program: RC (default), UC (ib_write_bw, ib_send_bw) or UD (ib_send_bw), as perftest's -c")
        ->check(CLI::IsMember({"RC", "UC", "UD"}, CLI::ignore_case));
    c.add_flag("--raw-receive", raw_receive_,
               "also receive through a raw socket (root) to check ICRCs against the IP header as it arrived (needed "
               "for peers such as rxe that number their IPv4 datagrams)");
    if (role == LiveRole::live) {
      add_initiator_options(c, init_);
      c.add_option("--peer-program", init_.peer_program,
                   "what serves --peer: rdmaconf (our responder; --peer is its control endpoint) or ib_write_bw, "
                   "ib_read_bw, ib_send_bw, ib_atomic_bw (a perftest server without -R; --size and --iterations must "
                   "match its -s and -n; atomics are 8 octets)")
          ->check(CLI::IsMember({"rdmaconf", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}));
      std::vector<std::string> faults;
      for (const auto& f : perftest_faults()) faults.emplace_back(f.name);
      c.add_option("--fault", fault_,
                   fmt::format("with a perftest --peer-program: plant this fault-* scenario's fault in the traffic "
                               "({}); passes when what our side sees of the reaction is what the IBTA requires",
                               fmt::join(faults, ", ")))
          ->check(CLI::IsMember(faults));
    } else {
      add_responder_options(c, serve_);
      c.add_flag("--perftest", serve_.perftest,
                 "serve perftest clients (ib_{write,read,send,atomic}_bw SERVER without -R, perftest's TCP exchange) "
                 "instead of our exchange");
      c.add_option("--peer-program", serve_.peer_program,
                   "--perftest: what the clients run: ib_write_bw (the default), ib_read_bw, ib_atomic_bw or "
                   "ib_send_bw (receives are kept posted)")
          ->check(CLI::IsMember({"rdmaconf", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}));
    }
  }

  LiveOutcome run(LiveRole role, const LiveCommon& common) override {
    return {role == LiveRole::live ? initiate(common) : serve(), {}, {}};
  }

 private:
  static const char* default_udp(LiveRole role) { return role == LiveRole::live ? "127.0.0.2:4791" : "127.0.0.1:4791"; }

  // --connection-type; nothing when it cannot apply (only perftest programs take it).
  std::optional<eng::QpType> qp_type(bool perftest, std::string_view cmd) const {
    const std::string& t = connection_type_;
    const auto type = t == "UC" || t == "uc" ? eng::QpType::uc : t == "UD" || t == "ud" ? eng::QpType::ud : eng::QpType::rc;
    if (type != eng::QpType::rc && !perftest) {
      std::cerr << fmt::format("rdmaconf {}: --connection-type is for perftest programs; our scenarios choose their "
                               "own (uc-write, ud-send)\n", cmd);
      return std::nullopt;
    }
    return type;
  }

  int initiate(const LiveCommon& common) const {
    std::string err;
    const std::string scenario = one_scenario(common.scenarios, err);
    const bool perftest = is_perftest(init_.peer_program);
    if (!err.empty() || init_.peer.empty() || (scenario.empty() && !perftest)) {
      std::cerr << "rdmaconf live ib: " << (err.empty() ? "--peer and --scenario are required (--list shows the scenarios)" : err)
                << "\n";
      return kLiveUsage;
    }
    if (!perftest && !find_scenario(scenario)) {
      std::cerr << fmt::format("rdmaconf live ib: unknown scenario '{}'\n", scenario);
      return kLiveUsage;
    }
    const auto type = qp_type(perftest, "live ib");
    if (!type) return kLiveUsage;
    RunOptions ro;
    ro.scenario = scenario;
    ro.size = init_.size;
    ro.iterations = init_.iterations;
    ro.qp.pmtu = mtu_;
    ro.qp.type = *type;
    ro.udp_local = udp_.empty() ? default_udp(LiveRole::live) : udp_;
    ro.pcap = init_.pcap;
    ro.raw_receive = raw_receive_;
    ro.timeout_ms = init_.timeout_ms;
    ro.window = init_.window;
    ro.fault = fault_;
    const auto r = perftest ? run_perftest_client(init_.peer, init_.peer_program, ro) : run_initiator(init_.peer, ro);
    const auto j = r.to_json();
    std::string line = fmt::format("{}: {} - {}", r.scenario, j["verdict"].get<std::string>(), r.message);
    if (r.ok && r.seconds > 0 && j.contains("messages_per_s"))
      line += fmt::format("; {} x {} octets in {:.3f} s, {:.0f} messages/s, {:.2f} Gbit/s", r.iterations, r.size,
                          r.seconds, j["messages_per_s"].get<double>(), j["gbit_per_s"].get<double>());
    return report_result("live ib", common.json, line, j, r.ok);
  }

  int serve() const {
    std::string err;
    engine::Fd lfd = engine::tcp_listen(serve_.listen, err);
    if (!lfd) {
      std::cerr << "rdmaconf serve ib: " << err << "\n";
      return kLiveUsage;
    }
    const auto type = qp_type(serve_.perftest, "serve ib");
    if (!type) return kLiveUsage;
    PeerOptions po;
    po.qp.pmtu = mtu_;
    po.qp.type = *type;
    po.udp_local = udp_.empty() ? default_udp(LiveRole::serve) : udp_;
    po.connections = serve_.connections;
    po.idle_timeout_ms = serve_.timeout_ms;
    po.max_size = serve_.max_size;
    po.max_sessions = serve_.max_sessions;
    po.max_per_source = serve_.max_per_source;
    po.log = [](const std::string& line) { std::cerr << "rdmaconf " << line << "\n"; };
    if (const std::string bad = fit_descriptor_limit(po.max_sessions); !bad.empty()) {
      std::cerr << "rdmaconf serve ib: " << bad << "\n";
      return kLiveUsage;
    }
    po.memory_budget = serve_.memory_budget;
    po.pcap_dir = serve_.pcap_dir;
    po.raw_receive = raw_receive_;
    if (is_perftest(serve_.peer_program)) po.perftest_program = serve_.peer_program;
    if (!po.pcap_dir.empty()) std::filesystem::create_directories(po.pcap_dir);
    SignalStop signals;
    std::cerr << fmt::format("rdmaconf serve ib: {} on port {}, RoCEv2 on {}\n", serve_.perftest ? "perftest exchange" : "control",
                             engine::local_port(lfd.get()), po.udp_local);
    bool all_ok = true;
    auto report = [&](const nlohmann::json& rep) {
      all_ok &= rep.value("ok", false);
      std::cout << rep.dump() << std::endl;
    };
    if (serve_.perftest) serve_perftest(lfd.get(), po, report, signals.token());
    else ib::serve(lfd.get(), po, report, signals.token());
    return all_ok || signals.signalled() ? 0 : kLiveFail;
  }

  InitiatorOptions init_;
  ResponderOptions serve_;
  std::string udp_, connection_type_ = "RC", fault_;
  unsigned mtu_ = 1024;
  bool raw_receive_ = false;
};

}  // namespace

std::unique_ptr<LiveSuite> live_suite() { return std::make_unique<Suite>(); }

}  // namespace rdmaconf::interop::ib

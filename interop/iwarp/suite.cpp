// The iWARP live suite: our engine as the initiator of a scenario
// (`rdmaconf live iwarp`) or as a responder (`rdmaconf serve iwarp`), against
// our own peer, rping of any stack or perftest.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "engines/iwarp/device.hpp"
#include "interop/iwarp/scenarios.hpp"
#include "interop/live_suite.hpp"
#include "interop/peer_cli.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::iwarp {

namespace {

// The names of a table's entries, for CLI::IsMember.
template <class Table, class Name>
std::vector<std::string> names_of(const Table& table, Name name) {
  std::vector<std::string> v;
  for (const auto& e : table) v.emplace_back(name(e));
  return v;
}

class Suite final : public LiveSuite {
 public:
  std::string_view family() const override { return "iwarp"; }
  std::vector<OldSpelling> old_spellings() const override {
    return {{{"interop"}, "iwarp", true, {"live", "iwarp"}}, {{"peer"}, "iwarp", true, {"serve", "iwarp"}}};
  }
  std::string_view help(LiveRole role) const override {
    return role == LiveRole::live ? "our iWARP engine as the initiator of a scenario (MPA/DDP/RDMAP over TCP)"
                                  : "our iWARP engine as a responder for live scenarios, rping clients and perftest";
  }
  std::vector<LiveScenario> scenarios() const override {
    std::vector<LiveScenario> v;
    for (const auto& s : iwarp::scenarios())
      v.push_back({std::string(s.name), std::string(s.summary), {s.failing_cases.begin(), s.failing_cases.end()}});
    return v;
  }

  void add_options(CLI::App& c, LiveRole role) override {
    c.add_flag("--crc,!--no-crc", crc_, "ask for MPA CRCs (default on; used when either side asks)");
    c.add_flag("--markers", markers_, "ask the peer to send MPA markers to us");
    c.add_option("--mpa-rev", revision_, "MPA revision to offer or accept (1 or 2)")->check(CLI::Range(1, 2));
    c.add_flag("--no-enhanced", no_enhanced_, "revision 2 without the RFC 6581 IRD/ORD word");
    c.add_option("--p2p", p2p_, "peer-to-peer mode and RTR type (initiator: none, send, write or read)")
        ->check(CLI::IsMember({"none", "send", "write", "read"}));
    c.add_option("--ird", ird_, "inbound RDMA Read queue depth to announce");
    c.add_option("--ord", ord_, "outbound RDMA Read queue depth to announce");
    c.add_option("--mulpdu", mulpdu_, "largest ULPDU we send")->check(CLI::Range(64, 65535 - 24));
    c.add_option("--private-data", private_data_, "MPA private data to send (text, up to 512 octets)")
        ->check([](const std::string& s) { return s.size() > 512 ? std::string("at most 512 octets") : std::string(); });
    c.add_flag("--spin", spin_, "busy-poll the socket instead of sleeping in recv() or poll()");
    if (role == LiveRole::live) {
      add_initiator_options(c, init_);
      c.add_option("--peer-program", init_.peer_program,
                   "what serves --peer: rdmaconf (our responder), rping (rping -s of any stack; terminate-* scenarios "
                   "then skip faults that need a buffer of the responder's) or ib_write_bw, ib_read_bw, ib_send_bw (a "
                   "perftest server started with -R; --size and --iterations must match its -s and -n)")
          ->check(CLI::IsMember({"rdmaconf", "rping", "ib_write_bw", "ib_read_bw", "ib_send_bw"}));
    } else {
      add_responder_options(c, serve_);
      c.add_flag("--reject", reject_, "reject every MPA Request");
      c.add_option("--reply-fault", reply_fault_,
                   "plant a fault in every MPA Reply: key (a key ending in \"FramE\"), revision (revision 0), "
                   "private-data (513 octets), request-key (the Request's key, as a second initiator would) or "
                   "withheld (no Reply at all); the initiator must close without an FPDU or a Terminate, and each "
                   "connection's result says whether it did")
          ->check(CLI::IsMember(names_of(reply_faults(), [](const ReplyFault& f) { return f.name; })));
      c.add_option("--rping-fault", rping_fault_,
                   "serving rping clients: plant this terminate-* scenario's fault in the first ping, in the buffers "
                   "the client advertised (terminate-read-bounds: a Read past the source's end; terminate-ord: one "
                   "Read Request more than the client's IRD; terminate-bounds: a Write past the sink's end); the "
                   "connection's result says whether the client answered with the required Terminate and closed")
          ->check(CLI::IsMember(names_of(rping_faults(), [](std::string_view n) { return n; })));
      c.add_flag("--perftest", serve_.perftest, "serve perftest clients (ib_{write,read,send}_bw -R, rdma_cm) instead of our exchange");
      c.add_option("--peer-program", serve_.peer_program,
                   "--perftest: what the clients run: ib_write_bw (the default), ib_read_bw or ib_send_bw (receives "
                   "are kept posted)")
          ->check(CLI::IsMember({"rdmaconf", "ib_write_bw", "ib_read_bw", "ib_send_bw"}));
    }
  }

  LiveOutcome run(LiveRole role, const LiveCommon& common) override {
    return {role == LiveRole::live ? initiate(common) : serve(), {}, {}};
  }

 private:
  engine::iwarp::QpConfig qp(bool initiator, int timeout_ms) const {
    namespace eng = engine::iwarp;
    eng::QpConfig c;
    c.initiator = initiator;
    c.revision = static_cast<std::uint8_t>(revision_);
    c.enhanced = revision_ == 2 && !no_enhanced_;
    c.crc = crc_;
    c.markers = markers_;
    c.p2p = p2p_ != "none";
    c.rtr = p2p_ == "write" ? eng::Rtr::write : p2p_ == "read" ? eng::Rtr::read : eng::Rtr::send;
    c.ird = ird_;
    c.ord = ord_;
    c.mulpdu = mulpdu_;
    c.private_data.assign(reinterpret_cast<const std::byte*>(private_data_.data()),
                          reinterpret_cast<const std::byte*>(private_data_.data()) + private_data_.size());
    c.reject = reject_;
    if (const auto* f = find_reply_fault(reply_fault_)) c.faults.reply = f->frame;
    c.setup_timeout_ms = static_cast<std::uint64_t>(timeout_ms);
    return c;
  }
  engine::iwarp::WaitMode wait() const { return spin_ ? engine::iwarp::WaitMode::spin : engine::iwarp::WaitMode::block; }

  int initiate(const LiveCommon& common) const {
    std::string err;
    const std::string scenario = one_scenario(common.scenarios, err);
    const bool perftest = is_perftest(init_.peer_program);
    if (!err.empty() || init_.peer.empty() || (scenario.empty() && !perftest)) {
      std::cerr << "rdmaconf live iwarp: " << (err.empty() ? "--peer and --scenario are required (--list shows the scenarios)" : err)
                << "\n";
      return kLiveUsage;
    }
    if (!perftest && !find_scenario(scenario)) {
      std::cerr << fmt::format("rdmaconf live iwarp: unknown scenario '{}'\n", scenario);
      return kLiveUsage;
    }
    if (const std::string bad = engine::iwarp::Device().validate(qp(true, init_.timeout_ms)); !bad.empty()) {
      std::cerr << "rdmaconf live iwarp: configuration not supported: " << bad << "\n";
      return kLiveUsage;
    }
    RunOptions ro;
    ro.scenario = scenario;
    ro.size = init_.size;
    ro.iterations = init_.iterations;
    ro.qp = qp(true, init_.timeout_ms);
    ro.pcap = init_.pcap;
    ro.wait = wait();
    ro.timeout_ms = init_.timeout_ms;
    ro.window = init_.window;
    ro.peer_program = init_.peer_program;
    const auto r = perftest ? run_perftest_client(init_.peer, init_.peer_program, ro) : run_initiator(init_.peer, ro);
    const auto j = r.to_json();
    std::string line = fmt::format("{}: {} - {}", r.scenario, j["verdict"].get<std::string>(), r.message);
    if (!perftest && r.ok && r.seconds > 0) {
      line += fmt::format("; {} x {} octets in {:.3f} s", r.iterations, r.size, r.seconds);
      if (j.contains("half_round_trip_usec"))
        line += fmt::format(", half round trip {:.2f} us", j["half_round_trip_usec"].get<double>());
      else
        line += fmt::format(", {:.2f} Gbit/s", j.value("gbit_per_s", 0.0));
    }
    return report_result("live iwarp", common.json, line, j, r.ok || (!perftest && r.skipped));
  }

  int serve() const {
    if (const std::string bad = engine::iwarp::Device().validate(qp(false, serve_.timeout_ms)); !bad.empty()) {
      std::cerr << "rdmaconf serve iwarp: configuration not supported: " << bad << "\n";
      return kLiveUsage;
    }
    std::string err;
    engine::iwarp::Fd lfd = engine::iwarp::tcp_listen(serve_.listen, err);
    if (!lfd) {
      std::cerr << "rdmaconf serve iwarp: " << err << "\n";
      return kLiveUsage;
    }
    SignalStop signals;
    std::cerr << fmt::format("rdmaconf serve iwarp: listening on port {}\n", engine::iwarp::local_port(lfd.get()));
    PeerOptions po;
    po.qp = qp(false, serve_.timeout_ms);
    po.connections = serve_.connections;
    po.wait = wait();
    po.idle_timeout_ms = serve_.timeout_ms;
    po.max_size = serve_.max_size;
    po.max_sessions = serve_.max_sessions;
    po.max_per_source = serve_.max_per_source;
    po.log = [](const std::string& line) { std::cerr << "rdmaconf " << line << "\n"; };
    if (const std::string bad = fit_descriptor_limit(po.max_sessions); !bad.empty()) {
      std::cerr << "rdmaconf serve iwarp: " << bad << "\n";
      return kLiveUsage;
    }
    po.memory_budget = serve_.memory_budget;
    po.pcap_dir = serve_.pcap_dir;
    po.rping_fault = rping_fault_;
    if (!po.pcap_dir.empty()) std::filesystem::create_directories(po.pcap_dir);
    bool all_ok = true;
    auto report = [&](const nlohmann::json& rep) {
      all_ok &= rep.value("ok", false);
      std::cout << rep.dump() << std::endl;
    };
    if (serve_.perftest)
      serve_perftest(lfd.get(), po, is_perftest(serve_.peer_program) ? serve_.peer_program : "ib_write_bw", report,
                     signals.token());
    else
      iwarp::serve(lfd.get(), po, report, signals.token());
    return all_ok || signals.signalled() ? 0 : kLiveFail;
  }

  InitiatorOptions init_;
  ResponderOptions serve_;
  bool crc_ = true, markers_ = false, no_enhanced_ = false, spin_ = false, reject_ = false;
  std::string reply_fault_, rping_fault_;
  unsigned revision_ = 2;
  std::string p2p_ = "none", private_data_;
  std::uint16_t ird_ = 16, ord_ = 16;
  std::size_t mulpdu_ = 8192;
};

}  // namespace

std::unique_ptr<LiveSuite> live_suite() { return std::make_unique<Suite>(); }

}  // namespace rdmaconf::interop::iwarp

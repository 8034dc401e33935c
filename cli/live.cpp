#include "cli/live.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "engines/iwarp/device.hpp"
#include "interop/ib/scenarios.hpp"
#include "interop/iwarp/scenarios.hpp"

namespace rdmaconf::cli {

namespace ii = interop::iwarp;
namespace ib = interop::ib;
namespace eng_ib = engine::ib;
namespace eng = engine::iwarp;

namespace {

constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;

// SIGINT and SIGTERM stop a peer in order: blocked in every thread (the
// mask is inherited by the sessions' threads, so make this first), taken
// by a thread of its own that asks the accept loop and every session to
// stop (request_stop is not async-signal-safe, so no handler calls it).
// The sessions end, close their connections and flush their captures, and
// the peer exits 0: being stopped is how a peer is meant to end.
class SignalStop {
 public:
  SignalStop() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::jthread([this](std::stop_token st) {
      const timespec tick{0, 200'000'000};
      while (!st.stop_requested())
        if (const int sig = sigtimedwait(&set_, nullptr, &tick); sig == SIGINT || sig == SIGTERM) {
          signalled_ = true;
          source_.request_stop();
          return;
        }
    });
  }
  ~SignalStop() {
    thread_.request_stop();
    thread_.join();
    pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;
  std::stop_token token() const { return source_.get_token(); }
  bool signalled() const { return signalled_; }

 private:
  sigset_t set_{};
  std::stop_source source_;
  std::atomic<bool> signalled_{false};
  std::jthread thread_;
};

}  // namespace

struct LiveOptions {
  std::string transport = "iwarp";
  // RoCEv2 (--transport roce)
  std::string udp;
  unsigned mtu = 1024;
  bool raw_receive = false;
  bool perftest = false;
  std::string connection_type = "RC";  // perftest's -c
  // Engine (both commands).
  bool crc = true;
  bool markers = false;
  unsigned revision = 2;
  bool no_enhanced = false;
  std::string p2p = "none";
  std::uint16_t ird = 16, ord = 16;
  std::size_t mulpdu = 8192;
  std::string private_data;
  bool spin = false;
  int timeout_ms = 10000;
  // interop
  std::string peer_addr, scenario, pcap, json_out, peer_program = "rdmaconf", fault;
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;
  unsigned window = 16;
  bool list = false;
  // peer
  std::string listen;
  bool reject = false;
  std::uint64_t connections = 0;
  std::string pcap_dir;
  std::uint32_t max_size = 64u << 20;
  unsigned max_sessions = 16;
  std::uint64_t memory_budget = 1ull << 30;

  eng::QpConfig qp(bool initiator) const {
    eng::QpConfig c;
    c.initiator = initiator;
    c.revision = static_cast<std::uint8_t>(revision);
    c.enhanced = revision == 2 && !no_enhanced;
    c.crc = crc;
    c.markers = markers;
    c.p2p = p2p != "none";
    c.rtr = p2p == "write" ? eng::Rtr::write : p2p == "read" ? eng::Rtr::read : eng::Rtr::send;
    c.ird = ird;
    c.ord = ord;
    c.mulpdu = mulpdu;
    c.private_data.assign(reinterpret_cast<const std::byte*>(private_data.data()),
                          reinterpret_cast<const std::byte*>(private_data.data()) + private_data.size());
    c.reject = reject;
    c.setup_timeout_ms = static_cast<std::uint64_t>(timeout_ms);
    return c;
  }
};

namespace {

void engine_options(CLI::App* c, LiveOptions& o) {
  c->add_flag("--crc,!--no-crc", o.crc, "ask for MPA CRCs (default on; used when either side asks)");
  c->add_flag("--markers", o.markers, "ask the peer to send MPA markers to us");
  c->add_option("--mpa-rev", o.revision, "MPA revision to offer or accept (1 or 2)")->check(CLI::Range(1, 2));
  c->add_flag("--no-enhanced", o.no_enhanced, "revision 2 without the RFC 6581 IRD/ORD word");
  c->add_option("--p2p", o.p2p, "peer-to-peer mode and RTR type (initiator: none, send, write or read)")
      ->check(CLI::IsMember({"none", "send", "write", "read"}));
  c->add_option("--ird", o.ird, "inbound RDMA Read queue depth to announce");
  c->add_option("--ord", o.ord, "outbound RDMA Read queue depth to announce");
  c->add_option("--mulpdu", o.mulpdu, "largest ULPDU we send")->check(CLI::Range(64, 65535 - 24));
  c->add_option("--private-data", o.private_data, "MPA private data to send (text, up to 512 octets)")
      ->check([](const std::string& s) { return s.size() > 512 ? std::string("at most 512 octets") : std::string(); });
  c->add_flag("--spin", o.spin, "busy-poll the socket instead of sleeping in epoll_wait");
  c->add_option("--timeout", o.timeout_ms, "milliseconds any one step may take")->check(CLI::Range(1, 3600000));
}

std::string scenario_list() {
  std::string s = "iWARP scenarios (--transport iwarp):\n";
  for (const auto& i : ii::scenarios()) s += fmt::format("  {:<24} {}\n", i.name, i.summary);
  s += "RoCEv2 scenarios (--transport roce):\n";
  for (const auto& i : ib::scenarios()) s += fmt::format("  {:<24} {}\n", i.name, i.summary);
  return s;
}

void roce_options(CLI::App* c, LiveOptions& o, const char* udp_default) {
  c->add_option("--transport", o.transport, "iwarp (MPA/DDP/RDMAP over TCP) or roce (InfiniBand transport over UDP)")
      ->check(CLI::IsMember({"iwarp", "roce"}));
  c->add_option("--udp", o.udp, fmt::format("roce: our RoCEv2 endpoint ADDR:PORT (default {})", udp_default));
  c->add_option("--mtu", o.mtu, "roce: path MTU (256, 512, 1024, 2048 or 4096)")
      ->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  c->add_option("--connection-type", o.connection_type,
                "roce with a perftest program: RC (default), UC (ib_write_bw, ib_send_bw) or UD (ib_send_bw), as "
                "perftest's -c")
      ->check(CLI::IsMember({"RC", "UC", "UD"}, CLI::ignore_case));
  c->add_flag("--raw-receive", o.raw_receive,
              "roce: also receive through a raw socket (root) to check ICRCs against the IP header as it arrived "
              "(needed for peers such as rxe that number their IPv4 datagrams)");
}

bool is_perftest(std::string_view program) {
  return program == "ib_write_bw" || program == "ib_read_bw" || program == "ib_send_bw" || program == "ib_atomic_bw";
}

// --connection-type; empty when it cannot apply (only perftest programs take it).
std::optional<eng_ib::QpType> connection_type(const LiveOptions& o, bool perftest, const char* cmd) {
  const std::string t = o.connection_type;
  const auto type = t == "UC" || t == "uc" ? eng_ib::QpType::uc : t == "UD" || t == "ud" ? eng_ib::QpType::ud : eng_ib::QpType::rc;
  if (type != eng_ib::QpType::rc && !perftest) {
    std::cerr << fmt::format("rdmaconf {}: --connection-type is for perftest programs; our scenarios choose their "
                             "own (uc-write, ud-send)\n", cmd);
    return std::nullopt;
  }
  return type;
}

// Prints the run's one-line verdict, writes its JSON report when asked; the
// exit status (kExitUsage when the report cannot be written).
int report_run(const LiveOptions& o, const std::string& line, const nlohmann::json& j, bool ok) {
  std::cout << line << "\n";
  if (!o.json_out.empty()) {
    std::ofstream os(o.json_out);
    os << j.dump(2) << "\n";
    if (!os) {
      std::cerr << "rdmaconf interop: cannot write " << o.json_out << "\n";
      return kExitUsage;
    }
  }
  return ok ? 0 : kExitFail;
}

// The iWARP engine's run options from the command line; nothing (after
// saying why) when the engine cannot run that configuration.
std::optional<ii::RunOptions> iwarp_run_options(const LiveOptions& o, eng::WaitMode wait) {
  if (const std::string bad = eng::Device().validate(o.qp(true)); !bad.empty()) {
    std::cerr << "rdmaconf interop: configuration not supported: " << bad << "\n";
    return std::nullopt;
  }
  ii::RunOptions ro;
  ro.scenario = o.scenario;
  ro.size = o.size;
  ro.iterations = o.iterations;
  ro.qp = o.qp(true);
  ro.pcap = o.pcap;
  ro.wait = wait;
  ro.timeout_ms = o.timeout_ms;
  ro.window = o.window;
  ro.peer_program = o.peer_program;
  return ro;
}

int run_roce_interop(const LiveOptions& o) {
  const bool perftest = is_perftest(o.peer_program);
  if (!perftest && !ib::find_scenario(o.scenario)) {
    std::cerr << fmt::format("rdmaconf interop: unknown RoCEv2 scenario '{}'\n{}", o.scenario, scenario_list());
    return kExitUsage;
  }
  const auto type = connection_type(o, perftest, "interop");
  if (!type) return kExitUsage;
  ib::RunOptions ro;
  ro.scenario = o.scenario;
  ro.size = o.size;
  ro.iterations = o.iterations;
  ro.qp.pmtu = o.mtu;
  ro.qp.type = *type;
  ro.udp_local = o.udp.empty() ? "127.0.0.2:4791" : o.udp;
  ro.pcap = o.pcap;
  ro.raw_receive = o.raw_receive;
  ro.timeout_ms = o.timeout_ms;
  ro.window = o.window;
  ro.fault = o.fault;
  const auto r = perftest ? ib::run_perftest_client(o.peer_addr, o.peer_program, ro) : ib::run_initiator(o.peer_addr, ro);
  const auto j = r.to_json();
  std::string line = fmt::format("{}: {} - {}", r.scenario, j["verdict"].get<std::string>(), r.message);
  if (r.ok && r.seconds > 0 && j.contains("messages_per_s"))
    line += fmt::format("; {} x {} octets in {:.3f} s, {:.0f} messages/s, {:.2f} Gbit/s", r.iterations, r.size,
                        r.seconds, j["messages_per_s"].get<double>(), j["gbit_per_s"].get<double>());
  return report_run(o, line, j, r.ok);
}

// Our iWARP engine against a perftest server started with -R.
int run_iwarp_perftest(const LiveOptions& o, eng::WaitMode wait) {
  const auto ro = iwarp_run_options(o, wait);
  if (!ro) return kExitUsage;
  const auto r = ii::run_perftest_client(o.peer_addr, o.peer_program, *ro);
  const auto j = r.to_json();
  return report_run(o, fmt::format("{}: {} - {}", r.scenario, j["verdict"].get<std::string>(), r.message), j, r.ok);
}

int run_roce_peer(const LiveOptions& o) {
  std::string err;
  eng::Fd lfd = eng::tcp_listen(o.listen, err);
  if (!lfd) {
    std::cerr << "rdmaconf peer: " << err << "\n";
    return kExitUsage;
  }
  const auto type = connection_type(o, o.perftest, "peer");
  if (!type) return kExitUsage;
  ib::PeerOptions po;
  po.qp.pmtu = o.mtu;
  po.qp.type = *type;
  po.udp_local = o.udp.empty() ? "127.0.0.1:4791" : o.udp;
  po.connections = o.connections;
  po.idle_timeout_ms = o.timeout_ms;
  po.max_size = o.max_size;
  po.max_sessions = o.max_sessions;
  po.memory_budget = o.memory_budget;
  po.pcap_dir = o.pcap_dir;
  po.raw_receive = o.raw_receive;
  if (is_perftest(o.peer_program)) po.perftest_program = o.peer_program;
  if (!po.pcap_dir.empty()) std::filesystem::create_directories(po.pcap_dir);
  SignalStop signals;
  std::cerr << fmt::format("rdmaconf peer: {} on port {}, RoCEv2 on {}\n", o.perftest ? "perftest exchange" : "control",
                           eng::local_port(lfd.get()), po.udp_local);
  bool all_ok = true;
  auto report = [&](const nlohmann::json& rep) {
    all_ok &= rep.value("ok", false);
    std::cout << rep.dump() << std::endl;
  };
  if (o.perftest) ib::serve_perftest(lfd.get(), po, report, signals.token());
  else ib::serve(lfd.get(), po, report, signals.token());
  return all_ok || signals.signalled() ? 0 : kExitFail;
}

}  // namespace

LiveCommands::LiveCommands(CLI::App& app) : o_(std::make_unique<LiveOptions>()) {
  LiveOptions& o = *o_;
  interop_ = app.add_subcommand("interop", "run a scenario with our iWARP or RoCEv2 engine as the initiator");
  interop_->footer(scenario_list());
  interop_->add_option("--peer", o.peer_addr, "the responder: tcp://ADDR:PORT (roce: its control endpoint)");
  interop_->add_option("--scenario", o.scenario, "what to run (see below)");
  interop_->add_option("--size", o.size, "message size in octets (default: the scenario's)");
  interop_->add_option("--iterations", o.iterations, "how many messages (default: the scenario's)");
  interop_->add_option("--window", o.window, "RDMA Writes/Reads in flight in write-bw and read-bw")->check(CLI::Range(1, 1024));
  interop_->add_option("--pcap", o.pcap, "record what the engine sent and received to FILE (for rdmaconf check)");
  interop_->add_option("--json", o.json_out, "write the result as JSON to FILE");
  interop_->add_flag("--list", o.list, "list the scenarios and exit");
  interop_->add_option("--peer-program", o.peer_program,
                       "what serves --peer: rdmaconf (our peer) or rping (rping -s of any stack; terminate-* "
                       "scenarios then skip faults that need a buffer of the responder's); iwarp: ib_write_bw, "
                       "ib_read_bw or ib_send_bw (a perftest server started with -R); roce: ib_write_bw, "
                       "ib_read_bw, ib_send_bw or ib_atomic_bw (a perftest server without -R); with perftest "
                       "--size and --iterations must match its -s and -n (atomics are 8 octets)")
      ->check(CLI::IsMember({"rdmaconf", "rping", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}));
  interop_->add_option("--fault", o.fault,
                       "roce with a perftest --peer-program: plant the fault of fault-psn-gap or fault-icrc in the "
                       "traffic; passes when the responder recovers as the IBTA requires and the data completes")
      ->check(CLI::IsMember({"fault-psn-gap", "fault-icrc"}));
  engine_options(interop_, o);
  roce_options(interop_, o, "127.0.0.2:4791");

  peer_ = app.add_subcommand("peer", "run our iWARP or RoCEv2 engine as a responder for interop scenarios (and rping clients)");
  peer_->add_option("--listen", o.listen, "ADDR:PORT to listen on")->required();
  peer_->add_option("--connections", o.connections, "exit after serving this many connections (default: run until a signal)");
  peer_->add_option("--pcap-dir", o.pcap_dir, "record connection N as DIR/peer-N.pcap");
  peer_->add_flag("--reject", o.reject, "reject every MPA Request");
  peer_->add_option("--max-size", o.max_size, "largest buffer a client may ask for");
  peer_->add_option("--max-sessions", o.max_sessions, "connections served at once; beyond, a refusal says busy (iwarp: a rejecting MPA Reply; roce: an error reply; roce --perftest: the connection closes; iwarp --perftest serves one client at a time)")
      ->check(CLI::Range(1u, 4096u));
  peer_->add_option("--memory-budget", o.memory_budget,
                    "octets all sessions' buffers may take together; a scenario beyond is refused");
  peer_->add_flag("--perftest", o.perftest,
                  "serve perftest clients instead of our exchange: roce, ib_{write,read,send,atomic}_bw SERVER "
                  "without -R (perftest's TCP exchange); iwarp, ib_{write,read,send}_bw -R SERVER (rdma_cm)");
  peer_->add_option("--peer-program", o.peer_program,
                    "--perftest: what the clients run: ib_write_bw (the default), ib_read_bw, ib_atomic_bw (roce) "
                    "or ib_send_bw (receives are kept posted)")
      ->check(CLI::IsMember({"rdmaconf", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"}));
  engine_options(peer_, o);
  roce_options(peer_, o, "127.0.0.1:4791");
}

LiveCommands::~LiveCommands() = default;

bool LiveCommands::selected() const { return interop_->parsed() || peer_->parsed(); }

int LiveCommands::run() {
  const LiveOptions& o = *o_;
  const eng::WaitMode wait = o.spin ? eng::WaitMode::spin : eng::WaitMode::block;
  if (interop_->parsed()) {
    if (o.list) {
      std::cout << scenario_list();
      return 0;
    }
    const bool perftest = is_perftest(o.peer_program);
    if (o.peer_addr.empty() || (o.scenario.empty() && !perftest)) {
      std::cerr << "rdmaconf interop: --peer and --scenario are required (--list shows the scenarios)\n";
      return kExitUsage;
    }
    if (o.transport == "roce") return run_roce_interop(o);
    if (perftest) return run_iwarp_perftest(o, wait);
    if (!ii::find_scenario(o.scenario)) {
      std::cerr << fmt::format("rdmaconf interop: unknown scenario '{}'\n{}", o.scenario, scenario_list());
      return kExitUsage;
    }
    const auto ro = iwarp_run_options(o, wait);
    if (!ro) return kExitUsage;
    const auto r = ii::run_initiator(o.peer_addr, *ro);
    const auto j = r.to_json();
    std::string line = fmt::format("{}: {} - {}", r.scenario, j["verdict"].get<std::string>(), r.message);
    if (r.ok && r.seconds > 0) {
      line += fmt::format("; {} x {} octets in {:.3f} s", r.iterations, r.size, r.seconds);
      if (j.contains("half_round_trip_usec"))
        line += fmt::format(", half round trip {:.2f} us", j["half_round_trip_usec"].get<double>());
      else
        line += fmt::format(", {:.2f} Gbit/s", j.value("gbit_per_s", 0.0));
    }
    return report_run(o, line, j, r.ok || r.skipped);
  }

  if (o.transport == "roce") return run_roce_peer(o);
  if (const std::string bad = eng::Device().validate(o.qp(false)); !bad.empty()) {
    std::cerr << "rdmaconf peer: configuration not supported: " << bad << "\n";
    return kExitUsage;
  }
  std::string err;
  eng::Fd lfd = eng::tcp_listen(o.listen, err);
  if (!lfd) {
    std::cerr << "rdmaconf peer: " << err << "\n";
    return kExitUsage;
  }
  SignalStop signals;
  std::cerr << fmt::format("rdmaconf peer: listening on port {}\n", eng::local_port(lfd.get()));
  ii::PeerOptions po;
  po.qp = o.qp(false);
  po.connections = o.connections;
  po.wait = wait;
  po.idle_timeout_ms = o.timeout_ms;
  po.max_size = o.max_size;
  po.max_sessions = o.max_sessions;
  po.memory_budget = o.memory_budget;
  po.pcap_dir = o.pcap_dir;
  if (!po.pcap_dir.empty()) std::filesystem::create_directories(po.pcap_dir);
  bool all_ok = true;
  auto report = [&](const nlohmann::json& rep) {
    all_ok &= rep.value("ok", false);
    std::cout << rep.dump() << std::endl;
  };
  if (o.perftest) {
    ii::serve_perftest(lfd.get(), po, is_perftest(o.peer_program) ? o.peer_program : "ib_write_bw", report,
                       signals.token());
  } else {
    ii::serve(lfd.get(), po, report, signals.token());
  }
  return all_ok || signals.signalled() ? 0 : kExitFail;
}

}  // namespace rdmaconf::cli

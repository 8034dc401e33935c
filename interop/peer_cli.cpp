#include "interop/peer_cli.hpp"

#include <pthread.h>

#include <fstream>
#include <iostream>

#include <fmt/format.h>

namespace rdmaconf::interop {

void add_initiator_options(CLI::App& c, InitiatorOptions& o) {
  c.add_option("--peer", o.peer, "the responder: ADDR:PORT (tcp://ADDR:PORT too)");
  c.add_option("--size", o.size, "message size in octets (default: the scenario's)");
  c.add_option("--iterations", o.iterations, "how many messages (default: the scenario's)");
  c.add_option("--window", o.window, "RDMA Writes/Reads in flight in write-bw and read-bw")->check(CLI::Range(1, 1024));
  c.add_option("--pcap", o.pcap, "record what the engine sent and received to FILE (for rdmaconf check)");
  c.add_option("--timeout", o.timeout_ms, "milliseconds any one step may take")->check(CLI::Range(1, 3600000));
}

void add_responder_options(CLI::App& c, ResponderOptions& o) {
  c.add_option("--listen", o.listen, "ADDR:PORT to listen on")->required();
  c.add_option("--connections", o.connections, "exit after serving this many connections (default: run until a signal)");
  c.add_option("--pcap-dir", o.pcap_dir, "record connection N as DIR/peer-N.pcap");
  c.add_option("--max-size", o.max_size, "largest buffer a client may ask for");
  c.add_option("--max-sessions", o.max_sessions,
               "connections served at once; beyond, a refusal says busy (iwarp: a rejecting MPA Reply; ib: an error "
               "reply; ib --perftest: the connection closes; iwarp --perftest serves one client at a time)")
      ->check(CLI::Range(1u, 4096u));
  c.add_option("--max-per-source", o.max_per_source,
               "connections served at once from any one source address (default 0: only --max-sessions limits them); "
               "beyond, refused as beyond --max-sessions, the refusal saying why")
      ->check(CLI::Range(0u, 4096u));
  c.add_option("--memory-budget", o.memory_budget, "octets all sessions' buffers may take together; a scenario beyond is refused");
  c.add_option("--timeout", o.timeout_ms, "milliseconds any one step may take")->check(CLI::Range(1, 3600000));
}

bool is_perftest(std::string_view program) {
  return program == "ib_write_bw" || program == "ib_read_bw" || program == "ib_send_bw" || program == "ib_atomic_bw";
}

std::string one_scenario(const std::vector<std::string>& given, std::string& error) {
  if (given.size() > 1) error = "this family runs one scenario at a time: give --scenario once";
  return given.empty() ? std::string() : given.front();
}

int report_result(std::string_view command, const std::string& json_path, const std::string& line, const nlohmann::json& j,
                  bool ok) {
  std::cout << line << "\n";
  if (!json_path.empty()) {
    std::ofstream os(json_path);
    os << j.dump(2) << "\n";
    if (!os) {
      std::cerr << fmt::format("rdmaconf {}: cannot write {}\n", command, json_path);
      return kLiveUsage;
    }
  }
  return ok ? 0 : kLiveFail;
}

SignalStop::SignalStop() {
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

SignalStop::~SignalStop() {
  thread_.request_stop();
  thread_.join();
  pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
}

}  // namespace rdmaconf::interop

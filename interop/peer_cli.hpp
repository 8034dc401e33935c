#pragma once
// What the live suites of the families that meet a peer over the network
// (iWARP, InfiniBand over RoCEv2) share: the options of an initiator run
// and of a responder, the orderly stop of a responder on a signal, and the
// one-line verdict with its JSON result.
#include <atomic>
#include <cstdint>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include <CLI/CLI.hpp>
#include <signal.h>
#include <nlohmann/json.hpp>

namespace rdmaconf::interop {

inline constexpr int kLiveFail = 1;
inline constexpr int kLiveUsage = 2;

// `rdmaconf live FAMILY`: our engine as the initiator of one scenario.
struct InitiatorOptions {
  std::string peer, pcap, peer_program = "rdmaconf";
  std::uint32_t size = 0;
  std::uint64_t iterations = 0;
  unsigned window = 16;
  int timeout_ms = 10000;
};
void add_initiator_options(CLI::App& cmd, InitiatorOptions& o);

// `rdmaconf serve FAMILY`: our engine as a responder.
struct ResponderOptions {
  std::string listen, pcap_dir, peer_program = "rdmaconf";
  std::uint64_t connections = 0;
  std::uint32_t max_size = 64u << 20;
  unsigned max_sessions = 16;
  unsigned max_per_source = 0;
  std::uint64_t memory_budget = 1ull << 30;
  bool perftest = false;
  int timeout_ms = 10000;
};
void add_responder_options(CLI::App& cmd, ResponderOptions& o);

bool is_perftest(std::string_view program);

// The one scenario to run from --scenario (at most one); empty when none
// was given. On more than one, `error` says so.
std::string one_scenario(const std::vector<std::string>& given, std::string& error);

// Prints the run's one-line verdict and writes its JSON result to
// `json_path` when given; the exit status (usage when the file cannot be
// written, else 0 or fail by `ok`).
int report_result(std::string_view command, const std::string& json_path, const std::string& line, const nlohmann::json& j,
                  bool ok);

// A responder stops in order on SIGINT or SIGTERM: both are blocked in every
// thread (the mask is inherited by the sessions' threads, so make this
// first) and taken by a thread of its own, which asks the accept loop and
// every session to stop (request_stop is not async-signal-safe, so no
// handler calls it). The sessions end, close their connections and flush
// their captures, and the responder exits 0: being stopped is how it is
// meant to end.
class SignalStop {
 public:
  SignalStop();
  ~SignalStop();
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

}  // namespace rdmaconf::interop

#pragma once
// Live RoCEv2 scenarios: our InfiniBand engine as requester (`rdmaconf
// live ib`) against a responder (`rdmaconf serve ib`), over UDP.
//
// The two sides agree on QPNs, PSNs, keys and buffers over a TCP control
// connection carrying one JSON object per line (docs/interop.md): the
// requester's "hello" (scenario, QP type, QPN, first PSN, UDP endpoint, path
// MTU, message size and count, receives to post, pattern seed), the
// responder's "ready" (its QPN, first PSN, UDP endpoint, R_Keys and virtual
// addresses), and at the end "done" and the responder's "result": what it
// received (count, digest, Immediate data, source QPs), its buffer's digest,
// its counters, the packets it refused and why, and its QP state. Every data
// scenario verifies the data end to end; every fault-* scenario breaks one
// rule and requires the reaction a conforming responder shows (the NAK, or a
// silent drop), seen from both sides.
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/ib/qp.hpp"
#include "engines/ib/udp_link.hpp"

namespace rdmaconf::interop::ib {

namespace eng = engine::ib;

struct ScenarioInfo {
  std::string_view name;
  std::string_view summary;
  eng::QpType type;
  std::uint32_t default_size;
  std::uint64_t default_iterations;
  std::string_view rule;  // fault-*: what the requester breaks and the reaction required (IBTA Vol.1 section)
  // Catalog cases the recorded traffic must FAIL (the broken rule is visible
  // on the wire); empty: the traffic is legal and nothing may FAIL.
  std::vector<std::string_view> failing_cases = {};
};

const std::vector<ScenarioInfo>& scenarios();
const ScenarioInfo* find_scenario(std::string_view name);
// Sets the engine fault (or limit) a fault-* scenario plants; others: no change.
void plant_fault(std::string_view name, eng::QpConfig& cfg);
// A fatal fault: the status its faulty request completes with (the error
// the responder's NAK, or running out of RNR retries, gives); nothing for
// a fault the responder recovers from or drops silently.
std::optional<engine::WcStatus> fatal_completion(std::string_view name);

struct RunOptions {
  std::string scenario = "write";
  std::uint32_t size = 0;        // 0: the scenario's default
  std::uint64_t iterations = 0;  // 0: the scenario's default
  eng::QpConfig qp;              // QPN and PSNs come from the exchange; the type from the scenario (perftest: this one, its -c)
  // Our RoCEv2 endpoint. Both directions go to the same destination port
  // (4791 unless configured), so the two ends bind different addresses.
  std::string udp_local = "127.0.0.2:4791";
  std::string pcap;              // record our UDP traffic here
  bool raw_receive = false;      // check ICRCs against the IP header as it arrived (root; see UdpLink)
  int timeout_ms = 10000;        // for any one step
  unsigned window = 64;          // work requests in flight in the data scenarios
  std::string fault;             // run_perftest_client: plant this fault-* scenario's fault (psn-gap or icrc)
};

struct RunResult {
  std::string scenario;
  bool ok = false;
  std::string message;
  std::uint32_t size = 0;
  std::uint64_t iterations = 0, bytes = 0;
  double seconds = 0;  // the measured phase
  nlohmann::json peer;      // the responder's "result"
  nlohmann::json counters;  // ours
  nlohmann::json to_json() const;
};

RunResult run_initiator(std::string_view control_peer, const RunOptions& o);

// Our engine as the client of an unmodified perftest server (`ib_write_bw`
// or `ib_read_bw` started without -R), through perftest's TCP exchange
// (interop/ib/perftest.hpp): o.iterations RDMA WRITEs, READs or SENDs of
// o.size octets (the server's -n and -s must match). Completions are
// verified; perftest's server does not look at its buffer.
RunResult run_perftest_client(std::string_view server, std::string_view program, const RunOptions& o);

// The fault-* scenarios whose fault run_perftest_client can plant against a
// perftest server, the programs and connection each needs, and how the
// reaction shows from our side alone (perftest's server looks at nothing):
// every work request completes after a recovery, the faulty one completes
// with the error a fatal NAK gives, or only the responder's port counters
// (ibv_devinfo -v) tell.
struct PerftestFault {
  std::string_view name;
  std::vector<std::string_view> programs;
  eng::QpType type = eng::QpType::rc;
  // The port counter of the responder's device that must rise by one
  // (bad_pkey_cntr, qkey_viol_cntr); empty: none is read.
  std::string_view port_counter = {};
  // One request packet per message needed (the fault names a packet that
  // must start a message): perftest's -s at most the path MTU.
  bool one_packet_messages = false;
};
const std::vector<PerftestFault>& perftest_faults();
const PerftestFault* find_perftest_fault(std::string_view name);
// Empty when `fault` can be planted against `program` over `type` with
// messages of `size` octets at path MTU `pmtu`; else why not.
std::string perftest_fault_problem(std::string_view fault, std::string_view program, eng::QpType type, std::uint32_t size,
                                   unsigned pmtu);


struct PeerOptions {
  eng::QpConfig qp;                 // limits and timers; QPN and PSNs come from the hello (the type too, except for perftest: its -c)
  std::string udp_local = "127.0.0.1:4791";
  std::uint64_t connections = 0;    // stop after this many (0: until stopped)
  int idle_timeout_ms = 30000;
  std::uint32_t max_size = 64u << 20;  // largest buffer a hello may ask for
  unsigned max_sessions = 16;          // sessions at once; beyond, a hello gets a "busy" error (perftest: a close)
  unsigned max_per_source = 0;         // sessions at once from one source address (0: no limit of its own); beyond, refused
  std::function<void(const std::string&)> log;  // the accept loop's own lines (descriptors run out, and back)
  std::uint64_t memory_budget = 1ull << 30;  // buffers of all sessions together; a session beyond is refused
  std::string pcap_dir;             // record connection N as DIR/peer-roce-N.pcap
  bool raw_receive = false;
  std::string perftest_program = "ib_write_bw";  // serve_perftest: what its clients run (ib_read_bw is served alike)
};

// Serves control connections on a listening socket, each session in a thread
// of its own (at most max_sessions at once, so that a slow or silent client
// delays no other). Each session has its own UDP socket on udp_local,
// connected to the client's UDP endpoint, so that only that endpoint's
// datagrams reach it; datagrams for no live session are dropped and counted
// (datagrams_for_no_session in every report).
void serve(int listen_fd, const PeerOptions& o, const std::function<void(const nlohmann::json&)>& on_connection,
           std::stop_token stop = {});

// Our engine as the server for unmodified perftest clients (`ib_write_bw
// SERVER`, `ib_read_bw SERVER`, `ib_send_bw SERVER`, started without -R) on
// perftest's port: each client in a session of its own, as serve() runs
// them (at most max_sessions at once, their buffers within memory_budget),
// each reported. One thread reads the RoCEv2 port and hands each datagram to
// the session its destination QPN names (drawn at random per session); the
// session takes it only from its client's address (perftest's clients send
// from source ports of their kernel's choosing). The buffer offered is
// max_size octets (capped at 64 MiB) with remote read and write; for
// ib_send_bw receives of that size are kept posted.
void serve_perftest(int listen_fd, const PeerOptions& o, const std::function<void(const nlohmann::json&)>& on_connection,
                    std::stop_token stop = {});

// The QP's counters and the datagrams the kernel dropped at the link's socket.
nlohmann::json counters_json(const eng::Counters& c, const eng::UdpLink& link);

}  // namespace rdmaconf::interop::ib

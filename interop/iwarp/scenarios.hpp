#pragma once
// Live iWARP scenarios: our engine as initiator (`rdmaconf live iwarp`) against
// a responder (`rdmaconf serve iwarp`, or any iWARP stack for rping), over real TCP.
//
// Every scenario verifies data end to end. `rping` is the rping
// application's own exchange (so it runs against `rping -s` / `rping -c`);
// the others open with a small control exchange of ours, carried in Sends
// (docs/interop.md): the initiator's "hello" names the scenario, the message
// size and count and its buffer; the responder's "ready" advertises its
// buffers; at the end "done" and "result" say whether the data arrived
// intact. The terminate-* scenarios make the initiator break one rule and
// require the Terminate (or the close) a conforming responder must answer
// with.
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/iwarp/qp.hpp"
#include "engines/iwarp/tcp_link.hpp"
#include "interop/pattern.hpp"

namespace rdmaconf::interop::iwarp {

namespace eng = engine::iwarp;

struct ExpectedTerminate {
  unsigned layer = 0, etype = 0, code = 0;
  // What else the text allows: any error type and code of the layer (the
  // text requires an error but names no code), or a second code of the type.
  bool any_type = false;
  std::optional<unsigned> or_code = std::nullopt;
  bool matches(const eng::TerminateInfo& t) const {
    if (t.layer != layer) return false;
    if (any_type) return true;
    return t.etype == etype && (t.code == code || (or_code && t.code == *or_code));
  }
  std::string text() const;  // "1/2/0x00", "2/any", "2/1/0x01 or 0x04"
};

struct ScenarioInfo {
  std::string_view name;
  std::uint8_t code;  // on the wire, in the hello
  std::string_view summary;
  std::uint32_t default_size;
  std::uint64_t default_iterations;
  // terminate-*: the responder's required reaction. close_only: a close
  // without any Terminate (no framing is agreed yet).
  std::optional<ExpectedTerminate> expect;
  bool close_only = false;
  std::string_view rule;  // the RFC requirement the initiator breaks (terminate-*)
  // Checker cases the recorded traffic must FAIL (the broken rule is visible
  // on the wire); empty: the traffic is legal and nothing may FAIL.
  std::vector<std::string_view> failing_cases;
  // The fault breaks FPDU framing (or sends an FPDU before markers and CRC
  // are agreed), so what the checker finds after it on that direction depends
  // on the octets that follow: failing_cases must FAIL, others may too.
  bool framing_lost = false;
  bool needs_crc = false;      // the initiator asks for CRC whatever the options say
  bool needs_markers = false;  // only when the responder asked for markers
  // close_only: the fault is in the MPA Request, which the responder must
  // not answer with a Reply (RFC 5044 §7.1.2, rule 2).
  bool reply_forbidden = false;
  // Nothing in the recording reads as iWARP: neither side's first octets
  // are an MPA frame (a Request with a wrong key, rightly left unanswered).
  bool unrecognisable = false;
  // What goes out right behind the fault. A zero-length RDMA Read Request,
  // which the responder must not answer: after the error nothing more of
  // the stream is processed (RFC 5041 §7.1, RFC 5044 §8) and nothing
  // follows its Terminate. Or a second error (an RDMA Write to an STag that
  // names no region): the Terminate must still describe the first (RFC
  // 5040 §7.1 rule 4).
  enum class Behind : std::uint8_t { nothing, zero_read, second_error };
  Behind behind = Behind::nothing;
  // What the responder needs beyond rping -s: a responder implementing RFC
  // 7306 (atomics, Immediate Data), and a buffer of its own.
  bool needs_rfc7306 = false;
  // The fault goes on a second connection, which names what the responder
  // advertised on the first (one slot of write-bw or read-bw, finished after
  // the second's Terminate).
  bool second_connection = false;
};

// Faults our responder can plant in its MPA Reply (rdmaconf serve iwarp
// --reply-fault NAME): the initiator must close the connection, sending no
// FPDU and no Terminate (RFC 5044 §7.1.2 rule 3, rule 5); or, where the
// fault is one the initiator answers in FPDU framing, send `expect` first.
struct ReplyFault {
  std::string_view name;
  eng::Faults::Frame frame;
  std::string_view summary, rule;
  std::vector<std::string_view> failing_cases;  // what the recording must FAIL
  std::optional<ExpectedTerminate> expect = std::nullopt;
};
const std::vector<ReplyFault>& reply_faults();
const ReplyFault* find_reply_fault(std::string_view name);

const std::vector<ScenarioInfo>& scenarios();
const ScenarioInfo* find_scenario(std::string_view name);

struct RunOptions {
  std::string scenario = "rping";
  std::uint32_t size = 0;        // 0: the scenario's default
  std::uint64_t iterations = 0;  // 0: the scenario's default
  eng::QpConfig qp;              // initiator configuration (initiator is forced true)
  std::string pcap;              // record the connection here
  eng::WaitMode wait = eng::WaitMode::block;
  int timeout_ms = 10000;        // for any one step
  unsigned window = 16;          // outstanding RDMA Writes / Reads in the bandwidth scenarios
  // The responder's program. "rdmaconf" answers our control exchange; "rping"
  // is `rping -s` (any stack), which advertises no buffer and posts one
  // 16-octet receive: the terminate-* scenarios then go without the hello and
  // skip the faults that need a buffer of the responder's.
  std::string peer_program = "rdmaconf";
};

struct RunResult {
  std::string scenario;
  bool ok = false;
  bool skipped = false;  // not applicable with this configuration (message says why)
  std::string message;
  std::uint32_t size = 0;  // message size
  std::uint64_t iterations = 0, bytes = 0;
  double seconds = 0;    // the measured phase (data exchange)
  std::optional<eng::TerminateInfo> terminate_received, terminate_sent;
  // SHOULD-level parts of the reaction the peer did not meet (RFC 5040
  // §4.8, Figure 10: which headers a Terminate includes); they do not fail
  // the scenario.
  std::vector<std::string> should_not_met;
  nlohmann::json negotiated;
  nlohmann::json to_json() const;
};

RunResult run_initiator(std::string_view peer, const RunOptions& o);

// Our engine as the client of a perftest server started with -R (rdma_cm
// over iWARP): `ib_write_bw`, `ib_read_bw` or `ib_send_bw`. perftest's
// exchange runs as Sends on a first connection, the test on a second one
// (docs/lab.md has the sequence); --size and --iterations must match the
// server's -s and -n.
RunResult run_perftest_client(std::string_view peer, std::string_view program, const RunOptions& o);

struct PeerOptions {
  eng::QpConfig qp;  // responder configuration (initiator is forced false)
  std::uint64_t connections = 0;   // stop after serving this many (0: until stopped)
  eng::WaitMode wait = eng::WaitMode::block;
  int idle_timeout_ms = 30000;     // a connection silent this long is dropped
  std::uint32_t max_size = 64u << 20;  // largest buffer a hello may ask for
  std::string pcap_dir;            // record connection N as DIR/peer-N.pcap
  unsigned max_sessions = 16;      // served at once; beyond, a connection is refused (a rejecting MPA Reply)
  unsigned max_per_source = 0;     // served at once from one source address (0: no limit of its own); beyond, refused
  std::function<void(const std::string&)> log;  // the accept loop's own lines (descriptors run out, and back)
  std::uint64_t memory_budget = 1ull << 30;  // buffers of all sessions together; a hello beyond it is refused
  // Serving rping clients: plant this terminate-* scenario's fault in the
  // first ping, in the buffers the client advertised (rping_faults()), and
  // require its Terminate and close instead of going on.
  std::string rping_fault;
};

// The terminate-* scenarios whose fault our responder can plant while it
// serves an rping client (rdmaconf serve iwarp --rping-fault NAME): an RDMA
// Read past the end of the advertised source, more Read Requests than the
// client's IRD, an RDMA Write past the end of the advertised sink.
std::vector<std::string_view> rping_faults();

// Serves connections on a listening socket, each in its own thread (at most
// max_sessions at once, so that a slow or silent client delays no other),
// until `stop` or the connection count is reached. Each finished connection
// is reported through on_connection (what was run, how it ended), one call
// at a time. Connections beyond max_sessions are answered with a rejecting
// MPA Reply whose private data says "busy", and reported as refused.
void serve(int listen_fd, const PeerOptions& o, const std::function<void(const nlohmann::json&)>& on_connection,
           std::stop_token stop = {});

// Our engine as the server for perftest clients started with -R
// (`ib_write_bw -R SERVER` and so on; rdma_cm over iWARP): perftest's
// exchange on the first connection, the test on the second. Clients are
// served at once, as serve() serves them (max_sessions, memory_budget); a
// client's second connection goes to the earliest session that expects one
// from its host (nothing on the wire says whose it is). The buffer offered
// is max_size octets (at most 16 MiB), with remote Read and Write; for
// ib_send_bw, receives of that size are kept posted and counted.
void serve_perftest(int listen_fd, const PeerOptions& o, std::string_view program,
                    const std::function<void(const nlohmann::json&)>& on_connection, std::stop_token stop = {});

using interop::fill_pattern, interop::check_pattern;

}  // namespace rdmaconf::interop::iwarp

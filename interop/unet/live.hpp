#pragma once
// `rdmaconf live unet`: two U-Net nodes exchange traffic and the live cases
// (conformance/unet/live_cases.hpp) judge what each saw. Scenarios: a
// ping-pong with messages from 0 to 1492 octets, a stream with sequence
// numbers, and fault injection: spoofed source tags and MACs, frames for
// an unknown tag and from a stranger (put on the wire raw, as a hostile
// host would), oversize messages, an empty free queue, an endpoint torn
// down mid-stream.
//
// Data paths:
//  * memory: both nodes in this process over an in-memory link (no
//    privileges needed);
//  * xdp: two processes in two network namespaces of our own joined by a
//    veth pair, each node on an AF_XDP socket behind the U-Net XDP program
//    (engines/unet/ports.hpp), with a kernel UDP exchange across the same
//    pair while U-Net runs (root); where AF_XDP cannot run, a warning says
//    why and the packet path runs instead;
//  * packet: the same on AF_PACKET sockets bound to EtherType 0x88B5.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "conformance/result.hpp"

namespace rdmaconf::interop::unet {

struct LiveScenarioInfo {
  std::string_view name, summary;
};
const std::vector<LiveScenarioInfo>& live_scenarios();

struct UnetLiveOptions {
  std::string path = "memory";         // memory | xdp | packet
  std::vector<std::string> scenarios;  // empty: all
  std::vector<const conformance::CaseInfo*> cases;
  std::string pcap;            // non-empty: every frame side A sends, injects and receives
  std::uint32_t messages = 64;  // per data scenario
  int timeout_ms = 5000;        // per wait for the peer
  // Break one rule in both nodes (forge, ignore-channels, overflow), to see
  // its case FAIL; empty: none.
  std::string fault;
};

// The run as an input of the usual report: one scope per scenario. Set-up
// failures (no root, no veth) are the input's error.
conformance::InputResult unet_live(const UnetLiveOptions& opt, std::ostream& log);

// U-Net against a kernel UDP socket between the same namespaces, served
// by the same process on side B, side by side in one run: round trips of
// small messages (B echoes) and a one-way stream of large ones (B sinks and
// counts what arrived), each first with both sides waiting in poll()
// (interrupt-driven) and then with both spinning (busy-polling). Root.
struct BenchOptions {
  bool xdp = true;  // AF_XDP where it can run, else (and with false) AF_PACKET
  std::uint32_t latency_size = 64, latency_count = 2000;
  std::uint32_t stream_size = 1472, stream_count = 100000;
  int rounds = 5;
};
struct BenchResult {
  std::string error, notice;  // notice: why the fallback ran
  std::string path;           // the data path measured
  struct Mode {
    std::vector<double> unet_us, kernel_us;    // each round's median round trip
    std::vector<double> unet_mps, kernel_mps;  // each round's messages delivered per second
    std::vector<double> unet_loss, kernel_loss;  // the fraction sent but not delivered
  } interrupt, busy;
};
BenchResult unet_bench(const BenchOptions& opt);

}  // namespace rdmaconf::interop::unet

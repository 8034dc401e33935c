#pragma once
// `rdmaconf unet live`: two U-Net nodes exchange traffic and the live cases
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
//  * packet: two processes in two network namespaces of our own joined by
//    a veth pair, each node on an AF_PACKET socket bound to EtherType
//    0x88B5, with a kernel UDP exchange across the same pair while U-Net
//    runs (root).
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
  std::string path = "memory";         // memory | packet
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

// Round trips on the packet path, side by side with a kernel UDP socket
// between the same namespaces and the same echoing process (both wait in
// poll(): interrupt-driven, not busy-polling). Root.
struct LatencyOptions {
  std::uint32_t size = 64, count = 2000;
  int rounds = 5;  // alternating U-Net and kernel UDP
};
struct LatencyResult {
  std::string error;
  std::vector<double> unet_us, kernel_us;  // each round's median round trip
};
LatencyResult unet_latency(const LatencyOptions& opt);

}  // namespace rdmaconf::interop::unet

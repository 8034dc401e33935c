#pragma once
// `rdmaconf nic live`: the harness's wire on a real Linux interface. It makes
// two network namespaces joined by a veth pair: the kernel's side (10.77.0.1)
// and the NIC's wire, read through an AF_PACKET receive ring and written
// with send() on that end. The model (10.77.0.2) runs on the harness's
// real-time clock, so its interrupt coalescing timers run by the wall clock
// across arrivals. Ordinary kernel UDP sockets send datagrams to the model,
// which places them in posted receives; the model sends datagrams back with
// checksum offload, and the kernel's own counters (/proc/net/snmp: Udp
// InDatagrams, InCsumErrors) judge its checksums. Every Kth datagram from the
// kernel is corrupted on the wire (one payload octet), and the model must
// drop it. Needs root (namespaces, veth, raw sockets); sends to nothing
// outside the namespaces.
//
// run_live_bench measures receive throughput side by side on the same veth:
// a kernel UDP socket on the NIC's end (10.77.0.3) against the model, with
// the same sender.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace rdmaconf::interop::fastudp {

struct LiveOptions {
  std::string plugin;
  std::uint32_t count = 2000;     // datagrams each way
  std::uint32_t size = 1472;      // payload octets
  std::uint32_t corrupt_every = 10;  // 0: none
  int timeout_ms = 20000;
  // Interrupt coalescing on the real-time clock: entries, microseconds.
  std::uint32_t coalesce_entries = 32, coalesce_us = 50;
};

struct LiveResult {
  bool ok = false;
  std::string error;  // set up failed (not the NIC's doing)
  std::uint64_t sent_by_kernel = 0, delivered = 0, intact = 0, corrupted = 0, csum_dropped = 0;
  std::uint64_t sent_by_nic = 0, kernel_received = 0, kernel_in_datagrams = 0, kernel_in_csum_errors = 0, kernel_in_errors = 0;
  std::uint64_t ring_entries = 0, interrupts = 0;
  double rx_seconds = 0;
};

LiveResult run_live(const LiveOptions& opt, std::ostream& log);

struct LiveBenchOptions {
  std::string plugin;
  std::uint32_t count = 200000;  // datagrams per run
  std::uint32_t size = 1472;
  int rounds = 5;                // runs of each receiver, alternating
  std::uint32_t coalesce_entries = 32, coalesce_us = 50;
};

// One receiver's run: payload octets received between the first datagram
// and the last.
struct LiveBenchRun {
  std::uint64_t sent = 0, received = 0, octets = 0;
  // Where the model's missing ones went: dropped by the wire's receive ring
  // (the kernel's packet socket counter), handed whole to the kernel ring
  // (no receive posted), or dropped for a full kernel ring.
  std::uint64_t wire_drops = 0, slow_path = 0, ring_full = 0;
  double seconds = 0;
  double gbps() const { return seconds > 0 ? static_cast<double>(octets) * 8.0 / seconds / 1e9 : 0; }
};

struct LiveBenchResult {
  std::string error;
  std::vector<LiveBenchRun> kernel, model;  // in the order they ran, alternating
};

LiveBenchResult run_live_bench(const LiveBenchOptions& opt, std::ostream& log);

}  // namespace rdmaconf::interop::fastudp

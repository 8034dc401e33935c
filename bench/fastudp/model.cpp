// Benchmark: the Fast UDP NIC model in the harness's deterministic mode, on
// one core: 64-octet UDP datagrams through checksum, match and splinter,
// each completed by the driver and its receive posted again (an application
// reusing 64 buffers), interrupts coalesced every 32 entries.
//
//   rdmaconf-bench-fastudp [--packets N] [--runs R] [--plugin PATH] [--json FILE]
//
// Prints packets per second (median of R runs) against the 2 million a
// second target, and the model's cycle account per packet.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "captures/io/pcap_writer.hpp"
#include "engines/fastudp/harness.hpp"

namespace fu = rdmaconf::engine::fastudp;
namespace io = rdmaconf::captures::io;

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-fastudp: the Fast UDP NIC model in deterministic mode"};
  std::uint64_t packets = 2000000;
  std::uint32_t size = 64;
  int runs = 5;
  std::string plugin = RDMACONF_NIC_MODEL, json_out;
  app.add_option("--packets", packets, "datagrams per run")->check(CLI::Range(1, 1 << 30));
  app.add_option("--size", size, "payload octets")->check(CLI::Range(1u, 1472u));
  app.add_option("--runs", runs, "runs (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--plugin", plugin, "the NIC plug-in");
  app.add_option("--json", json_out, "write the figures as JSON");
  CLI11_PARSE(app, argc, argv);

  std::string err;
  auto p = fu::Plugin::open(plugin, err);
  if (!p) {
    std::cerr << err << "\n";
    return 2;
  }
  // 64 distinct frames: payloads to port 5001 with good checksums.
  std::vector<std::vector<std::byte>> frames;
  for (int i = 0; i < 64; ++i) {
    const auto from = io::host_v4(10, 0, 0, 1, static_cast<std::uint16_t>(40000 + i)), to = io::host_v4(10, 0, 0, 2, 5001);
    std::vector<std::byte> payload(size, std::byte(static_cast<std::uint8_t>(i)));
    frames.push_back(io::eth_udp(from, to, payload, true));
  }
  std::vector<double> pps;
  double cycles_per_packet = 0;
  for (int r = 0; r < runs; ++r) {
    fu::HarnessOptions o;
    o.ring_slots = 1024;
    o.coalesce = 32 | (1000ull << 16);
    o.record = false;
    fu::Harness h(*p, o);
    if (!h.ok()) {
      std::cerr << h.error() << "\n";
      return 2;
    }
    h.on_entry = [&](const fu::RingEntry& e) {
      if (e.head.kind == FUDP_ENTRY_SPLINTER) h.repost_receive(e.head.cookie);
    };
    for (int i = 0; i < 64; ++i) h.post_receive(5001, 2048);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t n = 0; n < packets; ++n) h.wire_receive(frames[n & 63]);
    h.run_until_idle();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto placed = h.read_stat(FUDP_STAT_RX_SPLINTERED);
    if (placed != packets || !h.violations().empty()) {
      std::cerr << fmt::format("only {} of {} datagrams were placed ({} violations)\n", placed, packets, h.violations().size());
      return 1;
    }
    pps.push_back(static_cast<double>(packets) / s);
    cycles_per_packet = static_cast<double>(h.nic_cycles()) / static_cast<double>(packets);
  }
  std::sort(pps.begin(), pps.end());
  const double median = pps[pps.size() / 2];
  std::cout << fmt::format("fastudp model, deterministic, {}-octet datagrams: {:.2f} M packets/s (median of {}; target >= 2.00 at 64; {})\n",
                           size, median / 1e6, runs, size != 64 ? "not the target's size" : median >= 2e6 ? "met" : "NOT met");
  std::cout << fmt::format("model cycle account: {:.1f} NIC cycles per datagram\n", cycles_per_packet);
  if (!json_out.empty()) {
    std::ofstream(json_out) << nlohmann::json{{"packets", packets}, {"runs", runs}, {"pps_median", median}, {"pps", pps},
                                              {"target_pps", 2e6}, {"nic_cycles_per_packet", cycles_per_packet}}
                                   .dump(2)
                            << "\n";
  }
  return 0;
}

// Benchmark: receive throughput of the Fast UDP model on a live veth pair,
// against the kernel's own UDP socket on the same veth, side by side in one
// run. The same sender (a kernel UDP socket in a namespace of ours, sendmmsg
// in batches of 64) sends N datagrams of 1472 octets to each receiver in
// turn: the kernel's socket on the NIC's end (recvmmsg in batches of 64),
// and the model behind an AF_PACKET receive ring on the harness's real-time
// clock, splintering into posted receives that the driver completes and
// posts again. Throughput counts payload octets from the first datagram
// received to the last. Needs root.
//
//   rdmaconf-bench-fastudp-live [--count N] [--rounds R] [--plugin PATH] [--json FILE]
//
// Prints each receiver's median over R rounds and their ratio against the
// 0.8 target.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interop/fastudp/live.hpp"

namespace fu = rdmaconf::interop::fastudp;

namespace {
double median_gbps(const std::vector<fu::LiveBenchRun>& runs) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.gbps());
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-fastudp-live: the Fast UDP model's receive throughput against a kernel UDP socket"};
  fu::LiveBenchOptions o;
  o.plugin = RDMACONF_NIC_MODEL;
  std::string json_out;
  app.add_option("--count", o.count, "datagrams per run")->check(CLI::Range(100u, 10000000u));
  app.add_option("--rounds", o.rounds, "runs of each receiver (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--plugin", o.plugin, "the NIC plug-in");
  app.add_option("--json", json_out, "write the figures as JSON");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    std::cerr << "rdmaconf-bench-fastudp-live: needs root (network namespaces, a veth pair, a raw socket); nothing measured\n";
    return 77;
  }
  const auto r = fu::run_live_bench(o, std::cout);
  if (!r.error.empty()) {
    std::cerr << "rdmaconf-bench-fastudp-live: " << r.error << "\n";
    return 2;
  }
  const double k = median_gbps(r.kernel), m = median_gbps(r.model), ratio = k > 0 ? m / k : 0;
  std::cout << fmt::format(
      "live receive, {}-octet datagrams, {} per run: kernel UDP socket {:.2f} Gb/s, Fast UDP model {:.2f} Gb/s (medians of {}): "
      "{:.2f}x (target >= 0.80; {})\n",
      o.size, o.count, k, m, o.rounds, ratio, ratio >= 0.8 ? "met" : "NOT met");
  if (!json_out.empty()) {
    nlohmann::json j{{"count", o.count}, {"size", o.size}, {"rounds", o.rounds}, {"kernel_gbps", k}, {"model_gbps", m},
                     {"ratio", ratio}, {"target_ratio", 0.8}};
    for (const auto& [name, runs] : {std::pair{"kernel", &r.kernel}, std::pair{"model", &r.model}})
      for (const auto& x : *runs)
        j[std::string(name) + "_runs"].push_back({{"sent", x.sent}, {"received", x.received}, {"seconds", x.seconds}, {"gbps", x.gbps()}});
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  return 0;
}

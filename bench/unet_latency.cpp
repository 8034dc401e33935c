// Benchmark: U-Net round-trip latency on a veth pair between two namespaces,
// against a kernel UDP socket between the same namespaces, side by side in
// one run: the same echoing process answers both (a U-Net node on an
// AF_PACKET socket, and a UDP socket), and both sides wait in poll().
//
//   rdmaconf-bench-unet-latency [--size N] [--count N] [--rounds R] [--json FILE]
//
// Prints the medians and their ratio against U-Net's target of 0.7 of the
// kernel's round trip (a target for the AF_XDP path; this is the AF_PACKET
// fallback). Needs root.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interop/unet/live.hpp"

namespace iu = rdmaconf::interop::unet;

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-unet-latency: U-Net round trips against a kernel UDP socket"};
  iu::LatencyOptions o;
  std::string json_out;
  app.add_option("--size", o.size, "message octets")->check(CLI::Range(1u, 1472u));
  app.add_option("--count", o.count, "round trips per run")->check(CLI::Range(10u, 10000000u));
  app.add_option("--rounds", o.rounds, "runs of each (the median is reported)")->check(CLI::Range(1, 100));
  app.add_option("--json", json_out, "write the figures as JSON");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    std::cerr << "rdmaconf-bench-unet-latency: needs root (network namespaces, a veth pair, AF_PACKET sockets); nothing measured\n";
    return 77;
  }
  const auto r = iu::unet_latency(o);
  if (!r.error.empty()) {
    std::cerr << "rdmaconf-bench-unet-latency: " << r.error << "\n";
    return 2;
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double u = median(r.unet_us), k = median(r.kernel_us), ratio = u / k;
  for (std::size_t i = 0; i < r.unet_us.size(); ++i)
    std::cout << fmt::format("round {}: U-Net {:.1f} us, kernel UDP {:.1f} us\n", i + 1, r.unet_us[i], r.kernel_us[i]);
  std::cout << fmt::format(
      "U-Net round trip, {}-octet messages, AF_PACKET path, interrupt-driven: {:.1f} us against kernel UDP {:.1f} us "
      "(medians of {}): {:.2f}x (target <= 0.70 for AF_XDP; {})\n",
      o.size, u, k, o.rounds, ratio, ratio <= 0.7 ? "met" : "NOT met");
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"size", o.size}, {"count", o.count}, {"rounds", o.rounds}, {"unet_us", r.unet_us},
                                              {"kernel_us", r.kernel_us}, {"ratio", ratio}, {"target_ratio", 0.7}}
                                   .dump(2)
                            << "\n";
  return 0;
}

// Benchmark: U-Net on a veth pair between two namespaces against a kernel
// UDP socket between the same namespaces, side by side in one run, the
// same process on side B serving both (interop/unet/live.hpp):
//  * round trips of 64-octet messages (target: U-Net at most 0.7x the
//    kernel's), and
//  * a one-way stream of 1472-octet messages (target: at least 1.0x the
//    kernel's messages delivered per second),
// each interrupt-driven (both sides wait in poll()) and busy-polling (both
// spin), reported separately.
//
//   rdmaconf-bench-unet [--path xdp|packet] [--rounds R] [--count N] [--stream N] [--json FILE]
//
// Needs root. AF_XDP where it can run; otherwise it says why and measures
// the AF_PACKET fallback (the targets are AF_XDP's).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interop/unet/live.hpp"

namespace iu = rdmaconf::interop::unet;

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-unet: U-Net against a kernel UDP socket on the same veth pair"};
  iu::BenchOptions o;
  std::string json_out, path = "xdp";
  app.add_option("--path", path, "xdp (AF_XDP, the fallback where it cannot run) or packet (AF_PACKET)")
      ->check(CLI::IsMember({"xdp", "packet"}));
  app.add_option("--size", o.latency_size, "round-trip message octets")->check(CLI::Range(1u, 1472u));
  app.add_option("--count", o.latency_count, "round trips per round")->check(CLI::Range(10u, 10000000u));
  app.add_option("--stream-size", o.stream_size, "streamed message octets")->check(CLI::Range(1u, 1472u));
  app.add_option("--stream", o.stream_count, "streamed messages per round")->check(CLI::Range(100u, 100000000u));
  app.add_option("--rounds", o.rounds, "rounds of each (medians are reported)")->check(CLI::Range(1, 100));
  app.add_option("--json", json_out, "write the figures as JSON");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    std::cerr << "rdmaconf-bench-unet: needs root (network namespaces, a veth pair, AF_XDP or AF_PACKET sockets); nothing measured\n";
    return 77;
  }
  o.xdp = path == "xdp";
  const auto r = iu::unet_bench(o);
  if (!r.error.empty()) {
    std::cerr << "rdmaconf-bench-unet: " << r.error << "\n";
    return 2;
  }
  if (!r.notice.empty()) std::cout << "note: " << r.notice << "\n";
  std::cout << fmt::format("data path: {}; medians of {} rounds, U-Net and kernel UDP alternating\n\n", r.path, o.rounds);
  std::cout << fmt::format("| {:<40} | {:>12} | {:>12} | {:>6} | {:<13} |\n", "What", "U-Net", "kernel UDP", "ratio", "target");
  std::cout << fmt::format("|{:-<42}|{:->14}|{:->14}|{:->8}|{:-<15}|\n", "", "", "", "", "");
  nlohmann::json j{{"path", r.path}, {"notice", r.notice}, {"rounds", o.rounds}};
  bool met = true;
  for (const bool busy : {false, true}) {
    const auto& m = busy ? r.busy : r.interrupt;
    const char* how = busy ? "busy-polling" : "interrupt-driven";
    const double ul = median(m.unet_us), kl = median(m.kernel_us), lr = ul / kl;
    const double ut = median(m.unet_mps), kt = median(m.kernel_mps), tr = ut / kt;
    std::cout << fmt::format("| {:<40} | {:>9.1f} us | {:>9.1f} us | {:>5.2f}x | <= 0.70x {:<4} |\n",
                             fmt::format("{} B round trip, {}", o.latency_size, how), ul, kl, lr, lr <= 0.7 ? "met" : "NOT");
    std::cout << fmt::format("| {:<40} | {:>7.0f} k/s | {:>7.0f} k/s | {:>5.2f}x | >= 1.00x {:<4} |\n",
                             fmt::format("{} B stream, {}", o.stream_size, how), ut / 1e3, kt / 1e3, tr, tr >= 1.0 ? "met" : "NOT");
    met = met && lr <= 0.7 && tr >= 1.0;
    j[how] = {{"unet_rtt_us", m.unet_us},     {"kernel_rtt_us", m.kernel_us},     {"rtt_ratio", lr},
              {"unet_msgs_per_s", m.unet_mps}, {"kernel_msgs_per_s", m.kernel_mps}, {"stream_ratio", tr},
              {"unet_loss", m.unet_loss},      {"kernel_loss", m.kernel_loss}};
  }
  std::cout << fmt::format("\nstream loss (median fraction sent but not delivered): U-Net {:.3f} / {:.3f}, kernel UDP {:.3f} / {:.3f} "
                           "(interrupt / busy)\n",
                           median(r.interrupt.unet_loss), median(r.busy.unet_loss), median(r.interrupt.kernel_loss),
                           median(r.busy.kernel_loss));
  j["targets_met"] = met;
  if (!json_out.empty()) std::ofstream(json_out) << j.dump(2) << "\n";
  return 0;
}

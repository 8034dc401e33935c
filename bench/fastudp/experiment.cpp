// The seed experiment of León and Ostrowski, reproduced: an application
// receives N chunks of 1472 octets into buff + offset and sorts each chunk
// as it completes, spending a chosen fraction of its time computing.
//
//   (a) kernel UDP: a sender thread sends the chunks over loopback; the
//       application recvfrom()s each into its place, then sorts it;
//   (b) Fast UDP: a "NIC" thread (standing for the NIC's processor) hands the
//       same chunks, as frames, to the model in the harness, which checks
//       their checksums, matches them against the receives posted at
//       buff + offset and splinters the payload straight there; the
//       application learns of each from a completion queue and sorts it.
//
// The compute per chunk is calibrated so that, over kernel UDP, it is the
// given fraction of the application's time. Each figure is the median of R
// runs; improvement = (kernel - fast) / kernel.
//
//   rdmaconf-bench-fastudp-experiment [--chunks N] [--runs R] [--json FILE]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "captures/io/pcap_writer.hpp"
#include "engines/fastudp/harness.hpp"

namespace fu = rdmaconf::engine::fastudp;
namespace io = rdmaconf::captures::io;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kChunk = 1472;
constexpr std::uint16_t kPort = 5001;

// The application's work on one chunk: sorting it, 64 octets at a time, a
// slice per unit of work (units beyond the chunk's 23 slices start over on
// fresh copies), so that a compute share can be dialled finely.
std::uint64_t compute(const std::byte* chunk, unsigned units) {
  std::uint64_t acc = 0;
  std::array<std::uint8_t, 64> v;
  for (unsigned u = 0; u < units; ++u) {
    std::memcpy(v.data(), chunk + (u % (kChunk / 64)) * 64, 64);
    v[u % 64] ^= static_cast<std::uint8_t>(u);
    std::sort(v.begin(), v.end());
    acc += v[32];
  }
  return acc;
}

std::atomic<std::uint64_t> g_sink{0};

double kernel_run(std::size_t n, unsigned rounds, std::vector<std::byte>& buff) {
  const int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  int big = 512 << 20;
  setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t al = sizeof a;
  getsockname(rx, reinterpret_cast<sockaddr*>(&a), &al);
  std::vector<std::byte> src(kChunk * n);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(static_cast<std::uint8_t>(i * 131 + (i >> 11)));
  const auto t0 = Clock::now();
  std::thread sender([&] {
    for (std::size_t i = 0; i < n; ++i) {
      while (sendto(tx, src.data() + i * kChunk, kChunk, 0, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) std::this_thread::yield();
    }
  });
  timeval tv{2, 0};  // a datagram lost on loopback ends the run rather than hangs it
  setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (recv(rx, buff.data() + i * kChunk, kChunk, 0) != static_cast<ssize_t>(kChunk)) break;
    acc += compute(buff.data() + i * kChunk, rounds);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  sender.join();
  close(rx);
  close(tx);
  g_sink += acc;
  return s;
}

struct FastRun {
  double seconds = 0, nic_busy_seconds = 0;
  std::uint64_t nic_cycles = 0;
};

FastRun fast_run(const fu::Plugin& p, std::size_t n, unsigned rounds) {
  fu::HarnessOptions o;
  o.ring_slots = 4096;
  o.record = false;
  fu::Harness h(p, o);
  // The application's buffer, in the host memory the NIC writes.
  const std::uint64_t buff = h.alloc(kChunk * n, fu::Region::rx_buffer);
  std::byte* app = h.memory(buff);
  // Receives are posted ahead of the data, FUDP_MIN_POSTED at a time (what
  // every NIC holds), one more as each completes.
  std::size_t posted = 0;
  for (; posted < std::min<std::size_t>(n, FUDP_MIN_POSTED); ++posted) h.post_receive_into(buff + posted * kChunk, kChunk, kPort);
  // The wire's frames, built before the clock starts (the sender's work in (a)).
  std::vector<std::vector<std::byte>> frames(n);
  const auto from = io::host_v4(10, 0, 0, 1, 40000), to = io::host_v4(10, 0, 0, 2, kPort);
  std::vector<std::byte> payload(kChunk);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < kChunk; ++j) payload[j] = std::byte(static_cast<std::uint8_t>((i * kChunk + j) * 131 + ((i * kChunk + j) >> 11)));
    frames[i] = io::eth_udp(from, to, payload, true);
  }
  // Completions: chunks placed, published by the NIC thread.
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> nic_finished{false};
  std::uint64_t placed = 0;
  h.on_entry = [&](const fu::RingEntry& e) {
    if (e.head.kind != FUDP_ENTRY_SPLINTER) return;
    done.store(++placed, std::memory_order_release);
    if (posted < n) h.post_receive_into(buff + posted++ * kChunk, kChunk, kPort);
  };
  FastRun r;
  const auto t0 = Clock::now();
  std::thread nic([&] {
    const auto n0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i) h.wire_receive(frames[i]);
    r.nic_busy_seconds = std::chrono::duration<double>(Clock::now() - n0).count();
    nic_finished = true;
  });
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    while (done.load(std::memory_order_acquire) <= i) {
      if (nic_finished.load() && done.load() <= i) {
        std::cerr << fmt::format("fastudp: chunk {} was never placed\n", i);
        std::exit(1);
      }
      std::this_thread::yield();
    }
    acc += compute(app + i * kChunk, rounds);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  nic.join();
  r.nic_cycles = h.nic_cycles();
  g_sink += acc;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-fastudp-experiment: the seed's receive-and-sort application, kernel UDP against Fast UDP"};
  std::size_t chunks = 20000;
  int runs = 5;
  std::string plugin = RDMACONF_NIC_MODEL, json_out;
  double nic_ghz = 1.0;
  app.add_option("--chunks", chunks, "chunks of 1472 octets per run")->check(CLI::Range(100, 200000));
  app.add_option("--runs", runs, "runs per point (the median is reported)")->check(CLI::Range(1, 50));
  app.add_option("--plugin", plugin, "the NIC plug-in");
  app.add_option("--nic-ghz", nic_ghz, "the NIC clock the cycle account is read at");
  app.add_option("--json", json_out, "write the table as JSON");
  CLI11_PARSE(app, argc, argv);
  std::string err;
  auto p = fu::Plugin::open(plugin, err);
  if (!p) {
    std::cerr << err << "\n";
    return 2;
  }
  std::vector<std::byte> buff(kChunk * chunks);
  // Calibration: the application's network time per chunk over kernel UDP,
  // and one sort's time.
  std::vector<double> net;
  for (int r = 0; r < runs; ++r) net.push_back(kernel_run(chunks, 0, buff) / static_cast<double>(chunks));
  const double t_net = median(net);
  const auto c0 = Clock::now();
  g_sink += compute(buff.data(), 200000);
  const double t_sort = std::chrono::duration<double>(Clock::now() - c0).count() / 200000;

  std::cout << fmt::format("chunks {} x {} octets; kernel UDP receive {:.2f} us per chunk, one 64-octet sort {:.3f} us; medians of {}\n",
                           chunks, kChunk, t_net * 1e6, t_sort * 1e6, runs);
  std::cout << fmt::format("{:>8} {:>7} {:>12} {:>12} {:>12}\n", "compute", "sorts/chunk", "kernel ms", "fastudp ms", "improvement");
  nlohmann::json rows = nlohmann::json::array();
  double nic_busy = 0;
  std::uint64_t nic_cycles = 0;
  for (double f : {0.0, 0.2, 0.5, 0.8, 0.9, 0.95}) {
    const unsigned rounds = f == 0 ? 0 : std::max(1u, static_cast<unsigned>(t_net * f / (1 - f) / t_sort + 0.5));
    std::vector<double> k, fa;
    for (int r = 0; r < runs; ++r) {
      k.push_back(kernel_run(chunks, rounds, buff));
      const auto fr = fast_run(*p, chunks, rounds);
      fa.push_back(fr.seconds);
      nic_busy = fr.nic_busy_seconds;
      nic_cycles = fr.nic_cycles;
    }
    const double km = median(k), fm = median(fa), imp = (km - fm) / km;
    std::cout << fmt::format("{:>7.0f}% {:>7} {:>12.1f} {:>12.1f} {:>11.1f}%{}\n", f * 100, rounds, km * 1e3, fm * 1e3, imp * 100,
                             f == 0.8 ? "   (seed: 5% at 80%)" : "");
    rows.push_back({{"compute_fraction", f}, {"sorts_per_chunk", rounds}, {"kernel_s", km}, {"fastudp_s", fm}, {"improvement", imp}});
  }
  const double model_ns = static_cast<double>(nic_cycles) / static_cast<double>(chunks) / nic_ghz;
  const double measured_ns = nic_busy * 1e9 / static_cast<double>(chunks);
  std::cout << fmt::format("NIC work per chunk: the model's cycle account {:.0f} ns at {:.1f} GHz; measured on the NIC thread {:.0f} ns "
                           "(harness and model on a host core)\n",
                           model_ns, nic_ghz, measured_ns);
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"chunks", chunks}, {"runs", runs}, {"kernel_us_per_chunk", t_net * 1e6},
                                              {"sort_us", t_sort * 1e6}, {"rows", rows}, {"model_ns_per_chunk", model_ns},
                                              {"measured_ns_per_chunk", measured_ns}}
                                   .dump(2)
                            << "\n";
  return g_sink == 42 ? 1 : 0;  // keeps the compute from being optimised away
}

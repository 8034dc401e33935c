// Benchmark: the iWARP engine over loopback TCP against raw TCP moving the
// same octets over the same loopback, in the same run.
//
//   rdmaconf-bench-iwarp [--iterations N] [--runs R] [--json FILE]
//
// Throughput: write-bw at 64 KiB (the responder verifies its buffer at the
// end) against a raw TCP stream of the same messages acknowledged by one
// octet at the end. Latency: write-lat ping-pong at 4 B and 64 KiB (every
// message verified) against a raw TCP ping-pong that verifies each message
// the same way. The figures come from R short rounds; each round measures
// raw TCP and every engine configuration back to back, raw TCP first in
// even rounds and last in odd ones, and the ratio is the median of the
// rounds' own ratios (engine/raw), which a slow spell of the machine moves
// together. The JSON keeps every round's figures (engine_rounds,
// raw_rounds, in the row's unit), from which bench/measure.py gives the
// spread and says when the baseline moved more than the effect measured.
// Both sides of each measurement run in this process on two threads, so a
// two-core machine gives each its own core.
#include <fcntl.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interop/iwarp/scenarios.hpp"
#include "protocols/crc/crc32c.hpp"

using namespace rdmaconf::engine::iwarp;
namespace ii = rdmaconf::interop::iwarp;
using Clock = std::chrono::steady_clock;

namespace {

void set_blocking(int fd, bool spin) {
  const int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, spin ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool write_all(int fd, const std::byte* p, std::size_t n) {
  while (n) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool read_all(int fd, std::byte* p, std::size_t n) {
  while (n) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// A connected raw TCP pair on loopback: client fd here, the server side to `serve`.
template <class Server>
double raw_run(bool spin, Server serve, const std::function<bool(int)>& client) {
  std::string err;
  Fd l = tcp_listen("127.0.0.1:0", err);
  const auto port = local_port(l.get());
  std::jthread t([&] {
    Fd s = tcp_accept(l.get(), 5000, err);
    if (!s) return;
    set_blocking(s.get(), spin);
    serve(s.get());
  });
  Fd c = tcp_connect(fmt::format("127.0.0.1:{}", port), 5000, err);
  set_blocking(c.get(), spin);
  const auto t0 = Clock::now();
  const bool ok = client(c.get());
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return ok ? s : -1;
}

double raw_stream(std::uint32_t size, std::uint64_t n, bool spin) {
  std::vector<std::byte> src(size), dst(1 << 20);
  ii::fill_pattern(src, 1);
  return raw_run(spin, [&](int fd) {
    std::uint64_t left = n * size;
    while (left) {
      const ssize_t k = ::recv(fd, dst.data(), std::min<std::uint64_t>(left, dst.size()), 0);
      if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (k <= 0) return;
      left -= static_cast<std::uint64_t>(k);
    }
    const std::byte ack{1};
    write_all(fd, &ack, 1);
  }, [&](int fd) {
    for (std::uint64_t i = 0; i < n; ++i)
      if (!write_all(fd, src.data(), size)) return false;
    std::byte ack;
    return read_all(fd, &ack, 1);
  });
}

// Ping-pong with the same per-message verification as write-lat (compare with the expected message).
double raw_pingpong(std::uint32_t size, std::uint64_t n, bool spin) {
  std::vector<std::byte> base(size);
  ii::fill_pattern(base, 7);
  return raw_run(spin, [&](int fd) {
    std::vector<std::byte> in(size), out = base;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!read_all(fd, in.data(), size)) return;
      out.back() = std::byte(1 + i % 255);
      if (std::memcmp(in.data(), out.data(), size) != 0) return;
      if (!write_all(fd, out.data(), size)) return;
    }
  }, [&](int fd) {
    std::vector<std::byte> in(size), out = base;
    for (std::uint64_t i = 0; i < n; ++i) {
      out.back() = std::byte(1 + i % 255);
      if (!write_all(fd, out.data(), size) || !read_all(fd, in.data(), size)) return false;
      if (std::memcmp(in.data(), out.data(), size) != 0) return false;
    }
    return true;
  });
}

struct EngineCfg {
  bool crc = true, markers = false;
  std::string name() const { return fmt::format("crc {}{}", crc ? "on" : "off", markers ? ", markers both ways" : ""); }
};

// CPU time (user and system) of the calling thread or of the process, seconds.
double cpu_clock(clockid_t which) {
  timespec t{};
  ::clock_gettime(which, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The CPU each side of an engine run used: the initiator (which sends the
// RDMA Writes) and the responder (which receives and places them).
struct Cpu {
  double sender = 0, receiver = 0;
};

double engine_run(const std::string& scenario, std::uint32_t size, std::uint64_t n, const EngineCfg& e, bool spin,
                  Cpu* cpu = nullptr) {
  std::string err;
  Fd l = tcp_listen("127.0.0.1:0", err);
  const auto port = local_port(l.get());
  ii::PeerOptions po;
  po.qp.crc = e.crc;
  po.qp.markers = e.markers;
  po.qp.mulpdu = 16384;
  po.connections = 1;
  po.wait = spin ? WaitMode::spin : WaitMode::block;
  // The responder serves its session on threads of its own: its CPU is
  // the process's less the initiator's thread.
  const double p0 = cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
  std::jthread t([&] { ii::serve(l.get(), po, [](const nlohmann::json&) {}); });
  ii::RunOptions o;
  o.scenario = scenario;
  o.size = size;
  o.iterations = n;
  o.qp.crc = e.crc;
  o.qp.markers = e.markers;
  o.qp.mulpdu = 16384;
  o.window = 32;
  o.wait = po.wait;
  const double c0 = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
  const auto r = ii::run_initiator(fmt::format("tcp://127.0.0.1:{}", port), o);
  const double sender_cpu = cpu_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
  t.join();
  if (cpu) *cpu = {sender_cpu, cpu_clock(CLOCK_PROCESS_CPUTIME_ID) - p0 - sender_cpu};
  if (!r.ok) {
    std::cerr << fmt::format("{} {} failed: {}\n", scenario, size, r.message);
    return -1;
  }
  return r.seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmaconf-bench-iwarp: the iWARP engine against raw TCP on loopback"};
  std::uint64_t bw_iters = 4000, lat_iters = 5000;  // short rounds, many of them
  int runs = 21;
  std::string json_out;
  bool spin = false;
  app.add_option("--bw-iterations", bw_iters, "64 KiB messages per throughput run");
  app.add_option("--lat-iterations", lat_iters, "round trips per latency run");
  app.add_option("--runs,--rounds", runs, "rounds per figure, alternating raw TCP and the engine (medians reported)")
      ->check(CLI::Range(1, 200));
  app.add_option("--json", json_out, "write the figures as JSON");
  app.add_flag("--spin", spin, "busy-poll on both sides (engine and raw TCP) instead of blocking");
  std::string only;
  std::vector<std::uint32_t> lat_sizes = {4, 65536};
  app.add_option("--lat-sizes", lat_sizes, "message sizes of the latency runs (for profiling one)")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--only", only, "just this configuration (\"crc on\", \"crc off\", \"crc on, markers both ways\")");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json out = {{"wait", spin ? "spin" : "block"}, {"rows", nlohmann::json::array()}};
  // What the CRC alone costs here, CPU seconds per GB: CRC32c over 64 KiB
  // buffers (as the FPDUs' payloads are summed), 1 GB of them.
  {
    std::vector<std::byte> b(64 * 1024);
    ii::fill_pattern(b, 3);
    std::uint32_t sink = 0;
    const double c0 = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 16384; ++i) sink += rdmaconf::protocols::crc::crc32c(b);
    out["crc_cpu_s_per_gb"] = (cpu_clock(CLOCK_THREAD_CPUTIME_ID) - c0) / (16384.0 * 65536 / 1e9);
    out["crc_sink"] = sink;  // (keeps the loop)
  }
  std::vector<EngineCfg> cfgs = {{true, false}, {false, false}, {true, true}};
  if (!only.empty())  // (for profiling one configuration)
    std::erase_if(cfgs, [&](const EngineCfg& c) { return c.name() != only; });
  // Each run measures raw TCP and then every configuration back to back, and
  // the ratio reported is the median of the runs' own ratios: a slow spell of
  // this (virtual) machine then moves both sides of a ratio together.
  struct Figures {
    std::vector<double> raw;
    std::vector<std::vector<double>> eng;
    std::vector<std::vector<Cpu>> cpu;  // each configuration's sender and receiver CPU, per round
  };
  auto paired = [&](auto raw_f, auto eng_f) {
    Figures f{{}, std::vector<std::vector<double>>(cfgs.size()), std::vector<std::vector<Cpu>>(cfgs.size())};
    for (int i = 0; i < runs; ++i) {
      if (i % 2 == 0) f.raw.push_back(raw_f());
      for (std::size_t c = 0; c < cfgs.size(); ++c) {
        Cpu cpu;
        f.eng[c].push_back(eng_f(cfgs[c], &cpu));
        f.cpu[c].push_back(cpu);
      }
      if (i % 2 == 1) f.raw.push_back(raw_f());
    }
    return f;
  };
  // Each round's figure in the row's unit (time per message or rate).
  auto per_round = [](const std::vector<double>& secs, auto unit) {
    nlohmann::json a = nlohmann::json::array();
    for (double s : secs) a.push_back(s > 0 ? unit(s) : 0.0);
    return a;
  };
  // Median over runs of eng/raw (times), and of each side alone.
  auto ratio = [](const std::vector<double>& eng, const std::vector<double>& raw) {
    std::vector<double> r;
    for (std::size_t i = 0; i < eng.size(); ++i) r.push_back(eng[i] > 0 ? eng[i] / raw[i] : 0);
    return median(r);
  };

  std::cout << fmt::format("{:<34} {:>12} {:>12} {:>8}\n", "measurement", "engine", "raw TCP", "ratio");
  const std::uint32_t kBw = 64 * 1024;
  const double octets = static_cast<double>(kBw) * static_cast<double>(bw_iters);
  const Figures bw = paired([&] { return raw_stream(kBw, bw_iters, spin); },
                            [&](const EngineCfg& c, Cpu* cpu) { return engine_run("write-bw", kBw, bw_iters, c, spin, cpu); });
  const double raw_gbps = octets * 8 / median(bw.raw) / 1e9;
  for (std::size_t i = 0; i < cfgs.size(); ++i) {
    const double s = median(bw.eng[i]);
    const double gbps = s > 0 ? octets * 8 / s / 1e9 : 0;
    const double r = s > 0 ? 1 / ratio(bw.eng[i], bw.raw) : 0;  // throughput: raw time over engine time
    std::cout << fmt::format("{:<34} {:>7.2f} Gb/s {:>7.2f} Gb/s {:>7.3f}x\n", "RDMA Write 64 KiB, " + cfgs[i].name(), gbps,
                             raw_gbps, r);
    const auto rate = [&](double secs) { return octets * 8 / secs / 1e9; };
    // CPU seconds per GB moved, each side (the median over the rounds).
    std::vector<double> send_cpu, recv_cpu;
    for (const Cpu& c : bw.cpu[i]) {
      send_cpu.push_back(c.sender / (octets / 1e9));
      recv_cpu.push_back(c.receiver / (octets / 1e9));
    }
    out["rows"].push_back({{"test", "write-bw"}, {"size", kBw}, {"config", cfgs[i].name()}, {"engine_gbit_s", gbps},
                           {"raw_tcp_gbit_s", raw_gbps}, {"ratio", r}, {"unit", "Gb/s"},
                           {"engine_rounds", per_round(bw.eng[i], rate)}, {"raw_rounds", per_round(bw.raw, rate)},
                           {"sender_cpu_s_per_gb", median(send_cpu)}, {"receiver_cpu_s_per_gb", median(recv_cpu)}});
  }
  for (std::uint32_t size : lat_sizes) {
    const std::uint64_t n = size > 4096 ? lat_iters / 4 : lat_iters;
    const Figures lat = paired([&] { return raw_pingpong(size, n, spin); },
                               [&](const EngineCfg& c, Cpu* cpu) { return engine_run("write-lat", size, n, c, spin, cpu); });
    const double raw_us = median(lat.raw) * 1e6 / static_cast<double>(n) / 2;
    for (std::size_t i = 0; i < cfgs.size(); ++i) {
      const double us = median(lat.eng[i]) * 1e6 / static_cast<double>(n) / 2;
      const double r = ratio(lat.eng[i], lat.raw);
      std::cout << fmt::format("{:<34} {:>9.2f} us {:>9.2f} us {:>7.3f}x\n",
                               fmt::format("half RTT {} B, {}", size, cfgs[i].name()), us, raw_us, r);
      const auto half_rtt = [&](double secs) { return secs * 1e6 / static_cast<double>(n) / 2; };
      out["rows"].push_back({{"test", "write-lat"}, {"size", size}, {"config", cfgs[i].name()}, {"engine_half_rtt_us", us},
                             {"raw_tcp_half_rtt_us", raw_us}, {"ratio", r}, {"unit", "us"},
                             {"engine_rounds", per_round(lat.eng[i], half_rtt)}, {"raw_rounds", per_round(lat.raw, half_rtt)}});
    }
  }
  if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << "\n";
  return 0;
}

// The U-Net benchmark: round trips and throughput against a kernel UDP
// socket between the same namespaces (live.hpp, unet_bench).
#include "interop/unet/live.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "interop/unet/transport.hpp"

namespace rdmaconf::interop::unet {

using Clock = std::chrono::steady_clock;

BenchResult unet_bench(const BenchOptions& opt) {
  BenchResult res;
  WireTransport t;
  if (const auto e = t.start(opt.xdp, res.notice); !e.empty()) {
    res.error = e;
    return res;
  }
  res.path = t.path();
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const int echo = t.kernel_socket(7000), sink = t.kernel_socket(7001);
  std::vector<std::byte> msg(std::max(opt.latency_size, opt.stream_size)), back(2048);
  std::uint16_t tag = 100;
  for (const bool busy : {false, true}) {
    auto& m = busy ? res.busy : res.interrupt;
    for (int round = 0; round < opt.rounds && res.error.empty(); ++round) {
      // U-Net round trips: B echoes.
      PeerSpec spec;
      spec.behaviour = Behaviour::echo;
      spec.a = tag++;
      spec.b = tag++;
      ++tag;  // B's second endpoint
      if (const auto e = t.setup(spec, "", busy); !e.empty()) {
        res.error = e;
        break;
      }
      {
        u::Node a(kMacA);
        std::uint32_t ch = 0;
        auto* ea = open_side_a(t, a, spec, "", ch);
        fill(ea->buffer(0), opt.latency_size, 1);
        std::vector<double> rtt;
        rtt.reserve(opt.latency_count);
        for (std::uint32_t i = 0; i < opt.latency_count; ++i) {
          const auto t0 = Clock::now();
          ea->send(ch, 0, opt.latency_size);
          if (!t.round_trip(a, *ea, 1000, busy)) {
            res.error = fmt::format("U-Net message {} of round {} got no echo", i, round + 1);
            break;
          }
          while (ea->poll_sent()) {
          }
          rtt.push_back(seconds(t0) * 1e6);
        }
        m.unet_us.push_back(median(rtt));
      }
      // Kernel UDP round trips: the same process echoes.
      std::vector<double> rtt;
      for (std::uint32_t i = 0; i < opt.latency_count && res.error.empty(); ++i) {
        const auto t0 = Clock::now();
        (void)::send(echo, msg.data(), opt.latency_size, 0);
        ssize_t n = -1;
        if (busy) {
          const auto until = t0 + std::chrono::seconds(1);
          while ((n = recv(echo, back.data(), back.size(), MSG_DONTWAIT)) < 0 && Clock::now() < until) {
          }
        } else {
          pollfd p{echo, POLLIN, 0};
          if (poll(&p, 1, 1000) > 0) n = recv(echo, back.data(), back.size(), 0);
        }
        if (n != static_cast<ssize_t>(opt.latency_size)) {
          res.error = fmt::format("kernel UDP datagram {} of round {} got no echo", i, round + 1);
          break;
        }
        rtt.push_back(seconds(t0) * 1e6);
      }
      m.kernel_us.push_back(median(rtt));
      if (!res.error.empty()) break;

      // U-Net streaming: B sinks (and checks every message).
      spec.behaviour = Behaviour::sink;
      spec.a = tag++;
      spec.b = tag++;
      ++tag;
      if (const auto e = t.setup(spec, "", busy); !e.empty()) {
        res.error = e;
        break;
      }
      {
        u::Node a(kMacA);
        std::uint32_t ch = 0;
        auto* ea = open_side_a(t, a, spec, "", ch);
        a.attach(&t.port());
        for (std::uint32_t b = 0; b < 32; ++b) fill(ea->buffer(b), opt.stream_size, b);
        const auto t0 = Clock::now();
        for (std::uint32_t i = 0; i < opt.stream_count; ++i) {
          ea->send(ch, i % 32, opt.stream_size);
          if (i % 32 == 31 || i + 1 == opt.stream_count) {
            a.transmit();
            while (ea->poll_sent()) {
            }
          }
        }
        const json b = t.report();
        const double s = seconds(t0);
        const auto got = b.value("delivered", std::uint64_t{0});
        m.unet_mps.push_back(static_cast<double>(got) / s);
        m.unet_loss.push_back(1.0 - static_cast<double>(got) / opt.stream_count);
      }
      // Kernel UDP streaming to B's sink.
      const auto before = t.report().value("udp_sunk", std::uint64_t{0});
      const auto t0 = Clock::now();
      for (std::uint32_t i = 0; i < opt.stream_count; ++i) (void)::send(sink, msg.data(), opt.stream_size, 0);
      const auto got = t.report().value("udp_sunk", std::uint64_t{0}) - before;
      const double s = seconds(t0);
      m.kernel_mps.push_back(static_cast<double>(got) / s);
      m.kernel_loss.push_back(1.0 - static_cast<double>(got) / opt.stream_count);
    }
  }
  close(echo);
  close(sink);
  return res;
}


}  // namespace rdmaconf::interop::unet

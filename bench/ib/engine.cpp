// Benchmark: the RoCEv2 engine over loopback UDP against raw UDP datagrams
// of the same size over the same loopback, in the same run.
//
//   rdmaconf-bench-roce [--iterations N] [--runs R] [--json FILE]
//
// Message rate: 64-octet SENDs (RC, UC and UD; each received message is
// digested and compared by the scenario) against raw datagrams of the same
// wire size (BTH + 64 + ICRC = 80 octets) counted by a receiver. Throughput:
// RC RDMA WRITEs of 64 KiB (the responder's buffer digest compared) against
// raw datagrams of one path MTU. Both sides use the same batching
// (sendmmsg / recvmmsg, 32 at a time) and run on two threads of this
// process, so a two-core machine gives each its own core. Each figure is
// the median of R rounds, raw UDP first in even rounds and last in odd
// ones; ratios are medians of the rounds' engine / raw, and the JSON keeps
// every round's figures.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engines/common/socket.hpp"
#include "interop/ib/scenarios.hpp"

namespace ib = rdmaconf::interop::ib;
using rdmaconf::engine::Fd;
using Clock = std::chrono::steady_clock;

namespace {

sockaddr_in v4(const char* a, std::uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  inet_pton(AF_INET, a, &s.sin_addr);
  return s;
}

// Raw UDP: a receiver counts datagrams of `size` octets until `n` arrived or
// the sender has finished and nothing came for 200 ms; messages per second
// from the first to the last datagram received.
double raw_udp_rate(std::uint64_t n, std::size_t size, std::uint16_t port, std::uint64_t& received) {
  Fd rx(::socket(AF_INET, SOCK_DGRAM, 0)), tx(::socket(AF_INET, SOCK_DGRAM, 0));
  const int big = 4 << 20;
  for (int fd : {rx.get(), tx.get()}) {
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0)
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) != 0)
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  }
  auto ra = v4("127.0.0.1", port), ta = v4("127.0.0.2", port);
  if (::bind(rx.get(), reinterpret_cast<sockaddr*>(&ra), sizeof ra) != 0 ||
      ::bind(tx.get(), reinterpret_cast<sockaddr*>(&ta), sizeof ta) != 0)
    throw std::runtime_error("raw UDP: bind failed");
  std::atomic<bool> sent_all{false};
  Clock::time_point first{}, last{};
  received = 0;
  std::thread receiver([&] {
    std::vector<std::vector<std::byte>> bufs(32, std::vector<std::byte>(size + 64));
    mmsghdr m[32]{};
    iovec iov[32];
    auto quiet_since = Clock::now();
    while (received < n) {
      for (int i = 0; i < 32; ++i) {
        iov[i] = {bufs[i].data(), bufs[i].size()};
        m[i].msg_hdr = {};
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
      }
      const int r = ::recvmmsg(rx.get(), m, 32, MSG_DONTWAIT, nullptr);
      if (r > 0) {
        if (received == 0) first = Clock::now();
        received += static_cast<std::uint64_t>(r);
        last = Clock::now();
        quiet_since = last;
        continue;
      }
      if (sent_all && Clock::now() - quiet_since > std::chrono::milliseconds(200)) break;
      pollfd p{rx.get(), POLLIN, 0};
      ::poll(&p, 1, 10);
    }
  });
  std::vector<std::byte> msg(size, std::byte{0x5a});
  mmsghdr m[32]{};
  iovec iov[32];
  for (int i = 0; i < 32; ++i) {
    iov[i] = {msg.data(), msg.size()};
    m[i].msg_hdr.msg_iov = &iov[i];
    m[i].msg_hdr.msg_iovlen = 1;
    m[i].msg_hdr.msg_name = &ra;
    m[i].msg_hdr.msg_namelen = sizeof ra;
  }
  for (std::uint64_t s = 0; s < n;) {
    const auto k = static_cast<unsigned>(std::min<std::uint64_t>(32, n - s));
    const int r = ::sendmmsg(tx.get(), m, k, 0);
    if (r > 0) s += static_cast<std::uint64_t>(r);
  }
  sent_all = true;
  receiver.join();
  const double secs = std::chrono::duration<double>(last - first).count();
  return secs > 0 ? static_cast<double>(received) / secs : 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("RoCEv2 engine against raw UDP on loopback");
  std::uint64_t iterations = 50000;  // short rounds, many of them
  unsigned runs = 21, window = 512;
  std::string json_out;
  app.add_option("--iterations", iterations, "64-octet messages per run");
  app.add_option("--runs,--rounds", runs, "rounds per figure, alternating raw UDP and the engine (medians reported)");
  app.add_option("--window", window, "work requests in flight");
  app.add_option("--json", json_out, "write the figures as JSON to FILE");
  CLI11_PARSE(app, argc, argv);

  const auto port = static_cast<std::uint16_t>(30000 + getpid() % 20000);
  std::string err;
  Fd lfd = rdmaconf::engine::tcp_listen("127.0.0.1:0", err);
  if (!lfd) {
    std::cerr << err << "\n";
    return 1;
  }
  const auto ctl = rdmaconf::engine::local_port(lfd.get());
  ib::PeerOptions po;
  po.udp_local = fmt::format("127.0.0.1:{}", port);
  po.idle_timeout_ms = 10000;
  std::jthread peer([&](std::stop_token st) { ib::serve(lfd.get(), po, [](const nlohmann::json&) {}, st); });

  auto engine = [&](const char* scenario, std::uint32_t size, std::uint64_t iters, double& gbit) {
    ib::RunOptions ro;
    ro.scenario = scenario;
    ro.size = size;
    ro.iterations = iters;
    ro.window = window;
    ro.udp_local = fmt::format("127.0.0.2:{}", port);
    const auto r = ib::run_initiator(fmt::format("127.0.0.1:{}", ctl), ro);
    if (!r.ok) throw std::runtime_error(fmt::format("{}: {}", scenario, r.message));
    gbit = static_cast<double>(r.bytes) * 8 / r.seconds / 1e9;
    return static_cast<double>(r.iterations) / r.seconds;
  };
  // The machine's speed drifts (other load, a virtual CPU): each run
  // measures raw UDP and the engine back to back, and the ratio reported is
  // the median of the per-run ratios.
  nlohmann::json out;
  try {
    std::vector<double> raw, rc, ud, rc_ratio, ud_ratio, rawg, wg, w_ratio;
    std::uint64_t got = 0;
    for (unsigned i = 0; i < runs; ++i) {
      // Raw UDP first in even rounds, last in odd ones.
      double g = 0;
      const auto raw_rates = [&] {
        raw.push_back(raw_udp_rate(iterations, 12 + 64 + 4, port + 1, got));
        rawg.push_back(raw_udp_rate(iterations / 4, 12 + 16 + 1024 + 4, port + 1, got) * 1024 * 8 / 1e9);
      };
      if (i % 2 == 0) raw_rates();
      rc.push_back(engine("send", 64, iterations, g));
      ud.push_back(engine("ud-send", 64, iterations, g));
      engine("write", 65536, std::max<std::uint64_t>(64, iterations / 200), g);
      wg.push_back(g);
      if (i % 2 == 1) raw_rates();
      rc_ratio.push_back(rc.back() / raw.back());
      ud_ratio.push_back(ud.back() / raw.back());
      w_ratio.push_back(g / rawg.back());
    }
    std::cout << fmt::format("{} runs, medians; ratios are medians of per-run engine/raw\n", runs);
    std::cout << fmt::format("raw UDP, 80-octet datagrams:      {:>9.0f} messages/s\n", median(raw));
    std::cout << fmt::format("engine RC SEND, 64 octets:        {:>9.0f} messages/s   ratio {:.2f}\n", median(rc), median(rc_ratio));
    std::cout << fmt::format("engine UD SEND, 64 octets:        {:>9.0f} messages/s   ratio {:.2f}\n", median(ud), median(ud_ratio));
    std::cout << fmt::format("raw UDP, 1 KiB payload datagrams: {:>9.2f} Gbit/s\n", median(rawg));
    std::cout << fmt::format("engine RC WRITE 64 KiB, PMTU 1024: {:>8.2f} Gbit/s       ratio {:.2f}\n", median(wg), median(w_ratio));
    out = {{"runs", runs},
           {"raw_udp_80B_msgs_per_s", median(raw)},
           {"rc_send_64B_msgs_per_s", median(rc)},
           {"rc_send_64B_ratio", median(rc_ratio)},
           {"ud_send_64B_msgs_per_s", median(ud)},
           {"ud_send_64B_ratio", median(ud_ratio)},
           {"raw_udp_1KiB_gbit_per_s", median(rawg)},
           {"rc_write_64KiB_gbit_per_s", median(wg)},
           {"rc_write_ratio", median(w_ratio)},
           // Every round's figures (bench/measure.py gives their spread).
           {"rounds", {{"raw_udp_80B_msgs_per_s", raw}, {"rc_send_64B_msgs_per_s", rc}, {"ud_send_64B_msgs_per_s", ud},
                       {"raw_udp_1KiB_gbit_per_s", rawg}, {"rc_write_64KiB_gbit_per_s", wg}}}};
  } catch (const std::exception& e) {
    std::cerr << "rdmaconf-bench-roce: " << e.what() << "\n";
    return 1;
  }
  if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << "\n";
  return 0;
}

#include "interop/fastudp/live.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "captures/io/pcap_writer.hpp"
#include "engines/fastudp/harness.hpp"
#include "protocols/core/bits.hpp"

namespace rdmaconf::interop::fastudp {

namespace eng = engine::fastudp;
namespace io = captures::io;

namespace {

constexpr std::uint16_t kNicPort = 5001, kKernelPort = 6000, kNicSrcPort = 7000;

// The kernel's UDP counters in the calling thread's namespace.
struct Snmp {
  std::uint64_t in_datagrams = 0, in_errors = 0, in_csum_errors = 0;
};
Snmp read_snmp() {
  std::ifstream f("/proc/thread-self/net/snmp");
  std::string line, names;
  Snmp s;
  while (std::getline(f, line)) {
    if (line.rfind("Udp:", 0) != 0) continue;
    if (names.empty()) {
      names = line;
      continue;
    }
    std::istringstream n(names), v(line);
    std::string name, value;
    n >> name;
    v >> value;
    while (n >> name && v >> value) {
      if (name == "InDatagrams") s.in_datagrams = std::stoull(value);
      if (name == "InErrors") s.in_errors = std::stoull(value);
      if (name == "InCsumErrors") s.in_csum_errors = std::stoull(value);
    }
    break;
  }
  return s;
}

void fill(std::byte* p, std::size_t n, std::uint32_t i) {
  for (std::size_t j = 0; j < n; ++j) p[j] = std::byte(static_cast<std::uint8_t>(i * 7 + j));
  if (n >= 4) protocols::put_be32(std::span<std::byte>(p, n), 0, i);
}
bool intact(const std::byte* p, std::size_t n, std::uint32_t& i) {
  if (n < 4) return false;
  i = protocols::be32(std::span<const std::byte>(p, n), 0);
  for (std::size_t j = 4; j < n; ++j)
    if (p[j] != std::byte(static_cast<std::uint8_t>(i * 7 + j))) return false;
  return true;
}

struct Namespace {
  std::string name, nic_if, kernel_if;
  bool made = false;
  ~Namespace() {
    if (!made) return;
    (void)std::system(fmt::format("ip link del {} 2>/dev/null; ip netns del {} 2>/dev/null", nic_if, name).c_str());
  }
};

}  // namespace

LiveResult run_live(const LiveOptions& opt, std::ostream& log) {
  LiveResult res;
  if (geteuid() != 0) {
    res.error = "nic live needs root (a network namespace, a veth pair and a raw socket)";
    return res;
  }
  std::string err;
  auto plugin = eng::Plugin::open(opt.plugin, err);
  if (!plugin) {
    res.error = err;
    return res;
  }
  Namespace ns;
  const unsigned id = static_cast<unsigned>(getpid()) % 100000;
  ns.name = fmt::format("rdmaconf-fudp-{}", id);
  ns.nic_if = fmt::format("fudpn{}", id);
  ns.kernel_if = fmt::format("fudpk{}", id);
  const std::string setup = fmt::format(
      "set -e; ip netns add {0}; ip link add {1} address 02:00:0a:4d:00:02 type veth peer name {2} address 02:00:0a:4d:00:01 netns {0}; "
      "ip -n {0} addr add 10.77.0.1/24 dev {2}; ip -n {0} link set lo up; ip -n {0} link set {2} up; ip link set {1} up; "
      "ip -n {0} neigh replace 10.77.0.2 lladdr 02:00:0a:4d:00:02 dev {2} nud permanent; "
      // The kernel computes its checksums itself (veth would leave them to a NIC that is not there).
      "ip netns exec {0} ethtool -K {2} tx off >/dev/null; sysctl -qw net.ipv6.conf.{1}.disable_ipv6=1",
      ns.name, ns.nic_if, ns.kernel_if);
  ns.made = true;
  if (std::system(setup.c_str()) != 0) {
    res.error = "setting up the namespace and veth pair failed (ip, ethtool)";
    return res;
  }

  // The NIC's wire: a raw socket on its end of the pair.
  const int raw = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (raw < 0) {
    res.error = fmt::format("AF_PACKET socket: {}", std::strerror(errno));
    return res;
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(if_nametoindex(ns.nic_if.c_str()));
  int rcvbuf = 16 << 20;
  setsockopt(raw, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  if (bind(raw, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    res.error = fmt::format("binding the raw socket to {}: {}", ns.nic_if, std::strerror(errno));
    close(raw);
    return res;
  }

  eng::HarnessOptions ho;
  ho.ring_slots = 1024;
  ho.record = false;
  eng::Harness h(*plugin, ho);
  if (!h.ok()) {
    close(raw);
    res.error = h.error();
    return res;
  }
  h.on_transmit = [&](eng::Bytes f) {
    (void)send(raw, f.data(), f.size(), 0);
    ++res.sent_by_nic;
  };
  h.on_entry = [&](const eng::RingEntry& e) {
    if (e.head.kind != FUDP_ENTRY_SPLINTER) return;
    const auto buf = h.buffer(e.head.cookie);
    std::uint32_t i = 0;
    if (e.head.delivered == opt.size && intact(buf.data(), e.head.delivered, i)) ++res.intact;
    h.repost_receive(e.head.cookie);
  };
  for (int i = 0; i < 256; ++i) h.post_receive(kNicPort, 2048);

  // The kernel's side, in the namespace.
  std::atomic<bool> sent{false}, nic_done{false};
  std::string kernel_error;
  Snmp before, after;
  std::thread kernel([&] {
    const int nsfd = open(("/var/run/netns/" + ns.name).c_str(), O_RDONLY);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
      kernel_error = fmt::format("entering {}: {}", ns.name, std::strerror(errno));
      sent = true;
      return;
    }
    close(nsfd);
    before = read_snmp();
    const int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    sockaddr_in me{}, nic{};
    me.sin_family = nic.sin_family = AF_INET;
    me.sin_port = htons(kKernelPort);
    inet_pton(AF_INET, "10.77.0.1", &me.sin_addr);
    nic.sin_port = htons(kNicPort);
    inet_pton(AF_INET, "10.77.0.2", &nic.sin_addr);
    if (bind(rx, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) kernel_error = "binding 10.77.0.1:6000";
    std::vector<std::byte> d(opt.size);
    for (std::uint32_t i = 0; i < opt.count; ++i) {
      fill(d.data(), d.size(), i);
      if (sendto(tx, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&nic), sizeof nic) > 0) ++res.sent_by_kernel;
      if (i % 32 == 31) std::this_thread::sleep_for(std::chrono::microseconds(300));  // within the raw socket's buffer
    }
    sent = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opt.timeout_ms);
    std::vector<std::byte> in(65536);
    int idle_polls = 0;
    while (res.kernel_received < opt.count && std::chrono::steady_clock::now() < deadline) {
      pollfd p{rx, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) {
        // The NIC has sent all it will: a second of quiet ends the wait.
        if (nic_done && ++idle_polls > 10) break;
        continue;
      }
      idle_polls = 0;
      const ssize_t n = recv(rx, in.data(), in.size(), 0);
      std::uint32_t i = 0;
      if (n == static_cast<ssize_t>(opt.size) && intact(in.data(), static_cast<std::size_t>(n), i)) ++res.kernel_received;
    }
    after = read_snmp();
    close(rx);
    close(tx);
  });

  // The NIC's side: frames from the wire into the model, every Kth
  // datagram for it corrupted on the way.
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(opt.timeout_ms);
  auto quiet_since = std::chrono::steady_clock::now();
  std::vector<std::byte> frame(65536);
  std::uint64_t for_nic = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{raw, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) {
      if (sent && std::chrono::steady_clock::now() - quiet_since > std::chrono::milliseconds(300)) break;
      continue;
    }
    sockaddr_ll from{};
    socklen_t fl = sizeof from;
    const ssize_t n = recvfrom(raw, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
    quiet_since = std::chrono::steady_clock::now();
    const std::span<std::byte> f(frame.data(), static_cast<std::size_t>(n));
    const bool ours = n > 42 && protocols::be16(f, 12) == 0x0800 && f[23] == std::byte{17} && protocols::be16(f, 36) == kNicPort;
    if (ours) {
      ++for_nic;
      if (opt.corrupt_every && for_nic % opt.corrupt_every == 0) {
        f[f.size() - 1] ^= std::byte{0x01};
        ++res.corrupted;
      }
    }
    h.wire_receive(f);
  }
  res.rx_seconds = std::chrono::duration<double>(quiet_since - t0).count();

  // The model sends to the kernel, checksums left to it.
  const io::Host me = io::host_v4(10, 77, 0, 2, kNicSrcPort), them = io::host_v4(10, 77, 0, 1, kKernelPort);
  std::vector<std::byte> payload(opt.size);
  for (std::uint32_t i = 0; i < opt.count; ++i) {
    fill(payload.data(), payload.size(), i);
    h.transmit(io::eth_udp(me, them, payload, false), true);
    if (i % 32 == 31) std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  nic_done = true;
  kernel.join();
  close(raw);
  if (!kernel_error.empty()) {
    res.error = kernel_error;
    return res;
  }
  res.delivered = h.read_stat(FUDP_STAT_RX_SPLINTERED);
  res.csum_dropped = h.read_stat(FUDP_STAT_RX_CSUM_BAD);
  res.kernel_in_datagrams = after.in_datagrams - before.in_datagrams;
  res.kernel_in_csum_errors = after.in_csum_errors - before.in_csum_errors;
  res.kernel_in_errors = after.in_errors - before.in_errors;
  const bool rx_ok = res.sent_by_kernel == opt.count && res.intact == opt.count - res.corrupted && res.delivered == res.intact &&
                     res.csum_dropped == res.corrupted;
  const bool tx_ok = res.kernel_received == opt.count && res.kernel_in_csum_errors == 0 && res.kernel_in_errors == 0;
  res.ok = rx_ok && tx_ok && h.violations().empty();
  log << fmt::format(
      "kernel -> NIC: {} datagrams of {} octets sent by a kernel UDP socket, {} corrupted on the wire; the model placed {} "
      "({} intact) and dropped {} for their checksum [{}]\n",
      res.sent_by_kernel, opt.size, res.corrupted, res.delivered, res.intact, res.csum_dropped, rx_ok ? "ok" : "WRONG");
  log << fmt::format(
      "NIC -> kernel: {} datagrams sent with checksum offload; a kernel UDP socket received {} intact; the kernel's counters: "
      "InDatagrams +{}, InErrors +{}, InCsumErrors +{} [{}]\n",
      res.sent_by_nic, res.kernel_received, res.kernel_in_datagrams, res.kernel_in_errors, res.kernel_in_csum_errors,
      tx_ok ? "ok" : "WRONG");
  for (const auto& v : h.violations()) log << fmt::format("contract broken: {}: {}\n", eng::violation_name(v.kind), v.what);
  return res;
}

}  // namespace rdmaconf::interop::fastudp

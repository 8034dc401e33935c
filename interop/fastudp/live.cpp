#include "interop/fastudp/live.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "captures/io/pcap_writer.hpp"
#include "engines/fastudp/harness.hpp"
#include "interop/netns.hpp"
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

// Two namespaces of our own joined by a veth pair: the kernel's side and
// the NIC's wire. Deleting a namespace deletes its end of the pair.
struct Lab {
  std::string kernel_ns, nic_ns;
  const std::string nic_if = "fudpn", kernel_if = "fudpk";
  RunNamespaces namespaces;  // removed with their veth ends, also after a signal or by the next run
  std::string error;         // what failed, when make() did
  // Makes the pair; false when a command failed (see error).
  bool make() {
    (void)RunNamespaces::remove_stale();
    kernel_ns = namespaces.add("fudp", "kernel");
    nic_ns = namespaces.add("fudp", "nic");
    // 10.77.0.3 is the kernel's own address on the NIC's end (the
    // benchmark's baseline socket); the kernel computes its checksums itself.
    const VethEnd kernel{kernel_ns, kernel_if, "02:00:0a:4d:00:01", {"10.77.0.1/24"},
                         {{"10.77.0.2", "02:00:0a:4d:00:02"}, {"10.77.0.3", "02:00:0a:4d:00:02"}}};
    const VethEnd nic{nic_ns, nic_if, "02:00:0a:4d:00:02", {"10.77.0.3/24"}, {{"10.77.0.1", "02:00:0a:4d:00:01"}}};
    error = make_veth_pair(kernel, nic, true);
    return error.empty();
  }
};

using interop::InNetns;

// The NIC's wire: an AF_PACKET socket on its end of the pair with a
// memory-mapped receive ring (TPACKET_V2), so that a frame is copied once,
// as a NIC's DMA would, before the model takes it.
class Wire {
 public:
  ~Wire() {
    if (ring_) munmap(ring_, kBlock * kBlocks);
    if (fd_ >= 0) close(fd_);
  }
  bool open(const std::string& ifname, std::string& error) {
    fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd_ < 0) {
      error = fmt::format("AF_PACKET socket: {}", std::strerror(errno));
      return false;
    }
    int v = TPACKET_V2;
    tpacket_req req{};
    req.tp_block_size = kBlock;
    req.tp_block_nr = kBlocks;
    req.tp_frame_size = kFrame;
    req.tp_frame_nr = kFrames;
    if (setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0 ||
        setsockopt(fd_, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
      error = fmt::format("AF_PACKET receive ring: {}", std::strerror(errno));
      return false;
    }
    void* m = mmap(nullptr, kBlock * kBlocks, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) {
      error = fmt::format("mapping the receive ring: {}", std::strerror(errno));
      return false;
    }
    ring_ = static_cast<std::byte*>(m);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
      error = fmt::format("binding the raw socket to {}: {}", ifname, std::strerror(errno));
      return false;
    }
    return true;
  }
  // Hands each frame that arrived from the wire to `fn` (a mutable view:
  // the frame is ours until fn returns); returns how many slots it took.
  template <class F>
  std::size_t read(F&& fn) {
    std::size_t n = 0;
    for (;;) {
      auto* hdr = reinterpret_cast<tpacket2_hdr*>(ring_ + std::size_t{next_} * kFrame);
      if (!(__atomic_load_n(&hdr->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
      const auto* base = reinterpret_cast<std::byte*>(hdr);
      const auto* sll = reinterpret_cast<const sockaddr_ll*>(base + TPACKET_ALIGN(sizeof(tpacket2_hdr)));
      if (hdr->tp_snaplen < hdr->tp_len) ++truncated;
      if (sll->sll_pkttype != PACKET_OUTGOING) fn(std::span<std::byte>(reinterpret_cast<std::byte*>(hdr) + hdr->tp_mac, hdr->tp_snaplen));
      __atomic_store_n(&hdr->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
      next_ = (next_ + 1) % kFrames;
      ++n;
    }
    return n;
  }
  // Waits up to `us` microseconds for a frame.
  void wait(std::uint64_t us) {
    pollfd p{fd_, POLLIN, 0};
    const timespec t{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
    (void)ppoll(&p, 1, &t, nullptr);
  }
  void send(eng::Bytes f) { (void)::send(fd_, f.data(), f.size(), 0); }
  // Frames the kernel could not put in the ring since the last call.
  std::uint64_t drops() {
    tpacket_stats st{};
    socklen_t l = sizeof st;
    return getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0 ? st.tp_drops : 0;
  }
  std::uint64_t truncated = 0;

 private:
  static constexpr unsigned kBlock = 1u << 20, kBlocks = 64, kFrame = 2048, kFrames = kBlock / kFrame * kBlocks;
  int fd_ = -1;
  std::byte* ring_ = nullptr;
  unsigned next_ = 0;
};

eng::HarnessOptions realtime(std::uint32_t entries, std::uint32_t us) {
  eng::HarnessOptions ho;
  ho.ring_slots = 1024;
  ho.record = false;
  ho.clock = eng::Clock::realtime;
  ho.coalesce = (std::uint64_t{us} * ho.cycles_per_us) << 16 | std::min<std::uint32_t>(entries, 0xffff);
  return ho;
}

using Clock = std::chrono::steady_clock;

// Frames from the wire into the harness on its real-time clock (`each` sees
// each frame first) until `stop(last arrival)` says so; its timers run
// when due, also while nothing arrives.
template <class Each, class Stop>
void pump(Wire& wire, eng::Harness& h, std::uint64_t cycles_per_us, Each&& each, Stop&& stop) {
  auto last = Clock::now();
  while (!stop(last)) {
    const std::size_t n = wire.read([&](std::span<std::byte> f) {
      each(f);
      h.wire_receive(f);
    });
    if (n) {
      last = Clock::now();
      continue;
    }
    h.poll();
    const auto due = h.next_job_in();
    wire.wait(due ? std::min<std::uint64_t>(*due / cycles_per_us + 1, 20000) : 20000);
  }
}

// A kernel UDP socket in `ns` sending `count` datagrams of `size` octets
// to `to` as fast as it can, in batches.
std::uint64_t blast(const std::string& ns, const char* to, std::uint16_t port, std::uint32_t count, std::uint32_t size,
                    std::string& error) {
  InNetns in(ns);
  if (!in.error.empty()) {
    error = in.error;
    return 0;
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, to, &dst.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    error = fmt::format("connecting a UDP socket to {}:{}: {}", to, port, std::strerror(errno));
    close(fd);
    return 0;
  }
  constexpr unsigned kBatch = 64;
  std::vector<std::byte> data(std::size_t{size} * kBatch);
  std::array<iovec, kBatch> iov{};
  std::array<mmsghdr, kBatch> msgs{};
  std::uint64_t sent = 0;
  while (sent < count) {
    const unsigned k = static_cast<unsigned>(std::min<std::uint64_t>(kBatch, count - sent));
    for (unsigned i = 0; i < k; ++i) {
      fill(data.data() + std::size_t{i} * size, size, static_cast<std::uint32_t>(sent + i));
      iov[i] = {data.data() + std::size_t{i} * size, size};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int r = sendmmsg(fd, msgs.data(), k, 0);
    if (r <= 0) {
      if (errno == ENOBUFS || errno == EAGAIN) continue;
      error = fmt::format("sendmmsg: {}", std::strerror(errno));
      break;
    }
    sent += static_cast<unsigned>(r);
  }
  close(fd);
  return sent;
}

// What both the live test and the benchmark need first: root, the plug-in
// and the namespaces; null with `error` set when one is missing.
std::unique_ptr<eng::Plugin> prepare(const std::string& path, Lab& lab, std::string& error) {
  if (geteuid() != 0) {
    error = "needs root (network namespaces, a veth pair and a raw socket)";
    return nullptr;
  }
  // The kernel's side must compute its own checksums: ethtool turns
  // transmit checksum offload off on the pair.
  const char* search = std::getenv("PATH");
  bool ethtool = false;
  for (std::string_view rest = search ? search : "/usr/sbin:/sbin:/usr/bin:/bin"; !ethtool;) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    ethtool = !dir.empty() && access((dir + "/ethtool").c_str(), X_OK) == 0;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  if (!ethtool) {
    error = "needs ethtool on the PATH (apt-get install ethtool), to turn transmit checksum offload off on the veth pair";
    return nullptr;
  }
  auto plugin = eng::Plugin::open(path, error);
  if (plugin && !lab.make()) {
    error = "setting up the namespaces and veth pair failed: " + lab.error;
    return nullptr;
  }
  return plugin;
}

// The wire's socket, made in the NIC's namespace.
bool open_wire(Wire& wire, const Lab& lab, std::string& error) {
  InNetns in(lab.nic_ns);
  if (!in.error.empty()) {
    error = in.error;
    return false;
  }
  return wire.open(lab.nic_if, error);
}

}  // namespace

LiveResult run_live(const LiveOptions& opt, std::ostream& log) {
  LiveResult res;
  Lab lab;
  auto plugin = prepare(opt.plugin, lab, res.error);
  if (!plugin) return res;
  Wire wire;
  if (!open_wire(wire, lab, res.error)) return res;

  const eng::HarnessOptions ho = realtime(opt.coalesce_entries, opt.coalesce_us);
  eng::Harness h(*plugin, ho);
  if (!h.ok()) {
    res.error = h.error();
    return res;
  }
  h.on_transmit = [&](eng::Bytes f) {
    wire.send(f);
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

  // The kernel's side, in its namespace.
  std::atomic<bool> sent{false}, nic_done{false};
  std::string kernel_error;
  Snmp before, after;
  std::thread kernel([&] {
    InNetns in(lab.kernel_ns);
    if (!in.error.empty()) {
      kernel_error = in.error;
      sent = true;
      return;
    }
    before = read_snmp();
    int rcvbuf = 16 << 20;
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
      if (i % 32 == 31) std::this_thread::sleep_for(std::chrono::microseconds(300));  // within the wire's ring
    }
    sent = true;
    const auto deadline = Clock::now() + std::chrono::milliseconds(opt.timeout_ms);
    std::vector<std::byte> in_buf(65536);
    int idle_polls = 0;
    while (res.kernel_received < opt.count && Clock::now() < deadline) {
      pollfd p{rx, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) {
        // The NIC has sent all it will: a second of quiet ends the wait.
        if (nic_done && ++idle_polls > 10) break;
        continue;
      }
      idle_polls = 0;
      const ssize_t n = recv(rx, in_buf.data(), in_buf.size(), 0);
      std::uint32_t i = 0;
      if (n == static_cast<ssize_t>(opt.size) && intact(in_buf.data(), static_cast<std::size_t>(n), i)) ++res.kernel_received;
    }
    after = read_snmp();
    close(rx);
    close(tx);
  });

  // The NIC's side: frames from the wire into the model, every Kth
  // datagram for it corrupted on the way.
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(opt.timeout_ms);
  auto last_arrival = t0;
  std::uint64_t for_nic = 0;
  pump(
      wire, h, ho.cycles_per_us,
      [&](std::span<std::byte> f) {
        last_arrival = Clock::now();
        const bool ours = f.size() > 42 && protocols::be16(f, 12) == 0x0800 && f[23] == std::byte{17} &&
                          protocols::be16(f, 36) == kNicPort;
        if (!ours) return;
        ++for_nic;
        if (opt.corrupt_every && for_nic % opt.corrupt_every == 0) {
          f[f.size() - 1] ^= std::byte{0x01};
          ++res.corrupted;
        }
      },
      [&](Clock::time_point last) {
        const auto now = Clock::now();
        return now > deadline || (sent && now - last > std::chrono::milliseconds(300));
      });
  res.rx_seconds = std::chrono::duration<double>(last_arrival - t0).count();

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
  h.poll();  // the coalescing timer of the last transmits has run out by now
  if (!kernel_error.empty()) {
    res.error = kernel_error;
    return res;
  }
  res.delivered = h.read_stat(FUDP_STAT_RX_SPLINTERED);
  res.csum_dropped = h.read_stat(FUDP_STAT_RX_CSUM_BAD);
  res.ring_entries = h.entry_count();
  res.interrupts = h.interrupt_count();
  res.kernel_in_datagrams = after.in_datagrams - before.in_datagrams;
  res.kernel_in_csum_errors = after.in_csum_errors - before.in_csum_errors;
  res.kernel_in_errors = after.in_errors - before.in_errors;
  // Every splinter was taken by the driver while the exchange ran: the
  // coalescing timers fired by the wall clock, nothing waited for the end.
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
  log << fmt::format(
      "real-time clock: the driver took {} ring entries on {} interrupts (coalescing: {} entries or {} us)\n",
      res.ring_entries, res.interrupts, opt.coalesce_entries, opt.coalesce_us);
  for (const auto& v : h.violations()) log << fmt::format("contract broken: {}: {}\n", eng::violation_name(v.kind), v.what);
  return res;
}

LiveBenchResult run_live_bench(const LiveBenchOptions& opt, std::ostream& log) {
  LiveBenchResult res;
  Lab lab;
  auto plugin = prepare(opt.plugin, lab, res.error);
  if (!plugin) return res;
  constexpr std::uint16_t kBaselinePort = 5003;
  const auto quiet = std::chrono::milliseconds(300);
  for (int round = 0; round < opt.rounds && res.error.empty(); ++round) {
    // The kernel's own UDP socket on the NIC's end of the same veth.
    {
      LiveBenchRun r;
      int fd = -1;
      {
        InNetns in(lab.nic_ns);
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      }
      int rcvbuf = 64 << 20;
      setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
      sockaddr_in me{};
      me.sin_family = AF_INET;
      me.sin_port = htons(kBaselinePort);
      inet_pton(AF_INET, "10.77.0.3", &me.sin_addr);
      if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) {
        res.error = fmt::format("binding 10.77.0.3:{} in {}: {}", kBaselinePort, lab.nic_ns, std::strerror(errno));
        if (fd >= 0) close(fd);
        break;
      }
      std::atomic<bool> done{false};
      std::string send_error;
      std::thread sender([&] {
        r.sent = blast(lab.kernel_ns, "10.77.0.3", kBaselinePort, opt.count, opt.size, send_error);
        done = true;
      });
      constexpr unsigned kBatch = 64;
      std::vector<std::byte> bufs(std::size_t{kBatch} * 2048);
      std::array<iovec, kBatch> iov{};
      std::array<mmsghdr, kBatch> msgs{};
      Clock::time_point first{}, last = Clock::now();
      while (r.received < opt.count) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) {
          if (done && Clock::now() - last > quiet) break;
          continue;
        }
        for (unsigned i = 0; i < kBatch; ++i) {
          iov[i] = {bufs.data() + std::size_t{i} * 2048, 2048};
          msgs[i] = {};
          msgs[i].msg_hdr.msg_iov = &iov[i];
          msgs[i].msg_hdr.msg_iovlen = 1;
        }
        const int n = recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
        if (n <= 0) continue;
        last = Clock::now();
        if (r.received == 0) first = last;
        r.received += static_cast<unsigned>(n);
        for (int i = 0; i < n; ++i) r.octets += msgs[static_cast<std::size_t>(i)].msg_len;
      }
      sender.join();
      close(fd);
      r.seconds = r.received > 1 ? std::chrono::duration<double>(last - first).count() : 0;
      if (!send_error.empty()) res.error = send_error;
      res.kernel.push_back(r);
    }
    // The model behind the wire's ring, on the real-time clock.
    {
      LiveBenchRun r;
      Wire wire;
      if (!open_wire(wire, lab, res.error)) break;
      const eng::HarnessOptions ho = realtime(opt.coalesce_entries, opt.coalesce_us);
      eng::Harness h(*plugin, ho);
      if (!h.ok()) {
        res.error = h.error();
        break;
      }
      Clock::time_point first{}, last{};
      h.on_entry = [&](const eng::RingEntry& e) {
        if (e.head.kind != FUDP_ENTRY_SPLINTER) return;
        last = Clock::now();
        if (r.received == 0) first = last;
        ++r.received;
        r.octets += e.head.delivered;
        h.repost_receive(e.head.cookie);
      };
      for (int i = 0; i < 512; ++i) h.post_receive(kNicPort, 2048);
      std::atomic<bool> done{false};
      std::string send_error;
      std::thread sender([&] {
        r.sent = blast(lab.kernel_ns, "10.77.0.2", kNicPort, opt.count, opt.size, send_error);
        done = true;
      });
      pump(
          wire, h, ho.cycles_per_us, [](std::span<std::byte>) {},
          [&](Clock::time_point arrived) { return r.received >= opt.count || (done && Clock::now() - arrived > quiet); });
      sender.join();
      r.seconds = r.received > 1 ? std::chrono::duration<double>(last - first).count() : 0;
      r.wire_drops = wire.drops();
      r.slow_path = h.read_stat(FUDP_STAT_RX_SLOW);
      r.ring_full = h.read_stat(FUDP_STAT_RX_RING_FULL);
      if (!send_error.empty()) res.error = send_error;
      if (!h.violations().empty()) res.error = fmt::format("the plug-in broke the contract: {}", h.violations().front().what);
      res.model.push_back(r);
    }
    const auto& k = res.kernel.back();
    const auto& m = res.model.back();
    log << fmt::format(
        "round {}: kernel socket {:.2f} Gb/s ({} of {}), model {:.2f} Gb/s ({} of {}; lost: {} in the wire's ring, {} to the "
        "slow path, {} for a full kernel ring)\n",
        round + 1, k.gbps(), k.received, k.sent, m.gbps(), m.received, m.sent, m.wire_drops, m.slow_path, m.ring_full);
  }
  return res;
}

}  // namespace rdmaconf::interop::fastudp

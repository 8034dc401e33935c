#include "interop/fastudp/nic_suite.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "captures/io/pcap_reader.hpp"
#include "captures/io/pcap_writer.hpp"
#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "interop/control.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/core/sanitizer.hpp"
#include "protocols/net/checksum.hpp"

namespace rdmaconf::interop::fastudp {

namespace eng = engine::fastudp;
namespace conf = conformance;
namespace cid = conformance::fastudp::nic;
using captures::io::Host;
using protocols::Bytes;

namespace {

// ---- Traffic ----

enum class Csum { good, zero, bad };
enum class Frag { none, first, last };

struct Dgram {
  bool v6 = false;
  std::uint16_t dport = 0;
  std::uint32_t size = 64;        // payload octets
  std::uint8_t dst = 2;           // last octet of the destination address
  Csum csum = Csum::good;
  int length_delta = 0;           // added to the UDP length field (the datagram is not changed)
  std::uint32_t surplus = 0;      // octets after the datagram, inside the IP payload
  Frag frag = Frag::none;
  bool zero_sum = false;          // payload made so that its checksum computes to zero
};

Host src_host(bool v6, std::uint16_t port) {
  return v6 ? captures::io::host_v6(1, port) : captures::io::host_v4(10, 0, 0, 1, port);
}
Host dst_host(bool v6, std::uint8_t last, std::uint16_t port) {
  return v6 ? captures::io::host_v6(last, port) : captures::io::host_v4(10, 0, 0, last, port);
}
std::array<std::uint8_t, 16> dst_addr(bool v6, std::uint8_t last) { return dst_host(v6, last, 0).addr; }

void fix_ipv4_header(std::vector<std::byte>& f, std::size_t l3) {
  protocols::put_be16(f, l3 + 10, 0);
  protocols::put_be16(f, l3 + 10, protocols::net::fold(protocols::net::sum16({f.data() + l3, 20})));
}

// Octets of a frame: its payload's place and its headers' length.
struct Built {
  std::vector<std::byte> frame;
  std::size_t header_len = 0;  // Ethernet through the UDP header
  std::uint32_t payload_len = 0;
};

Built build(const Dgram& d, std::uint16_t sport, std::uint32_t seed) {
  std::vector<std::byte> payload(d.size);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(static_cast<std::uint8_t>(seed * 31 + i * 7 + (i >> 8)));
  const Host from = src_host(d.v6, sport), to = dst_host(d.v6, d.dst, d.dport);
  if (d.zero_sum && payload.size() >= 2) {
    // Choose the last two octets so that the checksum computes to zero.
    payload[payload.size() - 1] = payload[payload.size() - 2] = std::byte{0};
    const auto probe = captures::io::ip_udp(from, to, payload, false);
    const Bytes l3(probe);
    const std::uint16_t c = protocols::net::udp_checksum(l3, l3.subspan(d.v6 ? 40 : 20));
    // Even payload length: the last two octets are one 16-bit word of the sum.
    protocols::put_be16(payload, payload.size() - 2, c);
  }
  auto l3 = captures::io::ip_udp(from, to, payload, d.csum != Csum::zero);
  Built b;
  captures::io::eth_header(from, to, b.frame);
  const std::size_t l3_at = b.frame.size();
  b.frame.insert(b.frame.end(), l3.begin(), l3.end());
  std::size_t udp = l3_at + (d.v6 ? 40 : 20);
  if (d.csum == Csum::bad) {
    std::uint16_t c = protocols::be16(b.frame, udp + 6) ^ 0x5a5a;
    protocols::put_be16(b.frame, udp + 6, c ? c : 0x5a5a);
  }
  if (d.length_delta) protocols::put_be16(b.frame, udp + 4, static_cast<std::uint16_t>(8 + d.size + d.length_delta));
  if (d.surplus) {
    b.frame.insert(b.frame.end(), d.surplus, std::byte{0xee});
    if (d.v6)
      protocols::put_be16(b.frame, l3_at + 4, static_cast<std::uint16_t>(protocols::be16(b.frame, l3_at + 4) + d.surplus));
    else
      protocols::put_be16(b.frame, l3_at + 2, static_cast<std::uint16_t>(protocols::be16(b.frame, l3_at + 2) + d.surplus));
  }
  if (d.frag != Frag::none && !d.v6) {
    // MF on the first fragment, an offset of 1480 octets on the last.
    protocols::put_be16(b.frame, l3_at + 6, d.frag == Frag::first ? 0x2000 : 185);
  } else if (d.frag != Frag::none) {
    // An IPv6 fragment header (RFC 8200 §4.5) between the fixed header and UDP.
    std::array<std::byte, 8> fh{};
    fh[0] = std::byte{17};
    protocols::put_be16(fh, 2, d.frag == Frag::first ? 0x0001 : static_cast<std::uint16_t>(185 << 3));
    protocols::put_be32(fh, 4, seed);
    b.frame.insert(b.frame.begin() + static_cast<std::ptrdiff_t>(l3_at + 40), fh.begin(), fh.end());
    b.frame[l3_at + 6] = std::byte{44};
    protocols::put_be16(b.frame, l3_at + 4, protocols::be16(b.frame, l3_at + 4) + 8);
    udp += 8;
  }
  if (!d.v6) fix_ipv4_header(b.frame, l3_at);
  b.header_len = udp + 8;
  b.payload_len = d.size;
  return b;
}

std::vector<std::byte> arp_frame(std::uint8_t who) {
  std::vector<std::byte> f;
  const Host a = captures::io::host_v4(10, 0, 0, 1, 0), b = captures::io::host_v4(10, 0, 0, who, 0);
  captures::io::eth_header(a, b, f);
  protocols::put_be16(f, 12, 0x0806);
  const std::uint8_t body[28] = {0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 10, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, who};
  for (auto x : body) f.push_back(std::byte{x});
  return f;
}

std::vector<std::byte> tcp_frame(std::uint32_t seq) {
  const Host a = captures::io::host_v4(10, 0, 0, 1, 40000), b = captures::io::host_v4(10, 0, 0, 2, 5001);
  std::vector<std::byte> f;
  captures::io::eth_header(a, b, f);
  const std::vector<std::byte> data(100, std::byte{0x42});
  auto l3 = captures::io::ip_tcp(a, b, seq, 1, captures::io::tcpflag::ack | captures::io::tcpflag::psh, data);
  f.insert(f.end(), l3.begin(), l3.end());
  return f;
}

// ---- A scenario's script: drives the harness and writes down what the
// contract expects of every frame ----

enum class Fate { deliver, kernel, drop };

struct Sent {
  std::vector<std::byte> frame;
  std::uint64_t index = 0;  // harness frame number
  std::optional<std::uint64_t> at;  // the cycle it arrived at (none: whenever the NIC was idle)
  Fate fate = Fate::kernel;
  std::string_view rule;    // the case that judges the fate
  std::uint64_t rx = 0;     // deliver: the receive it must reach
  std::vector<std::uint64_t> eligible;  // deliver: every posted receive it matches
  std::size_t header_len = 0;
  std::uint32_t payload_len = 0, buf_len = 0;
  bool zero4 = false, surplus = false;
};

struct Tx {
  std::vector<std::byte> frame;
  bool offload = false;
  bool zero_sum = false;
  std::size_t udp = 0;  // offset of the UDP header (0: not UDP)
};

struct Posted {
  std::uint64_t cookie = 0;
  std::uint16_t port = 0;
  std::uint8_t family = 0;
  std::array<std::uint8_t, 16> addr{};
  std::uint32_t length = 0;
};

class Script {
 public:
  Script(eng::Harness& h, captures::io::PcapWriter* pcap) : h_(h), pcap_(pcap) {
    if (pcap_) h_.on_transmit = [this](Bytes f) { pcap_->frame(f); };
  }

  std::uint64_t post(std::uint16_t port, std::uint32_t len, std::uint8_t family = 0, std::uint8_t dst = 2) {
    Posted p;
    p.port = port;
    p.family = family;
    p.length = len;
    if (family) p.addr = dst_addr(family == 6, dst);
    p.cookie = h_.post_receive(port, len, family, {p.addr.data(), family == 6 ? 16u : family == 4 ? 4u : 0u});
    outstanding_.push_back(p);
    return p.cookie;
  }

  // A UDP datagram; its fate follows from the contract and the receives outstanding.
  void udp(const Dgram& d, std::optional<std::pair<Fate, std::string_view>> fate = std::nullopt) {
    const std::uint16_t sport = static_cast<std::uint16_t>(40000 + sent_.size());
    Built b = build(d, sport, static_cast<std::uint32_t>(sent_.size() + 1));
    Sent s;
    s.header_len = b.header_len;
    s.payload_len = b.payload_len;
    s.zero4 = d.csum == Csum::zero && !d.v6;
    s.surplus = d.surplus > 0;
    if (fate) {
      s.fate = fate->first;
      s.rule = fate->second;
    } else if (d.frag != Frag::none) {
      s.fate = Fate::kernel;
      s.rule = cid::fragment;
    } else if (d.csum == Csum::bad) {
      s.fate = Fate::drop;
      s.rule = cid::csum_bad;
    } else if (d.csum == Csum::zero && d.v6) {
      s.fate = Fate::drop;
      s.rule = cid::csum_zero6;
    } else if (d.length_delta > 0 || 8 + static_cast<int>(d.size) + d.length_delta < 8) {
      s.fate = Fate::drop;
      s.rule = cid::length;
    } else {
      const auto dst = dst_addr(d.v6, d.dst);
      for (const auto& p : outstanding_) {
        const bool ok = p.port == d.dport && (p.family == 0 || (p.family == (d.v6 ? 6 : 4) &&
                                                                std::equal(p.addr.begin(), p.addr.begin() + (d.v6 ? 16 : 4), dst.begin())));
        if (ok) s.eligible.push_back(p.cookie);
      }
      if (s.eligible.empty()) {
        s.fate = Fate::kernel;
        s.rule = cid::match;
      } else {
        s.fate = Fate::deliver;
        s.rule = cid::match;
        s.rx = s.eligible.front();
        auto it = std::find_if(outstanding_.begin(), outstanding_.end(), [&](const Posted& p) { return p.cookie == s.rx; });
        s.buf_len = it->length;
        outstanding_.erase(it);
      }
    }
    s.frame = std::move(b.frame);
    send(std::move(s));
  }

  // A frame that is not a UDP datagram: whole to the kernel.
  void other(std::vector<std::byte> f) {
    Sent s;
    s.frame = std::move(f);
    s.fate = Fate::kernel;
    s.rule = cid::slow_path;
    send(std::move(s));
  }

  void tx(const Dgram& d, bool offload) {
    Built b = build(d, static_cast<std::uint16_t>(50000 + tx_.size()), static_cast<std::uint32_t>(tx_.size() + 7));
    Tx t;
    t.offload = offload;
    t.zero_sum = d.zero_sum;
    t.udp = b.header_len - 8;
    if (offload) protocols::put_be16(b.frame, t.udp + 6, 0);  // the host leaves it to the NIC
    t.frame = std::move(b.frame);
    h_.transmit(t.frame, offload);
    tx_.push_back(std::move(t));
  }

  // The next frame arrives at `cycle` of the harness's clock (not before
  // the one ahead of it), not as soon as the NIC is idle.
  void arrive_at(std::uint64_t cycle) { next_at_ = cycle; }

  eng::Harness& harness() { return h_; }
  const std::vector<Sent>& sent() const { return sent_; }
  // FUDP_REG_IRQ_COALESCE's time limit in cycles (0: none).
  std::uint64_t coalesce_cycles = 0;
  const std::vector<Tx>& txs() const { return tx_; }
  // Expected counter values the scenario checks at the end.
  std::map<fudp_stat, std::pair<std::uint64_t, std::string_view>> counters;

 private:
  void send(Sent s) {
    if (pcap_) pcap_->frame(s.frame);
    if (next_at_) {
      s.at = next_at_;
      h_.arrive(s.frame, *next_at_);
      next_at_.reset();
    } else {
      h_.wire_receive(s.frame);
    }
    s.index = h_.frames();
    sent_.push_back(std::move(s));
  }
  eng::Harness& h_;
  captures::io::PcapWriter* pcap_;
  std::vector<Posted> outstanding_;
  std::vector<Sent> sent_;
  std::vector<Tx> tx_;
  std::optional<std::uint64_t> next_at_;
};

// ---- Scenarios ----

struct ScenarioDef {
  NicScenarioInfo info;
  eng::HarnessOptions options;
  void (*run)(Script&);
};

void basic(Script& s, bool v6) {
  const std::uint32_t sizes[] = {1, 18, 64, 1000, 1472};
  for (std::uint16_t i = 0; i < 5; ++i) s.post(static_cast<std::uint16_t>(5001 + i), 2048);
  for (std::uint16_t i = 0; i < 5; ++i) s.udp(Dgram{.v6 = v6, .dport = static_cast<std::uint16_t>(5001 + i), .size = sizes[i]});
  s.udp(Dgram{.v6 = v6, .dport = 6000, .size = 200});  // no receive: whole to the kernel
  s.udp(Dgram{.v6 = v6, .dport = 5001, .size = 300});  // its receive was used: whole to the kernel
}

void oldest_first(Script& s) {
  s.post(5001, 512);
  s.post(5001, 1024);
  s.post(5001, 2048);
  for (int i = 0; i < 3; ++i) s.udp(Dgram{.dport = 5001, .size = 400});
  // Receives bound to one destination address.
  s.post(5002, 2048, 4, 3);
  s.post(5002, 2048, 6, 3);
  s.udp(Dgram{.dport = 5002, .size = 100, .dst = 2});             // another address: the kernel
  s.udp(Dgram{.v6 = true, .dport = 5002, .size = 100, .dst = 2});  // likewise
  s.udp(Dgram{.v6 = true, .dport = 5002, .size = 100, .dst = 3});  // the IPv6 receive
  s.udp(Dgram{.dport = 5002, .size = 100, .dst = 3});              // the IPv4 receive
  // A receive of any address behind one bound to an address.
  s.post(5003, 2048, 4, 3);
  s.post(5003, 2048);
  s.udp(Dgram{.dport = 5003, .size = 60, .dst = 4});  // skips the bound one
  s.udp(Dgram{.dport = 5003, .size = 60, .dst = 3});
}

void truncation(Script& s) {
  s.post(5001, 100);
  s.post(5002, 1000);
  s.post(5003, 130);
  s.udp(Dgram{.dport = 5001, .size = 300});
  s.udp(Dgram{.dport = 5002, .size = 1000});
  s.udp(Dgram{.v6 = true, .dport = 5003, .size = 1400});
}

void checksum_bad(Script& s) {
  // Each on a port of its own with a receive waiting, so that a NIC that
  // takes it costs no other datagram its receive.
  s.post(7001, 2048);
  s.post(7002, 2048);
  s.post(7003, 2048);
  s.udp(Dgram{.dport = 7001, .size = 500, .csum = Csum::bad});
  s.udp(Dgram{.v6 = true, .dport = 7002, .size = 500, .csum = Csum::bad});
  s.udp(Dgram{.dport = 7003, .size = 33, .csum = Csum::bad});
  s.counters[FUDP_STAT_RX_CSUM_BAD] = {3, cid::csum_bad};
}

void checksum_zero(Script& s) {
  s.post(7001, 2048);
  s.post(7002, 2048);
  s.udp(Dgram{.dport = 7001, .size = 200, .csum = Csum::zero});           // IPv4: accepted
  s.udp(Dgram{.v6 = true, .dport = 7002, .size = 200, .csum = Csum::zero});  // IPv6: discarded
  s.udp(Dgram{.dport = 7009, .size = 90, .csum = Csum::zero});            // IPv4, no receive: the kernel
  s.udp(Dgram{.dport = 7001, .size = 200, .zero_sum = true});             // a real sum of 0xffff is good
}

void length(Script& s) {
  s.post(7001, 2048);
  s.post(7002, 2048);
  s.post(7003, 2048);
  s.udp(Dgram{.dport = 7001, .size = 200, .length_delta = 40});                    // beyond the IP payload
  s.udp(Dgram{.v6 = true, .dport = 7002, .size = 200, .length_delta = -201});      // below 8
  s.udp(Dgram{.dport = 7003, .size = 200, .surplus = 16});                         // octets after the datagram
}

void fragments(Script& s) {
  s.post(5001, 2048);
  s.post(5001, 2048);
  s.udp(Dgram{.dport = 5001, .size = 600, .frag = Frag::first});
  s.udp(Dgram{.dport = 5001, .size = 600, .frag = Frag::last});
  s.udp(Dgram{.v6 = true, .dport = 5001, .size = 600, .frag = Frag::first});
  s.udp(Dgram{.dport = 5001, .size = 64});  // the first receive is still there
}

void not_udp(Script& s) {
  s.post(5001, 2048);
  s.other(arp_frame(2));
  s.other(tcp_frame(1000));
  s.other(std::vector<std::byte>(10, std::byte{1}));  // shorter than an Ethernet header
  s.other(arp_frame(3));
}

void transmit(Script& s) {
  s.tx(Dgram{.dport = 9000, .size = 100}, true);
  s.tx(Dgram{.v6 = true, .dport = 9000, .size = 1001}, true);
  s.tx(Dgram{.dport = 9000, .size = 64, .zero_sum = true}, true);
  s.tx(Dgram{.v6 = true, .dport = 9000, .size = 64, .zero_sum = true}, true);
  s.tx(Dgram{.dport = 9000, .size = 77}, false);
}

void ring_full(Script& s) {
  // Four slots, the driver busy elsewhere: four frames fit, two are dropped.
  s.harness().pause_driver(true);
  for (int i = 0; i < 4; ++i) s.udp(Dgram{.dport = 6000, .size = 100});
  for (int i = 0; i < 2; ++i) s.udp(Dgram{.dport = 6000, .size = 100}, std::pair{Fate::drop, cid::ring_full});
  s.harness().pause_driver(false);
  s.udp(Dgram{.dport = 6000, .size = 100});  // room again
  s.counters[FUDP_STAT_RX_RING_FULL] = {2, cid::ring_full};
}

void coalescing(Script& s) {
  for (int i = 0; i < 10; ++i) s.post(5001, 2048);
  for (int i = 0; i < 10; ++i) s.udp(Dgram{.dport = 5001, .size = 128});
}

// Frames that arrive over time, so that the coalescing timer spans them:
// a few well inside the timer and then a pause past it; a burst in which the
// entry count signals first and the timer the rest; frames spaced just under
// and just over the timer; one for a port with no receive (kernel ring).
void coalescing_arrivals(Script& s) {
  for (int i = 0; i < 40; ++i) s.post(5001, 2048);
  std::uint64_t t = 1000;
  const auto at = [&](std::uint64_t gap, std::uint16_t port = 5001) {
    s.arrive_at(t);
    s.udp(Dgram{.dport = port, .size = 128});
    t += gap;
  };
  for (int i = 0; i < 3; ++i) at(300);
  t += 5000;
  for (int i = 0; i < 12; ++i) at(100);
  t += 1500;
  for (int i = 0; i < 10; ++i) at(i % 2 ? 1900 : 2600);
  at(700, 5002);
  at(100);
}

void stream(Script& s) {
  std::uint32_t x = 12345;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 256; ++i) s.post(static_cast<std::uint16_t>(5001 + i % 4), 1472);
    for (int i = 0; i < 256; ++i) {
      x = x * 1103515245u + 12345u;
      s.udp(Dgram{.v6 = (x >> 20) % 3 == 0, .dport = static_cast<std::uint16_t>(5001 + i % 4), .size = 1 + (x >> 8) % 1472});
    }
  }
}

eng::HarnessOptions ring(std::uint32_t slots, std::uint64_t coalesce = 0) {
  eng::HarnessOptions o;
  o.ring_slots = slots;
  o.coalesce = coalesce;
  return o;
}

const std::vector<ScenarioDef>& defs() {
  static const std::vector<ScenarioDef> d{
      {{"basic-ipv4", "IPv4 datagrams of 1 to 1472 octets to posted receives, and two with none"}, {}, [](Script& s) { basic(s, false); }},
      {{"basic-ipv6", "the same over IPv6"}, {}, [](Script& s) { basic(s, true); }},
      {{"oldest-first", "several receives on one port; receives bound to an address"}, {}, oldest_first},
      {{"truncation", "payloads longer than their buffers, and one that just fits"}, {}, truncation},
      {{"checksum-bad", "wrong UDP checksums over IPv4 and IPv6"}, {}, checksum_bad},
      {{"checksum-zero", "a zero UDP checksum over IPv4 (none) and IPv6 (discard)"}, {}, checksum_zero},
      {{"length", "UDP lengths beyond the IP payload, below 8, and short of it"}, {}, length},
      {{"fragments", "IPv4 and IPv6 fragments to a port with receives"}, {}, fragments},
      {{"not-udp", "ARP, TCP and a runt frame"}, {}, not_udp},
      {{"transmit", "checksum offload on transmit over IPv4 and IPv6, sums that compute to zero, no offload"}, {}, transmit},
      {{"ring-full", "a kernel ring of four slots the driver does not drain"}, ring(4), ring_full},
      {{"coalescing", "interrupts coalesced every 4 entries or 2000 cycles"}, ring(64, 4 | (2000ull << 16)), coalescing},
      {{"coalescing-arrivals", "frames arriving over time, interrupts coalesced every 8 entries or 2000 cycles"},
       ring(64, 8 | (2000ull << 16)),
       coalescing_arrivals},
      {{"stream", "1024 datagrams of random sizes over four ports, IPv4 and IPv6"}, ring(256), stream},
  };
  return d;
}

// ---- The judge ----

using conf::Judge;

std::string hex_prefix(Bytes b, std::size_t n = 8) {
  std::string s;
  for (std::size_t i = 0; i < std::min(n, b.size()); ++i) s += fmt::format("{:02x}", static_cast<unsigned>(b[i]));
  return s;
}

std::string kind_name(std::uint32_t k) {
  switch (k) {
    case FUDP_ENTRY_SPLINTER: return "splinter";
    case FUDP_ENTRY_WHOLE: return "whole";
    case FUDP_ENTRY_TX_DONE: return "tx-done";
    default: return fmt::format("kind {}", k);
  }
}

void judge(Script& s, Judge& j) {
  const eng::Harness& h = s.harness();
  const auto& sent = s.sent();
  const auto& entries = h.entries();

  // Which frame each ring entry is for: the first frame not yet claimed whose
  // octets start with the entry's and whose length it names.
  std::vector<std::vector<std::size_t>> entries_of(sent.size());
  std::vector<std::optional<std::size_t>> frame_of(entries.size());
  std::vector<bool> claimed(sent.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto& en = entries[e];
    if (en.head.kind == FUDP_ENTRY_TX_DONE) continue;
    for (std::size_t i = 0; i < sent.size(); ++i) {
      const auto& f = sent[i].frame;
      if (claimed[i] || en.head.frame_len != f.size() || en.data.empty() || en.data.size() > f.size() ||
          !std::equal(en.data.begin(), en.data.end(), f.begin()))
        continue;
      claimed[i] = true;
      frame_of[e] = i;
      entries_of[i].push_back(e);
      break;
    }
    if (!frame_of[e])
      j.fail(en.head.kind == FUDP_ENTRY_SPLINTER ? cid::splinter : cid::slow_path, 0, "an entry for a frame that was sent",
             fmt::format("a {} entry (slot {}) whose {} octets ({}...) and frame length {} match no frame sent",
                         kind_name(en.head.kind), en.slot, en.data.size(), hex_prefix(en.data), en.head.frame_len));
  }

  // The user buffers the NIC wrote while it handled each frame.
  std::vector<std::map<std::uint64_t, std::uint64_t>> written(sent.size());  // cookie -> octets
  {
    std::map<std::uint64_t, std::size_t> by_index;
    for (std::size_t i = 0; i < sent.size(); ++i) by_index[sent[i].index] = i;
    for (const auto& w : h.writes()) {
      const auto* r = h.receive_at(w.addr);
      auto it = by_index.find(w.frame);
      if (r && it != by_index.end()) written[it->second][r->cookie] += w.len;
    }
  }

  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& f = sent[i];
    const auto& w = written[i];
    const std::uint64_t fr = f.index;
    auto written_text = [&] {
      std::string t;
      for (const auto& [c, n] : w) t += fmt::format("{}receive {} ({} octets)", t.empty() ? "" : ", ", c, n);
      return t.empty() ? std::string("no user buffer") : t;
    };
    const auto entry_kinds = [&] {
      std::string t;
      for (auto e : entries_of[i]) t += (t.empty() ? "" : ", ") + kind_name(entries[e].head.kind);
      return t.empty() ? std::string("no ring entry") : "a " + t + " entry";
    };
    switch (f.fate) {
      case Fate::deliver: {
        const bool one = w.size() == 1;
        const std::uint64_t got = one ? w.begin()->first : 0;
        const bool eligible = one && std::find(f.eligible.begin(), f.eligible.end(), got) != f.eligible.end();
        j.check(cid::match, eligible, fr, fmt::format("its payload in receive {}'s buffer (port {})", f.rx, h.receive(f.rx)->port),
                w.empty() ? "no user buffer; " + entry_kinds() : written_text());
        if (f.zero4) j.check(cid::csum_zero4, !w.empty() || !entries_of[i].empty(), fr, "accepted (no checksum)", "discarded");
        if (!eligible) break;
        j.check(cid::oldest, got == f.rx, fr, fmt::format("receive {}, the oldest it matches", f.rx), fmt::format("receive {}", got));
        // The payload, from the buffer's first octet.
        const auto* r = h.receive(got);
        const auto buf = h.buffer(got);
        const std::uint32_t want = std::min(f.payload_len, r->length);
        const auto* p = f.frame.data() + f.header_len;
        const auto miss = std::mismatch(buf.begin(), buf.begin() + want, p);
        j.check(cid::payload, miss.first == buf.begin() + want, fr, fmt::format("{} payload octets", want),
                fmt::format("octet {} is 0x{:02x}, the payload's is 0x{:02x}", miss.first - buf.begin(),
                            miss.first == buf.begin() + want ? 0u : static_cast<unsigned>(*miss.first),
                            miss.first == buf.begin() + want ? 0u : static_cast<unsigned>(*miss.second)));
        if (f.surplus)
          j.check(cid::length, w.begin()->second <= f.payload_len, fr,
                  fmt::format("at most the {} octets the UDP length covers", f.payload_len),
                  fmt::format("{} octets written", w.begin()->second));
        // The splinter's entry.
        std::optional<std::size_t> e;
        for (auto k : entries_of[i])
          if (entries[k].head.kind == FUDP_ENTRY_SPLINTER) e = k;
        if (!e) {
          j.fail(cid::splinter, fr, "a splinter entry in the kernel ring", entry_kinds());
          break;
        }
        const auto& en = entries[*e].head;
        const bool ok = en.cookie == got && en.stored == f.header_len && en.payload_len == f.payload_len &&
                        en.delivered == want && entries_of[i].size() == 1;
        j.check(cid::splinter, ok, fr,
                fmt::format("one entry: receive {}, {} header octets, payload {}, delivered {}", got, f.header_len,
                            f.payload_len, want),
                fmt::format("{} entr{}: receive {}, {} octets stored, payload {}, delivered {}", entries_of[i].size(),
                            entries_of[i].size() == 1 ? "y" : "ies", en.cookie, en.stored, en.payload_len, en.delivered));
        const bool cut = f.payload_len > r->length;
        const bool flagged = (en.flags & FUDP_ENTRY_F_TRUNCATED) != 0;
        j.check(cid::truncation, flagged == cut && (!cut || (en.delivered == r->length && en.payload_len == f.payload_len)),
                fr,
                cut ? fmt::format("flagged truncated, {} of {} octets delivered", r->length, f.payload_len)
                    : std::string("not flagged truncated"),
                fmt::format("{}flagged, {} of {} delivered", flagged ? "" : "not ", en.delivered, en.payload_len));
        break;
      }
      case Fate::kernel: {
        // No user buffer; one whole entry with the frame.
        j.check(f.rule, w.empty(), fr, "no user buffer (whole to the kernel)", written_text());
        if (f.zero4) j.check(cid::csum_zero4, !w.empty() || !entries_of[i].empty(), fr, "accepted (no checksum)", "discarded");
        const std::string_view whole_case = f.rule == cid::fragment ? cid::fragment : cid::slow_path;
        std::optional<std::size_t> e;
        for (auto k : entries_of[i])
          if (entries[k].head.kind == FUDP_ENTRY_WHOLE) e = k;
        if (!e) {
          j.fail(whole_case, fr, "a whole entry in the kernel ring", entry_kinds());
          break;
        }
        const auto& en = entries[*e];
        const std::size_t room = h.slot_size() - FUDP_ENTRY_SIZE;
        const std::size_t want = std::min(f.frame.size(), room);
        const bool cut = f.frame.size() > room;
        j.check(whole_case,
                en.head.stored == want && en.data.size() == want && ((en.head.flags & FUDP_ENTRY_F_TRUNCATED) != 0) == cut,
                fr, fmt::format("{} octets of the {}-octet frame{}", want, f.frame.size(), cut ? ", flagged truncated" : ""),
                fmt::format("{} octets stored, flags 0x{:x}", en.head.stored, en.head.flags));
        break;
      }
      case Fate::drop:
        j.check(f.rule, w.empty() && entries_of[i].empty(), fr, "discarded: no user buffer, no ring entry",
                w.empty() ? entry_kinds() : written_text());
        break;
    }
  }

  // Counters.
  for (const auto& [stat, want] : s.counters) {
    const std::uint64_t got = s.harness().read_stat(stat);
    j.check(want.second, got == want.first, 0, fmt::format("counter {} at {}", static_cast<int>(stat), want.first),
            fmt::format("{}", got));
  }

  // Ring order: entries for received frames in the order of the frames.
  std::optional<std::size_t> last;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (!frame_of[e]) continue;
    const std::size_t i = *frame_of[e];
    j.check(cid::ring_order, !last || i > *last, sent[i].index,
            fmt::format("after the entry for frame {}", last ? sent[*last].index : 0),
            fmt::format("slot {} holds frame {} after frame {}", entries[e].slot, sent[i].index, last ? sent[*last].index : 0));
    last = i;
  }

  // Interrupts: every write of the producer index word is followed by one.
  const auto& writes = h.writes();
  const auto& irqs = h.interrupts();
  std::size_t k = 0;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].addr != h.prod_word()) continue;
    while (k < irqs.size() && irqs[k].writes_before <= i) ++k;
    j.check(cid::irq, k < irqs.size(), writes[i].frame, "interrupt vector 0 after the entry is published",
            fmt::format("no interrupt after the producer index write at cycle {}", writes[i].cycle));
    if (k >= irqs.size() || !s.coalesce_cycles) continue;
    // A coalescing time limit bounds the wait: the interrupt comes before
    // the NIC takes any frame that arrives after the limit has run out.
    const std::uint64_t due = writes[i].cycle + s.coalesce_cycles;
    const auto late = std::find_if(sent.begin(), sent.end(), [&](const Sent& f) { return f.at && *f.at > due; });
    if (late == sent.end()) continue;
    j.check(cid::irq, irqs[k].frame < late->index, writes[i].frame,
            fmt::format("interrupt by cycle {} ({} cycles after the entry), before frame {} arrives at cycle {}", due,
                        s.coalesce_cycles, late->index, *late->at),
            fmt::format("the interrupt came at cycle {}, while frame {} was handled", irqs[k].cycle, irqs[k].frame));
  }

  // Transmit.
  const auto& out = h.transmitted();
  for (std::size_t t = 0; t < s.txs().size(); ++t) {
    const Tx& x = s.txs()[t];
    if (t >= out.size()) {
      j.fail(cid::tx_csum, 0, fmt::format("transmit {} on the wire", t + 1), "not sent");
      continue;
    }
    const auto& o = out[t];
    const std::size_t c = x.udp + 6;
    bool same = o.size() == x.frame.size();
    for (std::size_t b = 0; same && b < o.size(); ++b)
      if ((b < c || b >= c + 2) && o[b] != x.frame[b]) same = false;
    if (!x.offload) {
      j.check(cid::tx_csum, o == x.frame, 0, "sent unchanged (no offload asked)", "changed");
      continue;
    }
    const std::uint16_t field = same ? protocols::be16(o, c) : 0;
    const Bytes wire(o);
    const bool sums = same && protocols::net::udp_checksum(wire.subspan(14), wire.subspan(x.udp)) == 0;
    j.check(cid::tx_csum, same && sums && field != 0, 0,
            fmt::format("transmit {}: the frame with a checksum that verifies", t + 1),
            !same ? std::string("other octets changed") : fmt::format("checksum 0x{:04x}{}", field, sums ? "" : ", wrong"));
    if (x.zero_sum) j.check(cid::tx_ones, field == 0xffff, 0, fmt::format("transmit {}: checksum 0xffff", t + 1), fmt::format("0x{:04x}", field));
  }

  // The shim contract and host memory.
  bool clean_memory = true, clean_shim = true;
  for (const auto& v : h.violations()) {
    using K = eng::Violation::Kind;
    const std::string_view id =
        v.kind == K::write_outside ? cid::memory : v.kind == K::ring_overwrite ? cid::ring_full : cid::shim;
    (id == cid::memory ? clean_memory : clean_shim) = false;
    j.fail(id, v.frame, "no such access", fmt::format("{} octets at 0x{:x}", v.len, v.addr),
           fmt::format("{}: {}", eng::violation_name(v.kind), v.what));
  }
  if (clean_memory)
    for (std::size_t i = 0; i < writes.size(); ++i) j.pass(cid::memory);
  if (clean_shim) j.pass(cid::shim);
}

}  // namespace

const std::vector<NicScenarioInfo>& nic_scenarios() {
  static const std::vector<NicScenarioInfo> v = [] {
    std::vector<NicScenarioInfo> r;
    for (const auto& d : defs()) r.push_back(d.info);
    return r;
  }();
  return v;
}

conf::ScopeResult run_scenario(const eng::Plugin& plugin, std::string_view scenario,
                               const std::vector<const conf::CaseInfo*>& cases, const std::string& plugin_args,
                               const std::string& pcap) {
  const auto& all = defs();
  const auto it = std::find_if(all.begin(), all.end(), [&](const ScenarioDef& d) { return d.info.name == scenario; });
  conf::ScopeResult r;
  r.family = conformance::fastudp::kFamily;
  r.order = static_cast<std::uint64_t>(it - all.begin());
  r.id = fmt::format("nic/{}", r.order);
  r.label = std::string(scenario);
  if (it == all.end()) return r;
  r.label = fmt::format("{}: {}", it->info.name, it->info.summary);
  eng::HarnessOptions o = it->options;
  o.plugin_args = plugin_args;
  eng::Harness h(plugin, o);
  Judge j(cases, "nic");
  if (!h.ok()) {
    j.fail(cid::shim, 0, "the plug-in starts", h.error());
  } else {
    std::unique_ptr<captures::io::PcapWriter> w;
    if (!pcap.empty()) w = std::make_unique<captures::io::PcapWriter>(pcap);
    Script s(h, w.get());
    s.coalesce_cycles = (o.coalesce >> 16) & 0xffffffffu;
    it->run(s);
    h.run_until_idle();  // timers still pending after the last arrival
    judge(s, j);
  }
  r.outcomes = j.take();
  r.first_frame = h.frames() ? 1 : 0;
  r.last_frame = h.frames();
  nlohmann::json params = {{"scenario", it->info.name},
                           {"frames", h.frames()},
                           {"transmits", h.transmitted().size()},
                           {"ring_entries", h.entries().size()},
                           {"interrupts", h.interrupts().size()},
                           {"mem_writes", h.mem_writes()},
                           {"cache_writes", h.cache_writes()},
                           {"nic_cycles", h.nic_cycles()},
                           {"cycles", h.cycles()}};
  if (!h.log().empty()) params["plugin_log"] = h.log();
  r.params = conf::params_text(params);
  return r;
}

// ---- Child processes ----

nlohmann::json scope_to_wire(const conf::ScopeResult& s) {
  nlohmann::json out = {{"id", s.id}, {"order", s.order}, {"label", s.label}, {"params", s.params},
                        {"first", s.first_frame}, {"last", s.last_frame}, {"outcomes", nlohmann::json::array()}};
  for (const auto& o : s.outcomes) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : o.tally.evidence())
      ev.push_back({{"frames", e.frames}, {"side", e.side}, {"expected", e.expected}, {"actual", e.actual}, {"detail", e.detail}});
    out["outcomes"].push_back({{"case", o.info->id}, {"checked", o.tally.checked()}, {"failed", o.tally.failed()}, {"evidence", ev}});
  }
  return out;
}

conf::ScopeResult scope_from_wire(const nlohmann::json& j, const std::vector<const conf::CaseInfo*>& cases) {
  conf::ScopeResult s;
  s.family = conformance::fastudp::kFamily;
  s.id = j.at("id").get<std::string>();
  s.order = j.at("order").get<std::uint64_t>();
  s.label = j.at("label").get<std::string>();
  s.params = j.at("params").get<std::string>();  // the object's text
  s.first_frame = j.at("first").get<std::uint64_t>();
  s.last_frame = j.at("last").get<std::uint64_t>();
  for (const auto& o : j.at("outcomes")) {
    const auto id = o.at("case").get<std::string>();
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const conf::CaseInfo* x) { return x->id == id; });
    if (c == cases.end()) continue;
    conf::CaseOutcome out{*c, {}};
    const auto checked = o.at("checked").get<std::uint64_t>(), failed = o.at("failed").get<std::uint64_t>();
    std::uint64_t fails = 0;
    for (const auto& e : o.at("evidence")) {
      conf::Evidence ev;
      ev.frames = e.at("frames").get<std::vector<std::uint64_t>>();
      ev.side = e.at("side").get<std::string>();
      ev.expected = e.at("expected").get<std::string>();
      ev.actual = e.at("actual").get<std::string>();
      ev.detail = e.at("detail").get<std::string>();
      if (fails < failed) {
        out.tally.fail(std::move(ev));
        ++fails;
      }
    }
    // Failures beyond the evidence kept, then the passes.
    for (; fails < failed; ++fails) out.tally.fail(conf::Evidence{});
    for (std::uint64_t n = failed; n < checked; ++n) out.tally.pass();
    s.outcomes.push_back(std::move(out));
  }
  return s;
}

namespace {

// Runs `body` in a child of its own process group, with an address-space
// limit (`memory`, 0: none; none either in a sanitizer build, whose shadow
// memory an address-space limit would refuse) and its stdout and stderr
// captured (the first kOutputKept octets). The result travels through a pipe
// that the child's own children (a plug-in that forks) may hold open: the
// end is the child's exit, not the pipe's. At the child's end or at the
// deadline the whole group is killed and reaped, and whatever of it was
// still running is named.
struct ChildEnd {
  std::string output;   // what the body returned
  std::string failure;  // empty: exited 0 and left nothing running
  std::string log;      // the child's stdout and stderr (bounded)
  std::uint64_t log_dropped = 0;
};
constexpr std::size_t kOutputKept = 64 * 1024;
constexpr int kExitOutOfMemory = 71;

constexpr bool kSanitized = kAddressSanitizer;

template <class F>
ChildEnd in_child(F body, int timeout_ms, std::uint64_t memory) {
  // Orphans of the child (a plug-in's own children) become ours, so that
  // they can be reaped once killed rather than left as zombies.
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  int res[2], out[2];
  if (pipe2(res, O_CLOEXEC) != 0) return {{}, fmt::format("pipe: {}", std::strerror(errno)), {}, 0};
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(res[0]);
    close(res[1]);
    return {{}, fmt::format("pipe: {}", std::strerror(errno)), {}, 0};
  }
  std::fflush(nullptr);  // (nothing buffered in this process is written twice)
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {res[0], res[1], out[0], out[1]}) close(fd);
    return {{}, fmt::format("fork: {}", std::strerror(errno)), {}, 0};
  }
  if (pid == 0) {
    setpgid(0, 0);
    close(res[0]);
    close(out[0]);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[1]);
    if (memory && !kSanitized) {
      const rlimit lim{memory, memory};
      setrlimit(RLIMIT_AS, &lim);
    }
    std::string result;
    try {
      result = body();
    } catch (const std::bad_alloc&) {
      _exit(kExitOutOfMemory);
    }
    std::size_t done = 0;
    while (done < result.size()) {
      const ssize_t n = write(res[1], result.data() + done, result.size() - done);
      if (n <= 0) _exit(3);
      done += static_cast<std::size_t>(n);
    }
    std::fflush(nullptr);
    _exit(0);
  }
  setpgid(pid, pid);  // (also here: no race with the child's own call)
  close(res[1]);
  close(out[1]);
  for (int fd : {res[0], out[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);
  ChildEnd end;
  auto drain = [&] {
    char buf[65536];
    ssize_t n;
    while ((n = read(res[0], buf, sizeof buf)) > 0) end.output.append(buf, static_cast<std::size_t>(n));
    while ((n = read(out[0], buf, sizeof buf)) > 0) {
      const std::size_t keep = std::min<std::size_t>(static_cast<std::size_t>(n), kOutputKept - end.log.size());
      end.log.append(buf, keep);
      end.log_dropped += static_cast<std::size_t>(n) - keep;
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t w = wait4(pid, &status, WNOHANG, &usage);
    if (w == pid) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      kill(-pid, SIGKILL);
      while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
      }
      break;
    }
    pollfd p[2] = {{res[0], POLLIN, 0}, {out[0], POLLIN, 0}};
    (void)poll(p, 2, static_cast<int>(std::min<long long>(left, 50)));
    drain();
  }
  drain();
  // What of the group still runs after the child's end: a plug-in that forked.
  unsigned left_behind = 0;
  if (kill(-pid, 0) == 0) {
    kill(-pid, SIGKILL);
    for (int i = 0; i < 200; ++i) {
      const pid_t w = waitpid(-pid, nullptr, WNOHANG);
      if (w > 0) {
        ++left_behind;
        continue;
      }
      if (w < 0 && errno == ECHILD && kill(-pid, 0) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    left_behind = std::max(left_behind, 1u);
  }
  close(res[0]);
  close(out[0]);
  const std::uint64_t peak_mib = static_cast<std::uint64_t>(usage.ru_maxrss) / 1024;
  if (timed_out)
    end.failure = fmt::format("did not finish within {} ms (a hang, or a NIC that never goes idle)", timeout_ms);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOutOfMemory)
    end.failure = fmt::format("ran out of memory at the --plugin-memory limit of {} MiB", memory >> 20);
  else if (WIFSIGNALED(status))
    end.failure = fmt::format("died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0)
    end.failure = fmt::format("exited with status {}", WEXITSTATUS(status));
  if (!end.failure.empty() && memory && !kSanitized && peak_mib * 4 >= (memory >> 20) * 3)
    end.failure += fmt::format(" (its memory reached {} MiB of the {} MiB --plugin-memory limit)", peak_mib, memory >> 20);
  if (left_behind)
    end.failure += fmt::format("{}forked: {} process{} of its own still ran when the scenario ended (killed)",
                               end.failure.empty() ? "" : "; it ", left_behind, left_behind == 1 ? "" : "es");
  return end;
}

}  // namespace

conf::InputResult nic_check(const NicCheckOptions& opt) {
  conf::InputResult in;
  in.path = opt.plugin;
  in.linktype = "fastudp-nic-plugin";
  {
    std::ifstream f(opt.plugin, std::ios::binary);
    if (!f) {
      in.error = fmt::format("{}: cannot open the plug-in: {}", opt.plugin, std::strerror(errno));
      return in;
    }
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    in.sha256 = captures::io::sha256_hex({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
    in.stats.octets = bytes.size();
  }
  std::vector<std::string> names = opt.scenarios;
  if (names.empty())
    for (const auto& s : nic_scenarios()) names.emplace_back(s.name);
  for (const auto& n : names) {
    if (std::none_of(defs().begin(), defs().end(), [&](const ScenarioDef& d) { return d.info.name == n; })) {
      in.error = fmt::format("no NIC scenario named '{}' (rdmaconf nic check --list shows them)", n);
      return in;
    }
  }

  // Loading first, on its own: a plug-in that cannot be loaded is an input
  // error, whatever scenario runs.
  const auto load = [&](std::string& err) { return eng::Plugin::open(opt.plugin, err); };
  if (opt.isolate) {
    auto end = in_child(
        [&] {
          std::string err;
          load(err);
          return err;
        },
        opt.timeout_ms, opt.plugin_memory);
    if (!end.failure.empty())
      in.error = fmt::format("{}: loading the plug-in {}", opt.plugin, end.failure);
    else if (!end.output.empty())
      in.error = end.output;
    if (!in.error.empty()) return in;
  }
  std::unique_ptr<eng::Plugin> here;
  if (!opt.isolate) {
    std::string err;
    here = load(err);
    if (!here) {
      in.error = err;
      return in;
    }
  }

  for (const auto& n : names) {
    conf::ScopeResult scope;
    const std::string pcap = opt.pcap_dir.empty() ? std::string() : opt.pcap_dir + "/" + n + ".pcap";
    std::string plugin_log;  // what the plug-in wrote to stdout and stderr
    if (!opt.isolate) {
      scope = run_scenario(*here, n, opt.cases, opt.plugin_args, pcap);
    } else {
      auto end = in_child(
          [&] {
            std::string err;
            auto p = load(err);
            if (!p) return nlohmann::json{{"harness_error", err}}.dump();
            try {
              return scope_to_wire(run_scenario(*p, n, opt.cases, opt.plugin_args, pcap)).dump();
            } catch (const std::exception& e) {  // ours (the recording), not the plug-in's
              return nlohmann::json{{"harness_error", e.what()}}.dump();
            }
          },
          opt.timeout_ms, opt.plugin_memory);
      plugin_log = interop::as_utf8(end.log);
      if (end.log_dropped) plugin_log += fmt::format("\n[{} more octets not kept]", end.log_dropped);
      nlohmann::json j;
      if (end.failure.empty()) j = nlohmann::json::parse(end.output, nullptr, false);
      if (end.failure.empty() && j.is_object() && j.contains("harness_error")) {
        in.error = fmt::format("scenario {}: {}", n, j["harness_error"].get<std::string>());
        return in;
      }
      if (end.failure.empty() && !j.is_discarded() && j.is_object()) {
        try {
          scope = scope_from_wire(j, opt.cases);
        } catch (const nlohmann::json::exception& e) {
          end.failure = fmt::format("answered with a malformed result ({})", e.what());
        }
      } else if (end.failure.empty()) {
        end.failure = "answered with no result";
      }
      if (!end.failure.empty()) {
        // The scenario's only verdict: the shim contract, broken.
        const auto& d = *std::find_if(defs().begin(), defs().end(), [&](const ScenarioDef& x) { return x.info.name == n; });
        scope = conf::ScopeResult{};
        scope.family = conformance::fastudp::kFamily;
        scope.order = static_cast<std::uint64_t>(&d - defs().data());
        scope.id = fmt::format("nic/{}", scope.order);
        scope.label = fmt::format("{}: {}", d.info.name, d.info.summary);
        scope.params = conf::params_text({{"scenario", d.info.name}});
        for (const auto* c : opt.cases) {
          conf::CaseOutcome o{c, {}};
          if (c->id == cid::shim) {
            conf::Evidence e;
            e.side = "nic";
            e.expected = "the scenario runs to its end";
            e.actual = fmt::format("the plug-in {}", end.failure);
            e.detail = fmt::format("scenario {}; its other cases were not judged", n);
            o.tally.fail(std::move(e));
          }
          scope.outcomes.push_back(std::move(o));
        }
      }
    }
    if (opt.isolate && !plugin_log.empty()) {
      auto params = nlohmann::json::parse(scope.params, nullptr, false);
      if (!params.is_object()) params = nlohmann::json::object();
      params["plugin_output"] = plugin_log;
      scope.params = conf::params_text(params);
    }
    for (const auto& o : scope.outcomes) in.verdicts.add(o.tally.verdict());
    in.stats.frames += scope.last_frame;
    in.scopes.push_back(std::move(scope));
  }
  return in;
}

}  // namespace rdmaconf::interop::fastudp

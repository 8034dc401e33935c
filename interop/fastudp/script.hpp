#pragma once
// A Fast UDP scenario's script (internal to interop/fastudp): the traffic it
// builds (datagrams of every shape, ARP and TCP frames) and the Script that
// drives the harness with it and writes down, frame by frame, what the
// shim contract expects of each. The scenarios (scenarios.cpp) write
// scripts; the judge (judge.cpp) holds the plug-in's actions against them.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "captures/io/packet.hpp"
#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "captures/io/pcap_writer.hpp"
#include "engines/fastudp/harness.hpp"
#include "interop/fastudp/nic_suite.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/net/checksum.hpp"

namespace rdmaconf::interop::fastudp {

namespace eng = engine::fastudp;
namespace cid = conformance::fastudp::nic;
using captures::io::Host;
using protocols::Bytes;

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
  bool bad_ip_header = false;     // IPv4: a header checksum that fails
  bool v6_routing = false;        // IPv6: a routing header (segments left 0) before UDP
};

inline Host src_host(bool v6, std::uint16_t port) {
  return v6 ? captures::io::host_v6(1, port) : captures::io::host_v4(10, 0, 0, 1, port);
}
inline Host dst_host(bool v6, std::uint8_t last, std::uint16_t port) {
  return v6 ? captures::io::host_v6(last, port) : captures::io::host_v4(10, 0, 0, last, port);
}
inline std::array<std::uint8_t, 16> dst_addr(bool v6, std::uint8_t last) { return dst_host(v6, last, 0).addr; }

inline void fix_ipv4_header(std::vector<std::byte>& f, std::size_t l3) {
  protocols::put_be16(f, l3 + 10, 0);
  protocols::put_be16(f, l3 + 10, protocols::net::fold(protocols::net::sum16({f.data() + l3, 20})));
}

// Octets of a frame: its payload's place and its headers' length.
struct Built {
  std::vector<std::byte> frame;
  std::size_t header_len = 0;  // Ethernet through the UDP header
  std::uint32_t payload_len = 0;
};

inline Built build(const Dgram& d, std::uint16_t sport, std::uint32_t seed) {
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
  } else if (d.frag != Frag::none || (d.v6 && d.v6_routing)) {
    // An IPv6 fragment header (RFC 8200 §4.5), or a routing header (§4.4,
    // routing type 253, an experiment value of RFC 4727 §3.6, no segments left), between
    // the fixed header and UDP.
    std::array<std::byte, 8> fh{};
    fh[0] = std::byte{17};
    if (d.frag != Frag::none) {
      protocols::put_be16(fh, 2, d.frag == Frag::first ? 0x0001 : static_cast<std::uint16_t>(185 << 3));
      protocols::put_be32(fh, 4, seed);
    } else {
      fh[2] = std::byte{253};
    }
    b.frame.insert(b.frame.begin() + static_cast<std::ptrdiff_t>(l3_at + 40), fh.begin(), fh.end());
    b.frame[l3_at + 6] = std::byte{static_cast<std::uint8_t>(d.frag != Frag::none ? 44 : 43)};
    protocols::put_be16(b.frame, l3_at + 4, protocols::be16(b.frame, l3_at + 4) + 8);
    udp += 8;
  }
  if (!d.v6) fix_ipv4_header(b.frame, l3_at);
  if (!d.v6 && d.bad_ip_header) b.frame[l3_at + 11] ^= std::byte{0x5a};
  b.header_len = udp + 8;
  b.payload_len = d.size;
  return b;
}

inline std::vector<std::byte> arp_frame(std::uint8_t who) {
  std::vector<std::byte> f;
  const Host a = captures::io::host_v4(10, 0, 0, 1, 0), b = captures::io::host_v4(10, 0, 0, who, 0);
  captures::io::eth_header(a, b, f);
  protocols::put_be16(f, 12, 0x0806);
  const std::uint8_t body[28] = {0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 10, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, who};
  for (auto x : body) f.push_back(std::byte{x});
  return f;
}

inline std::vector<std::byte> tcp_frame(std::uint32_t seq) {
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

// ignored: the NIC is not enabled, so it must take nothing of the frame.
enum class Fate { deliver, kernel, drop, ignored };

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
  std::uint64_t cookie = 0;
  bool done = true;  // a tx-done entry is due (false: the ring has no free slot for it)
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

  // A receive posted with a register write of `width` octets: the NIC must
  // not take it (judged by `mmio`), so no datagram is expected in it.
  std::uint64_t post_narrow(std::uint16_t port, std::uint32_t len, unsigned width) {
    return h_.post_receive_width(port, len, width);
  }
  // RX_CANCEL: the receive is no longer outstanding.
  void cancel(std::uint64_t cookie) {
    h_.cancel_receive(cookie);
    std::erase_if(outstanding_, [&](const Posted& p) { return p.cookie == cookie; });
  }
  // FUDP_REG_CTRL. A reset drops every outstanding receive; the counters
  // read right after it are what the counters case counts from.
  void control(bool enable, bool reset) {
    h_.control(enable, reset);
    enabled_ = enable;
    if (!reset) return;
    outstanding_.clear();
    since_frame_ = sent_.size();
    since_tx_ = tx_.size();
    for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) base_[k] = h_.read_stat(static_cast<fudp_stat>(k));
  }
  // Something a scenario observed itself (a register read), for the judge.
  void observe(std::string_view rule, bool ok, std::string expected, std::string actual) {
    observed_.push_back(Observed{rule, ok, std::move(expected), std::move(actual), h_.frames()});
  }
  struct Observed {
    std::string_view rule;
    bool ok;
    std::string expected, actual;
    std::uint64_t frame;
  };
  const std::vector<Observed>& observed() const { return observed_; }
  bool enabled() const { return enabled_; }
  void set_enabled(bool e) { enabled_ = e; }
  // Where the counters case counts from: the frames and transmits since the
  // last reset, and the counters read right after it.
  std::size_t since_frame() const { return since_frame_; }
  std::size_t since_tx() const { return since_tx_; }
  const std::array<std::uint64_t, FUDP_STAT_COUNT>& counter_base() const { return base_; }

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
    } else if (!enabled_) {
      s.fate = Fate::ignored;
      s.rule = cid::ctrl;
    } else if (d.bad_ip_header || (d.v6 && d.v6_routing)) {
      s.fate = Fate::kernel;
      s.rule = cid::slow_path;
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
    s.fate = enabled_ ? Fate::kernel : Fate::ignored;
    s.rule = enabled_ ? cid::slow_path : cid::ctrl;
    send(std::move(s));
  }

  void tx(const Dgram& d, bool offload, bool done = true) {
    Built b = build(d, static_cast<std::uint16_t>(50000 + tx_.size()), static_cast<std::uint32_t>(tx_.size() + 7));
    Tx t;
    t.offload = offload;
    t.zero_sum = d.zero_sum;
    t.udp = b.header_len - 8;
    if (offload) protocols::put_be16(b.frame, t.udp + 6, 0);  // the host leaves it to the NIC
    t.frame = std::move(b.frame);
    t.done = done;
    t.cookie = h_.transmit(t.frame, offload);
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
  std::vector<Observed> observed_;
  bool enabled_ = true;
  std::size_t since_frame_ = 0, since_tx_ = 0;
  std::array<std::uint64_t, FUDP_STAT_COUNT> base_{};
};


// A scenario: its name and summary, the harness's options, its script.
struct ScenarioDef {
  NicScenarioInfo info;
  eng::HarnessOptions options;
  void (*run)(Script&);
};
const std::vector<ScenarioDef>& scenario_defs();

// Holds what the plug-in did against what the script expected, case by case.
void judge(Script& s, conformance::Judge& j);

}  // namespace rdmaconf::interop::fastudp

// The Fast UDP plug-in scenarios (nic_suite.hpp): each a script of traffic
// with what the shim contract expects of every frame, run in a harness and
// judged (judge.cpp).
#include <algorithm>

#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "interop/fastudp/script.hpp"

namespace rdmaconf::interop::fastudp {

namespace conf = conformance;

namespace {

// ---- Scenarios ----


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

// Transmits while the driver takes nothing: four completions fill the ring
// of four slots, the next two find no slot (sent, not completed, counted).
void transmit_ring_full(Script& s) {
  s.harness().pause_driver(true);
  for (int i = 0; i < 6; ++i) s.tx(Dgram{.dport = 9000, .size = static_cast<std::uint32_t>(100 + i)}, true, i < 4);
  s.harness().pause_driver(false);
  s.tx(Dgram{.v6 = true, .dport = 9000, .size = 50}, true);
}

// RX_CANCEL: the oldest of two withdrawn, a port's only receive withdrawn,
// the younger of two withdrawn.
void cancel(Script& s) {
  const auto a = s.post(5001, 512);
  s.post(5001, 512);
  s.cancel(a);
  s.udp(Dgram{.dport = 5001, .size = 200});  // the second
  s.cancel(s.post(5002, 512));
  s.udp(Dgram{.dport = 5002, .size = 200});  // none: the kernel
  s.post(5003, 512);
  s.cancel(s.post(5003, 512));
  s.udp(Dgram{.dport = 5003, .size = 200});  // the first
  s.udp(Dgram{.dport = 5003, .size = 200});  // none left: the kernel
}

std::string counters_text(eng::Harness& h) {
  std::string t;
  for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k)
    t += fmt::format("{}{} {}", t.empty() ? "" : ", ", eng::stat_name(k), h.read_stat(static_cast<fudp_stat>(k)));
  return t;
}

// RX_POSTED against the receives the NIC should hold, given what it took.
void expect_posted(Script& s, std::string_view rule) {
  const std::uint64_t n = s.harness().held_receives();
  const std::uint64_t got = s.harness().read_register(FUDP_REG_RX_POSTED);
  s.observe(rule, got == n, fmt::format("RX_POSTED reads {}", n), fmt::format("RX_POSTED reads {}", got));
}

// CTRL_ENABLE and CTRL_RESET: frames before the NIC is enabled, a reset
// with a receive still posted, frames while disabled again.
void control(Script& s) {
  s.post(5001, 2048);
  s.post(5001, 2048);
  s.udp(Dgram{.dport = 5001, .size = 100});  // not enabled yet: ignored
  s.other(arp_frame(2));                     // likewise
  s.control(true, false);
  s.udp(Dgram{.dport = 5001, .size = 100});  // the first receive
  expect_posted(s, cid::posted_min);
  s.control(true, true);  // reset: the second receive goes, the counters go to zero
  std::uint64_t sum = 0;
  for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) sum += s.harness().read_stat(static_cast<fudp_stat>(k));
  s.observe(cid::ctrl, sum == 0, "every counter zero after CTRL_RESET", counters_text(s.harness()));
  expect_posted(s, cid::ctrl);
  s.udp(Dgram{.dport = 5001, .size = 100});  // its receive was dropped: the kernel
  s.post(5001, 2048);
  s.udp(Dgram{.v6 = true, .dport = 5001, .size = 100});  // a receive posted after the reset
  s.control(false, false);
  s.udp(Dgram{.dport = 5001, .size = 100});  // disabled: ignored
  s.control(true, false);
  s.udp(Dgram{.dport = 5001, .size = 100});  // no receive: the kernel
}

// FUDP_MIN_POSTED receives at once, every one of them used.
void posted_min(Script& s) {
  for (unsigned i = 0; i < FUDP_MIN_POSTED; ++i) s.post(5001, 64);
  expect_posted(s, cid::posted_min);
  for (unsigned i = 0; i < FUDP_MIN_POSTED; ++i) s.udp(Dgram{.dport = 5001, .size = 32});
  expect_posted(s, cid::posted_min);
}

// Register widths: 4-octet reads of each half of every counter and of
// RX_POSTED; a receive posted with a 4-octet write is not taken.
void registers(Script& s) {
  for (int i = 0; i < 3; ++i) s.post(5001, 2048);
  s.post(5002, 100);
  s.udp(Dgram{.dport = 5001, .size = 300});
  s.udp(Dgram{.v6 = true, .dport = 5002, .size = 300});  // truncated
  s.udp(Dgram{.dport = 5999, .size = 30});               // the kernel
  s.tx(Dgram{.dport = 9000, .size = 60}, true);
  auto& h = s.harness();
  for (unsigned k = 0; k <= FUDP_STAT_COUNT; ++k) {
    const std::uint64_t off = k < FUDP_STAT_COUNT ? FUDP_REG_STATS + 8u * k : FUDP_REG_RX_POSTED;
    const std::string name = k < FUDP_STAT_COUNT ? std::string(eng::stat_name(k)) : "RX_POSTED";
    const std::uint64_t whole = h.read_register(off), lo = h.read_register(off, 4), hi = h.read_register(off + 4, 4);
    s.observe(cid::mmio, lo == (whole & 0xffffffffu) && hi == whole >> 32,
              fmt::format("4-octet reads of {} (0x{:x}): 0x{:x} at 0x{:x}, 0x{:x} at 0x{:x}", name, off, whole & 0xffffffffu, off,
                          whole >> 32, off + 4),
              fmt::format("0x{:x} and 0x{:x}", lo, hi));
  }
  s.post_narrow(5003, 512, 4);
  s.udp(Dgram{.dport = 5003, .size = 200});  // the 4-octet post had no effect: the kernel
}

// Whole entries cut at a slot of 256 octets (224 of frame) and flagged;
// shorter ones and a splinter's headers stored whole.
void slot_size(Script& s) {
  s.post(5001, 2048);
  s.udp(Dgram{.dport = 5001, .size = 1400});              // a splinter: 42 octets of headers
  s.udp(Dgram{.dport = 6001, .size = 100});               // whole, 142 octets: fits
  s.udp(Dgram{.dport = 6001, .size = 600});               // whole, cut
  s.udp(Dgram{.v6 = true, .dport = 6001, .size = 1000});  // whole, cut
  s.other(tcp_frame(7));                                  // 154 octets: fits
  s.udp(Dgram{.dport = 6001, .size = 182});               // exactly 224 octets: fits, not flagged
  s.udp(Dgram{.dport = 6001, .size = 183});               // one octet over: cut
}

// Headers the fast path does not take: an IPv4 header checksum that fails,
// an IPv6 routing header; then a datagram the first receive takes.
void ip_headers(Script& s) {
  s.post(5001, 2048);
  s.post(5001, 2048);
  s.udp(Dgram{.dport = 5001, .size = 300, .bad_ip_header = true});
  s.udp(Dgram{.v6 = true, .dport = 5001, .size = 300, .v6_routing = true});
  s.udp(Dgram{.dport = 5001, .size = 300});
}

eng::HarnessOptions ring(std::uint32_t slots, std::uint64_t coalesce = 0) {
  eng::HarnessOptions o;
  o.ring_slots = slots;
  o.coalesce = coalesce;
  return o;
}

}  // namespace

const std::vector<ScenarioDef>& scenario_defs() {
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
      {{"transmit-ring-full", "transmits while the driver takes nothing: completions that find no ring slot"},
       ring(4),
       transmit_ring_full},
      {{"cancel", "receives withdrawn with RX_CANCEL"}, {}, cancel},
      {{"control", "frames before CTRL_ENABLE and while it is clear; CTRL_RESET with a receive posted"},
       [] {
         eng::HarnessOptions o;
         o.enable = false;
         return o;
       }(),
       control},
      {{"posted-min", "1024 receives posted at once (FUDP_MIN_POSTED), each then used"}, {}, posted_min},
      {{"registers", "4-octet reads of every counter and RX_POSTED; a receive posted with a 4-octet write"}, {}, registers},
      {{"slot-size", "slots of 256 octets: whole frames cut and flagged, or stored whole"},
       [] {
         eng::HarnessOptions o;
         o.ring_slots = 16;
         o.slot_size = 256;
         return o;
       }(),
       slot_size},
      {{"ip-headers", "an IPv4 header checksum that fails, an IPv6 routing header"}, {}, ip_headers},
  };
  return d;
}


const std::vector<NicScenarioInfo>& nic_scenarios() {
  static const std::vector<NicScenarioInfo> v = [] {
    std::vector<NicScenarioInfo> r;
    for (const auto& d : scenario_defs()) r.push_back(d.info);
    return r;
  }();
  return v;
}

conf::ScopeResult run_scenario(const eng::Plugin& plugin, std::string_view scenario,
                               const std::vector<const conf::CaseInfo*>& cases, const std::string& plugin_args,
                               const std::string& pcap, volatile std::uint64_t* progress) {
  const auto& all = scenario_defs();
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
  o.progress = progress;
  eng::Harness h(plugin, o);
  conf::Judge j(cases, "nic");
  if (!h.ok()) {
    j.fail(cid::shim, 0, "the plug-in starts", h.error());
  } else {
    std::unique_ptr<captures::io::PcapWriter> w;
    if (!pcap.empty()) w = std::make_unique<captures::io::PcapWriter>(pcap);
    Script s(h, w.get());
    s.set_enabled(o.enable);
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


}  // namespace rdmaconf::interop::fastudp

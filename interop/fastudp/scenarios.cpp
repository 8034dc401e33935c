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
                               const std::string& pcap) {
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
  eng::Harness h(plugin, o);
  conf::Judge j(cases, "nic");
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


}  // namespace rdmaconf::interop::fastudp

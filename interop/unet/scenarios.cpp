// The U-Net live scenarios: side A's script and the judge of each, over a
// Transport (transport.hpp); unet_live runs them and reports one scope each.
#include "interop/unet/live.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ostream>

#include <fmt/format.h>

#include "captures/io/pcap_writer.hpp"
#include "conformance/judge.hpp"
#include "conformance/unet/live_cases.hpp"
#include "interop/unet/transport.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::interop::unet {

namespace {

namespace conf = conformance;
namespace lc = conformance::unet::live;
namespace pu = protocols::unet;
using Clock = std::chrono::steady_clock;

// ---- Scenarios: side A's script and judge ----

struct Run {
  Run(Transport& transport, conf::Judge& judge, const UnetLiveOptions& options, PeerSpec peer)
      : t(transport), j(judge), opt(options), spec(peer) {}
  Transport& t;
  conf::Judge& j;
  const UnetLiveOptions& opt;
  PeerSpec spec;
  u::Node a{kMacA};
  u::Endpoint* ea = nullptr;
  std::uint32_t ch = 0, ch_other = 0;
  std::string note;  // the scenario's one-line account

  // A's endpoint with channels to B's two endpoints, B set up as `spec`.
  bool start() {
    if (const auto e = t.setup(spec, opt.fault); !e.empty()) {
      note = e;
      return false;
    }
    ea = open_side_a(t, a, spec, opt.fault, ch);
    ch_other = *a.open_channel(*ea, kMacB, static_cast<std::uint16_t>(spec.b + 1));
    if (t.record) a.on_send = t.record;
    return true;
  }
  void send(std::uint32_t channel, std::uint32_t size, std::uint32_t seq, std::uint32_t buffer = 0) {
    fill(ea->buffer(buffer), size, seq);
    ea->send(channel, buffer, size);
    while (ea->poll_sent()) {
    }
  }
  // Until the wire has been quiet for 30 ms: what was sent has come back.
  void pump() { t.pump(a, 30, opt.timeout_ms); }
  // What was queued goes out, with no wait for answers: for a one-way
  // stream, between its batches. (Each batch waiting for a quiet wire, as
  // pump() does, cost 30 ms per 16 messages: 38 s for 20 000.)
  void flush() { t.pump(a, 1, opt.timeout_ms); }
  // Until one more message has been delivered to A's endpoint (an echo), or
  // the wire has been quiet for 30 ms. (Waiting out the quiet after every
  // echo cost 30 ms a message: 75 s for pingpong's 2 500 rounds.)
  void pump_for_echo() {
    const auto before = ea->counters().rx_delivered;
    t.pump(a, 30, opt.timeout_ms, [&] { return ea->counters().rx_delivered > before; });
  }
  json peer() { return t.report(); }
};

std::string counters(const json& r) { return r.dump(); }

// What side B's XDP program did, when it has one.
std::string in_kernel(const json& b) {
  if (!b.contains("xdp")) return {};
  const auto& x = b["xdp"];
  return fmt::format(" (B's XDP program: {} redirected, {} passed to the kernel, {} dropped for an unknown tag, {} for no channel)",
                     x.value("redirected", 0u), x.value("passed", 0u), x.value("unknown_tag", 0u), x.value("no_channel", 0u));
}

void pingpong(Run& r) {
  const std::uint32_t sizes[] = {0, 1, 37, 38, 64, 700, 1472, 1492};
  std::uint32_t ok = 0, n = 0;
  for (std::uint32_t round = 0; round < std::max<std::uint32_t>(r.opt.messages / 8, 1); ++round)
    for (std::uint32_t size : sizes) {
      r.send(r.ch, size, n);
      r.pump_for_echo();
      const auto d = r.ea->poll();
      const bool good = d && d->length == size && intact(r.ea->buffer(d->buffer), size, n);
      if (d) r.ea->give(d->buffer);
      ok += good;
      r.j.check(lc::data, good, 0, fmt::format("message {} ({} octets) echoed intact", n, size),
                d ? fmt::format("{} octets back{}", d->length, good ? "" : ", not as sent") : "no echo");
      ++n;
    }
  r.note = fmt::format("{} of {} messages echoed intact", ok, n);
  if (const auto k = r.t.kernel_exchange(10)) {
    r.j.check(lc::kernel, *k == 10, 0, "10 kernel UDP datagrams echoed across the pair", fmt::format("{} echoed", *k));
    r.note += fmt::format("; {} of 10 kernel UDP datagrams echoed", *k) + in_kernel(r.peer());
  }
}

void stream(Run& r) {
  const std::uint32_t n = r.opt.messages;
  for (std::uint32_t i = 0; i < n; ++i) {
    r.send(r.ch, 1472, i, i % 32);
    if (i % 16 == 15) r.flush();
  }
  r.pump();
  const json b = r.peer();
  const auto delivered = b.value("delivered", 0u), whole = b.value("intact", 0u), disorder = b.value("out_of_order", 1u);
  r.j.check(lc::data, delivered == n && whole == n && disorder == 0, 0,
            fmt::format("{} messages of 1472 octets delivered intact, in order", n),
            fmt::format("{} delivered, {} intact, {} out of order", delivered, whole, disorder));
  r.note = fmt::format("{} of {} delivered intact", whole, n);
}

void spoof(Run& r) {
  const std::byte msg[16] = {};
  const auto put = [&](const std::vector<std::byte>& f, std::uint32_t buffer) {
    std::copy(f.begin(), f.end(), r.ea->buffer(buffer).begin());
    r.ea->send_frame(buffer, static_cast<std::uint32_t>(f.size()));
  };
  put(u::build_frame(kMacA, kMacB, static_cast<std::uint16_t>(r.spec.a + 1), r.spec.b, msg), 1);  // a tag it does not own
  put(u::build_frame(kForeign, kMacB, r.spec.a, r.spec.b, msg), 2);                               // another host's MAC
  put(u::build_frame(kMacA, kMacB, r.spec.a, static_cast<std::uint16_t>(r.spec.b + 5), msg), 3);  // no channel to that peer
  r.send(r.ch, 16, 0);
  r.pump();
  const json b = r.peer();
  const auto spoofed = r.ea->counters().tx_spoofed;
  const auto frames = b.value("rx_frames", 0u), delivered = b.value("delivered", 0u);
  r.j.check(lc::spoof, spoofed == 3 && frames == 1 && delivered == 1, 0,
            "3 forged frames refused at the sender (counted), the 1 honest message alone on the wire",
            fmt::format("{} refused at the sender; the peer saw {} frames and delivered {}", spoofed, frames, delivered));
  r.note = fmt::format("{} forged frames refused, the peer saw {}", spoofed, frames);
}

void unknown_tag(Run& r) {
  const std::byte msg[32] = {};
  const std::uint16_t unknown = static_cast<std::uint16_t>(60000 + r.spec.b % 1000);
  for (int i = 0; i < 5; ++i) r.t.inject(u::build_frame(kMacA, kMacB, r.spec.a, unknown, msg));
  for (int i = 0; i < 5; ++i) r.t.inject(u::build_frame(kMacA, kMacB, static_cast<std::uint16_t>(r.spec.a + 3), r.spec.b, msg));
  r.pump();
  const json b = r.peer();
  const auto unknown_n = b.value("rx_unknown_tag", 0u), stranger = b.value("rx_no_channel", 0u), delivered = b.value("delivered", 1u);
  // The stranger's 5 frames are dropped or (a broken channel check)
  // delivered; any delivery beyond them came from an unknown tag.
  r.j.check(lc::unknown_tag, unknown_n == 5 && delivered + stranger == 5, 0,
            fmt::format("5 frames for tag {} dropped and counted, none delivered", unknown),
            fmt::format("{} counted as unknown, {} delivered", unknown_n, delivered));
  r.j.check(lc::channel, stranger == 5 && delivered == 0, 0, "5 frames from a tag without a channel dropped and counted",
            fmt::format("{} counted, {} delivered", stranger, delivered));
  r.note = fmt::format("{} unknown-tag and {} stranger frames dropped", unknown_n, stranger) + in_kernel(b);
}

void oversize(Run& r) {
  for (std::uint32_t i = 0; i < 4; ++i) r.send(r.ch, 1000, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 4 && b.value("truncated_flagged", 0u) == 4 && b.value("max_length", 0u) == 256 &&
                  b.value("max_message", 0u) == 1000 && b.value("intact", 0u) == 4 && b.value("canary_ok", false);
  r.j.check(lc::oversize, ok, 0,
            "4 messages of 1000 octets into 256-octet buffers: each cut to 256, flagged with 1000, no other buffer written",
            counters(b));
  r.note = fmt::format("{} delivered, {} flagged truncated", b.value("delivered", 0u), b.value("truncated_flagged", 0u));
}

void no_free(Run& r) {
  for (std::uint32_t i = 0; i < 10; ++i) r.send(r.ch, 200, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 2 && b.value("rx_no_free", 0u) == 8 && b.value("canary_ok", false);
  r.j.check(lc::no_free, ok, 0, "2 buffers given: 2 delivered, 8 dropped and counted, no other buffer written", counters(b));
  r.note = fmt::format("{} delivered, {} dropped for no free buffer", b.value("delivered", 0u), b.value("rx_no_free", 0u));
}

void teardown(Run& r) {
  for (std::uint32_t i = 0; i < 20; ++i) {
    r.send(r.ch, 100, i, i);
    r.pump();
  }
  for (std::uint32_t i = 0; i < 3; ++i) r.send(r.ch_other, 100, i, i);
  r.pump();
  const json b = r.peer();
  const bool ok = b.value("delivered", 0u) == 10 && b.value("rx_unknown_tag", 0u) == 10 && b.value("other_delivered", 0u) == 3;
  r.j.check(lc::teardown, ok, 0,
            "torn down after 10 messages: 10 delivered, the next 10 counted as for an unknown tag, the node's other "
            "endpoint still served (3 delivered)",
            counters(b));
  r.note = fmt::format("{} delivered before the teardown, {} after it counted", b.value("delivered", 0u), b.value("rx_unknown_tag", 0u));
}

struct ScenarioDef {
  LiveScenarioInfo info;
  PeerSpec spec;
  void (*run)(Run&);
};

const std::vector<ScenarioDef>& defs() {
  static const std::vector<ScenarioDef> d{
      {{"pingpong", "messages of 0 to 1492 octets echoed; a kernel UDP exchange across the same pair (xdp and packet paths)"},
       {.behaviour = Behaviour::echo},
       pingpong},
      {{"stream", "1472-octet messages one way, sequence numbers checked"}, {.behaviour = Behaviour::sink}, stream},
      {{"spoof", "frames with a tag or MAC the endpoint does not own, or to a peer without a channel"}, {.behaviour = Behaviour::sink}, spoof},
      {{"unknown-tag", "frames put on the wire raw for an unknown tag and from a stranger"}, {.behaviour = Behaviour::sink}, unknown_tag},
      {{"oversize", "1000-octet messages into 256-octet buffers"}, {.behaviour = Behaviour::hold, .buffer_size = 256, .give = 4}, oversize},
      {{"no-free", "ten messages, two free buffers"}, {.behaviour = Behaviour::hold, .give = 2}, no_free},
      {{"teardown", "the receiving endpoint torn down mid-stream"}, {.behaviour = Behaviour::teardown, .teardown_after = 10}, teardown},
  };
  return d;
}

}  // namespace

const std::vector<LiveScenarioInfo>& live_scenarios() {
  static const std::vector<LiveScenarioInfo> v = [] {
    std::vector<LiveScenarioInfo> x;
    for (const auto& d : defs()) x.push_back(d.info);
    return x;
  }();
  return v;
}

conf::InputResult unet_live(const UnetLiveOptions& opt, std::ostream& log) {
  conf::InputResult in;
  in.path = fmt::format("unet-live:{}", opt.path);
  in.linktype = "unet-live";
  std::vector<const ScenarioDef*> chosen;
  for (const auto& d : defs())
    if (opt.scenarios.empty() || std::find(opt.scenarios.begin(), opt.scenarios.end(), d.info.name) != opt.scenarios.end())
      chosen.push_back(&d);
  for (const auto& n : opt.scenarios)
    if (std::none_of(defs().begin(), defs().end(), [&](const ScenarioDef& d) { return d.info.name == n; })) {
      in.error = fmt::format("no U-Net scenario named '{}' (rdmaconf live unet --list shows them)", n);
      return in;
    }
  if (!opt.fault.empty() && opt.fault != "forge" && opt.fault != "ignore-channels" && opt.fault != "overflow") {
    in.error = fmt::format("no fault named '{}' (forge, ignore-channels or overflow)", opt.fault);
    return in;
  }
  std::unique_ptr<Transport> t;
  if (opt.path == "memory") {
    t = memory_transport();
  } else if (opt.path == "packet" || opt.path == "xdp") {
    auto w = std::make_unique<WireTransport>();
    std::string notice;
    if (const auto e = w->start(opt.path == "xdp", notice); !e.empty()) {
      in.error = e;
      return in;
    }
    if (!notice.empty()) {
      log << "note: " << notice << "\n";
      in.warnings.push_back(notice);
      ++in.warnings_total;
    }
    t = std::move(w);
  } else {
    in.error = fmt::format("no data path named '{}' (memory, packet or xdp)", opt.path);
    return in;
  }
  log << fmt::format("data path: {}\n", t->path());
  std::unique_ptr<captures::io::PcapWriter> pcap;
  if (!opt.pcap.empty()) {
    pcap = std::make_unique<captures::io::PcapWriter>(opt.pcap);
    t->record = [&](u::Bytes f) {
      pcap->set_time_us(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
      pcap->frame(f);
    };
  }
  std::uint64_t order = 0;
  for (const auto* d : chosen) {
    conf::Judge j(opt.cases, "unet");
    Run r(*t, j, opt, d->spec);
    // Each scenario its own tags, so that a recording holds one channel per scenario and pair.
    r.spec.a = static_cast<std::uint16_t>(1000 + 20 * order + 7);
    r.spec.b = static_cast<std::uint16_t>(1000 + 20 * order + 9);
    conf::ScopeResult s;
    s.family = conformance::unet::kLiveFamily;
    s.order = order;
    s.id = fmt::format("unet-live/{}", order);
    s.label = fmt::format("{}: {}", d->info.name, d->info.summary);
    if (r.start()) d->run(r);
    s.params = conformance::params_text(
        {{"scenario", d->info.name}, {"path", t->path()}, {"tag_a", r.spec.a}, {"tag_b", r.spec.b}, {"account", r.note}});
    s.outcomes = j.take();
    for (const auto& o : s.outcomes) in.verdicts.add(o.tally.verdict());
    log << fmt::format("{:<12} {}\n", d->info.name, r.note);
    in.scopes.push_back(std::move(s));
    ++order;
  }
  return in;
}


}  // namespace rdmaconf::interop::unet

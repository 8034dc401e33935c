// The U-Net core over its in-memory link: data both ways octet for octet,
// and each protection rule with the counter that must show it: spoofed
// source tags and MACs refused on the sending side, unknown tags and
// strangers dropped on the receiving side, an empty free queue dropping
// without touching any buffer, oversize messages cut and flagged, closed
// channels and torn-down endpoints. The frames the nodes send are recorded
// and must pass `rdmaconf check`'s U-Net cases.
#include <boost/test/unit_test.hpp>

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "captures/io/pcap_writer.hpp"
#include "conformance/checker.hpp"
#include "engines/unet/ports.hpp"
#include "engines/unet/unet.hpp"
#include "protocols/core/bits.hpp"

namespace u = rdmaconf::engine::unet;
namespace fs = std::filesystem;

namespace {

const u::Mac kA{0x02, 0, 0x0a, 0x55, 0, 1}, kB{0x02, 0, 0x0a, 0x55, 0, 2};
u::Mac kForeignMac() { return {0x02, 0, 0x0a, 0x55, 0, 3}; }

void fill(std::span<std::byte> b, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<std::uint8_t>(i * 13 + seed));
}
bool same(std::span<const std::byte> b, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != std::byte(static_cast<std::uint8_t>(i * 13 + seed))) return false;
  return true;
}

bool canary(std::span<const std::byte> b) {
  return std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0xcc}; });
}

// Two nodes on a memory link, endpoint 7 on A and 9 on B with a channel
// between them, every free buffer given.
struct Pair {
  u::Node a{kA}, b{kB};
  u::MemoryLink link{a, b};
  u::Endpoint *ea = nullptr, *eb = nullptr;
  std::uint32_t ca = 0, cb = 0;
  explicit Pair(u::SegmentConfig cfg = {}) {
    ea = a.create_endpoint(7, cfg);
    eb = b.create_endpoint(9, cfg);
    ca = *a.open_channel(*ea, kB, 9);
    cb = *b.open_channel(*eb, kA, 7);
  }
  void give_all(u::Endpoint& e, std::uint32_t from = 0) {
    for (std::uint32_t i = from; i < e.config().buffers; ++i) e.give(i);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(unet_engine)

BOOST_AUTO_TEST_CASE(ping_pong_both_ways_octet_for_octet) {
  Pair p;
  p.give_all(*p.eb);
  p.give_all(*p.ea);
  const fs::path dir = fs::temp_directory_path() / "rdmaconf-unet-test";
  fs::create_directories(dir);
  {
    rdmaconf::captures::io::PcapWriter w((dir / "pingpong.pcap").string());
    p.a.on_send = [&](u::Bytes f) { w.frame(f); };
    p.b.on_send = [&](u::Bytes f) { w.frame(f); };
    unsigned seed = 0;
    for (std::uint32_t size : {0u, 1u, 37u, 38u, 64u, 1000u, 1491u, 1492u}) {
      // A sends from its buffer 0, which is on its free queue too: once a
      // send completed the buffer may take a message again.
      fill(p.ea->buffer(0), size, ++seed);
      BOOST_TEST_REQUIRE(p.ea->send(p.ca, 0, size));
      p.link.run();
      const auto sent = p.ea->poll_sent();
      BOOST_TEST((sent && *sent == 0u));
      const auto d = p.eb->poll();
      BOOST_TEST_REQUIRE(d.has_value());
      BOOST_TEST(d->length == size);
      BOOST_TEST(d->message == size);
      BOOST_TEST(d->flags == 0);
      BOOST_TEST(same(p.eb->buffer(d->buffer), size, seed));
      // The pong: B echoes from the buffer it received into.
      BOOST_TEST_REQUIRE(p.eb->send(p.cb, d->buffer, d->length));
      p.link.run();
      p.eb->give(*p.eb->poll_sent());
      const auto e = p.ea->poll();
      BOOST_TEST_REQUIRE(e.has_value());
      BOOST_TEST(e->length == size);
      BOOST_TEST(same(p.ea->buffer(e->buffer), size, seed));
      p.ea->give(e->buffer);
    }
    // Both close.
    BOOST_TEST(p.ea->send(p.ca, 1, 0, true));
    BOOST_TEST(p.eb->send(p.cb, 1, 0, true));
    p.link.run();
  }
  BOOST_TEST(p.ea->counters().tx_sent == 9u);
  BOOST_TEST(p.eb->counters().rx_delivered == 9u);
  // The recording passes the capture cases (a checker we run, on frames it did not make).
  rdmaconf::conformance::CheckOptions o;
  o.case_patterns = {"unet.*"};
  const auto r = rdmaconf::conformance::Checker(o).check_file((dir / "pingpong.pcap").string());
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST(r.verdicts.fail == 0u);
  BOOST_TEST(r.verdicts.pass == 5u);  // one channel, five cases
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_spoofed_source_is_refused_on_the_sending_side) {
  Pair p;
  p.give_all(*p.eb);
  std::size_t on_wire = 0;
  p.link.on_wire = [&](std::vector<std::byte>&) { ++on_wire; };
  // A frame naming tag 8, which endpoint 7 does not own.
  const std::byte msg[4] = {};
  auto put = [&](const std::vector<std::byte>& f) {
    std::copy(f.begin(), f.end(), p.ea->buffer(3).begin());
    return p.ea->send_frame(3, static_cast<std::uint32_t>(f.size()));
  };
  BOOST_TEST(put(u::build_frame(kA, kB, 8, 9, msg)));
  p.link.run();
  BOOST_TEST(p.ea->counters().tx_spoofed == 1u);
  // Another host's MAC address as the source.
  BOOST_TEST(put(u::build_frame(kB, kB, 7, 9, msg)));
  p.link.run();
  BOOST_TEST(p.ea->counters().tx_spoofed == 2u);
  // A peer it has no channel to.
  BOOST_TEST(put(u::build_frame(kA, kB, 7, 10, msg)));
  p.link.run();
  BOOST_TEST(p.ea->counters().tx_spoofed == 3u);
  BOOST_TEST(on_wire == 0u);
  // Its own tag on its channel goes.
  BOOST_TEST(put(u::build_frame(kA, kB, 7, 9, msg)));
  p.link.run();
  BOOST_TEST(on_wire == 1u);
  BOOST_TEST(p.eb->counters().rx_delivered == 1u);
  // The refused buffers came back too.
  int back = 0;
  while (p.ea->poll_sent()) ++back;
  BOOST_TEST(back == 4);
}

BOOST_AUTO_TEST_CASE(a_message_reaches_only_the_endpoint_it_names_from_a_channel) {
  Pair p;
  auto* other = p.b.create_endpoint(10);  // on B, no channel to A/7
  p.give_all(*p.eb);
  p.give_all(*other);
  const std::byte msg[16] = {};
  // To B/10 with a frame A/7 composes itself: refused at A (no channel to B/10).
  std::vector<std::byte> f = u::build_frame(kA, kB, 7, 10, msg);
  BOOST_TEST(p.b.receive(f));  // straight onto B's wire: B drops it, no channel from A/7 at B/10
  BOOST_TEST(other->counters().rx_no_channel == 1u);
  BOOST_TEST(!other->poll());
  // An unknown tag.
  f = u::build_frame(kA, kB, 7, 11, msg);
  BOOST_TEST(p.b.receive(f));
  BOOST_TEST(p.b.counters().rx_unknown_tag == 1u);
  // Another host's MAC address with the right tag.
  const u::Mac c{0x02, 0, 0x0a, 0x55, 0, 3};
  f = u::build_frame(kA, c, 7, 9, msg);
  BOOST_TEST(p.b.receive(f));
  BOOST_TEST(p.b.counters().rx_unknown_tag == 2u);
  // A stranger (C/7) to B/9, which has a channel to A/7 only.
  f = u::build_frame(c, kB, 7, 9, msg);
  BOOST_TEST(p.b.receive(f));
  BOOST_TEST(p.eb->counters().rx_no_channel == 1u);
  BOOST_TEST(!p.eb->poll());
  // Not U-Net (ARP): for the kernel, untouched.
  std::vector<std::byte> arp(60);
  rdmaconf::protocols::put_be16(arp, 12, 0x0806);
  BOOST_TEST(!p.b.receive(arp));
  BOOST_TEST(p.b.counters().rx_not_unet == 1u);
  // Malformed: version 2, a length past the frame.
  f = u::build_frame(kA, kB, 7, 9, msg);
  f[14] = std::byte{0x20};
  BOOST_TEST(p.b.receive(f));
  f = u::build_frame(kA, kB, 7, 9, msg);
  rdmaconf::protocols::put_be16(f, 20, 100);
  BOOST_TEST(p.b.receive(f));
  BOOST_TEST(p.b.counters().rx_malformed == 2u);
  BOOST_TEST(p.eb->counters().rx_delivered == 0u);
}

BOOST_AUTO_TEST_CASE(an_empty_free_queue_drops_and_writes_nothing) {
  u::SegmentConfig cfg;
  cfg.buffers = 4;
  cfg.buffer_size = 128;
  Pair p(cfg);
  // Every buffer of B holds a canary; only buffer 2 is given.
  for (std::uint32_t i = 0; i < 4; ++i) std::fill(p.eb->buffer(i).begin(), p.eb->buffer(i).end(), std::byte{0xcc});
  p.eb->give(2);
  for (int i = 0; i < 3; ++i) {
    fill(p.ea->buffer(0), 100, 5);
    BOOST_TEST(p.ea->send(p.ca, 0, 100));
  }
  p.link.run();
  BOOST_TEST(p.eb->counters().rx_delivered == 1u);
  BOOST_TEST(p.eb->counters().rx_no_free == 2u);
  const auto d = p.eb->poll();
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(d->buffer == 2u);
  BOOST_TEST(same(p.eb->buffer(2), 100, 5));
  for (std::uint32_t i : {0u, 1u, 3u})
    BOOST_TEST(canary(p.eb->buffer(i)), "buffer " << i);
  BOOST_TEST(!p.eb->poll());
}

BOOST_AUTO_TEST_CASE(an_oversize_message_is_cut_to_its_buffer_and_flagged) {
  u::SegmentConfig small;
  small.buffers = 4;
  small.buffer_size = 256;
  u::Node a{kA}, b{kB};
  u::MemoryLink link(a, b);
  auto* ea = a.create_endpoint(7);  // 2048-octet buffers
  auto* eb = b.create_endpoint(9, small);
  const auto ca = *a.open_channel(*ea, kB, 9);
  BOOST_TEST(b.open_channel(*eb, kA, 7).has_value());
  for (std::uint32_t i = 0; i < 4; ++i) std::fill(eb->buffer(i).begin(), eb->buffer(i).end(), std::byte{0xcc});
  eb->give(1);
  fill(ea->buffer(0), 1000, 9);
  BOOST_TEST(ea->send(ca, 0, 1000));
  link.run();
  const auto d = eb->poll();
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(d->length == 256u);
  BOOST_TEST(d->message == 1000u);
  BOOST_TEST(d->flags == u::RxDesc::truncated);
  BOOST_TEST(same(eb->buffer(1), 256, 9));
  for (std::uint32_t i : {0u, 2u, 3u})
    BOOST_TEST(canary(eb->buffer(i)), "buffer " << i);
  BOOST_TEST(eb->counters().rx_truncated == 1u);
  // Longer than the link carries: refused at the sender.
  BOOST_TEST(!ea->send(ca, 0, 1493));
  BOOST_TEST(ea->counters().tx_refused == 1u);
}

BOOST_AUTO_TEST_CASE(closed_channels_and_torn_down_endpoints) {
  Pair p;
  p.give_all(*p.eb);
  p.give_all(*p.ea);
  BOOST_TEST(p.ea->send(p.ca, 0, 10, true));
  BOOST_TEST(!p.ea->send(p.ca, 0, 10));  // nothing more from A on it
  p.link.run();
  const auto d = p.eb->poll();
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(d->flags == u::RxDesc::close);
  // A raw frame on the closed channel is refused too.
  const std::byte msg[4] = {};
  const auto f = u::build_frame(kA, kB, 7, 9, msg);
  std::copy(f.begin(), f.end(), p.ea->buffer(1).begin());
  BOOST_TEST(p.ea->send_frame(1, static_cast<std::uint32_t>(f.size())));
  p.link.run();
  BOOST_TEST(p.ea->counters().tx_spoofed == 1u);
  // And B takes nothing more from A/7 on it (straight onto B's wire).
  BOOST_TEST(p.b.receive(f));
  BOOST_TEST(p.eb->counters().rx_no_channel == 1u);
  // A new channel between the same endpoints works; then B's endpoint goes
  // away mid-stream: its tag names nothing, its handle refuses everything.
  const auto ca2 = p.a.open_channel(*p.ea, kB, 9);
  const auto cb2 = p.b.open_channel(*p.eb, kA, 7);
  BOOST_TEST_REQUIRE(ca2.has_value());
  BOOST_TEST_REQUIRE(cb2.has_value());
  BOOST_TEST(p.ea->send(*ca2, 0, 10));
  p.link.run();
  BOOST_TEST(p.eb->poll().has_value());
  p.b.destroy_endpoint(9);
  BOOST_TEST(!p.eb->alive());
  BOOST_TEST(p.b.endpoint(9) == nullptr);
  BOOST_TEST(p.ea->send(*ca2, 0, 10));
  p.link.run();
  BOOST_TEST(p.b.counters().rx_unknown_tag == 1u);
  BOOST_TEST(!p.eb->send(*cb2, 0, 10));
  BOOST_TEST(!p.eb->give(0));
  BOOST_TEST(!p.eb->poll());
  // The tag can be taken again; the new endpoint has no channel yet.
  auto* again = p.b.create_endpoint(9);
  BOOST_TEST_REQUIRE(again != nullptr);
  again->give(0);
  BOOST_TEST(p.ea->send(*ca2, 0, 10));
  p.link.run();
  BOOST_TEST(again->counters().rx_no_channel == 1u);
}

BOOST_AUTO_TEST_CASE(the_control_path_refuses_what_names_no_endpoint) {
  u::Node a{kA};
  BOOST_TEST(a.create_endpoint(0) == nullptr);
  BOOST_TEST(a.create_endpoint(0xffff) == nullptr);
  auto* e = a.create_endpoint(5);
  BOOST_TEST_REQUIRE(e != nullptr);
  BOOST_TEST(a.create_endpoint(5) == nullptr);
  BOOST_TEST(!a.open_channel(*e, kB, 0).has_value());
  BOOST_TEST(!a.open_channel(*e, u::Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9).has_value());
  BOOST_TEST(a.open_channel(*e, kB, 9).has_value());
  BOOST_TEST(!a.open_channel(*e, kB, 9).has_value());  // one channel per peer
  BOOST_TEST(!e->give(64));                           // not a buffer of the segment
  BOOST_TEST(!e->send(0, 64, 10));
  BOOST_TEST(!e->send(1, 0, 10));                      // no channel 1
}

// The control path tells its observer (the AF_XDP port's maps) every
// endpoint and channel it makes and unmakes, and only those.
BOOST_AUTO_TEST_CASE(control_path_tells_its_observer) {
  struct Log final : u::ControlObserver {
    std::vector<std::string> seen;
    void endpoint_created(std::uint16_t t) override { seen.push_back("+ep " + std::to_string(t)); }
    void endpoint_destroyed(std::uint16_t t) override { seen.push_back("-ep " + std::to_string(t)); }
    void channel_opened(std::uint16_t t, const u::Mac& m, std::uint16_t p) override {
      seen.push_back("+ch " + std::to_string(t) + " " + u::mac_text(m) + " " + std::to_string(p));
    }
    void channel_closed(std::uint16_t t, const u::Mac& m, std::uint16_t p) override {
      seen.push_back("-ch " + std::to_string(t) + " " + u::mac_text(m) + " " + std::to_string(p));
    }
  } log;
  u::Node n(kA);
  n.observe(&log);
  auto* e = n.create_endpoint(7);
  BOOST_TEST(n.create_endpoint(7) == nullptr);  // refused: not told
  const auto c1 = n.open_channel(*e, kB, 9);
  BOOST_TEST(!n.open_channel(*e, kB, 9));  // refused: not told
  (void)n.open_channel(*e, kB, 11);
  n.close_channel(*e, *c1);
  n.destroy_endpoint(7);
  const std::string b = u::mac_text(kB);
  const std::vector<std::string> want{"+ep 7", "+ch 7 " + b + " 9", "+ch 7 " + b + " 11", "-ch 7 " + b + " 9",
                                      "-ch 7 " + b + " 9", "-ch 7 " + b + " 11", "-ep 7"};
  BOOST_TEST(log.seen == want, boost::test_tools::per_element());
}

// Without the privilege to load BPF programs, opening an AF_XDP port fails
// with a message naming it (this thread alone gives up CAP_BPF,
// CAP_SYS_ADMIN and CAP_NET_ADMIN: capabilities are per thread). A build
// without AF_XDP says that instead.
BOOST_AUTO_TEST_CASE(xdp_port_names_the_missing_privilege) {
  std::string error;
  bool opened = false;
  std::thread([&] {
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    if (syscall(SYS_capget, &h, d) == 0) {
      for (const int cap : {CAP_BPF, CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_PERFMON}) d[cap / 32].effective &= ~(1u << (cap % 32));
      (void)syscall(SYS_capset, &h, d);
    }
    opened = u::open_xdp_port("lo", error) != nullptr;
  }).join();
  BOOST_TEST(!opened);
  if (!u::xdp_built()) {
    BOOST_TEST(error.find("no AF_XDP support") != std::string::npos, error);
    return;
  }
  BOOST_TEST(error.find("loading the U-Net XDP program") != std::string::npos, error);
  BOOST_TEST(error.find("CAP_BPF") != std::string::npos, error);
  BOOST_TEST(error.find("permission denied") != std::string::npos, error);
}

// An interface that does not exist is named.
BOOST_AUTO_TEST_CASE(ports_name_a_missing_interface) {
  std::string error;
  BOOST_TEST(!u::open_packet_port("rdmaconf-none0", error));
  BOOST_TEST(error.find("no interface named rdmaconf-none0") != std::string::npos, error);
  error.clear();
  BOOST_TEST(!u::open_xdp_port("rdmaconf-none0", error));
  BOOST_TEST((error.find("no interface named rdmaconf-none0") != std::string::npos || !u::xdp_built()), error);
}

// The XDP program itself, run by the kernel on frames (BPF_PROG_TEST_RUN,
// attached to nothing): ordinary traffic passes, and U-Net frames are
// dropped and counted by the rule they break, or sent on to the socket slot
// (which holds no socket here: dropped and counted as no_socket) when they
// break none; the maps follow the control path.
BOOST_AUTO_TEST_CASE(xdp_program_demultiplexes_by_tag_in_the_kernel) {
  if (!u::xdp_built()) {
    BOOST_TEST_MESSAGE("this build has no AF_XDP support: the XDP program was not built, nothing to run");
    return;
  }
  std::string error;
  auto prog = u::load_xdp_program(error);
  if (!prog) {
    BOOST_TEST_MESSAGE("the XDP program cannot be loaded here (" << error << "): not run");
    BOOST_TEST(geteuid() != 0, "root, and still: " << error);
    return;
  }
  constexpr int kDrop = 1, kPass = 2;  // XDP_DROP, XDP_PASS
  const std::byte msg[20] = {};
  const auto frame = [&](std::uint16_t src_tag, std::uint16_t dst_tag, const u::Mac& from = kB) {
    return u::build_frame(from, kA, src_tag, dst_tag, msg);
  };
  // An ARP request and an IPv4 datagram: the kernel's.
  std::vector<std::byte> arp(60), ip(60);
  for (std::size_t i = 0; i < 6; ++i) arp[i] = std::byte{0xff};
  arp[12] = std::byte{0x08}, arp[13] = std::byte{0x06};
  ip[12] = std::byte{0x08}, ip[13] = std::byte{0x00}, ip[14] = std::byte{0x45};
  BOOST_TEST(prog->run(arp) == kPass);
  BOOST_TEST(prog->run(ip) == kPass);
  // No endpoint yet: unknown tag.
  BOOST_TEST(prog->run(frame(9, 7)) == kDrop);
  // The control path makes endpoint 7 with a channel to (B, 9).
  u::Node n(kA);
  n.observe(prog.get());
  auto* e = n.create_endpoint(7);
  const auto ch = n.open_channel(*e, kB, 9);
  BOOST_TEST(prog->run(frame(9, 7)) == kDrop);         // on to slot 0: no socket there
  BOOST_TEST(prog->run(frame(10, 7)) == kDrop);        // a tag without a channel
  BOOST_TEST(prog->run(frame(9, 7, kForeignMac())) == kDrop);  // a MAC without a channel
  auto bad = frame(9, 7);
  bad[14] = std::byte{0x20};  // version 2
  BOOST_TEST(prog->run(bad) == kDrop);
  std::vector<std::byte> cut(bad.begin(), bad.begin() + 18);  // the U-Net header cut short
  BOOST_TEST(prog->run(cut) == kDrop);
  auto s = prog->stats();
  BOOST_TEST(s.passed == 2u);
  BOOST_TEST(s.unknown_tag == 1u);
  BOOST_TEST(s.no_socket == 1u);
  BOOST_TEST(s.no_channel == 2u);
  BOOST_TEST(s.malformed == 2u);
  BOOST_TEST(s.redirected == 0u);
  // The channel check off: the stranger goes on too.
  prog->check_channels(false);
  BOOST_TEST(prog->run(frame(10, 7)) == kDrop);
  BOOST_TEST(prog->stats().no_socket == 2u);
  prog->check_channels(true);
  // The channel closed, then the endpoint torn down.
  n.close_channel(*e, *ch);
  BOOST_TEST(prog->run(frame(9, 7)) == kDrop);
  BOOST_TEST(prog->stats().no_channel == 3u);
  n.destroy_endpoint(7);
  BOOST_TEST(prog->run(frame(9, 7)) == kDrop);
  BOOST_TEST(prog->stats().unknown_tag == 2u);
  // reset() forgets the node and starts the counts again.
  auto* e2 = n.create_endpoint(8);
  (void)n.open_channel(*e2, kB, 9);
  prog->reset();
  BOOST_TEST(prog->run(frame(9, 8)) == kDrop);
  s = prog->stats();
  BOOST_TEST(s.unknown_tag == 1u);
  BOOST_TEST(s.passed + s.no_socket + s.no_channel + s.malformed == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

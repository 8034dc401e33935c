#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include "captures/io/tcp_reassembly.hpp"

using namespace rdmaconf::captures::io;
using rdmaconf::protocols::Bytes;

namespace {

struct Recorder : TcpSink {
  std::map<std::uint64_t, std::string> data[2];
  std::string joined[2];
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gaps[2];
  int opened = 0, closed = 0;
  void on_open(const TcpStreamInfo&) override { ++opened; }
  std::vector<int> order;  // directions in delivery order
  void on_data(const TcpStreamInfo&, int d, std::uint64_t off, Bytes b, std::uint64_t, std::uint64_t) override {
    order.push_back(d);
    BOOST_TEST(off == joined_len[d]);  // delivered in order, no overlap
    joined[d].append(reinterpret_cast<const char*>(b.data()), b.size());
    joined_len[d] += b.size();
  }
  void on_gap(const TcpStreamInfo&, int d, std::uint64_t off, std::uint64_t len, std::uint64_t) override {
    gaps[d].push_back({off, len});
    joined_len[d] += len;
    joined[d].append(len, '?');
  }
  void on_close(const TcpStreamInfo&, bool, std::uint64_t) override { ++closed; }
  std::uint64_t joined_len[2] = {};
};

Packet seg(std::uint32_t seq, const std::string& s, bool from_a = true, bool syn = false, bool fin = false) {
  // (A deque: earlier packets' payloads stay where they are as it grows.)
  static std::deque<std::string> keep;
  keep.push_back(s);
  Packet p;
  p.ip_version = 4;
  p.src = {10, 0, 0, static_cast<std::uint8_t>(from_a ? 1 : 2)};
  p.dst = {10, 0, 0, static_cast<std::uint8_t>(from_a ? 2 : 1)};
  p.sport = from_a ? 1000 : 2000;
  p.dport = from_a ? 2000 : 1000;
  p.protocol = 6;
  p.seq = seq;
  p.syn = syn;
  p.fin = fin;
  p.ack_flag = !syn || !from_a;
  p.payload = Bytes(reinterpret_cast<const std::byte*>(keep.back().data()), keep.back().size());
  return p;
}

}  // namespace

namespace {

// Events of many connections, by connection number.
struct Log : TcpSink {
  std::vector<std::string> events;
  std::vector<std::string> limits;
  void on_open(const TcpStreamInfo& c) override { events.push_back("open " + std::to_string(c.id)); }
  void on_data(const TcpStreamInfo&, int, std::uint64_t, Bytes, std::uint64_t, std::uint64_t) override {}
  void on_gap(const TcpStreamInfo& c, int d, std::uint64_t off, std::uint64_t len, std::uint64_t) override {
    events.push_back("gap " + std::to_string(c.id) + "/" + std::to_string(d) + " " + std::to_string(off) + "+" +
                     std::to_string(len));
  }
  void on_close(const TcpStreamInfo& c, bool, std::uint64_t) override { events.push_back("close " + std::to_string(c.id)); }
  void on_limit(const TcpStreamInfo& c, int d, std::uint64_t, const char* why) override {
    limits.push_back(std::to_string(c.id) + "/" + std::to_string(d) + ": " + why);
  }
};

// seg() on another client port, at a capture time.
Packet at(Packet p, std::uint16_t client_port, std::int64_t ts_s) {
  (p.sport == 1000 ? p.sport : p.dport) = client_port;
  p.ts_us = ts_s * 1000000;
  return p;
}

// a (seq 99) opens with its SYN, b (seq 499) answers with its SYN-ACK.
void handshake(TcpReassembler& t) {
  t.add(seg(99, "", true, true));
  auto synack = seg(499, "", false, true);
  synack.ack = 100;
  t.add(synack);
}

}  // namespace


BOOST_AUTO_TEST_SUITE(tcp_reassembly)

BOOST_AUTO_TEST_CASE(out_of_order_duplicates_and_overlaps) {
  Recorder r;
  TcpReassembler t(r);
  t.add(seg(99, "", true, true));
  t.add(seg(106, "fgh"));     // ahead: held
  t.add(seg(100, "abc"));     // in order
  t.add(seg(100, "abc"));     // duplicate
  t.add(seg(102, "cde"));     // overlaps "c", fills to 105, then "fgh" drains
  t.add(seg(104, "efghij"));  // overlap on both sides
  t.finish(10);
  BOOST_TEST(r.joined[0] == "abcdefghij");
  BOOST_TEST(r.gaps[0].empty());
  BOOST_TEST(r.opened == 1);
  BOOST_TEST(r.closed == 1);
}

BOOST_AUTO_TEST_CASE(gap_is_reported_not_invented) {
  Recorder r;
  TcpReassembler t(r);
  t.add(seg(1, "", true, true));
  t.add(seg(2, "ab"));
  t.add(seg(10, "xyz"));  // octets 4..11 never arrive
  t.finish(3);
  BOOST_TEST(r.joined[0] == "ab??????xyz");
  BOOST_TEST_REQUIRE(r.gaps[0].size() == 1u);
  BOOST_TEST(r.gaps[0][0].first == 2u);
  BOOST_TEST(r.gaps[0][0].second == 6u);
}

// A sequence number 2^31 behind (a jump, not a retransmission) is not read,
// and said once; what it would have carried shows as a gap when the peer's
// acknowledgements or a FIN prove it.
BOOST_AUTO_TEST_CASE(sequence_jump_behind_is_said) {
  Log r;
  TcpReassembler t(r);
  t.add(seg(1, "", true, true));
  t.add(seg(2, "ab"));
  t.add(seg(4 + 0x80000000u, "cd"));
  t.add(seg(6 + 0x80000000u, "ef"));
  t.add(seg(6, "gh"));  // the stream goes on where it was
  t.finish(6);
  BOOST_TEST_REQUIRE(r.limits.size() == 1u);
  BOOST_TEST(r.limits[0] == std::string("1/0: ") + rdmaconf::captures::io::kJumpBehind);
}

BOOST_AUTO_TEST_CASE(sequence_wraparound) {
  Recorder r;
  TcpReassembler t(r);
  t.add(seg(0xfffffffd, "", true, true));
  t.add(seg(0xfffffffe, "ab"));
  t.add(seg(0x00000000, "cd"));
  t.finish(3);
  BOOST_TEST(r.joined[0] == "abcd");
}

BOOST_AUTO_TEST_CASE(both_directions_midstream_and_fin_close) {
  Recorder r;
  TcpReassembler t(r);
  t.add(seg(500, "hello"));  // no SYN: mid-stream start
  t.add(seg(9000, "world", false));
  t.add(seg(505, "", true, false, true));
  t.add(seg(9005, "", false, false, true));
  BOOST_TEST(r.closed == 1);
  BOOST_TEST(t.open_connections() == 0u);
  BOOST_TEST(r.joined[0] == "hello");
  BOOST_TEST(r.joined[1] == "world");
  t.add(seg(506, ""));  // a last pure ACK does not open a new connection
  BOOST_TEST(r.opened == 1);
}

BOOST_AUTO_TEST_CASE(pending_bound_forces_gap) {
  Recorder r;
  TcpReassembler t(r, ReassemblyLimits{16, 100});
  t.add(seg(1, "", true, true));
  t.add(seg(10, "0123456789"));
  t.add(seg(20, "0123456789"));  // over 16 octets held: the hole is declared a gap
  BOOST_TEST(r.gaps[0].size() == 1u);
  BOOST_TEST(r.joined[0].size() == 28u);
  BOOST_TEST(r.gaps[0][0].first == 0u);
  BOOST_TEST(r.gaps[0][0].second == 8u);
}

// The answer recorded before its request in file order is delivered after
// it, because its ACK number says its sender had received the request.
BOOST_AUTO_TEST_CASE(causal_order_from_ack_numbers) {
  Recorder r;
  TcpReassembler t(r);
  auto syn = seg(99, "", true, true);
  t.add(syn);
  auto synack = seg(499, "", false, true);
  synack.ack = 100;
  t.add(synack);
  auto answer = seg(500, "answer", false);
  answer.ack = 107;  // has received the 7-octet request
  auto request = seg(100, "request");
  request.ack = 500;
  t.add(answer);
  BOOST_TEST(r.joined[1].empty());  // held: the request is not yet delivered
  t.add(request);
  BOOST_TEST(r.joined[0] == "request");
  BOOST_TEST(r.joined[1] == "answer");
  BOOST_TEST((r.order == std::vector<int>{0, 1}));
  t.finish(10);
  BOOST_TEST(r.gaps[0].empty());
}

// Segments coalesced where the capture was taken: a's request and its next
// message in one segment that carries the later part's ACK (of b's answer),
// b's answer acknowledging the request only. Each waits on the other; the
// part of a's segment that b acknowledged goes first, then the answer, then
// the rest.
BOOST_AUTO_TEST_CASE(coalesced_segment_and_its_answer_wait_on_each_other) {
  Recorder r;
  TcpReassembler t(r);
  handshake(t);
  auto answer = seg(500, "answer", false);
  answer.ack = 107;  // has received the 7-octet request
  auto merged = seg(100, "requestnext");
  merged.ack = 506;  // the later part's: the answer had arrived
  t.add(answer);
  t.add(merged);
  BOOST_TEST(r.joined[0] == "requestnext");
  BOOST_TEST(r.joined[1] == "answer");
  BOOST_TEST((r.order == std::vector<int>{0, 1, 0}));
  t.finish(10);
  BOOST_TEST(r.gaps[0].empty());
  BOOST_TEST(r.gaps[1].empty());
}

// Octets the peer acknowledged but the capture lacks at the end of a
// direction are a gap; the acknowledged FIN is not an octet.
BOOST_AUTO_TEST_CASE(tail_proven_by_ack_and_fin) {
  Recorder r;
  TcpReassembler t(r);
  handshake(t);
  t.add(seg(100, "abc"));
  auto ack = seg(500, "x", false);
  ack.ack = 110;  // the peer had 10 octets of a, the capture 3
  t.add(ack);
  t.finish(10);
  BOOST_TEST_REQUIRE(r.gaps[0].size() == 1u);
  BOOST_TEST(r.gaps[0][0].first == 3u);
  BOOST_TEST(r.gaps[0][0].second == 6u);  // the last acknowledged number may be a FIN
  Recorder r2;
  TcpReassembler t2(r2);
  t2.add(seg(99, "", true, true));
  t2.add(seg(100, "abc", true, false, true));  // data and FIN
  auto fin_ack = seg(500, "", false, false, true);
  fin_ack.ack = 104;  // acknowledges the FIN
  t2.add(fin_ack);
  t2.finish(10);
  BOOST_TEST(r2.gaps[0].empty());
  BOOST_TEST(r2.joined[0] == "abc");
}

// A connection whose end the capture lacks is closed once it has been idle
// longer than the timeout in capture time, not kept to the end.
BOOST_AUTO_TEST_CASE(idle_connections_close_in_capture_time) {
  for (const bool timeout : {false, true}) {
    Log log;
    ReassemblyLimits lim;
    lim.idle_timeout_us = timeout ? 600'000'000 : 0;
    TcpReassembler t(log, lim);
    t.add(at(seg(1, "", true, true), 1001, 10));
    t.add(at(seg(2, "ab"), 1001, 11));  // then silence
    for (std::int64_t s = 100; s <= 1000; s += 100) t.add(at(seg(1, "", true, true), static_cast<std::uint16_t>(2000 + s), s));
    const auto open_now = t.open_connections();
    t.finish(99);
    const auto first_close = std::find(log.events.begin(), log.events.end(), "close 1") - log.events.begin();
    const auto eighth_open = std::find(log.events.begin(), log.events.end(), "open 9") - log.events.begin();
    if (timeout) {
      BOOST_TEST(first_close < eighth_open);  // closed when time passed 611 s, before the connection opened at 800 s
      BOOST_TEST(open_now < 11u);
    } else {
      BOOST_TEST(first_close > eighth_open);
      BOOST_TEST(open_now == 11u);
    }
  }
}

// Out-of-order octets of all connections together stay under the global
// bound: past it, the connection asking for more goes on with a gap, and says
// which limit did it.
BOOST_AUTO_TEST_CASE(global_buffer_bound) {
  Log log;
  ReassemblyLimits lim;
  lim.max_total_bytes = 100;
  TcpReassembler t(log, lim);
  const std::string chunk(40, 'x');
  for (std::uint16_t port = 3000; port < 3004; ++port) {
    t.add(at(seg(1, "", true, true), port, 1));
    t.add(at(seg(50, chunk), port, 1));  // octets 1..48 missing: held out of order
    BOOST_TEST(t.buffered_bytes() <= 100u);
  }
  BOOST_TEST_REQUIRE(!log.limits.empty());
  BOOST_TEST(log.limits.front().find("all connections together") != std::string::npos, log.limits.front());
  BOOST_TEST(std::count_if(log.events.begin(), log.events.end(), [](const std::string& e) { return e.starts_with("gap "); }) >= 1);
  t.finish(9);
  BOOST_TEST(t.buffered_bytes() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

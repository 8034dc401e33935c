#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include "captures/io/tcp_copies.hpp"
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
  // Later copies: "offset:octets@frame".
  std::vector<std::string> resent[2];
  void on_resent(const TcpStreamInfo&, int d, std::uint64_t off, Bytes b, std::uint64_t frame) override {
    resent[d].push_back(std::to_string(off) + ":" + std::string(reinterpret_cast<const char*>(b.data()), b.size()) + "@" +
                        std::to_string(frame));
  }
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

// A sequence number 2^31 away (a jump: no retransmission or window reaches
// that far) is said once; the stream goes on from it after a gap (its length
// the distance forward), the peer's acknowledgements and the FIN read in the
// new space, and a segment of the space left behind is not read.
BOOST_AUTO_TEST_CASE(sequence_jump_goes_on_after_a_gap) {
  struct Sink : Log {
    std::vector<std::string> got;
    void on_data(const TcpStreamInfo&, int, std::uint64_t off, Bytes b, std::uint64_t, std::uint64_t) override {
      got.push_back(std::to_string(off) + ":" + std::string(reinterpret_cast<const char*>(b.data()), b.size()));
    }
  } r;
  TcpReassembler t(r);
  constexpr std::uint32_t kJump = 0x80000000u;
  t.add(seg(1, "", true, true));
  t.add(seg(2, "ab"));
  t.add(seg(4 + kJump, "cd"));
  t.add(seg(2, "ab"));  // the space left behind: not read
  t.add(seg(6 + kJump, "ef", true, false, true));
  Packet fin = seg(500, "", false, false, true);
  fin.ack = 9 + kJump;  // the peer acknowledges the data and the FIN in the new space
  t.add(fin);
  BOOST_TEST_REQUIRE(r.limits.size() == 1u);
  BOOST_TEST(r.limits[0] == std::string("1/0: ") + rdmaconf::captures::io::kSequenceJump);
  const std::vector<std::string> data{"0:ab", "2147483650:cd", "2147483652:ef"};
  BOOST_TEST(r.got == data, boost::test_tools::per_element());
  const std::vector<std::string> events{"open 1", "gap 1/0 2+2147483648", "close 1"};
  BOOST_TEST(r.events == events, boost::test_tools::per_element());  // (both FINs in place: closed, no more gap)
}

// Octets the stream already holds, sent again before the peer acknowledged
// them, are handed on as copies (the first copy stays the one delivered);
// once acknowledged, a copy is not (the receiver had taken the first).
BOOST_AUTO_TEST_CASE(copies_before_the_peers_ack_are_handed_on) {
  Recorder r;
  TcpReassembler t(r);
  auto framed = [](Packet p, std::uint64_t frame) {
    p.frame = frame;
    return p;
  };
  t.add(framed(seg(1, "", true, true), 1));
  t.add(framed(seg(2, "abcdef"), 2));
  t.add(framed(seg(4, "cdXf"), 3));    // a copy of offsets 2..5, one octet other
  t.add(framed(seg(10, "kl"), 4));     // ahead: waits
  t.add(framed(seg(10, "kX"), 5));     // a copy of the waiting one with other content: kept beside it
  t.add(framed(seg(10, "kl"), 6));     // the same content again: dropped
  t.add(framed(seg(8, "gh"), 7));      // fills the hole: "kl" then its copy "kX"
  Packet ack = framed(seg(100, "", false), 8);
  ack.ack = 12;  // the peer acknowledges all ten octets
  t.add(ack);
  t.add(framed(seg(2, "ZZ"), 9));      // after the acknowledgement: not handed on
  t.finish(10);
  BOOST_TEST(r.joined[0] == "abcdefghkl");
  const std::vector<std::string> want{"2:cdXf@3", "8:kX@5"};
  BOOST_TEST(r.resent[0] == want, boost::test_tools::per_element());
}

// Copies compared with the octets kept: equal ones say nothing; differing
// ones name where and the frames of both; copies of octets no longer kept,
// or that come before their first copy, are compared when they can be.
BOOST_AUTO_TEST_CASE(copies_compared_with_the_first) {
  auto b = [](const std::string& s) { return Bytes(reinterpret_cast<const std::byte*>(s.data()), s.size()); };
  std::vector<TcpCopies::Finding> f;
  TcpCopies c;
  const std::string one = "abcdef", two = "ghij";
  c.data(0, b(one), 1, f);
  c.data(6, b(two), 2, f);
  const std::string same = "cdef", other = "eXgX";
  c.resent(2, b(same), 3, f);
  BOOST_TEST(f.empty());
  c.resent(4, b(other), 4, f);  // differs at offsets 5 and 7: frames 1 and 2
  BOOST_TEST_REQUIRE(f.size() == 1u);
  BOOST_TEST(f[0].compared);
  BOOST_TEST(f[0].offset == 5u);
  BOOST_TEST(f[0].len == 3u);
  BOOST_TEST(f[0].first == 1u);
  BOOST_TEST(f[0].last == 2u);
  BOOST_TEST(f[0].frame == 4u);
  f.clear();
  // A copy ahead of what is here waits for its first copy.
  const std::string ahead = "klmn", first_ahead = "klmm";
  c.resent(10, b(ahead), 5, f);
  BOOST_TEST(f.empty());
  c.data(10, b(first_ahead), 6, f);
  BOOST_TEST_REQUIRE(f.size() == 1u);
  BOOST_TEST(f[0].offset == 13u);
  BOOST_TEST(f[0].first == 6u);
  f.clear();
  // Past kBytes more, the first octets are no longer kept: not compared,
  // the frame of their first copy still named.
  const std::string big(TcpCopies::kBytes, 'x');
  c.data(14, b(big), 7, f);
  c.resent(0, b(one), 8, f);
  BOOST_TEST_REQUIRE(f.size() == 1u);
  BOOST_TEST(!f[0].compared);
  BOOST_TEST(f[0].first == 1u);
  BOOST_TEST(f[0].len == 6u);
  f.clear();
  // A copy waiting when a gap comes: compared as far as its first copy came.
  const std::string tail = "xxQQ";
  c.resent(14 + TcpCopies::kBytes - 2, b(tail), 9, f);
  BOOST_TEST(f.empty());
  c.gap(14 + TcpCopies::kBytes, 10, f);
  BOOST_TEST(f.empty());  // (the part here is equal; the rest has no first copy)
}

// The memory kept is drawn from a shared budget and given back; past it a
// direction keeps nothing, and its copies are named as not compared.
BOOST_AUTO_TEST_CASE(copies_within_a_budget) {
  const std::string chunk(1000, 'y');
  const Bytes b(reinterpret_cast<const std::byte*>(chunk.data()), chunk.size());
  std::vector<TcpCopies::Finding> f;
  TcpCopies::Budget budget{3000, 0};
  {
    TcpCopies c(&budget);
    c.data(0, b, 1, f);
    BOOST_TEST(budget.used > 0u);
    BOOST_TEST(budget.used <= budget.limit);
    c.resent(0, b, 2, f);
    BOOST_TEST(f.empty());
    c.resent(5000, b, 3, f);  // ahead: waits for its first copy
    for (std::uint64_t k = 1; k < 10; ++k) c.data(k * 1000, b, 3 + k, f);  // grows past the budget
    BOOST_TEST(budget.used <= budget.limit);
    // The waiting copy, once its first copy came: nothing kept to compare it with.
    BOOST_TEST_REQUIRE(f.size() == 1u);
    BOOST_TEST(!f[0].compared);
    BOOST_TEST(f[0].offset == 5000u);
    c.resent(9000, b, 20, f);
    BOOST_TEST_REQUIRE(f.size() == 2u);
    BOOST_TEST(!f[1].compared);
    BOOST_TEST(f[1].first == 0u);
  }
  BOOST_TEST(budget.used == 0u);
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

// The InfiniBand (RoCEv2) engine against itself, in memory: RC, UC and UD
// with every operation and data verified end to end; loss and PSN wrap;
// every fault with the reaction a conforming responder must show, as shown
// by a second instance; the recorded traffic judged by the RoCE catalog,
// with its ICRCs computed here from the addresses alone and there from the
// IP headers in the capture.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "captures/io/pcap_writer.hpp"
#include "conformance/checker.hpp"
#include "engines/ib/qp.hpp"

using namespace rdmaconf::engine;
using namespace rdmaconf::engine::ib;
using rdmaconf::protocols::Bytes;
namespace cap = rdmaconf::captures::io;
namespace pib = rdmaconf::protocols::ib;

namespace rdmaconf::engine {
inline std::ostream& operator<<(std::ostream& os, WcStatus s) { return os << wc_status_name(s); }
namespace ib {
inline std::ostream& operator<<(std::ostream& os, QpState s) { return os << (s == QpState::rts ? "RTS" : "error"); }
}  // namespace ib
}  // namespace rdmaconf::engine

namespace {

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return b;
}

QpConfig config(bool a, QpType t = QpType::rc) {
  QpConfig c;
  c.type = t;
  c.qpn = a ? 0x11 : 0x22;
  c.dest_qpn = a ? 0x22 : 0x11;
  c.sq_psn = a ? 100 : 5000;
  c.rq_psn = a ? 5000 : 100;
  c.pmtu = 1024;
  c.timeout_ms = 20;
  return c;
}

struct Side {
  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> src, dst, recv, atom;
  std::uint32_t src_key, dst_key, recv_key, atom_key;
  QueuePair qp;
  explicit Side(QpConfig c, unsigned seed)
      : src(pattern(100000, seed)), dst(100000), recv(8 * 16384), atom(16),
        src_key(pd.register_mr(src, kRemoteRead | kLocalWrite, 0x100000)),
        dst_key(pd.register_mr(dst, kRemoteWrite | kLocalWrite, 0x200000)),
        recv_key(pd.register_mr(recv, kLocalWrite)),
        atom_key(pd.register_mr(atom, kRemoteAtomic | kLocalWrite, 0x300000)),
        qp(pd, scq, rcq, std::move(c)) {}
  static std::vector<Completion> drain(CompletionQueue& q) {
    std::vector<Completion> v;
    while (auto c = q.poll()) v.push_back(*c);
    return v;
  }
  void post_recvs(unsigned n, std::uint32_t size = 16384) {
    for (unsigned i = 0; i < n; ++i) qp.post_recv({1000 + i, {recv_key, i * size, size}});
  }
};

pib::RoceFlow flow(int dir) {
  pib::RoceFlow f;
  const std::uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, 0, 0, 2};
  std::memcpy(f.src.data(), dir == 0 ? a : b, 4);
  std::memcpy(f.dst.data(), dir == 0 ? b : a, 4);
  f.sport = dir == 0 ? 49152 : 49153;
  return f;
}

// Records what the wire carried, as IPv4/UDP frames, for the checker.
struct Recording {
  std::filesystem::path path;
  std::unique_ptr<cap::PcapWriter> w;
  explicit Recording(const std::string& name)
      : path(std::filesystem::temp_directory_path() / fmt::format("rdmaconf-ib-{}-{}.pcap", name, getpid())),
        w(std::make_unique<cap::PcapWriter>(path.string())) {}
  void operator()(int dir, Bytes pkt) {
    auto h = [](int d, int side) {
      const bool from_a = (d == 0) == (side == 0);
      return cap::host_v4(10, 0, 0, from_a ? 1 : 2, from_a ? (d == 0 ? 49152 : pib::kRoceV2Port)
                                                        : (d == 0 ? pib::kRoceV2Port : 49153));
    };
    const auto from = h(dir, 0), to = h(dir, 1);
    w->ip_packet(from, to, Bytes(cap::ip_udp(from, to, pkt, false)));
  }
  // The checker's verdicts: FAILs, and how many packets had a good ICRC.
  std::vector<std::string> fails(std::uint64_t& icrc_pass) {
    w.reset();
    rdmaconf::conformance::CheckOptions o;
    o.strict = true;
    o.hash = false;
    o.family_options["--roce-mtu"] = {1024};
    const auto r = rdmaconf::conformance::Checker(o).check_file(path.string());
    std::vector<std::string> f;
    if (!r.error.empty()) f.push_back(r.error);
    icrc_pass = 0;
    for (const auto& s : r.scopes)
      for (const auto& c : s.outcomes) {
        if (c.info->id == "roce.icrc") icrc_pass += c.tally.checked() - c.tally.failed();
        if (c.tally.verdict() == rdmaconf::conformance::Verdict::fail) {
          const auto& ev = c.tally.evidence().front();
          f.push_back(fmt::format("{}: expected {}, got {} ({})", c.info->id, ev.expected, ev.actual, ev.detail));
        }
      }
    std::filesystem::remove(path);
    return f;
  }
};

struct Wire {
  // Return false to lose the packet (dir 0: a to b), after the tap saw it.
  std::function<bool(int dir, std::uint64_t n, Bytes pkt)> keep = [](int, std::uint64_t, Bytes) { return true; };
  std::function<void(int dir, Bytes pkt)> tap = [](int, Bytes) {};
  std::uint64_t now = 0, carried[2] = {0, 0};
};

// Moves packets both ways, sealing each ICRC for its flow and checking it on
// arrival; when nothing moves, the clock jumps to the next timer. Stops when
// both sides are idle or after `max_ms` of simulated time.
void shuttle(Side& a, Side& b, Wire& w, std::uint64_t max_ms = 5000) {
  OutPacket p;
  for (int round = 0; round < 1000000; ++round) {
    bool moved = false;
    for (int d = 0; d < 2; ++d) {
      QueuePair& from = d == 0 ? a.qp : b.qp;
      QueuePair& to = d == 0 ? b.qp : a.qp;
      for (int burst = 0; burst < 64 && from.next_output(p); ++burst) {
        moved = true;
        pib::seal_icrc(p.bytes, flow(d));
        if (p.corrupt_icrc) p.bytes.back() ^= std::byte{0x40};
        const Bytes pkt(p.bytes);
        w.tap(d, pkt);
        if (!w.keep(d, w.carried[d]++, pkt)) continue;
        to.receive(pkt, pib::roce_icrc(pkt, flow(d)) == pib::read_icrc(pkt));
      }
    }
    if (moved) continue;
    std::optional<std::uint64_t> next;
    for (QueuePair* q : {&a.qp, &b.qp})
      if (auto t = q->next_timer(w.now)) next = std::min(next.value_or(*t), *t);
    if (!next || w.now > max_ms) return;
    w.now += std::max<std::uint64_t>(*next, 1);
    a.qp.tick(w.now);
    b.qp.tick(w.now);
  }
  BOOST_FAIL("shuttle did not settle");
}

SendWr wr(std::uint64_t id, WrOpcode op, Sge local, std::uint32_t rkey = 0, std::uint64_t va = 0) {
  SendWr s;
  s.wr_id = id;
  s.op = op;
  s.local = local;
  s.remote_stag = rkey;
  s.remote_to = va;
  return s;
}

bool same(const std::vector<std::byte>& x, std::size_t xo, const std::vector<std::byte>& y, std::size_t yo, std::size_t n) {
  return std::memcmp(x.data() + xo, y.data() + yo, n) == 0;
}

void expect_all_success(const std::vector<Completion>& v, std::size_t n) {
  BOOST_TEST(v.size() == n);
  for (const auto& c : v) BOOST_TEST(c.status == WcStatus::success, "wr " << c.wr_id << ": " << wc_status_name(c.status));
}

// Every RC operation from a to b, and Sends back; data checked.
void rc_exercise(Side& a, Side& b, Wire& w) {
  b.post_recvs(6);
  a.post_recvs(2);
  std::uint64_t id = 1;
  a.qp.post_send(wr(id++, WrOpcode::send, {a.src_key, 0, 0}));                  // zero-length SEND Only
  a.qp.post_send(wr(id++, WrOpcode::send, {a.src_key, 10, 100}));               // SEND Only
  a.qp.post_send(wr(id++, WrOpcode::send, {a.src_key, 200, 5000}));             // SEND First/Middle/Last
  auto si = wr(id++, WrOpcode::send_imm, {a.src_key, 300, 2048});
  si.imm = 0xfeedbeef;
  si.solicited = true;
  a.qp.post_send(si);
  auto sinv = wr(id++, WrOpcode::send_invalidate, {a.src_key, 0, 64});
  const std::uint32_t victim = b.pd.register_mr(std::span(b.atom).first(8), kRemoteRead);
  sinv.invalidate_stag = victim;
  a.qp.post_send(sinv);
  a.qp.post_send(wr(id++, WrOpcode::write, {a.src_key, 1000, 20000}, b.dst_key, 0x200000 + 64));
  auto wi = wr(id++, WrOpcode::write_imm, {a.src_key, 7, 1024}, b.dst_key, 0x200000 + 30000);
  wi.imm = 0x1234;
  a.qp.post_send(wi);
  a.qp.post_send(wr(id++, WrOpcode::read, {a.dst_key, 5, 9000}, b.src_key, 0x100000 + 333));
  a.qp.post_send(wr(id++, WrOpcode::read, {a.dst_key, 0, 0}, b.src_key, 0x100000));
  a.qp.post_send(wr(id++, WrOpcode::write, {a.src_key, 0, 0}, b.dst_key, 0x200000));
  std::uint64_t v = 40;
  std::memcpy(b.atom.data() + 8, &v, 8);
  auto fa = wr(id++, WrOpcode::atomic_fetch_add, {a.dst_key, 50000, 8}, b.atom_key, 0x300008);
  fa.add_swap = 2;
  a.qp.post_send(fa);
  auto cs = wr(id++, WrOpcode::atomic_compare_swap, {a.dst_key, 50008, 8}, b.atom_key, 0x300008);
  cs.compare = 42;
  cs.add_swap = 7;
  a.qp.post_send(cs);
  b.qp.post_send(wr(100, WrOpcode::send, {b.src_key, 0, 3000}));
  b.qp.post_send(wr(101, WrOpcode::send, {b.src_key, 50, 10}));
  shuttle(a, b, w);

  const auto sa = Side::drain(a.scq);
  expect_all_success(sa, 12);
  for (std::size_t i = 0; i < sa.size(); ++i) BOOST_TEST(sa[i].wr_id == i + 1);  // in order
  BOOST_TEST(sa[10].atomic_original.value_or(0) == 40u);
  BOOST_TEST(sa[11].atomic_original.value_or(0) == 42u);
  std::uint64_t now = 0, got_fa = 0;
  std::memcpy(&now, b.atom.data() + 8, 8);
  std::memcpy(&got_fa, a.dst.data() + 50000, 8);
  BOOST_TEST(now == 7u);
  BOOST_TEST(got_fa == 40u);
  const auto rb = Side::drain(b.rcq);
  expect_all_success(rb, 6);
  BOOST_REQUIRE(rb.size() == 6);
  BOOST_TEST(rb[0].byte_len == 0u);
  BOOST_TEST(rb[1].byte_len == 100u);
  BOOST_TEST(same(b.recv, 16384, a.src, 10, 100));
  BOOST_TEST(rb[2].byte_len == 5000u);
  BOOST_TEST(same(b.recv, 2 * 16384, a.src, 200, 5000));
  BOOST_TEST((rb[3].op == WcOpcode::recv_immediate && rb[3].imm == 0xfeedbeefu && rb[3].solicited));
  BOOST_TEST(same(b.recv, 3 * 16384, a.src, 300, 2048));
  BOOST_TEST(rb[4].invalidated.value_or(0) == victim);
  BOOST_TEST(!b.pd.find(victim)->valid);
  BOOST_TEST((rb[5].op == WcOpcode::recv_rdma_with_imm && rb[5].imm == 0x1234u && rb[5].byte_len == 1024u));
  BOOST_TEST(same(b.dst, 64, a.src, 1000, 20000));
  BOOST_TEST(same(b.dst, 30000, a.src, 7, 1024));
  BOOST_TEST(same(a.dst, 5, b.src, 333, 9000));
  expect_all_success(Side::drain(b.scq), 2);
  const auto ra = Side::drain(a.rcq);
  expect_all_success(ra, 2);
  BOOST_TEST(same(a.recv, 0, b.src, 0, 3000));
  BOOST_TEST(a.qp.idle());
  BOOST_TEST(b.qp.idle());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ib_engine)

BOOST_AUTO_TEST_CASE(rc_every_operation_and_the_catalog_agrees) {
  Side a(config(true), 1), b(config(false), 2);
  Recording rec("rc");
  Wire w;
  std::uint64_t packets = 0;
  w.tap = [&](int d, Bytes p) {
    rec(d, p);
    ++packets;
  };
  rc_exercise(a, b, w);
  std::uint64_t icrc_pass = 0;
  const auto f = rec.fails(icrc_pass);
  BOOST_TEST(f.empty(), fmt::format("{}", fmt::join(f, "\n")));
  BOOST_TEST(packets > 50u);
  BOOST_TEST(icrc_pass == packets);  // our sealed ICRC is the one the capture's IP headers give
  BOOST_TEST(a.qp.counters().retransmitted == 0u);
}

BOOST_AUTO_TEST_CASE(rc_psn_wraps) {
  auto ca = config(true), cb = config(false);
  ca.sq_psn = cb.rq_psn = 0xfffff0;
  Side a(ca, 1), b(cb, 2);
  Wire w;
  rc_exercise(a, b, w);
  BOOST_TEST(a.qp.next_psn() < 0x100u);
}

BOOST_AUTO_TEST_CASE(rc_recovers_from_loss_both_ways) {
  // Pseudo-random loss (a periodic pattern can line up with go-back-N
  // bursts and lose the same packet every round).
  for (unsigned percent : {5u, 15u, 30u}) {
    Side a(config(true), 1), b(config(false), 2);
    Wire w;
    std::uint64_t x = 0x9e3779b97f4a7c15ull * percent;
    w.keep = [&](int, std::uint64_t, Bytes) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return x % 100 >= percent;
    };
    rc_exercise(a, b, w);
    BOOST_TEST(a.qp.counters().retransmitted + b.qp.counters().retransmitted > 0u);
  }
}

BOOST_AUTO_TEST_CASE(uc_and_ud_deliver_and_drop_silently) {
  {
    Side a(config(true, QpType::uc), 1), b(config(false, QpType::uc), 2);
    Wire w;
    b.post_recvs(3);
    a.qp.post_send(wr(1, WrOpcode::send, {a.src_key, 0, 3000}));
    a.qp.post_send(wr(2, WrOpcode::write, {a.src_key, 100, 5000}, b.dst_key, 0x200000));
    auto wi = wr(3, WrOpcode::write_imm, {a.src_key, 0, 8}, b.dst_key, 0x200000 + 9000);
    wi.imm = 9;
    a.qp.post_send(wi);
    BOOST_TEST(!a.qp.post_send(wr(4, WrOpcode::read, {a.dst_key, 0, 8}, b.src_key, 0x100000)));  // no Read on UC
    shuttle(a, b, w);
    const auto sa = Side::drain(a.scq);
    BOOST_REQUIRE(sa.size() == 4u);
    BOOST_TEST(sa[0].status == WcStatus::local_protection_error);  // the refused Read
    BOOST_TEST(b.qp.counters().acks_sent == 0u);
    BOOST_TEST(same(b.recv, 0, a.src, 0, 3000));
    BOOST_TEST(same(b.dst, 0, a.src, 100, 5000));
    expect_all_success(Side::drain(b.rcq), 2);
    // A lost Middle loses that message only; the next one arrives.
    w.carried[0] = 0;
    w.keep = [](int d, std::uint64_t n, Bytes) { return d != 0 || n != 1; };
    a.qp.post_send(wr(5, WrOpcode::send, {a.src_key, 0, 3000}));
    a.qp.post_send(wr(6, WrOpcode::send, {a.src_key, 7, 100}));
    b.post_recvs(2);
    shuttle(a, b, w);
    const auto rb = Side::drain(b.rcq);
    BOOST_REQUIRE(rb.size() == 1u);
    BOOST_TEST(rb[0].byte_len == 100u);
    BOOST_TEST(b.qp.counters().dropped_uc_ud >= 1u);
  }
  {
    Side a(config(true, QpType::ud), 1), b(config(false, QpType::ud), 2);
    Wire w;
    b.post_recvs(3);
    auto s = wr(1, WrOpcode::send_imm, {a.src_key, 0, 1024});
    s.remote_qpn = 0x22;
    s.remote_qkey = b.qp.config().qkey;
    s.imm = 77;
    a.qp.post_send(s);
    auto bad = s;
    bad.wr_id = 2;
    bad.remote_qkey = 0x1234;  // wrong Q_Key: dropped silently
    a.qp.post_send(bad);
    auto big = s;
    big.wr_id = 3;
    big.local.length = 2000;  // larger than the path MTU: refused locally
    a.qp.post_send(big);
    shuttle(a, b, w);
    const auto sa = Side::drain(a.scq);
    BOOST_REQUIRE(sa.size() == 3u);
    BOOST_TEST(sa[2].status == WcStatus::local_length_error);
    const auto rb = Side::drain(b.rcq);
    BOOST_REQUIRE(rb.size() == 1u);
    BOOST_TEST((rb[0].src_qp == 0x11u && rb[0].imm == 77u && rb[0].byte_len == 1024u));
    BOOST_TEST(same(b.recv, 0, a.src, 0, 1024));
    BOOST_REQUIRE(!b.qp.refusals().empty());
    BOOST_TEST(b.qp.refusals().back().why.find("Q_Key") != std::string::npos);
  }
}

// Each fault from one instance, and the reaction of the other.
BOOST_AUTO_TEST_CASE(psn_gap_gets_one_sequence_nak_then_the_resend) {
  Side a(config(true), 1), b(config(false), 2);
  a.qp.faults().skip_packet = 2;
  Wire w;
  Recording rec("gap");
  std::vector<std::pair<std::uint32_t, std::uint32_t>> naks;  // syndrome, PSN
  w.tap = [&](int d, Bytes p) {
    rec(d, p);
    if (d == 1 && p[0] == std::byte{0x11} && (std::to_integer<unsigned>(p[12]) >> 5 & 3) == 3)
      naks.emplace_back(std::to_integer<unsigned>(p[12]), rdmaconf::protocols::be32(p, 8) & 0xffffff);
  };
  b.post_recvs(1);
  a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 8192}, b.dst_key, 0x200000));
  a.qp.post_send(wr(2, WrOpcode::send, {a.src_key, 0, 10}));
  shuttle(a, b, w);
  BOOST_REQUIRE(naks.size() == 1u);
  BOOST_TEST(naks[0].first == 0x60u);   // NAK, PSN sequence error
  BOOST_TEST(naks[0].second == 101u);   // the skipped PSN, expected
  BOOST_TEST(b.qp.counters().naks_sent == 1u);
  expect_all_success(Side::drain(a.scq), 2);
  BOOST_TEST(same(b.dst, 0, a.src, 0, 8192));
  // The resent WRITE is legal traffic: the catalog may not FAIL it (the
  // skipped PSN was resent, so no case finds a fault on this wire).
  std::uint64_t icrc_pass = 0;
  const auto f = rec.fails(icrc_pass);
  BOOST_TEST(f.empty(), fmt::format("{}", fmt::join(f, "\n")));
}

BOOST_AUTO_TEST_CASE(corrupt_icrc_is_dropped_silently) {
  Side a(config(true), 1), b(config(false), 2);
  a.qp.faults().corrupt_icrc = 1;
  Wire w;
  a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 100}, b.dst_key, 0x200000));
  shuttle(a, b, w);
  BOOST_TEST(b.qp.counters().dropped_icrc == 1u);
  BOOST_TEST(b.qp.counters().naks_sent == 0u);  // no NAK for a packet it never accepted
  BOOST_TEST(a.qp.counters().timeouts >= 1u);   // recovered by the requester's timer
  expect_all_success(Side::drain(a.scq), 1);
  BOOST_TEST(same(b.dst, 0, a.src, 0, 100));
}

BOOST_AUTO_TEST_CASE(bad_rkey_oversize_and_wrong_pad_get_their_naks) {
  struct Case {
    std::string name;
    std::function<void(Side&, Side&)> post;
    WcStatus status;
    std::string refusal;
  };
  const std::vector<Case> cases = {
      {"bad R_Key",
       [](Side& a, Side& b) { a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 64}, b.dst_key ^ 0x100, 0x200000)); },
       WcStatus::remote_access_error, "NAK Remote Access Error"},
      {"outside the region",
       [](Side& a, Side& b) { a.qp.post_send(wr(1, WrOpcode::read, {a.dst_key, 0, 64}, b.src_key, 0x100000 + 99990)); },
       WcStatus::remote_access_error, "NAK Remote Access Error"},
      {"no remote write permission",
       [](Side& a, Side& b) { a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 64}, b.src_key, 0x100000)); },
       WcStatus::remote_access_error, "NAK Remote Access Error"},
      {"oversize payload",
       [](Side& a, Side& b) {
         a.qp.faults().oversize_packet = 1;
         a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 1024}, b.dst_key, 0x200000));
       },
       WcStatus::remote_invalid_request, "NAK Invalid Request"},
      {"wrong pad",
       [](Side& a, Side& b) {
         a.qp.faults().wrong_pad = 1;
         a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 30}, b.dst_key, 0x200000));
       },
       WcStatus::remote_invalid_request, "NAK Invalid Request"},
      {"misaligned atomic",
       [](Side& a, Side& b) { a.qp.post_send(wr(1, WrOpcode::atomic_fetch_add, {a.dst_key, 0, 8}, b.atom_key, 0x300004)); },
       WcStatus::remote_invalid_request, "NAK Invalid Request"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      Side a(config(true), 1), b(config(false), 2);
      Wire w;
      c.post(a, b);
      a.qp.post_send(wr(2, WrOpcode::send, {a.src_key, 0, 8}));  // behind it: flushed
      shuttle(a, b, w);
      const auto sa = Side::drain(a.scq);
      BOOST_REQUIRE(sa.size() == 2u);
      BOOST_TEST(sa[0].status == c.status, wc_status_name(sa[0].status));
      BOOST_TEST(sa[1].status == WcStatus::flushed);
      BOOST_TEST(a.qp.state() == QpState::error);
      BOOST_TEST(b.qp.state() == QpState::error);  // the responder's fatal NAK puts it in error too
      BOOST_REQUIRE(!b.qp.refusals().empty());
      BOOST_TEST(b.qp.refusals().back().what == c.refusal);
    }
  }
}

BOOST_AUTO_TEST_CASE(rnr_nak_then_retry_succeeds) {
  Side a(config(true), 1), b(config(false), 2);
  Wire w;
  int posted_late = 0;
  w.tap = [&](int d, Bytes p) {
    if (d == 1 && (std::to_integer<unsigned>(p[12]) >> 5 & 3) == 1 && posted_late++ == 2) b.post_recvs(1);
  };
  a.qp.post_send(wr(1, WrOpcode::send, {a.src_key, 0, 2000}));
  shuttle(a, b, w);
  BOOST_TEST(b.qp.counters().rnr_naks_sent == 3u);
  BOOST_TEST(a.qp.counters().rnr_naks_received == 3u);
  expect_all_success(Side::drain(a.scq), 1);
  BOOST_TEST(same(b.recv, 0, a.src, 0, 2000));
}

BOOST_AUTO_TEST_CASE(duplicate_read_is_served_again_and_duplicate_atomic_is_not_run_twice) {
  Side a(config(true), 1), b(config(false), 2);
  Recording rec("dup");
  Wire w;
  w.tap = [&](int d, Bytes p) { rec(d, p); };
  // Lose the first Read Response and the first ATOMIC Acknowledge.
  bool lost_read = false, lost_atomic = false;
  w.keep = [&](int d, std::uint64_t, Bytes p) {
    if (d != 1) return true;
    if (p[0] == std::byte{0x10} && !lost_read) return !(lost_read = true);
    if (p[0] == std::byte{0x12} && !lost_atomic) return !(lost_atomic = true);
    return true;
  };
  a.qp.post_send(wr(1, WrOpcode::read, {a.dst_key, 0, 500}, b.src_key, 0x100000));
  auto fa = wr(2, WrOpcode::atomic_fetch_add, {a.dst_key, 1000, 8}, b.atom_key, 0x300000);
  fa.add_swap = 5;
  a.qp.post_send(fa);
  shuttle(a, b, w);
  const auto sa = Side::drain(a.scq);
  expect_all_success(sa, 2);
  BOOST_TEST(same(a.dst, 0, b.src, 0, 500));
  std::uint64_t v = 0;
  std::memcpy(&v, b.atom.data(), 8);
  BOOST_TEST(v == 5u);  // executed once
  BOOST_TEST(b.qp.counters().duplicates >= 2u);
  BOOST_REQUIRE(sa.size() == 2u);
  BOOST_TEST(sa[1].atomic_original.value_or(99) == 0u);
  // The replies to the duplicates carry the MSN as it is now, never an older
  // one (ib.aeth.msn): the lost packets are in the recording too.
  std::uint64_t icrc_pass = 0;
  const auto f = rec.fails(icrc_pass);
  BOOST_TEST(f.empty(), fmt::format("{}", fmt::join(f, "\n")));
}

BOOST_AUTO_TEST_CASE(silence_ends_in_retry_exceeded) {
  auto ca = config(true);
  ca.retry_cnt = 2;
  Side a(ca, 1), b(config(false), 2);
  Wire w;
  w.keep = [](int, std::uint64_t, Bytes) { return false; };
  a.qp.post_send(wr(1, WrOpcode::write, {a.src_key, 0, 64}, b.dst_key, 0x200000));
  shuttle(a, b, w);
  const auto sa = Side::drain(a.scq);
  BOOST_REQUIRE(sa.size() == 1u);
  BOOST_TEST(sa[0].status == WcStatus::retry_exceeded);
  BOOST_TEST(a.qp.counters().timeouts == 3u);
}

BOOST_AUTO_TEST_CASE(headers_that_are_not_ours_are_dropped) {
  Side a(config(true), 1), b(config(false), 2);
  auto wrong = config(true);
  wrong.dest_qpn = 0x33;  // not b's QP
  Side c(wrong, 3);
  Wire w;
  c.qp.post_send(wr(1, WrOpcode::write, {c.src_key, 0, 64}, b.dst_key, 0x200000));
  OutPacket p;
  while (c.qp.next_output(p)) b.qp.receive(p.bytes);
  BOOST_TEST(b.qp.counters().dropped_header == 1u);
  // Truncated and garbage packets never get further than the header checks.
  for (std::size_t n = 0; n < 40; ++n) b.qp.receive(std::vector<std::byte>(n, std::byte{0x0a}));
  BOOST_TEST(b.qp.counters().dropped_header == 41u);
  BOOST_TEST(b.qp.state() == QpState::rts);
  (void)a;
}

BOOST_AUTO_TEST_SUITE_END()

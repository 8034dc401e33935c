// The iWARP engine against itself, in memory: every MPA configuration with
// data verified end to end and the recorded traffic judged by the checker;
// the receive path fed one stream split at every octet; every fault with the
// Terminate (or close) a conforming peer must answer with.
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "captures/io/pcap_writer.hpp"
#include "conformance/checker.hpp"
#include "captures/gen/iwarp/traffic.hpp"
#include "engines/iwarp/device.hpp"
#include "engines/iwarp/qp.hpp"

using namespace rdmaconf::engine::iwarp;
using rdmaconf::protocols::Bytes;
namespace cap = rdmaconf::captures::io;

namespace {

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return b;
}

struct Side {
  ProtectionDomain pd{7};  // the same STags in every Side: a recorded stream replays into a fresh one
  CompletionQueue scq, rcq;
  std::vector<std::byte> src, dst, recv, atom;
  std::uint32_t src_stag, dst_stag, recv_stag, atom_stag;
  QueuePair qp;
  explicit Side(QpConfig c)
      : src(pattern(100000, c.initiator ? 1 : 2)), dst(100000), recv(6 * 24576), atom(16),
        src_stag(pd.register_mr(src, kRemoteRead | kLocalWrite)),
        dst_stag(pd.register_mr(dst, kRemoteWrite | kLocalWrite, 0x10000)),
        recv_stag(pd.register_mr(recv, kLocalWrite)),
        atom_stag(pd.register_mr(atom, kRemoteAtomic | kLocalWrite)),
        qp(pd, scq, rcq, std::move(c)) {}
  std::vector<Completion> drain(CompletionQueue& q) {
    std::vector<Completion> v;
    while (auto c = q.poll()) v.push_back(*c);
    return v;
  }
};

// Moves octets both ways until neither side has anything to send. `cut`
// bounds each delivery (0: whatever is there); `tap` sees every delivery.
template <class Tap>
void shuttle(Side& a, Side& b, std::size_t cut, Tap tap) {
  for (int round = 0; round < 100000; ++round) {
    bool moved = false;
    for (int d = 0; d < 2; ++d) {
      QueuePair& from = d == 0 ? a.qp : b.qp;
      QueuePair& to = d == 0 ? b.qp : a.qp;
      if (from.output().empty()) continue;
      const std::vector<std::byte> chunk = from.output().copy_out(cut ? cut : SIZE_MAX);
      from.consume(chunk.size());
      tap(d, Bytes(chunk));
      to.receive(Bytes(chunk));
      moved = true;
    }
    if (!moved) return;
  }
  BOOST_FAIL("shuttle did not settle");
}
void shuttle(Side& a, Side& b, std::size_t cut = 0) { shuttle(a, b, cut, [](int, Bytes) {}); }

// Records both directions as a TCP conversation and runs the checker on it.
struct Recording {
  std::filesystem::path path;
  std::unique_ptr<cap::PcapWriter> w;
  std::unique_ptr<cap::TcpConversation> conv;
  explicit Recording(const std::string& name)
      : path(std::filesystem::temp_directory_path() / fmt::format("rdmaconf-engine-{}-{}.pcap", name, getpid())),
        w(std::make_unique<cap::PcapWriter>(path.string())),
        conv(std::make_unique<cap::TcpConversation>(*w, cap::host_v4(10, 0, 0, 1, 40000), cap::host_v4(10, 0, 0, 2, 4791))) {
    conv->handshake(0);  // the harness's chunks are not a sender's segments: no MSS to judge them by
  }
  void operator()(int dir, Bytes b) { conv->send(dir, b, 8960); }
  // FAIL verdicts the checker finds (strict: SHOULD cases too).
  std::vector<std::string> fails() {
    conv->close();
    conv.reset();
    w.reset();
    rdmaconf::conformance::CheckOptions o;
    o.strict = true;
    o.hash = false;
    const auto r = rdmaconf::conformance::Checker(o).check_file(path.string());
    std::vector<std::string> f;
    if (!r.error.empty()) f.push_back(r.error);
    // Not vacuous: the checker must have decoded this one MPA connection.
    const auto params = r.scopes.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.scopes[0].params);
    if (r.scopes.size() != 1 || params.value("fpdus_from_initiator", 0) < 10 || params.value("fpdus_from_responder", 0) < 3)
      f.push_back(fmt::format("expected one decoded iWARP connection, got {} scopes", r.scopes.size()));
    for (const auto& s : r.scopes)
      for (const auto& c : s.outcomes)
        if (c.tally.verdict() == rdmaconf::conformance::Verdict::fail) {
          const auto& ev = c.tally.evidence().front();
          f.push_back(fmt::format("{}: expected {}, got {} ({})", c.info->id, ev.expected, ev.actual, ev.detail));
        }
    std::filesystem::remove(path);
    return f;
  }
};

QpConfig config(bool initiator, std::uint8_t rev, bool crc, bool markers, Rtr p2p) {
  QpConfig c;
  c.initiator = initiator;
  c.revision = rev;
  c.enhanced = rev == 2;
  c.crc = crc;
  c.markers = markers;
  c.p2p = p2p != Rtr::none;
  c.rtr = p2p == Rtr::none ? Rtr::send : p2p;
  c.mulpdu = 4096;
  return c;
}

// The full exchange: Sends of 0, 100 and 20000 octets (multi-segment), an
// RDMA Write, an RDMA Read, Immediate Data, both atomics, a Send with
// Invalidate, and traffic back from the responder; checked end to end.
void exercise(Side& a, Side& b, std::size_t cut, Recording* rec) {
  auto tap = [&](int d, Bytes x) { if (rec) (*rec)(d, x); };
  a.qp.connect();
  b.qp.connect();
  for (std::uint64_t i = 0; i < 6; ++i) {
    a.qp.post_recv({100 + i, {a.recv_stag, i * 8192, 8192}});
    b.qp.post_recv({200 + i, {b.recv_stag, i * 24576, i == 2 ? 24576u : 8192u}});
  }
  shuttle(a, b, cut, tap);
  BOOST_REQUIRE_MESSAGE(a.qp.state() == QpState::connected, a.qp.error());
  const std::uint32_t inv = b.pd.register_mr(std::span(b.dst).first(16), kRemoteWrite);
  a.qp.post_send({1, WrOpcode::send, {a.src_stag, 0, 0}});
  a.qp.post_send({2, WrOpcode::send, {a.src_stag, 0, 100}, true});
  a.qp.post_send({3, WrOpcode::send, {a.src_stag, 1000, 20000}});
  SendWr w{4, WrOpcode::write, {a.src_stag, 5000, 50000}};
  w.remote_stag = b.dst_stag;
  w.remote_to = 0x10000 + 7;
  a.qp.post_send(w);
  SendWr r{5, WrOpcode::read, {a.dst_stag, 3, 30000}};
  r.remote_stag = b.src_stag;
  r.remote_to = 40000;
  a.qp.post_send(r);
  SendWr im{6, WrOpcode::immediate, {}};
  im.imm = 0x0102030405060708ull;
  a.qp.post_send(im);
  std::uint64_t start = 40;
  std::memcpy(b.atom.data(), &start, 8);
  SendWr fa{7, WrOpcode::atomic_fetch_add, {a.atom_stag, 0, 8}};
  fa.remote_stag = b.atom_stag;
  fa.add_swap = 2;
  a.qp.post_send(fa);
  SendWr cs{8, WrOpcode::atomic_compare_swap, {a.atom_stag, 8, 8}};
  cs.remote_stag = b.atom_stag;
  cs.compare = 42;
  cs.add_swap = 7;
  a.qp.post_send(cs);
  SendWr si{9, WrOpcode::send_invalidate, {a.src_stag, 0, 10}};
  si.invalidate_stag = inv;
  a.qp.post_send(si);
  b.qp.post_send({20, WrOpcode::send, {b.src_stag, 0, 3000}});
  shuttle(a, b, cut, tap);
  BOOST_REQUIRE_MESSAGE(a.qp.state() == QpState::connected, a.qp.error());
  BOOST_REQUIRE_MESSAGE(b.qp.state() == QpState::connected, b.qp.error());

  const auto as = a.drain(a.scq), br = b.drain(b.rcq), bs = b.drain(b.scq), ar = a.drain(a.rcq);
  BOOST_REQUIRE_EQUAL(as.size(), 9u);
  for (const auto& c : as) BOOST_TEST((c.status == WcStatus::success), c.wr_id);
  BOOST_REQUIRE_EQUAL(br.size(), 5u);  // 3 Sends, Immediate, Send with Invalidate
  BOOST_TEST(br[0].byte_len == 0u);
  BOOST_TEST(br[1].byte_len == 100u);
  BOOST_TEST(br[1].solicited);
  BOOST_TEST(br[2].byte_len == 20000u);
  BOOST_TEST(std::equal(a.src.begin() + 1000, a.src.begin() + 21000, b.recv.begin() + 2 * 24576));
  BOOST_TEST((br[3].op == WcOpcode::recv_immediate));
  BOOST_TEST(br[3].imm.value_or(0) == 0x0102030405060708ull);
  BOOST_TEST(br[4].invalidated.value_or(0) == inv);
  BOOST_TEST(!b.pd.find(inv)->valid);
  BOOST_TEST(std::equal(a.src.begin() + 5000, a.src.begin() + 55000, b.dst.begin() + 7));
  BOOST_TEST(std::equal(b.src.begin() + 40000, b.src.begin() + 70000, a.dst.begin() + 3));
  std::uint64_t v, o1, o2;
  std::memcpy(&v, b.atom.data(), 8);
  std::memcpy(&o1, a.atom.data(), 8);
  std::memcpy(&o2, a.atom.data() + 8, 8);
  BOOST_TEST(o1 == 40u);  // fetch-add saw 40, left 42
  BOOST_TEST(o2 == 42u);  // compare-and-swap matched 42, left 7
  BOOST_TEST(v == 7u);
  BOOST_REQUIRE_EQUAL(bs.size(), 1u);
  BOOST_REQUIRE_EQUAL(ar.size(), 1u);
  BOOST_TEST(ar[0].byte_len == 3000u);
  BOOST_TEST(std::equal(b.src.begin(), b.src.begin() + 3000, a.recv.begin()));
}

// Big-endian octets, and a direction's untagged ULPDUs read with the RFCs'
// offsets: the MPA frame (20 octets and its private data), then FPDUs of
// ULPDU length, ULPDU, pad to 4 and the CRC field (present with or without CRCs).
std::uint64_t be(const std::byte* p, int n) {
  std::uint64_t x = 0;
  for (int i = 0; i < n; ++i) x = x << 8 | static_cast<std::uint8_t>(p[i]);
  return x;
}
std::vector<std::vector<std::byte>> untagged(const std::vector<std::byte>& w) {
  std::vector<std::vector<std::byte>> out;
  std::size_t at = 20 + be(w.data() + 18, 2);
  while (at + 2 <= w.size()) {
    const std::size_t len = be(w.data() + at, 2);
    const std::byte* u = w.data() + at + 2;
    if ((static_cast<std::uint8_t>(u[0]) & 0x80) == 0) out.emplace_back(u, u + len);  // T = 0
    at += (2 + len + 3) / 4 * 4 + 4;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(iwarp_engine)

BOOST_AUTO_TEST_CASE(every_configuration_end_to_end_and_checked) {
  int runs = 0;
  for (std::uint8_t rev : {std::uint8_t{1}, std::uint8_t{2}})
    for (bool crc : {false, true})
      for (int mk = 0; mk < 4; ++mk)
        for (Rtr p2p : {Rtr::none, Rtr::send, Rtr::write, Rtr::read}) {
          if (rev == 1 && p2p != Rtr::none) continue;
          const std::string name = fmt::format("rev{}-crc{}-markers{}-rtr{}", rev, crc, mk, static_cast<int>(p2p));
          BOOST_TEST_CONTEXT(name) {
            // The responder asks for CRC only in some runs, so "either side asked" is exercised.
            Side a(config(true, rev, crc && mk % 2 == 0, mk & 1, p2p));
            Side b(config(false, rev, crc, mk & 2, Rtr::none));
            Recording rec(name);
            exercise(a, b, runs % 3 == 0 ? 0 : 997, &rec);
            BOOST_TEST(a.qp.crc_in_use() == crc);
            BOOST_TEST(a.qp.markers_to_peer() == bool(mk & 2));
            BOOST_TEST(b.qp.markers_to_peer() == bool(mk & 1));
            const auto fails = rec.fails();
            BOOST_TEST(fails.empty(), fmt::format("{}", fmt::join(fails, "; ")));
            ++runs;
          }
        }
  BOOST_TEST(runs == 2 * 4 + 2 * 4 * 4);
}

// Our engine against atomics built by the golden-capture generator, which
// spells RFC 7306's queues and codes itself (captures/gen/iwarp/traffic.hpp): as
// responder it applies a FetchAdd and a masked CmpSwap and answers on queue
// 3 in order; as requester it completes from Atomic Responses built there.
BOOST_AUTO_TEST_CASE(atomics_interoperate_with_independently_built_messages) {
  namespace gen = rdmaconf::captures::gen;
  namespace pi = rdmaconf::protocols::iwarp;
  auto frame = [](const std::vector<gen::Buf>& ulpdus) {
    std::vector<std::byte> out;
    for (const auto& u : ulpdus) pi::encode_fpdu(out, gen::B(u), false);
    return out;
  };
  auto frames = [](const QueuePair& q) {
    const std::vector<std::byte> w = q.output().copy_out(SIZE_MAX);
    return w;
  };
  pi::MpaRrParams mpa;
  mpa.revision = 2;
  mpa.enhanced = true;
  mpa.ird = mpa.ord = 4;
  {
    Side b(config(false, 2, false, false, Rtr::none));
    b.qp.connect();
    std::vector<std::byte> in;
    pi::encode_mpa_rr(in, mpa);
    const std::uint64_t first = 41, second = 0x1229;
    std::memcpy(b.atom.data(), &first, 8);
    std::memcpy(b.atom.data() + 8, &second, 8);
    // FetchAdd of 5 (Add Mask 0: one 64-bit addition); CmpSwap of the low octet against 0x29, swapping the second octet to 0x77.
    std::vector<gen::Buf> reqs = {gen::atomic_request(1, 0x0, 7, 0, 5, 0, 0, ~0ull),
                                  gen::atomic_request(2, 0x2, 8, 8, 0x7700, 0xff00, 0x29, 0xff)};
    for (auto& r : reqs) gen::set_body(r, pi::kAtomicRequest, pi::AtomicRequest::stag, b.atom_stag);
    b.qp.receive(Bytes(in));  // the Request; the FPDUs once the Reply is out
    const std::vector<std::byte> reply = frames(b.qp);
    b.qp.consume(reply.size());
    b.qp.receive(Bytes(frame(reqs)));
    BOOST_REQUIRE_MESSAGE(b.qp.state() == QpState::connected, b.qp.error());
    std::uint64_t v1, v2;
    std::memcpy(&v1, b.atom.data(), 8);
    std::memcpy(&v2, b.atom.data() + 8, 8);
    BOOST_TEST(v1 == 46u);
    BOOST_TEST(v2 == 0x7729u);
    std::vector<std::tuple<unsigned, unsigned, unsigned, std::uint64_t>> got;  // queue, MSN, id, original
    std::vector<std::byte> w = reply;
    const auto answers = frames(b.qp);
    w.insert(w.end(), answers.begin(), answers.end());
    for (const auto& u : untagged(w))
      if ((static_cast<std::uint8_t>(u[1]) & 0xF) == 0xB)
        got.emplace_back(be(u.data() + 6, 4), be(u.data() + 10, 4), be(u.data() + 18, 4), be(u.data() + 22, 8));
    const std::vector<std::tuple<unsigned, unsigned, unsigned, std::uint64_t>> want = {{3, 1, 7, 41}, {3, 2, 8, 0x1229}};
    BOOST_TEST((got == want));
  }
  {
    Side a(config(true, 2, false, false, Rtr::none));
    a.qp.connect();
    a.qp.consume(a.qp.output().size());  // the Request
    pi::MpaRrParams rep = mpa;
    rep.kind = pi::MpaFrameKind::reply;
    std::vector<std::byte> in;
    pi::encode_mpa_rr(in, rep);
    a.qp.receive(Bytes(in));
    BOOST_REQUIRE_MESSAGE(a.qp.state() == QpState::connected, a.qp.error());
    SendWr fa{1, WrOpcode::atomic_fetch_add, {a.atom_stag, 0, 8}};
    fa.remote_stag = 0x77;
    fa.add_swap = 2;
    a.qp.post_send(fa);
    SendWr cs{2, WrOpcode::atomic_compare_swap, {a.atom_stag, 8, 8}};
    cs.remote_stag = 0x77;
    cs.compare = 42;
    cs.add_swap = 7;
    a.qp.post_send(cs);
    // The requests' identifiers, read from the wire (the MPA frame is gone: prefix a frame with no private data).
    std::vector<std::byte> w(20, std::byte{0});
    const auto out = a.qp.output().copy_out(SIZE_MAX);
    w.insert(w.end(), out.begin(), out.end());
    std::vector<std::uint32_t> ids;
    for (const auto& u : untagged(w))
      if ((static_cast<std::uint8_t>(u[1]) & 0xF) == 0xA) ids.push_back(static_cast<std::uint32_t>(be(u.data() + 22, 4)));
    BOOST_REQUIRE_EQUAL(ids.size(), 2u);
    a.qp.consume(out.size());
    const auto f = frame({gen::atomic_response(1, ids[0], 40), gen::atomic_response(2, ids[1], 42)});
    a.qp.receive(Bytes(f));
    BOOST_REQUIRE_MESSAGE(a.qp.state() == QpState::connected, a.qp.error());
    const auto done = a.drain(a.scq);
    BOOST_REQUIRE_EQUAL(done.size(), 2u);
    for (const auto& c : done) BOOST_TEST((c.status == WcStatus::success), c.wr_id);
    BOOST_TEST(done[0].atomic_original.value_or(0) == 40u);
    BOOST_TEST(done[1].atomic_original.value_or(0) == 42u);
    std::uint64_t o1, o2;
    std::memcpy(&o1, a.atom.data(), 8);
    std::memcpy(&o2, a.atom.data() + 8, 8);
    BOOST_TEST(o1 == 40u);
    BOOST_TEST(o2 == 42u);
  }
}

// The atomics on the wire, read octet by octet with the RFCs' offsets rather
// than our header tables: the Atomic Requests on queue 1 after the Read
// Request's MSN, FetchAdd as operation code 0 with Add Mask 0, Compare Data
// 0 and Compare Mask all ones, CmpSwap as code 2 (RFC 7306 §5.2, §5.2.1);
// the Atomic Responses on queue 3 (§5.2.2), in request order.
BOOST_AUTO_TEST_CASE(atomics_travel_as_rfc_7306_lays_them_out) {
  Side a(config(true, 2, true, false, Rtr::none)), b(config(false, 2, false, false, Rtr::none));
  std::vector<std::byte> wire[2];
  auto tap = [&](int d, Bytes x) { wire[d].insert(wire[d].end(), x.begin(), x.end()); };
  a.qp.connect();
  b.qp.connect();
  shuttle(a, b, 0, tap);
  std::uint64_t start = 0x00000001ffffffffull;
  std::memcpy(b.atom.data(), &start, 8);
  SendWr r{1, WrOpcode::read, {a.dst_stag, 0, 16}};
  r.remote_stag = b.src_stag;
  a.qp.post_send(r);
  SendWr fa{2, WrOpcode::atomic_fetch_add, {a.atom_stag, 0, 8}};
  fa.remote_stag = b.atom_stag;
  fa.add_swap = 1;
  a.qp.post_send(fa);
  SendWr cs{3, WrOpcode::atomic_compare_swap, {a.atom_stag, 8, 8}};
  cs.remote_stag = b.atom_stag;
  cs.compare = 0x0000000200000000ull;
  cs.add_swap = 5;
  a.qp.post_send(cs);
  shuttle(a, b, 0, tap);
  BOOST_REQUIRE_MESSAGE(a.qp.state() == QpState::connected, a.qp.error());
  // One 64-bit addition: the carry crosses bit 31.
  std::uint64_t v;
  std::memcpy(&v, b.atom.data(), 8);
  BOOST_TEST(v == 5u);  // FetchAdd made 0x200000000, CmpSwap matched it and wrote 5

  std::vector<std::pair<unsigned, unsigned>> requests, responses;  // (queue, MSN)
  std::vector<unsigned> codes;
  for (const auto& u : untagged(wire[0])) {
    const unsigned op = static_cast<std::uint8_t>(u[1]) & 0xF;
    if (op == 0x1 || op == 0xA) requests.emplace_back(be(u.data() + 6, 4), be(u.data() + 10, 4));
    if (op != 0xA) continue;
    BOOST_REQUIRE_EQUAL(u.size(), 18u + 52u);
    const std::byte* h = u.data() + 18;
    codes.push_back(static_cast<std::uint8_t>(h[3]) & 0xF);
    BOOST_TEST((be(h, 4) >> 4) == 0u);  // reserved
    if (codes.back() == 0) {
      BOOST_TEST(be(h + 28, 8) == 0u);           // Add Mask 0: one 64-bit addition
      BOOST_TEST(be(h + 36, 8) == 0u);           // Compare Data
      BOOST_TEST(be(h + 44, 8) == ~0ull);        // Compare Mask
    }
  }
  for (const auto& u : untagged(wire[1]))
    if ((static_cast<std::uint8_t>(u[1]) & 0xF) == 0xB) {
      responses.emplace_back(be(u.data() + 6, 4), be(u.data() + 10, 4));
      BOOST_TEST(u.size() == 18u + 12u);
    }
  const std::vector<std::pair<unsigned, unsigned>> want_req = {{1, 1}, {1, 2}, {1, 3}}, want_resp = {{3, 1}, {3, 2}};
  BOOST_TEST((requests == want_req));
  BOOST_TEST((responses == want_resp));
  BOOST_TEST((codes == std::vector<unsigned>{0, 2}));
}

// RFC 7306 §5.1.1: a set bit of the Add Mask ends a field, whose carry is
// dropped; with Add Mask 0 the addition is one 64-bit sum.
BOOST_AUTO_TEST_CASE(masked_fetch_add_keeps_carries_inside_fields) {
  BOOST_TEST(rdmaconf::engine::masked_add(0x00000001ffffffffull, 1, 0) == 0x0000000200000000ull);
  // Two 32-bit fields (their top bits set in the mask): the low one wraps alone.
  BOOST_TEST(rdmaconf::engine::masked_add(0x00000001ffffffffull, 1, 0x8000000080000000ull) == 0x0000000100000000ull);
  BOOST_TEST(rdmaconf::engine::masked_add(0x00000001ffffffffull, 0x0000000100000001ull, 0x8000000080000000ull) == 0x0000000200000000ull);
  // Eight 8-bit fields: each octet adds on its own.
  BOOST_TEST(rdmaconf::engine::masked_add(0x01ff02fe03fd04fcull, 0x0101010101010101ull, 0x8080808080808080ull) == 0x020003ff04fe05fdull);
  // Every bit a field: no carry anywhere, the sum is the exclusive or.
  BOOST_TEST(rdmaconf::engine::masked_add(0xf0f0f0f0f0f0f0f0ull, 0xffffffff00000000ull, ~0ull) == 0x0f0f0f0ff0f0f0f0ull);
}

// One initiator stream (markers and CRC) replayed into fresh responders,
// split in two at every octet: the same completions and data every time.
BOOST_AUTO_TEST_CASE(receive_path_split_at_every_octet) {
  std::vector<std::byte> stream;
  std::size_t request_len = 0;
  {
    Side a(config(true, 2, true, false, Rtr::none)), b(config(false, 2, true, true, Rtr::none));
    for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
    a.qp.connect();
    request_len = a.qp.output().size();
    shuttle(a, b, 0, [&](int d, Bytes x) { if (d == 0) stream.insert(stream.end(), x.begin(), x.end()); });
    a.qp.post_send({1, WrOpcode::send, {a.src_stag, 0, 700}});
    SendWr w{2, WrOpcode::write, {a.src_stag, 100, 1500}};
    w.remote_stag = b.dst_stag;
    w.remote_to = 0x10000;
    a.qp.post_send(w);
    a.qp.post_send({3, WrOpcode::send, {a.src_stag, 0, 5000}});
    shuttle(a, b, 0, [&](int d, Bytes x) { if (d == 0) stream.insert(stream.end(), x.begin(), x.end()); });
    BOOST_REQUIRE(b.qp.markers_from_peer());
    BOOST_REQUIRE_EQUAL(b.drain(b.rcq).size(), 2u);
  }
  const Bytes s(stream);
  for (std::size_t k = 1; k < s.size(); ++k) {
    Side b(config(false, 2, true, true, Rtr::none));
    for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
    b.qp.connect();
    if (k < request_len) {
      b.qp.receive(s.first(k));
      b.qp.receive(s.subspan(k, request_len - k));
      b.qp.receive(s.subspan(request_len));
    } else {
      b.qp.receive(s.first(request_len));
      b.qp.receive(s.subspan(request_len, k - request_len));
      b.qp.receive(s.subspan(k));
    }
    const auto rc = b.drain(b.rcq);
    BOOST_REQUIRE_MESSAGE(rc.size() == 2u && b.qp.state() == QpState::connected,
                          "split at " << k << ": " << b.qp.error());
    BOOST_REQUIRE(rc[0].byte_len == 700u && rc[1].byte_len == 5000u);
    // The sender's buffer is pattern(…, 1): both Sends came from its start.
    const auto sent = pattern(5000, 1);
    BOOST_REQUIRE(std::equal(sent.begin(), sent.begin() + 700, b.recv.begin()));
    BOOST_REQUIRE(std::equal(sent.begin(), sent.end(), b.recv.begin() + 8192));
    BOOST_REQUIRE(std::equal(sent.begin() + 100, sent.begin() + 1600, b.dst.begin()));
  }
}

// The path a socket reader takes (receive_whole, TcpLink): what the queue
// pair leaves untaken, the start of an FPDU not yet whole, is handed again
// with the next octets. One CRC stream (no markers) cut in three at every
// pair of octet offsets gives the same completions and data as one call, and
// a CRC error found in an FPDU whose CRC was begun over an earlier piece
// still draws the Terminate with nothing of the FPDU placed.
BOOST_AUTO_TEST_CASE(receive_whole_keeps_no_copy_and_judges_the_crc) {
  std::vector<std::byte> stream;
  std::size_t request_len = 0, write_at = 0;
  auto record = [&](bool corrupt) {
    stream.clear();
    QpConfig ci = config(true, 2, true, false, Rtr::none);
    if (corrupt) ci.faults.corrupt_crc_fpdu = 3;  // the RDMA Write's one FPDU (after the first Send's two)
    Side a(ci), b(config(false, 2, true, false, Rtr::none));
    for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
    a.qp.connect();
    request_len = a.qp.output().size();
    shuttle(a, b, 0, [&](int d, Bytes x) { if (d == 0) stream.insert(stream.end(), x.begin(), x.end()); });
    a.qp.post_send({1, WrOpcode::send, {a.src_stag, 0, 7000}});
    write_at = stream.size() + a.qp.output().size();  // past the Send's FPDUs
    SendWr w{2, WrOpcode::write, {a.src_stag, 100, 3000}};
    w.remote_stag = b.dst_stag;
    w.remote_to = 0x10000;
    a.qp.post_send(w);
    a.qp.post_send({3, WrOpcode::send, {a.src_stag, 0, 500}});
    for (int i = 0; i < 3; ++i) {  // the initiator's octets only: the responder's answers are not read back
      const auto out = a.qp.output().copy_out(SIZE_MAX);
      a.qp.consume(out.size());
      stream.insert(stream.end(), out.begin(), out.end());
    }
  };
  // Feeds `s` in pieces cut at `cuts`, holding what receive_whole leaves, as TcpLink does.
  auto feed = [&](Side& b, Bytes s, std::vector<std::size_t> cuts) {
    std::vector<std::byte> held;
    std::size_t from = 0;
    cuts.push_back(s.size());
    b.qp.connect();
    for (std::size_t to : cuts) {
      held.insert(held.end(), s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(to));
      from = to;
      const std::size_t taken = b.qp.receive_whole(Bytes(held));
      BOOST_REQUIRE_LE(taken, held.size());
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(taken));
    }
    return held.size();
  };
  record(false);
  const auto sent = pattern(7000, 1);
  const Bytes s(stream);
  const std::size_t step = 7;  // the first cut at every 7th offset, the second every 679th after it
  for (std::size_t k1 = request_len; k1 < s.size(); k1 += step)
    for (std::size_t k2 = k1; k2 < s.size(); k2 += step * 97) {
      Side b(config(false, 2, true, false, Rtr::none));
      for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
      const std::size_t left = feed(b, s, {request_len, k1, k2});
      const auto rc = b.drain(b.rcq);
      BOOST_REQUIRE_MESSAGE(left == 0 && rc.size() == 2u && b.qp.state() == QpState::connected,
                            "cut at " << k1 << " and " << k2 << ": " << left << " octets left, " << b.qp.error());
      BOOST_REQUIRE(rc[0].byte_len == 7000u && rc[1].byte_len == 500u);
      BOOST_REQUIRE(std::equal(sent.begin(), sent.end(), b.recv.begin()));
      BOOST_REQUIRE(std::equal(sent.begin() + 100, sent.begin() + 3100, b.dst.begin()));
    }
  // The Write's CRC field corrupted: its CRC begun over a first piece, the rest later.
  record(true);
  const Bytes bad(stream);
  for (std::size_t k = write_at + 1; k < write_at + 3000; k += 331) {  // inside the Write's FPDU
    Side b(config(false, 2, true, false, Rtr::none));
    for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
    feed(b, bad, {request_len, k});
    BOOST_REQUIRE_MESSAGE(b.qp.terminate_sent().has_value(), "cut at " << k << ": no Terminate");
    BOOST_TEST(b.qp.terminate_sent()->layer == rdmaconf::protocols::iwarp::kTermLayerLlp);
    BOOST_TEST(b.qp.terminate_sent()->code == 0x02);  // RFC 5044 §8: CRC error
    BOOST_REQUIRE(std::all_of(b.dst.begin(), b.dst.end(), [](std::byte x) { return x == std::byte{0}; }));
  }
}

struct FaultCase {
  std::string name;
  std::function<void(QpConfig& init, QpConfig& resp)> setup;
  std::function<void(Side& a, Side& b)> traffic;
  int layer, etype, code;  // expected Terminate from the responder; layer -1: a close without one
};

BOOST_AUTO_TEST_CASE(faults_draw_the_terminate_the_rfcs_require) {
  auto sends = [](int n) {
    return [n](Side& a, Side&) {
      for (int i = 0; i < n; ++i) a.qp.post_send({static_cast<std::uint64_t>(i), WrOpcode::send, {a.src_stag, 0, 3000}});
    };
  };
  auto write_to = [](std::uint32_t stag_xor, std::uint64_t to, unsigned access_strip) {
    return [=](Side& a, Side& b) {
      if (access_strip) b.pd.find(b.dst_stag)->access &= ~access_strip;
      SendWr w{1, WrOpcode::write, {a.src_stag, 0, 1000}};
      w.remote_stag = b.dst_stag ^ stag_xor;
      w.remote_to = to;
      a.qp.post_send(w);
    };
  };
  auto read_from = [](std::uint32_t stag_xor, std::uint64_t to, int count) {
    return [=](Side& a, Side& b) {
      for (int i = 0; i < count; ++i) {
        SendWr r{static_cast<std::uint64_t>(i), WrOpcode::read, {a.dst_stag, 0, 1000}};
        r.remote_stag = b.src_stag ^ stag_xor;
        r.remote_to = to;
        a.qp.post_send(r);
      }
    };
  };
  const std::vector<FaultCase> cases = {
      {"corrupt CRC", [](QpConfig& i, QpConfig&) { i.faults.corrupt_crc_fpdu = 2; }, sends(3), 2, 0, 0x02},
      {"wrong marker pointer", [](QpConfig& i, QpConfig& r) { i.faults.wrong_marker = 3; r.markers = true; }, sends(3), 2, 0, 0x03},
      {"skipped MSN", [](QpConfig& i, QpConfig&) { i.faults.skip_msn_message = 2; }, sends(3), 1, 2, 0x03},
      {"repeated MSN", [](QpConfig& i, QpConfig&) { i.faults.repeat_msn_message = 2; }, sends(3), 1, 2, 0x03},
      {"oversized ULPDU length", [](QpConfig& i, QpConfig&) { i.faults.oversize_length_fpdu = 2; }, sends(3), 2, 0, 0x02},
      {"no receive buffer", [](QpConfig&, QpConfig&) {}, sends(5), 1, 2, 0x02},
      {"message too long", [](QpConfig&, QpConfig&) {},
       [](Side& a, Side&) { a.qp.post_send({1, WrOpcode::send, {a.src_stag, 0, 9000}}); }, 1, 2, 0x05},
      {"invalid STag (Write)", [](QpConfig&, QpConfig&) {}, write_to(0xff00, 0x10000, 0), 1, 1, 0x00},
      {"out of bounds (Write)", [](QpConfig&, QpConfig&) {}, write_to(0, 0x10000 + 99500, 0), 1, 1, 0x01},
      {"no remote write access", [](QpConfig&, QpConfig&) {}, write_to(0, 0x10000, kRemoteWrite), 0, 1, 0x02},
      {"invalid STag (Read)", [](QpConfig&, QpConfig&) {}, read_from(0xff00, 0, 1), 0, 1, 0x00},
      {"out of bounds (Read)", [](QpConfig&, QpConfig&) {}, read_from(0, 99500, 1), 0, 1, 0x01},
      {"Read Requests beyond ORD", [](QpConfig& i, QpConfig& r) { i.faults.ignore_ord = true; i.ord = 2; r.ird = 2; },
       read_from(0, 0, 3), 1, 2, 0x02},
      {"skipped Read Request MSN", [](QpConfig& i, QpConfig&) { i.faults.skip_read_msn = 1; }, read_from(0, 0, 1), 1, 2, 0x03},
      {"FPDU before the Reply", [](QpConfig& i, QpConfig&) { i.faults.fpdu_before_reply = true; }, sends(1), -1, 0, 0},
  };
  for (const auto& fc : cases) {
    BOOST_TEST_CONTEXT(fc.name) {
      QpConfig ic = config(true, 2, true, false, Rtr::none), rc = config(false, 2, true, false, Rtr::none);
      fc.setup(ic, rc);
      Side a(ic), b(rc);
      for (std::uint64_t i = 0; i < 4; ++i) b.qp.post_recv({i, {b.recv_stag, i * 8192, 8192}});
      a.qp.connect();
      b.qp.connect();
      shuttle(a, b);
      fc.traffic(a, b);
      shuttle(a, b);
      if (fc.layer < 0) {
        BOOST_TEST((b.qp.state() == QpState::error), b.qp.error());
        BOOST_TEST(!b.qp.terminate_sent());
        BOOST_TEST(b.qp.wants_close());
        continue;
      }
      BOOST_REQUIRE_MESSAGE(b.qp.terminate_sent(), "no Terminate; responder: " << b.qp.error());
      const auto& t = *b.qp.terminate_sent();
      BOOST_TEST(static_cast<int>(t.layer) == fc.layer, t.reason);
      BOOST_TEST(static_cast<int>(t.etype) == fc.etype, t.reason);
      BOOST_TEST(static_cast<int>(t.code) == fc.code, t.reason);
      // Every Terminate for a Read Request carries its RDMAP header (R), as
      // docs/engine.md says; every DDP or RDMAP one here carries the DDP header (D).
      BOOST_TEST(t.ddp_copied == (fc.layer != static_cast<int>(rdmaconf::protocols::iwarp::kTermLayerLlp)), t.reason);
      BOOST_TEST(t.rdmap_copied == (fc.name.find("Read") != std::string::npos), t.reason);
      BOOST_TEST(b.qp.wants_close());
      // The faulty side hears the same Terminate and stops.
      BOOST_REQUIRE(a.qp.terminate_received());
      BOOST_TEST(a.qp.terminate_received()->code == t.code);
      BOOST_TEST((a.qp.state() == QpState::terminated));
    }
  }
}

BOOST_AUTO_TEST_CASE(rejection_and_setup_errors) {
  QpConfig rc = config(false, 2, true, false, Rtr::none);
  rc.reject = true;
  rc.private_data = pattern(40, 9);
  Side a(config(true, 2, true, false, Rtr::none)), b(rc);
  a.qp.connect();
  b.qp.connect();
  shuttle(a, b);
  BOOST_TEST((a.qp.state() == QpState::closed));
  BOOST_TEST(a.qp.error().find("rejected") != std::string::npos, a.qp.error());
  BOOST_TEST(a.qp.peer_private_data() == rc.private_data);
  BOOST_TEST(b.qp.wants_close());
  // A peer-to-peer Request that offers no RTR type: the responder, which
  // supports none of the offered ones, names one it supports (the Send RTR,
  // RFC 6581 §9.2); an initiator that can send none of the named types
  // Terminates with LLP/0/7, which the responder takes as the Terminate it is.
  {
    QpConfig ic = config(true, 2, true, false, Rtr::send);
    ic.rtr = Rtr::none;
    Side i(ic), r(config(false, 2, true, false, Rtr::none));
    i.qp.connect();
    r.qp.connect();
    shuttle(i, r);
    BOOST_TEST(i.qp.error().find("LLP/0/7") != std::string::npos, i.qp.error());
    const auto t = r.qp.terminate_received();
    BOOST_TEST_REQUIRE(t.has_value(), r.qp.error());
    BOOST_TEST(t->layer == 2u);
    BOOST_TEST(t->etype == 0u);
    BOOST_TEST(t->code == 7u);
  }
  // Not MPA at all, and a setup that never completes.
  Side c(config(false, 2, true, false, Rtr::none));
  c.qp.connect();
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  c.qp.receive(rdmaconf::protocols::as_bytes(junk.data(), junk.size()));
  BOOST_TEST((c.qp.state() == QpState::error));
  BOOST_TEST(c.qp.error().find("MPA Request key") != std::string::npos, c.qp.error());
  Side d(config(true, 2, true, false, Rtr::none));
  d.qp.connect();
  d.qp.tick(10000);
  BOOST_TEST((d.qp.state() == QpState::error));
  BOOST_TEST(d.qp.error().find("within") != std::string::npos, d.qp.error());
}

// The device refuses what the wire cannot carry, with a reason, and builds
// working objects otherwise.
// The transmit queue: views stay views, short ones and composed octets are
// copied, every split of consume() leaves the same octets in order, and the
// queue compacts without losing any.
BOOST_AUTO_TEST_CASE(transmit_queue_gathers_views_and_copies) {
  const std::vector<std::byte> big = pattern(70000, 3), small = pattern(100, 4);
  TxQueue q;
  std::vector<std::byte> expect;
  expect.reserve(big.size() + small.size());
  auto add = [&](Bytes b, bool view) {
    if (view) q.view(b);
    else q.made(b);
    std::copy(b.begin(), b.end(), std::back_inserter(expect));
  };
  add(Bytes(small).first(10), false);
  add(Bytes(small).subspan(10, 20), false);  // joins the owned piece before it
  add(Bytes(big).first(30000), true);
  add(Bytes(big).subspan(30000, 30000), true);  // continues the view before it
  add(Bytes(small).first(40), true);           // short: copied in
  add(Bytes(big).subspan(60000), true);
  iovec iov[8];
  const std::size_t n = q.gather(iov);
  BOOST_TEST(n == 4u);
  BOOST_TEST(iov[0].iov_len == 30u);
  BOOST_TEST(iov[1].iov_base == static_cast<const void*>(big.data()));  // the region itself, not a copy
  BOOST_TEST(iov[1].iov_len == 60000u);
  BOOST_TEST(iov[3].iov_base == static_cast<const void*>(big.data() + 60000));
  BOOST_TEST(q.size() == expect.size());
  BOOST_TEST((q.copy_out() == expect));
  // Consumed in odd steps, the rest is always the tail of what went in.
  std::size_t gone = 0;
  for (std::size_t step : {7u, 23u, 1u, 29999u, 5u, 30000u, 41u}) {
    q.consume(step);
    gone += step;
    BOOST_TEST(q.consumed() == gone);
    BOOST_TEST((q.copy_out() == std::vector<std::byte>(expect.begin() + static_cast<std::ptrdiff_t>(gone), expect.end())));
  }
  iovec one[1];
  BOOST_TEST(q.gather(one) == 1u);
  BOOST_TEST(one[0].iov_base == static_cast<const void*>(big.data() + 60000 + (gone - 60070)));
  // detach(): the same octets, none of them read from the region any more.
  std::vector<std::byte> moving(big);
  TxQueue d;
  d.made(Bytes(small).first(8));
  d.view(Bytes(moving));
  d.consume(5);
  const std::vector<std::byte> before = d.copy_out();
  d.detach();
  std::fill(moving.begin(), moving.end(), std::byte{0xee});
  BOOST_TEST((d.copy_out() == before));
  BOOST_TEST(d.appended() == 8 + big.size());
  // Many small appends and consumes: compaction keeps the stream intact.
  TxQueue c;
  std::uint64_t in = 0, out = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::byte b[3] = {std::byte(in), std::byte(in + 1), std::byte(in + 2)};
    c.made(Bytes(b, 3));
    c.view(Bytes(big).subspan(static_cast<std::size_t>(in % 1000), 2048));
    in += 3 + 2048;
    const std::size_t take = i % 3 == 0 ? c.size() / 2 : c.size() - 1;
    const auto front = c.copy_out(1);
    c.consume(take);
    out += take;
    BOOST_REQUIRE(c.consumed() == out);
    BOOST_REQUIRE(c.size() == in - out);
    (void)front;
  }
  c.consume(c.size());
  BOOST_TEST(c.empty());
}

// The FPDU writers the engine uses (the payload gathered through the
// transmit queue, or the whole FPDU composed when it is short) against an
// FPDU built here octet by octet, its CRC32c taken bit by bit with the
// reflected Castagnoli polynomial 0x82F63B78 (RFC 5044 §4.4: CRC32c as
// iSCSI's digests take it): every pad length, both sides of
// TxQueue::kMinView, and each fault the engine's plans put into an FPDU.
BOOST_AUTO_TEST_CASE(fpdu_writers_agree_with_an_fpdu_built_by_hand) {
  namespace pi = rdmaconf::protocols::iwarp;
  auto bitwise_crc32c = [](Bytes b) {
    std::uint32_t c = 0xffffffffu;
    for (std::byte x : b) {
      c ^= static_cast<std::uint32_t>(x);
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
  };
  const std::vector<std::byte> head = pattern(14, 5), data = pattern(5000, 6);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4},
                        TxQueue::kMinView - 1, TxQueue::kMinView, TxQueue::kMinView + 1, std::size_t{5000}}) {
    const Bytes payload = Bytes(data).first(n);
    for (int fault = 0; fault < 3; ++fault) {
      pi::FpduFaults f;
      if (fault == 1) f.length_excess = 64;
      if (fault == 2) f.crc_xor = 0x5a5a5a5a;
      for (bool crc : {true, false}) {
        // By hand: length, ULPDU, zero pad to a multiple of 4, the CRC over all of it (its field in the
        // octet order tests/protocols/iwarp_framer_test.cpp holds), the length field's fault after the CRC.
        const std::size_t len = head.size() + n;
        std::vector<std::byte> want = {std::byte(len >> 8), std::byte(len & 0xff)};
        want.insert(want.end(), head.begin(), head.end());
        want.insert(want.end(), payload.begin(), payload.end());
        while (want.size() % 4) want.push_back(std::byte{0});
        const std::uint32_t c = (crc ? bitwise_crc32c(want) : 0u) ^ f.crc_xor;
        for (int k = 0; k < 4; ++k) want.push_back(std::byte((c >> (8 * k)) & 0xff));
        want[0] = std::byte((len + f.length_excess) >> 8);
        want[1] = std::byte((len + f.length_excess) & 0xff);
        const std::string what = fmt::format("{} payload octets, fault {}, crc {}", n, fault, crc);
        std::vector<std::byte> composed(pi::fpdu_size(len));
        pi::write_fpdu(composed, head, payload, crc, f);
        BOOST_TEST((composed == want), what << ": write_fpdu");
        TxQueue q;
        pi::emit_fpdu(q, head, payload, crc, nullptr, f);
        BOOST_TEST((q.copy_out() == want), what << ": emit_fpdu into the transmit queue");
        iovec iov[4];
        BOOST_TEST(q.gather(iov) == (n >= TxQueue::kMinView ? 3u : 1u), what << ": pieces");
      }
    }
  }
}

// Zero copy: a Send or Write is gathered from its region when the transport
// takes it (without markers; between markers the pieces are short and are
// copied), and completes only once its last octet has been consumed.
BOOST_AUTO_TEST_CASE(payload_leaves_from_the_region_and_completes_when_sent) {
  for (bool markers : {false, true}) {
    BOOST_TEST_CONTEXT("markers " << markers) {
      Side a(config(true, 2, true, markers, Rtr::none)), b(config(false, 2, true, markers, Rtr::none));
      b.qp.post_recv({7, {b.recv_stag, 0, 20000}});
      a.qp.connect();
      shuttle(a, b);
      BOOST_REQUIRE(a.qp.state() == QpState::connected);
      a.qp.post_send({1, WrOpcode::send, {a.src_stag, 0, 20000}});
      SendWr w{2, WrOpcode::write, {a.src_stag, 20000, 30000}};
      w.remote_stag = b.dst_stag;
      w.remote_to = 0x10000;
      a.qp.post_send(w);
      BOOST_TEST(a.scq.size() == 0u);  // queued, not sent
      // Without markers the payload is gathered from the region itself.
      iovec iov[64];
      const std::size_t n = a.qp.output().gather(iov);
      std::size_t from_region = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const auto* p = static_cast<const std::byte*>(iov[i].iov_base);
        if (p >= a.src.data() && p + iov[i].iov_len <= a.src.data() + a.src.size()) from_region += iov[i].iov_len;
      }
      BOOST_TEST(from_region == (markers ? 0u : 50000u));
      const std::size_t total = a.qp.output().size();
      const std::vector<std::byte> first = a.qp.output().copy_out(total - 100);
      a.qp.consume(first.size());
      b.qp.receive(Bytes(first));
      BOOST_TEST(a.scq.size() == 1u);  // the Send went out whole; the Write's tail did not
      const std::vector<std::byte> rest = a.qp.output().copy_out();
      a.qp.consume(rest.size());
      b.qp.receive(Bytes(rest));
      const auto sc = a.drain(a.scq);
      BOOST_REQUIRE(sc.size() == 2u);
      BOOST_TEST(sc[0].wr_id == 1u);
      BOOST_TEST(sc[1].wr_id == 2u);
      BOOST_TEST((sc[1].status == WcStatus::success));
      const auto rc = b.drain(b.rcq);
      BOOST_REQUIRE(rc.size() == 1u);
      BOOST_TEST(std::equal(a.src.begin(), a.src.begin() + 20000, b.recv.begin()));
      BOOST_TEST(std::equal(a.src.begin() + 20000, a.src.begin() + 50000, b.dst.begin()));
    }
  }
}

// A Terminate ends the connection with octets still queued: the work they
// carry completes (in posting order, before what is flushed) and the queue
// no longer reads the region, which its owner may now reuse.
BOOST_AUTO_TEST_CASE(terminate_detaches_queued_payload) {
  Side a(config(true, 2, true, false, Rtr::none)), b(config(false, 2, true, false, Rtr::none));
  a.qp.connect();
  shuttle(a, b);
  SendWr w{5, WrOpcode::write, {a.src_stag, 0, 40000}};
  w.remote_stag = b.dst_stag;
  w.remote_to = 0x10000;
  a.qp.post_send(w);
  a.qp.post_send({6, WrOpcode::send, {a.src_stag, 0, 10}});  // no receive posted at b: b will Terminate
  const std::vector<std::byte> queued = a.qp.output().copy_out();
  a.qp.peer_closed();  // the connection ends with everything still queued
  const auto sc = a.drain(a.scq);
  BOOST_REQUIRE(sc.size() == 2u);
  BOOST_TEST(sc[0].wr_id == 5u);
  BOOST_TEST((sc[0].status == WcStatus::success));
  std::fill(a.src.begin(), a.src.end(), std::byte{0});
  BOOST_TEST((a.qp.output().copy_out() == queued));
}

BOOST_AUTO_TEST_CASE(device_validates_queue_pair_configurations) {
  const Device dev;
  BOOST_TEST(dev.query().max_ird == 0x3fffu);
  auto pd = dev.alloc_pd();
  auto cq = dev.create_cq();
  std::string why;
  QpConfig c;
  BOOST_TEST(dev.create_qp(*pd, *cq, *cq, c, why) != nullptr);
  BOOST_TEST(why.empty());
  auto refused = [&](QpConfig bad, std::string_view word) {
    const auto qp = dev.create_qp(*pd, *cq, *cq, std::move(bad), why);
    BOOST_TEST(qp == nullptr);
    BOOST_TEST(why.find(word) != std::string::npos, why);
  };
  QpConfig b = c;
  b.revision = 3;
  refused(b, "revision");
  b = c;
  b.ird = 0x4000;
  refused(b, "IRD");
  b = c;
  b.private_data.resize(509);  // 509 + the 4-octet IRD/ORD word > 512
  refused(b, "private data");
  b.enhanced = false;
  BOOST_TEST(dev.validate(b).empty());  // without the word, 509 octets fit
  b = c;
  b.mulpdu = 70000;
  refused(b, "MULPDU");
  b = c;
  b.revision = 1;
  b.p2p = true;
  refused(b, "revision 2");
}

BOOST_AUTO_TEST_SUITE_END()

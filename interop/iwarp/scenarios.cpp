#include "interop/iwarp/scenarios.hpp"

#include "engines/iwarp/device.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <thread>

#include <fmt/format.h>

#include "protocols/core/bits.hpp"
#include "protocols/iwarp/headers.hpp"

namespace rdmaconf::interop::iwarp {

using namespace engine::iwarp;
using protocols::Bytes;
using protocols::MutBytes;
using Clock = std::chrono::steady_clock;

namespace {

namespace pi = protocols::iwarp;
using pi::kTermLayerRdma, pi::kTermLayerDdp, pi::kTermLayerLlp;  // Terminate layers and error types
using pi::kTermRdmaProtection, pi::kTermRdmaOperation, pi::kTermDdpTagged, pi::kTermDdpUntagged;

// ------------------------------------------------------------ the catalog

enum Code : std::uint8_t {
  kRping = 1,
  kWriteBw,
  kReadBw,
  kSendLat,
  kWriteLat,
  kTermCrc = 16,
  kTermMarker,
  kTermMsnSkip,
  kTermMsnRepeat,
  kTermOversize,
  kTermNoBuffer,
  kTermTooLong,
  kTermStag,
  kTermBounds,
  kTermAccess,
  kTermReadStag,
  kTermReadBounds,
  kTermOrd,
  kTermInvalidate,
  kTermBeforeReply,
};

std::vector<ScenarioInfo> make_catalog() {
  std::vector<ScenarioInfo> v;
  auto data = [&](std::string_view n, Code c, std::string_view s, std::uint32_t size, std::uint64_t it) {
    v.push_back({n, c, s, size, it, std::nullopt, false, {}, {}, false, false, false});
  };
  data("rping", kRping, "rping's exchange: Send of a buffer, RDMA Read of it, RDMA Write back, compared", 64, 100);
  data("write-bw", kWriteBw, "RDMA Write throughput, the responder verifies every slot of its buffer", 65536, 2000);
  data("read-bw", kReadBw, "RDMA Read throughput, every response verified", 65536, 2000);
  data("send-lat", kSendLat, "Send ping-pong, every message verified on both sides", 4, 1000);
  data("write-lat", kWriteLat, "RDMA Write ping-pong polled on the last octet, every message verified", 4, 1000);
  auto term = [&](std::string_view n, Code c, std::string_view s, ExpectedTerminate e, std::string_view rule,
                  std::vector<std::string_view> cases, bool crc = false, bool markers = false) {
    v.push_back({n, c, s, 64, 1, e, false, rule, std::move(cases), false, crc, markers});
  };
  term("terminate-crc", kTermCrc, "an FPDU with a corrupted CRC", {kTermLayerLlp, 0, 0x02},
       "RFC 5044 §5 and §8: the receiver checks every FPDU's CRC and reports a mismatch as LLP 0x02 (RFC 5040 §7.2)",
       {"iwarp.mpa.fpdu.crc"}, true);
  term("terminate-marker", kTermMarker, "a marker whose FPDU pointer is wrong", {kTermLayerLlp, 0, 0x03},
       "RFC 5044 §4.3 and §8: a marker points back to the start of its FPDU; a wrong one is LLP 0x03",
       {"iwarp.mpa.marker.fpduptr"},
       false, true);
  term("terminate-msn-skip", kTermMsnSkip, "a Send whose MSN skips one", {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5041 §5.3: MSN advances by one per message on each untagged queue; a wrong one is DDP untagged 0x03",
       {"iwarp.ddp.msn"});
  term("terminate-msn-repeat", kTermMsnRepeat, "a Send that repeats the previous MSN", {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5041 §5.3: MSN advances by one per message on each untagged queue; a wrong one is DDP untagged 0x03",
       {"iwarp.ddp.msn"});
  term("terminate-oversize", kTermOversize, "an FPDU whose ULPDU length claims 64 octets more than it carries",
       {kTermLayerLlp, 0, 0x02}, "RFC 5044 §4 and §8: the ULPDU length frames the FPDU, so a wrong one makes the CRC fail (LLP 0x02)",
       {"iwarp.mpa.fpdu.crc"}, true);
  v.back().framing_lost = true;
  term("terminate-no-buffer", kTermNoBuffer, "a Send when the responder posted no receive buffer",
       {kTermLayerDdp, kTermDdpUntagged, 0x02}, "RFC 5041 §5.3: an untagged message lands in a posted buffer; none is DDP untagged 0x02 (RFC 5040 §7.2)", {});
  term("terminate-too-long", kTermTooLong, "a Send longer than the responder's receive buffer",
       {kTermLayerDdp, kTermDdpUntagged, 0x05}, "RFC 5041 §5.3: an untagged message must fit its buffer; DDP untagged 0x05 (RFC 5040 §7.2)", {});
  term("terminate-stag", kTermStag, "an RDMA Write to an STag that names no region", {kTermLayerDdp, kTermDdpTagged, 0x00},
       "RFC 5041 §5.2: tagged placement needs a valid STag; DDP tagged 0x00 (RFC 5040 §7.2)", {});
  term("terminate-bounds", kTermBounds, "an RDMA Write running past the end of the advertised region",
       {kTermLayerDdp, kTermDdpTagged, 0x01}, "RFC 5041 §5.2: tagged placement stays inside the region; DDP tagged 0x01 (RFC 5040 §7.2)", {});
  term("terminate-access", kTermAccess, "an RDMA Write to a region advertised for remote read only",
       {kTermLayerRdma, kTermRdmaProtection, 0x02}, "RFC 5040 §7.2: an RDMA Write needs an STag with remote-write rights; RDMA protection 0x02", {});
  term("terminate-read-stag", kTermReadStag, "an RDMA Read Request naming an invalid source STag",
       {kTermLayerRdma, kTermRdmaProtection, 0x00}, "RFC 5040 §7.2: a Read Request's source STag must be valid; RDMA protection 0x00", {});
  term("terminate-read-bounds", kTermReadBounds, "an RDMA Read Request running past the source region",
       {kTermLayerRdma, kTermRdmaProtection, 0x01}, "RFC 5040 §7.2: a Read Request stays inside the source region; RDMA protection 0x01", {});
  term("terminate-ord", kTermOrd, "one RDMA Read Request more than the responder's IRD", {kTermLayerDdp, kTermDdpUntagged, 0x02},
       "RFC 6581 §9.1, RFC 5040 §5.2: Read Requests in flight never exceed the responder's IRD; the extra one finds no "
       "queue 1 buffer (DDP untagged 0x02)",
       {"iwarp.rdmap.ird_ord"});
  term("terminate-invalidate", kTermInvalidate, "a Send with Invalidate naming an STag that cannot be invalidated",
       {kTermLayerRdma, kTermRdmaOperation, 0x09}, "RFC 5040 §6.3, §7.2: the STag a Send with Invalidate names must be one that can be invalidated; RDMA operation 0x09", {});
  v.push_back({"terminate-before-reply", kTermBeforeReply,
               "an FPDU sent right behind the MPA Request, before the Reply", 64, 1, std::nullopt, true, "RFC 5044 §7.1.2: the initiator sends no FPDU before it has received the Reply; with no framing agreed the "
               "responder can only close",
               {"iwarp.mpa.fpdu.before_exchange"}, true, false, false});  // sent before markers/CRC were agreed
  return v;
}

// -------------------------------------------------- the control messages

constexpr std::uint32_t kMagic = 0x52434e46;  // "RCNF"
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kCtlSize = 56, kMinSlot = 64;
constexpr unsigned kSlots = 4;
enum Kind : std::uint8_t { kHello = 1, kReady = 2, kDone = 3, kResult = 4 };
enum Status : std::uint8_t { kOk = 0, kMismatch = 1, kRefused = 2 };

struct Ctl {
  std::uint8_t kind = 0, scenario = 0, status = 0;
  std::uint32_t size = 0, iterations = 0;
  std::uint32_t stag = 0, len = 0;
  std::uint64_t to = 0;
  std::uint32_t stag_ro = 0, len_ro = 0;
  std::uint64_t to_ro = 0;
  std::uint16_t credits = 0, ird = 0;
  std::uint32_t recv_size = 0;

  std::array<std::byte, kCtlSize> encode() const {
    std::array<std::byte, kCtlSize> b{};
    MutBytes m(b);
    protocols::put_be32(m, 0, kMagic);
    m[4] = std::byte{kVersion};
    m[5] = std::byte{kind};
    m[6] = std::byte{scenario};
    m[7] = std::byte{status};
    protocols::put_be32(m, 8, size);
    protocols::put_be32(m, 12, iterations);
    protocols::put_be32(m, 16, stag);
    protocols::put_be32(m, 20, len);
    protocols::put_be64(m, 24, to);
    protocols::put_be32(m, 32, stag_ro);
    protocols::put_be32(m, 36, len_ro);
    protocols::put_be64(m, 40, to_ro);
    protocols::put_be16(m, 48, credits);
    protocols::put_be16(m, 50, ird);
    protocols::put_be32(m, 52, recv_size);
    return b;
  }
  static std::optional<Ctl> decode(Bytes b) {
    if (b.size() < kCtlSize || protocols::be32(b, 0) != kMagic || b[4] != std::byte{kVersion}) return std::nullopt;
    Ctl c;
    c.kind = std::to_integer<std::uint8_t>(b[5]);
    c.scenario = std::to_integer<std::uint8_t>(b[6]);
    c.status = std::to_integer<std::uint8_t>(b[7]);
    c.size = protocols::be32(b, 8);
    c.iterations = protocols::be32(b, 12);
    c.stag = protocols::be32(b, 16);
    c.len = protocols::be32(b, 20);
    c.to = protocols::be64(b, 24);
    c.stag_ro = protocols::be32(b, 32);
    c.len_ro = protocols::be32(b, 36);
    c.to_ro = protocols::be64(b, 40);
    c.credits = protocols::be16(b, 48);
    c.ird = protocols::be16(b, 50);
    c.recv_size = protocols::be32(b, 52);
    return c;
  }
};

// rping's buffer advertisement: { be64 address, be32 rkey, be32 size }.
constexpr std::size_t kRpingInfo = 16;
struct RpingInfo {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0, size = 0;
};

std::array<std::byte, kRpingInfo> encode_rping(const RpingInfo& r) {
  std::array<std::byte, kRpingInfo> b{};
  protocols::put_be64(b, 0, r.addr);
  protocols::put_be32(b, 8, r.rkey);
  protocols::put_be32(b, 12, r.size);
  return b;
}

// rping's buffer contents for ping n: "rdma-ping-<n>: " then letters cycling
// from 'A' + n (mod 58) through 'z', ending in a NUL.
void fill_rping(std::span<std::byte> b, std::uint64_t n) {
  const std::string head = fmt::format("rdma-ping-{}: ", n);
  const std::size_t h = std::min(head.size(), b.size());
  std::memcpy(b.data(), head.data(), h);
  unsigned c = 65 + static_cast<unsigned>(n % 58);
  for (std::size_t i = h; i < b.size(); ++i) {
    b[i] = std::byte(c);
    if (++c > 122) c = 65;
  }
  if (!b.empty()) b.back() = std::byte{0};
}

std::uint64_t address_of(const std::vector<std::byte>& v) { return reinterpret_cast<std::uintptr_t>(v.data()); }

// --------------------------------------------------------------- sessions

constexpr std::uint64_t kRecvBase = 1ull << 40, kSendBase = 2ull << 40, kDataBase = 3ull << 40;

struct Session {
  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  QueuePair qp;
  std::unique_ptr<TcpLink> link;
  int timeout_ms;
  std::list<std::vector<std::byte>> storage;  // every buffer ever registered (stable addresses)
  std::byte* rslots = nullptr;
  std::uint32_t rslot_stag = 0;
  std::size_t slot_size = 0;
  std::byte* sslots = nullptr;
  std::uint32_t sslot_stag = 0;
  std::array<bool, kSlots> sbusy{};
  unsigned snext = 0;
  std::deque<Completion> recvs;
  std::string failure;
  std::uint64_t outstanding = 0, completed = 0;
  std::function<void(const Completion&)> on_data;

  Session(QpConfig c, Fd fd, WaitMode w, int timeout)
      : qp(pd, scq, rcq, std::move(c)), link(std::make_unique<TcpLink>(std::move(fd), qp, w)), timeout_ms(timeout) {}

  std::vector<std::byte>& buffer(std::size_t n) { return storage.emplace_back(n); }

  // Registers kSlots receive and send slots of `size` octets; posts `post` receives.
  void setup_slots(std::size_t size, unsigned post) {
    slot_size = std::max(size, kMinSlot);
    auto& r = buffer(slot_size * kSlots);
    auto& s = buffer(slot_size * kSlots);
    rslots = r.data();
    sslots = s.data();
    rslot_stag = pd.register_mr(r, kLocalWrite);
    sslot_stag = pd.register_mr(s, 0);
    sbusy.fill(false);
    for (unsigned i = 0; i < post && i < kSlots; ++i) repost(i);
  }
  void repost(std::size_t i) {
    qp.post_recv({kRecvBase + i, {rslot_stag, i * slot_size, static_cast<std::uint32_t>(slot_size)}});
  }

  void drain() {
    while (auto c = scq.poll()) {
      if (c->status != WcStatus::success && failure.empty())
        failure = fmt::format("work request {:#x} completed with {}", c->wr_id & 0xffffffffffull,
                              wc_status_name(c->status));
      if (c->wr_id >= kDataBase) {
        if (outstanding) --outstanding;
        ++completed;
        if (on_data && c->status == WcStatus::success) on_data(*c);
      } else if (c->wr_id >= kSendBase) {
        sbusy[(c->wr_id - kSendBase) % kSlots] = false;
      }
    }
    while (auto c = rcq.poll()) {
      if (c->status != WcStatus::success) {
        if (failure.empty() && c->status != WcStatus::flushed)
          failure = fmt::format("receive completed with {}", wc_status_name(c->status));
        continue;
      }
      recvs.push_back(*c);
    }
  }
  bool dead() const {
    const auto s = qp.state();
    return s == QpState::terminated || s == QpState::closed || s == QpState::error || link->ended();
  }
  // Waits until pred() holds; false on failure, timeout or a dead connection.
  bool wait(const std::function<bool()>& pred) {
    link->run_until([&] { drain(); return pred() || !failure.empty() || dead(); }, timeout_ms);
    drain();
    return failure.empty() && pred();
  }
  std::string why(std::string_view step) const {
    if (!failure.empty()) return fmt::format("{}: {}", step, failure);
    if (qp.terminate_received())
      return fmt::format("{}: the peer sent Terminate {}/{}/{:#04x}", step, qp.terminate_received()->layer,
                         qp.terminate_received()->etype, qp.terminate_received()->code);
    if (qp.terminate_sent())
      return fmt::format("{}: we sent Terminate {}/{}/{:#04x} ({})", step, qp.terminate_sent()->layer,
                         qp.terminate_sent()->etype, qp.terminate_sent()->code, qp.terminate_sent()->reason);
    if (!qp.error().empty()) return fmt::format("{}: {}", step, qp.error());
    if (!link->error().empty()) return fmt::format("{}: {}", step, link->error());
    if (link->peer_eof()) return fmt::format("{}: the peer closed the connection", step);
    return fmt::format("{}: timed out after {} ms", step, timeout_ms);
  }

  // Sends `data` (at most one slot) from a free send slot.
  bool send(Bytes data, WrOpcode op = WrOpcode::send, std::uint32_t inv = 0) {
    if (!wait([&] { return std::find(sbusy.begin(), sbusy.end(), false) != sbusy.end(); })) return false;
    while (sbusy[snext]) snext = (snext + 1) % kSlots;
    const unsigned i = snext;
    snext = (snext + 1) % kSlots;
    const std::size_t n = std::min(data.size(), slot_size);
    if (n) std::memcpy(sslots + i * slot_size, data.data(), n);
    sbusy[i] = true;
    SendWr w{kSendBase + i, op, {sslot_stag, i * slot_size, static_cast<std::uint32_t>(n)}};
    w.invalidate_stag = inv;
    return qp.post_send(w);
  }
  // The next received message (its slot is reposted once copied out).
  std::optional<std::vector<std::byte>> receive() {
    if (!wait([&] { return !recvs.empty(); })) return std::nullopt;
    const Completion c = recvs.front();
    recvs.pop_front();
    const std::size_t i = (c.wr_id - kRecvBase) % kSlots;
    std::vector<std::byte> out(rslots + i * slot_size, rslots + i * slot_size + std::min<std::size_t>(c.byte_len, slot_size));
    repost(i);
    return out;
  }
  // A received message left in its slot (no copy); call repost(slot) after use.
  std::optional<std::pair<std::size_t, Bytes>> receive_in_place() {
    if (!wait([&] { return !recvs.empty(); })) return std::nullopt;
    const Completion c = recvs.front();
    recvs.pop_front();
    const std::size_t i = (c.wr_id - kRecvBase) % kSlots;
    return std::pair{i, Bytes(rslots + i * slot_size, std::min<std::size_t>(c.byte_len, slot_size))};
  }
  bool post(const SendWr& w) {
    ++outstanding;
    return qp.post_send(w);
  }

  nlohmann::json negotiated() const {
    return {{"crc", qp.crc_in_use()},
            {"markers_to_peer", qp.markers_to_peer()},
            {"markers_from_peer", qp.markers_from_peer()},
            {"ird", qp.effective_ird()},
            {"ord", qp.effective_ord()}};
  }
};

nlohmann::json terminate_json(const std::optional<TerminateInfo>& t) {
  if (!t) return nullptr;
  return {{"layer", t->layer}, {"type", t->etype}, {"code", t->code}, {"reason", t->reason}};
}

// The message of send-lat / write-lat iteration i: the pattern with the
// iteration stamped in (send-lat: the first up to 4 octets; write-lat: the
// last octet, which the receiver polls).
void stamp_send(std::span<std::byte> b, std::uint64_t i) {
  for (std::size_t k = 0; k < std::min<std::size_t>(4, b.size()); ++k) b[k] = std::byte((i >> (8 * (3 - k))) & 0xff);
}
std::byte write_tag(std::uint64_t i) { return std::byte(1 + i % 255); }

bool same_message(Bytes got, Bytes base, std::uint64_t i, bool send_lat) {
  if (got.size() != base.size()) return false;
  if (send_lat) {
    std::array<std::byte, 4> s{};
    stamp_send(std::span(s).first(std::min<std::size_t>(4, got.size())), i);
    const std::size_t k = std::min<std::size_t>(4, got.size());
    return std::memcmp(got.data(), s.data(), k) == 0 && std::memcmp(got.data() + k, base.data() + k, got.size() - k) == 0;
  }
  return got.back() == write_tag(i) && std::memcmp(got.data(), base.data(), got.size() - 1) == 0;
}

constexpr std::uint64_t kSeedLat = 7;

// Number of slots in the responder's bandwidth buffer.
std::uint32_t bw_slots(std::uint32_t size, std::uint64_t iterations) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>((4u << 20) / std::max<std::uint32_t>(size, 1), 1,
                                                              std::max<std::uint64_t>(iterations, 1)));
}

// ---------------------------------------------------------- initiator side

struct Initiator {
  Session& s;
  const ScenarioInfo& info;
  const RunOptions& o;
  RunResult& r;
  std::uint32_t size;
  std::uint64_t iters;

  bool fail(std::string_view step) {
    r.message = s.why(step);
    return false;
  }

  std::optional<Ctl> hello(Ctl h) {
    h.kind = kHello;
    h.scenario = info.code;
    h.size = size;
    h.iterations = static_cast<std::uint32_t>(iters);
    const auto b = h.encode();
    if (!s.send(b)) return fail("sending the hello"), std::nullopt;
    const auto m = s.receive();
    if (!m) return fail("waiting for the responder's ready"), std::nullopt;
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kReady) {
      r.message = "the responder's answer to the hello is not a ready message";
      return std::nullopt;
    }
    if (c->status != kOk) {
      r.message = fmt::format("the responder refused scenario {} (size {}, {} iterations)", info.name, size, iters);
      return std::nullopt;
    }
    return c;
  }

  bool finish() {
    Ctl d;
    d.kind = kDone;
    d.scenario = info.code;
    d.iterations = static_cast<std::uint32_t>(iters);
    if (!s.send(d.encode())) return fail("sending done");
    const auto m = s.receive();
    if (!m) return fail("waiting for the result");
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kResult) {
      r.message = "the responder's last message is not a result";
      return false;
    }
    if (c->status != kOk) {
      r.message = fmt::format("the responder found the data wrong at offset {} of its buffer", c->to);
      return false;
    }
    r.message = "data verified end to end";
    return true;
  }

  bool rping() {
    auto& start = s.buffer(size);
    auto& rdma = s.buffer(size);
    const auto start_stag = s.pd.register_mr(start, kRemoteRead, address_of(start));
    const auto rdma_stag = s.pd.register_mr(rdma, kRemoteWrite | kLocalWrite, address_of(rdma));
    const auto t0 = Clock::now();
    for (std::uint64_t n = 0; n < iters; ++n) {
      fill_rping(start, n);
      std::fill(rdma.begin(), rdma.end(), std::byte{0});
      if (!s.send(encode_rping({address_of(start), start_stag, size}))) return fail("advertising the source buffer");
      if (!s.receive()) return fail(fmt::format("ping {}: waiting for the RDMA Read to complete", n));
      if (!s.send(encode_rping({address_of(rdma), rdma_stag, size}))) return fail("advertising the sink buffer");
      if (!s.receive()) return fail(fmt::format("ping {}: waiting for the RDMA Write to complete", n));
      if (start != rdma) {
        const auto at = std::mismatch(start.begin(), start.end(), rdma.begin()).first - start.begin();
        r.message = fmt::format("ping {}: the buffer written back differs at octet {}", n, at);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = 2 * iters * size;
    r.message = fmt::format("{} pings, every buffer written back equal to the one read", iters);
    return true;
  }

  // How many `size`-octet slots the responder's buffer of `len` octets holds;
  // nothing (with the reason in r.message) unless a whole, non-zero number.
  std::optional<std::uint32_t> whole_slots(std::uint32_t len) {
    const std::uint32_t slots = len / std::max<std::uint32_t>(size, 1);
    if (slots == 0 || len % size) {
      r.message = fmt::format("the responder's buffer ({} octets) is not a whole number of {}-octet slots", len, size);
      return std::nullopt;
    }
    return slots;
  }

  // Posts the work requests make(0) .. make(iters - 1), at most `window` in
  // flight, until all have completed. `bad` (if given) is a data error found
  // by a completion handler: it ends the run.
  bool pump(unsigned window, std::string_view what, const std::function<SendWr(std::uint64_t)>& make,
            const std::string* bad = nullptr) {
    std::uint64_t posted = 0;
    while (s.completed < iters) {
      while (posted < iters && s.outstanding < window) s.post(make(posted++));
      const std::uint64_t target = s.completed + 1;
      if (!s.wait([&] { return s.completed >= target; })) return fail(what);
      if (bad && !bad->empty()) {
        r.message = *bad;
        return false;
      }
    }
    return true;
  }

  bool write_bw() {
    const auto c = hello({});
    if (!c) return false;
    const auto slots = whole_slots(c->len);
    if (!slots) return false;
    auto& src = s.buffer(std::size_t(size) * *slots);
    for (std::uint32_t k = 0; k < *slots; ++k) fill_pattern(std::span(src).subspan(std::size_t(k) * size, size), k + 1);
    const auto stag = s.pd.register_mr(src, 0);
    const auto t0 = Clock::now();
    const bool ok = pump(o.window, "RDMA Write", [&](std::uint64_t i) {
      const std::uint64_t k = i % *slots;
      SendWr w{kDataBase + i, WrOpcode::write, {stag, k * size, size}};
      w.remote_stag = c->stag;
      w.remote_to = c->to + k * size;
      return w;
    });
    if (!ok || !finish()) return false;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = iters * size;
    return true;
  }

  bool read_bw() {
    const auto c = hello({});
    if (!c) return false;
    const auto slots = whole_slots(c->len_ro);
    if (!slots) return false;
    const unsigned window = std::max(1u, o.window);
    auto& dst = s.buffer(std::size_t(size) * window);
    const auto stag = s.pd.register_mr(dst, kLocalWrite);
    std::string bad;
    s.on_data = [&](const Completion& done) {
      const std::uint64_t i = done.wr_id - kDataBase;
      const auto got = std::span(dst).subspan((i % window) * size, size);
      if (const auto at = check_pattern(got, i % *slots + 1); at && bad.empty())
        bad = fmt::format("read {}: octet {} differs from the responder's buffer", i, *at);
    };
    const auto t0 = Clock::now();
    const bool ok = pump(window, "RDMA Read", [&](std::uint64_t i) {
      SendWr w{kDataBase + i, WrOpcode::read, {stag, (i % window) * size, size}};
      w.remote_stag = c->stag_ro;
      w.remote_to = c->to_ro + (i % *slots) * size;
      return w;
    }, &bad);
    s.on_data = nullptr;
    if (!ok || !finish()) return false;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = iters * size;
    return true;
  }

  bool send_lat() {
    const auto c = hello({});
    if (!c) return false;
    auto& msg = s.buffer(size);
    fill_pattern(msg, kSeedLat);
    const std::vector<std::byte> base = msg;
    const auto stag = s.pd.register_mr(msg, 0);
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < iters; ++i) {
      stamp_send(msg, i);
      if (!s.post({kDataBase + i, WrOpcode::send, {stag, 0, size}})) return fail("Send");
      const auto got = s.receive_in_place();
      if (!got) return fail(fmt::format("waiting for pong {}", i));
      const bool same = same_message(got->second, base, i, true);
      s.repost(got->first);
      if (!same) {
        r.message = fmt::format("pong {} is not the message sent", i);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!finish()) return false;
    r.bytes = 2 * iters * size;
    return true;
  }

  bool write_lat() {
    auto& mine = s.buffer(size);
    const auto mine_stag = s.pd.register_mr(mine, kRemoteWrite | kLocalWrite, address_of(mine));
    Ctl h;
    h.stag = mine_stag;
    h.to = address_of(mine);
    h.len = size;
    const auto c = hello(h);
    if (!c) return false;
    auto& src = s.buffer(size);
    fill_pattern(src, kSeedLat);
    const std::vector<std::byte> base = src;
    const auto src_stag = s.pd.register_mr(src, 0);
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < iters; ++i) {
      src.back() = write_tag(i);
      SendWr w{kDataBase + i, WrOpcode::write, {src_stag, 0, size}};
      w.remote_stag = c->stag;
      w.remote_to = c->to;
      if (!s.post(w)) return fail("RDMA Write");
      if (!s.wait([&] { return mine.back() == write_tag(i); })) return fail(fmt::format("waiting for pong {}", i));
      if (!same_message(mine, base, i, false)) {
        r.message = fmt::format("pong {} is not the message sent", i);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!finish()) return false;
    r.bytes = 2 * iters * size;
    return true;
  }

  // What `rping -s` offers instead of a ready message: one posted receive of
  // 16 octets (its buffer advertisement) and no buffer of its own; IRD as
  // negotiated. Faults that need one of the responder's buffers are skipped.
  std::optional<Ctl> rping_server_resources() {
    switch (info.code) {
      // oversize: its RDMA Write would name our made-up STag, which the
      // responder may rightly report before it finds the framing broken.
      // msn-repeat: a repeat needs a Send before it, which would use rping's only receive.
      case kTermMarker: case kTermBounds: case kTermAccess: case kTermReadBounds: case kTermOrd: case kTermOversize:
      case kTermMsnRepeat:
        r.skipped = true;
        r.message = "not applicable against rping -s: the fault needs a buffer the responder advertises or a second posted receive";
        return std::nullopt;
      default: break;
    }
    Ctl c;
    c.credits = 1;
    c.recv_size = kRpingInfo;
    c.ird = s.qp.effective_ord();
    c.stag = 0x5eed0000;  // any STag: rping -s advertises none, so none of ours is valid there
    c.len = 4096;
    c.len_ro = 4096;
    return c;
  }

  // Breaks one rule, then requires the Terminate (or close) of ScenarioInfo.
  bool provoke() {
    if (info.close_only) {  // the fault already happened with the Request
      s.link->run_until([&] { return s.dead(); }, s.timeout_ms);
      return judge();
    }
    const auto c = o.peer_program == "rping" ? rping_server_resources() : hello({});
    if (!c) return false;
    const std::uint32_t bad_stag = c->stag + (0x10000u << 8);  // an index no region has
    auto& local = s.buffer(std::max<std::uint32_t>(c->len_ro, 4096));
    fill_pattern(local, 3);  // no run of zeros for a misframed CRC field to land on
    const auto local_stag = s.pd.register_mr(local, kLocalWrite);
    const std::array<std::byte, 16> small{};
    SendWr w{kDataBase, WrOpcode::write, {local_stag, 0, 64}};
    w.remote_stag = c->stag;
    w.remote_to = c->to;
    switch (info.code) {
      case kTermCrc:
        s.qp.faults().corrupt_crc_fpdu = s.qp.fpdus_sent() + 1;
        s.send(small);
        break;
      case kTermMarker:
        if (!s.qp.markers_to_peer()) {
          r.skipped = true;
          r.message = "not applicable: the responder did not ask for markers (start the peer with --markers)";
          return false;
        }
        s.qp.faults().wrong_marker = s.qp.markers_sent() + 1;
        w.local.length = std::min<std::uint32_t>(2048, c->len);
        s.post(w);
        break;
      case kTermMsnSkip:
        s.qp.faults().skip_msn_message = s.qp.send_messages() + 1;
        s.send(small);
        break;
      case kTermMsnRepeat:
        s.qp.faults().repeat_msn_message = s.qp.send_messages() + 1;
        s.send(small);
        break;
      case kTermOversize:
        // The bogus length swallows the start of the next FPDU; the CRC can no longer match.
        s.qp.faults().oversize_length_fpdu = s.qp.fpdus_sent() + 1;
        s.post(w);
        w.wr_id = kDataBase + 1;
        s.post(w);
        break;
      case kTermNoBuffer:  // one Send more than the receives the responder posted
        for (unsigned k = 0; k <= c->credits; ++k) s.send(std::span(small).first(8));
        break;
      case kTermInvalidate:
        s.send(small, WrOpcode::send_invalidate, bad_stag);
        break;
      case kTermTooLong: {
        auto& big = s.buffer(c->recv_size + 1);
        const auto big_stag = s.pd.register_mr(big, 0);
        s.post({kDataBase, WrOpcode::send, {big_stag, 0, c->recv_size + 1}});
        break;
      }
      case kTermStag:
        w.remote_stag = bad_stag;
        s.post(w);
        break;
      case kTermBounds:
        w.remote_to = c->to + c->len - 32;
        s.post(w);
        break;
      case kTermAccess:
        w.remote_stag = c->stag_ro;
        w.remote_to = c->to_ro;
        s.post(w);
        break;
      case kTermReadStag:
      case kTermReadBounds:
        w.op = WrOpcode::read;
        w.remote_stag = info.code == kTermReadStag ? bad_stag : c->stag_ro;
        w.remote_to = c->to_ro + (info.code == kTermReadBounds ? c->len_ro - 32 : 0);
        s.post(w);
        break;
      case kTermOrd:
        s.qp.faults().ignore_ord = true;
        for (std::uint32_t k = 0; k <= c->ird; ++k) {
          SendWr rd{kDataBase + k, WrOpcode::read, {local_stag, 0, c->len_ro}};
          rd.remote_stag = c->stag_ro;
          rd.remote_to = c->to_ro;
          s.post(rd);
        }
        break;
      default: break;
    }
    s.link->run_until([&] { return s.dead() || s.qp.terminate_received().has_value(); }, s.timeout_ms);
    return judge();
  }

  bool judge() {
    const auto& t = s.qp.terminate_received();
    if (info.close_only) {
      if (t) {
        r.message = fmt::format("the responder sent Terminate {}/{}/{:#04x}; it must close without one", t->layer,
                                t->etype, t->code);
        return false;
      }
      if (s.link->peer_reset()) {  // an abort is a close too (RFC 5044 §7.1.2 asks for no more than that)
        r.message = "the responder reset the connection without a Terminate, as required";
        return true;
      }
      if (!s.link->peer_eof()) return fail("waiting for the responder to close");
      r.message = "the responder closed the connection without a Terminate, as required";
      return true;
    }
    const auto& e = *info.expect;
    if (!t) return fail(fmt::format("waiting for Terminate {}/{}/{:#04x}", e.layer, e.etype, e.code));
    r.message = fmt::format("the responder sent Terminate {}/{}/{:#04x}", t->layer, t->etype, t->code);
    if (t->layer != e.layer || t->etype != e.etype || t->code != e.code) {
      r.message += fmt::format("; expected {}/{}/{:#04x} ({})", e.layer, e.etype, e.code, info.rule);
      return false;
    }
    // After its Terminate the responder must close.
    s.link->run_until([&] { return s.link->peer_eof(); }, s.timeout_ms);
    if (!s.link->peer_eof()) {
      r.message += ", but did not close the connection";
      return false;
    }
    r.message += " and closed, as required";
    return true;
  }
};

// ---------------------------------------------------------- responder side

struct Responder {
  Session& s;
  const PeerOptions& o;
  nlohmann::json& rep;

  bool fail(std::string_view step) {
    rep["message"] = s.why(step);
    return false;
  }

  bool result(std::optional<std::size_t> bad_at) {
    Ctl m;
    m.kind = kResult;
    m.status = bad_at ? kMismatch : kOk;
    m.to = bad_at.value_or(0);
    if (bad_at) rep["message"] = fmt::format("data differ at octet {} of our buffer", *bad_at);
    return s.send(m.encode()) && !bad_at;
  }

  bool wait_done() {
    const auto m = s.receive();
    if (!m) return fail("waiting for done");
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kDone) {
      rep["message"] = "expected the initiator's done message";
      return false;
    }
    return true;
  }

  // rping's server: Read the advertised buffer, say so, Write it back to the
  // next advertised buffer, say so; until the client closes.
  bool rping(Bytes first) {
    auto& sink = s.buffer(o.max_size);
    const auto stag = s.pd.register_mr(sink, kLocalWrite, address_of(sink));
    const std::array<std::byte, kRpingInfo> go{};
    std::vector<std::byte> m(first.begin(), first.end());
    std::uint64_t pings = 0;
    for (;;) {
      if (m.size() != kRpingInfo) {
        rep["message"] = fmt::format("ping {}: expected a 16-octet buffer advertisement, got {} octets", pings, m.size());
        return false;
      }
      const std::uint64_t addr = protocols::be64(m, 0);
      const std::uint32_t rkey = protocols::be32(m, 8), len = protocols::be32(m, 12);
      if (len > sink.size()) {
        rep["message"] = fmt::format("ping {}: buffer of {} octets exceeds our limit {}", pings, len, sink.size());
        return false;
      }
      SendWr rd{kDataBase, WrOpcode::read, {stag, 0, len}};
      rd.remote_stag = rkey;
      rd.remote_to = addr;
      const std::uint64_t target = s.completed + 1;
      s.post(rd);
      if (!s.wait([&] { return s.completed >= target; })) return fail(fmt::format("ping {}: RDMA Read", pings));
      if (!s.send(go)) return fail("go-ahead after the Read");
      const auto w = s.receive();
      if (!w || w->size() != kRpingInfo) return fail(fmt::format("ping {}: waiting for the sink advertisement", pings));
      const std::uint32_t wlen = std::min<std::uint32_t>(
          protocols::be32(*w, 12), static_cast<std::uint32_t>(strnlen(reinterpret_cast<const char*>(sink.data()), len) + 1));
      SendWr wr{kDataBase, WrOpcode::write, {stag, 0, std::min(wlen, len)}};
      wr.remote_stag = protocols::be32(*w, 8);
      wr.remote_to = protocols::be64(*w, 0);
      const std::uint64_t target2 = s.completed + 1;
      s.post(wr);
      if (!s.wait([&] { return s.completed >= target2; })) return fail(fmt::format("ping {}: RDMA Write", pings));
      if (!s.send(go)) return fail("go-ahead after the Write");
      ++pings;
      rep["iterations"] = pings;
      const auto next = s.receive();
      if (!next) {  // the client is done when it closes
        if (s.link->peer_eof() && s.failure.empty() && !s.qp.terminate_received()) return true;
        return fail("waiting for the next ping");
      }
      m = *next;
    }
  }

  bool scenario(const Ctl& h) {
    const ScenarioInfo* info = nullptr;
    for (const auto& i : scenarios())
      if (i.code == h.scenario) info = &i;
    Ctl ready;
    ready.kind = kReady;
    ready.scenario = h.scenario;
    if (!info || h.size > o.max_size || (h.size == 0 && !info->expect) || info->code == kRping) {
      ready.status = kRefused;
      s.send(ready.encode());
      rep["message"] = fmt::format("refused scenario {} size {}", h.scenario, h.size);
      return false;
    }
    rep["scenario"] = info->name;
    rep["size"] = h.size;
    rep["iterations"] = h.iterations;
    const bool term = info->expect.has_value();
    const std::uint32_t size = h.size;
    // Receive slots for what follows (none when the scenario wants "no buffer").
    s.setup_slots(info->code == kSendLat ? size : kMinSlot, info->code == kTermNoBuffer ? 0 : kSlots);
    ready.credits = info->code == kTermNoBuffer ? 0 : kSlots;
    ready.recv_size = static_cast<std::uint32_t>(s.slot_size);
    ready.ird = s.qp.effective_ird();
    const std::uint32_t slots = bw_slots(size, h.iterations);
    // The write target and the read-only source.
    const std::size_t rw_len = info->code == kWriteBw ? std::size_t(size) * slots : term ? 4096 : size;
    const std::size_t ro_len = info->code == kReadBw ? std::size_t(size) * slots : term ? 256 * 1024 : 0;
    auto& rw = s.buffer(rw_len);
    auto& ro = s.buffer(ro_len);
    for (std::uint32_t k = 0; info->code == kReadBw && k < slots; ++k)
      fill_pattern(std::span(ro).subspan(std::size_t(k) * size, size), k + 1);
    ready.stag = s.pd.register_mr(rw, kRemoteWrite | kLocalWrite, address_of(rw));
    ready.to = address_of(rw);
    ready.len = static_cast<std::uint32_t>(rw_len);
    if (ro_len) {
      ready.stag_ro = s.pd.register_mr(ro, kRemoteRead, address_of(ro));
      ready.to_ro = address_of(ro);
      ready.len_ro = static_cast<std::uint32_t>(ro_len);
    }
    if (!s.send(ready.encode())) return fail("sending ready");
    const std::uint64_t iters = h.iterations;
    switch (info->code) {
      case kWriteBw: {
        if (!wait_done()) return false;
        for (std::uint32_t k = 0; k < std::min<std::uint64_t>(slots, iters); ++k)
          if (const auto at = check_pattern(std::span(rw).subspan(std::size_t(k) * size, size), k + 1))
            return result(std::size_t(k) * size + *at);
        return result(std::nullopt);
      }
      case kReadBw:
        return wait_done() && result(std::nullopt);
      case kSendLat: {
        auto& msg = s.buffer(size);
        fill_pattern(msg, kSeedLat);
        const std::vector<std::byte> base = msg;
        const auto stag = s.pd.register_mr(msg, 0);
        for (std::uint64_t i = 0; i < iters; ++i) {
          const auto got = s.receive_in_place();
          if (!got) return fail(fmt::format("waiting for ping {}", i));
          const bool same = same_message(got->second, base, i, true);
          s.repost(got->first);
          if (!same) return result(i);
          stamp_send(msg, i);
          if (!s.post({kDataBase + i, WrOpcode::send, {stag, 0, size}})) return fail("Send");
        }
        return wait_done() && result(std::nullopt);
      }
      case kWriteLat: {
        auto& src = s.buffer(size);
        fill_pattern(src, kSeedLat);
        const std::vector<std::byte> base = src;
        const auto stag = s.pd.register_mr(src, 0);
        for (std::uint64_t i = 0; i < iters; ++i) {
          if (!s.wait([&] { return rw.back() == write_tag(i); })) return fail(fmt::format("waiting for ping {}", i));
          if (!same_message(Bytes(rw), base, i, false)) return result(i);
          src.back() = write_tag(i);
          SendWr w{kDataBase + i, WrOpcode::write, {stag, 0, size}};
          w.remote_stag = h.stag;
          w.remote_to = h.to;
          if (!s.post(w)) return fail("RDMA Write");
        }
        return wait_done() && result(std::nullopt);
      }
      default:  // terminate-*: the initiator breaks a rule; we must answer
        s.link->run_until([&] { return s.dead(); }, s.timeout_ms);
        if (!s.qp.terminate_sent()) return fail("waiting for the initiator's violation");
        rep["message"] = fmt::format("sent Terminate {}/{}/{:#04x}: {}", s.qp.terminate_sent()->layer,
                                     s.qp.terminate_sent()->etype, s.qp.terminate_sent()->code,
                                     s.qp.terminate_sent()->reason);
        return true;
    }
  }
};

nlohmann::json serve_one(Fd fd, const PeerOptions& o, const std::string& pcap) {
  nlohmann::json rep = {{"scenario", nullptr}, {"ok", false}};
  QpConfig cfg = o.qp;
  cfg.initiator = false;
  Session s(cfg, std::move(fd), o.wait, o.idle_timeout_ms);
  sockaddr_storage peer{};
  socklen_t pl = sizeof peer;
  ::getpeername(s.link->fd(), reinterpret_cast<sockaddr*>(&peer), &pl);
  rep["peer"] = endpoint_name(peer);
  std::string err;
  if (!pcap.empty() && !s.link->record(pcap, err)) rep["pcap_error"] = err;
  if (!pcap.empty()) rep["pcap"] = pcap;
  s.setup_slots(kMinSlot, 1);
  s.qp.connect();
  Responder resp{s, o, rep};
  bool ok = false;
  if (!s.wait([&] { return s.qp.state() == QpState::connected; })) {
    ok = resp.fail("MPA setup");
    ok = ok || (o.qp.reject && s.qp.state() == QpState::closed);
    if (o.qp.reject) rep["message"] = "rejected the MPA Request, as configured";
  } else if (const auto first = s.receive_in_place(); !first) {
    resp.fail("waiting for the first message");
  } else if (first->second.size() == kRpingInfo) {
    // rping goes on in the slots it started in; a hello sets up its own.
    rep["scenario"] = "rping";
    const std::vector<std::byte> m(first->second.begin(), first->second.end());
    s.repost(first->first);
    ok = resp.rping(m);
  } else if (const auto h = Ctl::decode(first->second); h && h->kind == kHello) {
    ok = resp.scenario(*h);
  } else {
    rep["message"] = fmt::format("the first message ({} octets) is neither an rping advertisement nor a hello",
                                 first->second.size());
  }
  rep["negotiated"] = s.negotiated();
  rep["terminate_sent"] = terminate_json(s.qp.terminate_sent());
  rep["terminate_received"] = terminate_json(s.qp.terminate_received());
  s.link->close(std::min(o.idle_timeout_ms, 5000));
  rep["ok"] = ok;
  return rep;
}

}  // namespace

const std::vector<ScenarioInfo>& scenarios() {
  static const std::vector<ScenarioInfo> v = make_catalog();
  return v;
}

const ScenarioInfo* find_scenario(std::string_view name) {
  for (const auto& s : scenarios())
    if (s.name == name) return &s;
  return nullptr;
}

nlohmann::json RunResult::to_json() const {
  nlohmann::json j = {{"scenario", scenario},
                      {"verdict", skipped ? "SKIP" : ok ? "PASS" : "FAIL"},
                      {"message", message},
                      {"iterations", iterations},
                      {"bytes", bytes},
                      {"seconds", seconds},
                      {"negotiated", negotiated},
                      {"terminate_received", terminate_json(terminate_received)},
                      {"terminate_sent", terminate_json(terminate_sent)}};
  if (seconds > 0 && bytes) j["gbit_per_s"] = static_cast<double>(bytes) * 8 / seconds / 1e9;
  if (seconds > 0 && iterations) j["usec_per_iteration"] = seconds * 1e6 / static_cast<double>(iterations);
  if (seconds > 0 && iterations && scenario.ends_with("-lat"))  // one iteration is a round trip
    j["half_round_trip_usec"] = seconds * 1e6 / static_cast<double>(iterations) / 2;
  j["size"] = size;
  return j;
}

RunResult run_initiator(std::string_view peer, const RunOptions& o) {
  RunResult r;
  r.scenario = o.scenario;
  const ScenarioInfo* info = find_scenario(o.scenario);
  if (!info) {
    r.message = fmt::format("unknown scenario '{}'", o.scenario);
    return r;
  }
  const std::uint32_t size = o.size ? o.size : info->default_size;
  const std::uint64_t iters = std::min<std::uint64_t>(o.iterations ? o.iterations : info->default_iterations, 0xffffffffu);
  if (info->code == kRping && size < fmt::format("rdma-ping-{}: ", iters).size() + 2) {
    r.message = fmt::format("rping needs a buffer of at least {} octets for {} pings",
                            fmt::format("rdma-ping-{}: ", iters).size() + 2, iters);
    return r;
  }
  QpConfig cfg = o.qp;
  cfg.initiator = true;
  if (info->needs_crc) cfg.crc = true;
  if (info->close_only) cfg.faults.fpdu_before_reply = true;
  if (const std::string bad = Device().validate(cfg); !bad.empty()) {
    r.message = fmt::format("configuration not supported: {}", bad);
    return r;
  }
  std::string err;
  Fd fd = tcp_connect(peer, o.timeout_ms, err);
  if (!fd) {
    r.message = err;
    return r;
  }
  Session s(cfg, std::move(fd), o.wait, o.timeout_ms);
  if (!o.pcap.empty() && !s.link->record(o.pcap, err)) {
    r.message = err;
    return r;
  }
  s.setup_slots(info->code == kSendLat ? size : kMinSlot, kSlots);
  s.qp.connect();
  Initiator in{s, *info, o, r, size, iters};
  bool ok = false;
  if (info->close_only) {
    ok = in.provoke();
  } else if (!s.wait([&] { return s.qp.state() == QpState::connected; })) {
    in.fail("MPA setup");
  } else {
    r.negotiated = s.negotiated();
    switch (info->code) {
      case kRping: ok = in.rping(); break;
      case kWriteBw: ok = in.write_bw(); break;
      case kReadBw: ok = in.read_bw(); break;
      case kSendLat: ok = in.send_lat(); break;
      case kWriteLat: ok = in.write_lat(); break;
      default: ok = in.provoke(); break;
    }
  }
  r.ok = ok && !r.skipped;
  r.size = size;
  r.iterations = info->expect || info->close_only ? 0 : iters;
  r.terminate_received = s.qp.terminate_received();
  r.terminate_sent = s.qp.terminate_sent();
  if (r.negotiated.is_null()) r.negotiated = s.negotiated();
  s.link->close(2000);
  return r;
}

// ------------------------------------------------- perftest -R (rdma_cm)

namespace {

// perftest's destination record as it crosses rdma_cm connections: its C
// structure with every field in network order (docs/lab.md).
constexpr std::size_t kPerftestRecord = 56;
struct PerftestRecord {
  std::uint32_t lid = 0, out_reads = 0, qpn = 0, psn = 0, rkey = 0;
  std::uint64_t vaddr = 0;
  std::array<std::byte, 16> gid{};
};
std::array<std::byte, kPerftestRecord> encode_record(const PerftestRecord& d) {
  std::array<std::byte, kPerftestRecord> b{};
  protocols::put_be32(b, 0, d.lid);
  protocols::put_be32(b, 4, d.out_reads);
  protocols::put_be32(b, 8, d.qpn);
  protocols::put_be32(b, 12, d.psn);
  protocols::put_be32(b, 16, d.rkey);
  protocols::put_be64(b, 24, d.vaddr);
  std::copy(d.gid.begin(), d.gid.end(), b.begin() + 32);
  return b;
}
// The messages of the setup steps, the same from both sides: our version,
// page and cache-line size, the MTU digit (1024) and a record of zeros.
struct PerftestSetup {
  std::array<std::byte, 16> version{};
  std::array<std::byte, 4> page{}, line{};
  std::array<std::byte, 2> mtu{std::byte{'3'}, std::byte{0}};
  std::array<std::byte, kPerftestRecord> zeros{};
  PerftestSetup() {
    std::memcpy(version.data(), "6.06", 4);
    protocols::put_be32(page, 0, 4096);
    protocols::put_be32(line, 0, 64);
  }
};
// A NUL-padded text field (the version) as a string.
std::string c_text(const std::vector<std::byte>& b) {
  const char* p = reinterpret_cast<const char*>(b.data());
  return std::string(p, strnlen(p, b.size()));
}

// Our record: a buffer of the test connection with its STag and address.
struct PerftestBuffer {
  std::uint32_t stag = 0;
  std::array<std::byte, kPerftestRecord> record{};
};
PerftestBuffer perftest_buffer(Session& test, std::vector<std::byte>& buf, unsigned access, unsigned out_reads) {
  fill_pattern(buf, 18515);
  PerftestBuffer b;
  b.stag = test.pd.register_mr(buf, access, address_of(buf));
  PerftestRecord mine;
  mine.out_reads = out_reads;
  mine.qpn = 2;
  mine.psn = static_cast<std::uint32_t>(Clock::now().time_since_epoch().count()) & 0xffffff;
  mine.rkey = b.stag;
  mine.vaddr = address_of(buf);
  b.record = encode_record(mine);
  return b;
}

PerftestRecord decode_record(Bytes b) {
  PerftestRecord d;
  d.lid = protocols::be32(b, 0);
  d.out_reads = protocols::be32(b, 4);
  d.qpn = protocols::be32(b, 8);
  d.psn = protocols::be32(b, 12);
  d.rkey = protocols::be32(b, 16);
  d.vaddr = protocols::be64(b, 24);
  std::copy(b.begin() + 32, b.begin() + 48, d.gid.begin());
  return d;
}

}  // namespace

RunResult run_perftest_client(std::string_view peer, std::string_view program, const RunOptions& o) {
  RunResult r;
  r.scenario = std::string(program);
  const bool write = program == "ib_write_bw", read = program == "ib_read_bw", send = program == "ib_send_bw";
  if (!write && !read && !send) {
    r.message = fmt::format("perftest program '{}' over iWARP: ib_write_bw, ib_read_bw or ib_send_bw (their -R servers)",
                            program);
    return r;
  }
  const std::uint32_t size = o.size ? o.size : 65536;
  const std::uint64_t iters = o.iterations ? o.iterations : 1000;
  QpConfig cfg = o.qp;
  cfg.initiator = true;
  if (const std::string bad = Device().validate(cfg); !bad.empty()) {
    r.message = fmt::format("configuration not supported: {}", bad);
    return r;
  }
  // Each connection: TCP, MPA as rdma_cm does it over iWARP (no private
  // data beyond the enhanced header), receive slots posted.
  auto open = [&](std::string_view what, const std::string& pcap) -> std::unique_ptr<Session> {
    std::string err;
    // The server listens for the test connection only once it has set it
    // up: like perftest's own client, try again while it refuses.
    const auto until = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    Fd fd = tcp_connect(peer, o.timeout_ms, err);
    while (!fd && err.find("refused") != std::string::npos && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      fd = tcp_connect(peer, o.timeout_ms, err);
    }
    if (!fd) {
      r.message = fmt::format("{}: {}", what, err);
      return nullptr;
    }
    auto s = std::make_unique<Session>(cfg, std::move(fd), o.wait, o.timeout_ms);
    if (!pcap.empty() && !s->link->record(pcap, err)) {
      r.message = err;
      return nullptr;
    }
    s->setup_slots(kMinSlot, kSlots);
    s->qp.connect();
    if (!s->wait([&] { return s->qp.state() == QpState::connected; })) {
      r.message = s->why(fmt::format("{}: MPA setup", what));
      return nullptr;
    }
    return s;
  };
  // One step of perftest's exchange on the first connection: we send, then
  // take the server's message of the same size.
  std::unique_ptr<Session> ctl = open("the exchange connection", o.pcap);
  if (!ctl) return r;
  r.negotiated = ctl->negotiated();
  std::string version;
  auto step = [&](Bytes mine, std::string_view what) -> std::optional<std::vector<std::byte>> {
    if (!ctl->send(mine)) return r.message = ctl->why(fmt::format("perftest {}: sending", what)), std::nullopt;
    auto m = ctl->receive();
    if (!m) return r.message = ctl->why(fmt::format("perftest {}: waiting for the server's", what)), std::nullopt;
    if (m->size() != mine.size()) {
      r.message = fmt::format("perftest {}: the server sent {} octets, {} expected", what, m->size(), mine.size());
      return std::nullopt;
    }
    return m;
  };
  const PerftestSetup set;
  const auto& zeros = set.zeros;
  const auto rv = step(set.version, "version");
  if (!rv) return r;
  version = c_text(*rv);
  if (!step(set.page, "page size") || !step(set.line, "cache line size") || !step(set.mtu, "MTU") ||
      !step(zeros, "first record"))
    return r;
  // The test connection, then the records: one more of zeros, then ours
  // (the first carries the keys, the others are barriers).
  std::unique_ptr<Session> test = open("the test connection", o.pcap.empty() ? "" : o.pcap + ".test.pcap");
  if (!test) return r;
  const PerftestBuffer pb = perftest_buffer(*test, test->buffer(size), kLocalWrite, cfg.ord);
  const std::uint32_t stag = pb.stag;
  const auto& rec = pb.record;
  if (!step(zeros, "second record")) return r;
  const auto keys = step(rec, "keys");
  if (!keys) return r;
  const PerftestRecord theirs = decode_record(*keys);
  const int barriers = send ? 3 : 2;  // ib_send_bw: one more once the server's receives are posted
  for (int i = 0; i < barriers; ++i)
    if (!step(rec, "barrier")) return r;

  std::uint64_t posted = 0;
  const unsigned window = read ? std::max(1u, std::min<unsigned>(o.window, std::max<unsigned>(1, theirs.out_reads))) : o.window;
  const auto t0 = Clock::now();
  while (test->completed < iters) {
    while (posted < iters && test->outstanding < window) {
      SendWr w{kDataBase + posted++, write ? WrOpcode::write : read ? WrOpcode::read : WrOpcode::send, {stag, 0, size}};
      w.remote_stag = theirs.rkey;
      w.remote_to = theirs.vaddr;
      test->post(w);
    }
    const std::uint64_t target = test->completed + 1;
    if (!test->wait([&] { return test->completed >= target; })) {
      r.message = test->why(write ? "RDMA Write" : read ? "RDMA Read" : "Send");
      return r;
    }
  }
  // A Send or Write completes once it is framed; the test connection is
  // only driven here, so let it put everything on the wire before the
  // exchange goes on (the ib_send_bw server answers the next barrier only
  // once every Send has arrived).
  if (!test->wait([&] { return test->qp.output().empty(); })) {
    r.message = test->why("sending the last of the test's data");
    return r;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.size = size;
  r.iterations = iters;
  r.bytes = iters * size;
  // After the test: a barrier, the report (not after a one-way Send test), a barrier.
  if (!step(rec, "barrier after the test")) return r;
  if (!send) {
    const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
    const double mpps = r.seconds > 0 ? static_cast<double>(iters) / r.seconds / 1e6 : 0;
    for (const std::uint64_t x : {std::uint64_t{size}, iters, std::bit_cast<std::uint64_t>(gbps),
                                  std::bit_cast<std::uint64_t>(gbps), std::bit_cast<std::uint64_t>(mpps)}) {
      std::array<std::byte, 8> b{};
      protocols::put_be64(b, 0, x);
      if (!step(b, "bandwidth report")) return r;
    }
    if (!step(rec, "closing barrier")) return r;
  }
  test->link->close(2000);
  ctl->link->close(2000);
  r.ok = true;
  r.message = fmt::format("{} {}s of {} octets completed against perftest {} -R (server QPN {}, R_Key {:#x})", iters,
                          write ? "RDMA Write" : read ? "RDMA Read" : "Send", size, version, theirs.qpn, theirs.rkey);
  return r;
}

void serve_perftest(int listen_fd, const PeerOptions& o, std::string_view program,
                    const std::function<void(const nlohmann::json&)>& on_connection, std::stop_token stop) {
  const bool send = program == "ib_send_bw";
  if (program != "ib_write_bw" && program != "ib_read_bw" && !send) {
    on_connection({{"ok", false}, {"error", fmt::format("perftest program '{}' over iWARP: ib_write_bw, ib_read_bw "
                                                        "or ib_send_bw (their -R clients)", program)}});
    return;
  }
  QpConfig cfg = o.qp;
  cfg.initiator = false;
  for (std::uint64_t n = 0; (o.connections == 0 || n < o.connections) && !stop.stop_requested();) {
    std::string err;
    Fd fa = tcp_accept(listen_fd, 200, err);
    if (!fa) continue;
    ++n;
    nlohmann::json rep = {{"connection", n}, {"ok", false}, {"program", program}};
    auto fail = [&](const std::string& why) {
      rep["error"] = why;
      on_connection(rep);
    };
    // `slots`: receives posted for the exchange (none on the test connection,
    // where ib_send_bw's Sends must land in the receives of the test).
    auto start = [&](Fd fd, const std::string& pcap, unsigned slots) {
      auto ses = std::make_unique<Session>(cfg, std::move(fd), o.wait, o.idle_timeout_ms);
      std::string e;
      if (!pcap.empty() && !ses->link->record(pcap, e)) rep["pcap_error"] = e;
      ses->setup_slots(kMinSlot, slots);
      ses->qp.connect();
      return ses;
    };
    const std::string pcap = o.pcap_dir.empty() ? "" : fmt::format("{}/peer-perftest-{}.pcap", o.pcap_dir, n);
    auto ctl = start(std::move(fa), pcap, kSlots);
    if (!ctl->wait([&] { return ctl->qp.state() == QpState::connected; })) {
      fail(ctl->why("the exchange connection: MPA setup"));
      continue;
    }
    // The server's side of each step: the client's message, then ours of the same size.
    auto step = [&](Bytes mine, std::string_view what) -> std::optional<std::vector<std::byte>> {
      auto m = ctl->receive();
      if (!m) return fail(ctl->why(fmt::format("perftest {}: waiting for the client's", what))), std::nullopt;
      if (m->size() != mine.size())
        return fail(fmt::format("perftest {}: the client sent {} octets, {} expected", what, m->size(), mine.size())),
               std::nullopt;
      if (!ctl->send(mine)) return fail(ctl->why(fmt::format("perftest {}: sending", what))), std::nullopt;
      return m;
    };
    const PerftestSetup set;
    const auto& zeros = set.zeros;
    const auto rv = step(set.version, "version");
    if (!rv) continue;
    rep["version"] = c_text(*rv);
    if (!step(set.page, "page size") || !step(set.line, "cache line size") || !step(set.mtu, "MTU") ||
        !step(zeros, "first record"))
      continue;
    // Our answer is only framed: put it on the wire before waiting for the
    // client's second connection (the client sends nothing until it has it).
    if (!ctl->wait([&] { return ctl->qp.output().empty(); })) {
      fail(ctl->why("perftest first record: sending"));
      continue;
    }
    Fd fb;
    for (const auto until = Clock::now() + std::chrono::milliseconds(o.idle_timeout_ms);
         !fb && Clock::now() < until && !stop.stop_requested();)
      fb = tcp_accept(listen_fd, 200, err);
    if (!fb) {
      fail("the test connection: the client did not connect");
      continue;
    }
    auto test = start(std::move(fb), pcap.empty() ? "" : pcap + ".test.pcap", 0);
    // Connected once our Reply is framed; the exchange goes on the other
    // connection, so put the Reply on the wire first.
    if (!test->wait([&] { return test->qp.state() == QpState::connected && test->qp.output().empty(); })) {
      fail(test->why("the test connection: MPA setup"));
      continue;
    }
    // Our buffer: remote Write and Read for the client's test; for
    // ib_send_bw receives of the whole buffer, reposted as they complete.
    auto& buf = test->buffer(std::min<std::size_t>(o.max_size, 16u << 20));
    const PerftestBuffer pb = perftest_buffer(*test, buf, kLocalWrite | kRemoteWrite | kRemoteRead, cfg.ird);
    const std::uint32_t stag = pb.stag;
    const auto& rec = pb.record;
    if (!step(zeros, "second record")) continue;
    const auto keys = step(rec, "keys");
    if (!keys || !step(rec, "barrier") || !step(rec, "barrier")) continue;
    const PerftestRecord client = decode_record(*keys);
    constexpr unsigned kRecvDepth = 32;
    // ib_send_bw's client sends only as far as the server's credits allow:
    // the server writes the count of Sends it has received, 4 octets
    // little-endian, to the address of the client's keys (seen in the
    // siw-siw capture). We write it after every Send, from a ring of slots.
    constexpr unsigned kCreditSlots = 64;
    auto& credits = test->buffer(4 * kCreditSlots);
    const std::uint32_t credit_stag = test->pd.register_mr(credits, 0);
    const auto recv_len = static_cast<std::uint32_t>(buf.size());
    std::uint64_t received = 0, received_octets = 0;
    if (send) {
      for (unsigned i = 0; i < kRecvDepth; ++i) test->qp.post_recv({kDataBase + i, {stag, 0, recv_len}});
      if (!step(rec, "barrier with the receives posted")) continue;
    }
    // Serve the test until the client's barrier after it arrives on the
    // exchange connection, driving both connections in turn.
    auto take = [&] {
      test->drain();
      while (!test->recvs.empty()) {
        const Completion c = test->recvs.front();
        test->recvs.pop_front();
        if (c.wr_id < kDataBase) continue;  // a control slot: perftest sends nothing there
        ++received;
        received_octets += c.byte_len;
        test->qp.post_recv({c.wr_id, {stag, 0, recv_len}});
        const std::size_t slot = (received % kCreditSlots) * 4;
        protocols::put_le32(credits, slot, static_cast<std::uint32_t>(received));
        SendWr w{kSendBase + kSlots + slot / 4, WrOpcode::write, {credit_stag, slot, 4}};
        w.remote_stag = client.rkey;
        w.remote_to = client.vaddr;
        test->qp.post_send(w);
      }
    };
    const auto until = Clock::now() + std::chrono::milliseconds(o.idle_timeout_ms * 4);
    bool barrier_in = false;
    while (!barrier_in && Clock::now() < until && !stop.stop_requested() && test->failure.empty() && !test->dead()) {
      test->link->run_until([&] { take(); return false; }, 5);
      ctl->link->run_until([&] { ctl->drain(); return !ctl->recvs.empty(); }, 5);
      barrier_in = !ctl->recvs.empty() || ctl->dead();
    }
    take();
    if (send) {
      rep["received"] = received;
      rep["received_octets"] = received_octets;
    }
    if (!test->failure.empty() || test->qp.terminate_received() || test->qp.terminate_sent()) {
      fail(test->why("the test"));
      continue;
    }
    if (!step(rec, "barrier after the test")) continue;
    bool reported = true;
    if (!send)
      for (int i = 0; i < 5 && reported; ++i) reported = step(std::array<std::byte, 8>{}, "bandwidth report").has_value();
    if (!reported || (!send && !step(rec, "closing barrier"))) continue;
    // The client closes first; we follow.
    test->link->close(2000);
    ctl->link->close(2000);
    rep["ok"] = !send || received > 0;
    rep["negotiated"] = ctl->negotiated();
    on_connection(rep);
  }
}

void serve(int listen_fd, const PeerOptions& o, const std::function<void(const nlohmann::json&)>& on_connection,
           std::stop_token stop) {
  for (std::uint64_t n = 0; (o.connections == 0 || n < o.connections) && !stop.stop_requested();) {
    std::string err;
    Fd fd = tcp_accept(listen_fd, 200, err);
    if (!fd) continue;
    ++n;
    const std::string pcap = o.pcap_dir.empty() ? "" : fmt::format("{}/peer-{}.pcap", o.pcap_dir, n);
    on_connection(serve_one(std::move(fd), o, pcap));
  }
}

}  // namespace rdmaconf::interop::iwarp

#pragma once
// What the iWARP scenarios share: the control exchange with our own peer,
// rping's buffer advertisement, and a Session (a QP on a TCP link with its
// memory). The catalog, the initiator, the responder and the perftest
// exchange each have a file of their own (catalog.cpp, initiator.cpp,
// responder.cpp, perftest.cpp).
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <deque>
#include <span>
#include <stop_token>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engines/common/socket.hpp"
#include "engines/iwarp/device.hpp"
#include "interop/iwarp/scenarios.hpp"
#include "interop/sessions.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/iwarp/headers.hpp"

namespace rdmaconf::interop::iwarp::detail {

using namespace engine::iwarp;
using protocols::Bytes;
using protocols::MutBytes;
using Clock = std::chrono::steady_clock;
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
  kCrcIgnored,
  kAtomic,
  kImmediate,
  kZeroLength,
  kFpduSplit,
  kRtrBits,
  kMarkerReservedBits,
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
  kMpaKey,
  kMpaRevision,
  kMpaPrivateData,
  kTermDdpVersion,
  kTermDdpVersionTagged,
  kTermRdmapVersion,
  kTermOpcode,
  kTermQn,
  kTermReadVersion,
  kTermReadOpcode,
  kTermReadWrap,
  kTermZeroSend,
  kTermAtomicAlign,
  kTermCmpSwapAlign,
  kTermAtomicOpcode,
  kTermImmediateLength,
  kSilentAfterCrc,
  kSilentAfterMsn,
  kTermFirstError,
  kMpaWithheld,
  kTermStagStream,
  kTermReadStagStream,
  kTermInvalidateStream,
  kTermRevoked,
  kTermAtomicVersion,
  kTermAtomicDdpVersion,
  kTermAtomicRdmapOpcode,
};

// The `atomic` scenario's steps on the first word of the responder's
// buffer (zero to begin with), each with the original value the Atomic
// Response must carry; the word ends as kAtomicFinal.
struct AtomicStep {
  bool compare_swap;
  std::uint64_t add_swap, compare, original;
};
inline constexpr std::uint64_t kAtomicA = 0x0000000100000001ull, kAtomicB = 0x00000000fffffffeull,
                               kAtomicSwap = 0x5eed5eed5eed5eedull;
inline constexpr std::array<AtomicStep, 5> kAtomicSteps = {{
    {false, kAtomicA, 0, 0},                                        // FetchAdd A
    {false, kAtomicB, 0, kAtomicA},                                 // FetchAdd B
    {true, kAtomicSwap, kAtomicA, kAtomicA + kAtomicB},             // CmpSwap, compare fails: unchanged
    {true, kAtomicSwap, kAtomicA + kAtomicB, kAtomicA + kAtomicB},  // CmpSwap, compare matches: swapped
    {false, 0, 0, kAtomicSwap},                                     // FetchAdd 0 reads the swapped value
}};
inline constexpr std::uint64_t kAtomicFinal = kAtomicSwap;
// The `immediate` scenario's n-th Immediate Data value.
inline constexpr std::uint64_t immediate_value(std::uint64_t n) { return 0x1d1d000000000000ull ^ (n * 0x9e3779b97f4a7c15ull); }

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

inline std::array<std::byte, kRpingInfo> encode_rping(const RpingInfo& r) {
  std::array<std::byte, kRpingInfo> b{};
  protocols::put_be64(b, 0, r.addr);
  protocols::put_be32(b, 8, r.rkey);
  protocols::put_be32(b, 12, r.size);
  return b;
}

// rping's buffer contents for ping n: "rdma-ping-<n>: " then letters cycling
// from 'A' + n (mod 58) through 'z', ending in a NUL.
inline void fill_rping(std::span<std::byte> b, std::uint64_t n) {
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

// The tagged offset a buffer is registered at and advertised with: drawn at
// random (page aligned, with room for 4 GiB above it), so that nothing of
// our address space goes on the wire.
inline std::uint64_t random_to() { return (engine::random_u64() & 0x00007FFFFFFFF000ull) + 0x1000; }

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
  std::size_t slot_size = 0, sslot_size = 0;
  std::byte* sslots = nullptr;
  std::uint32_t sslot_stag = 0;
  std::array<bool, kSlots> sbusy{};
  unsigned snext = 0;
  std::deque<Completion> recvs;
  std::string failure;
  std::uint64_t outstanding = 0, completed = 0;
  std::function<void(const Completion&)> on_data;
  std::stop_token stop;  // a session of the peer: its stop ends every wait

  Session(QpConfig c, Fd fd, WaitMode w, int timeout)
      : qp(pd, scq, rcq, std::move(c)), link(std::make_unique<TcpLink>(std::move(fd), qp, w)), timeout_ms(timeout) {}

  std::vector<std::byte>& buffer(std::size_t n) { return storage.emplace_back(n); }
  // Frees a buffer from buffer() (deregister it first).
  void release(const std::vector<std::byte>& b) { storage.remove_if([&](const auto& v) { return &v == &b; }); }

  // Registers `count` (at most kSlots) receive slots of `size` octets and
  // kSlots send slots of `send_size` (0: `size`); posts `post` receives.
  void setup_slots(std::size_t size, unsigned post, unsigned count = kSlots, std::size_t send_size = 0) {
    slot_size = std::max(size, kMinSlot);
    sslot_size = send_size ? std::max(send_size, kMinSlot) : slot_size;
    count = std::min(count, kSlots);
    auto& r = buffer(slot_size * count);
    auto& s = buffer(sslot_size * kSlots);
    rslots = r.data();
    sslots = s.data();
    rslot_stag = pd.register_mr(r, kLocalWrite);
    sslot_stag = pd.register_mr(s, 0);
    sbusy.fill(false);
    for (unsigned i = 0; i < post && i < count; ++i) repost(i);
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
    link->run_until([&] { drain(); return pred() || !failure.empty() || dead() || stop.stop_requested(); }, timeout_ms);
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
    if (stop.stop_requested()) return fmt::format("{}: the peer was stopped (a signal)", step);
    return fmt::format("{}: timed out after {} ms", step, timeout_ms);
  }

  // Sends `data` (at most one slot) from a free send slot.
  bool send(Bytes data, WrOpcode op = WrOpcode::send, std::uint32_t inv = 0) {
    if (!wait([&] { return std::find(sbusy.begin(), sbusy.end(), false) != sbusy.end(); })) return false;
    while (sbusy[snext]) snext = (snext + 1) % kSlots;
    const unsigned i = snext;
    snext = (snext + 1) % kSlots;
    const std::size_t n = std::min(data.size(), sslot_size);
    if (n) std::memcpy(sslots + i * sslot_size, data.data(), n);
    sbusy[i] = true;
    SendWr w{kSendBase + i, op, {sslot_stag, i * sslot_size, static_cast<std::uint32_t>(n)}};
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
  // The next receive completion (its slot reposted): Immediate Data carry
  // their value in it.
  std::optional<Completion> next_receive() {
    if (!wait([&] { return !recvs.empty(); })) return std::nullopt;
    const Completion c = recvs.front();
    recvs.pop_front();
    repost((c.wr_id - kRecvBase) % kSlots);
    return c;
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

inline nlohmann::json terminate_json(const std::optional<TerminateInfo>& t) {
  if (!t) return nullptr;
  nlohmann::json j = {{"layer", t->layer}, {"type", t->etype}, {"code", t->code}, {"reason", t->reason},
                      {"m", t->seglen_valid}, {"d", t->ddp_copied}, {"r", t->rdmap_copied}};
  auto hex = [](const std::vector<std::byte>& b) { return fmt::format("{:02x}", fmt::join(b, "")); };
  if (t->seglen) j["ddp_segment_length"] = *t->seglen;
  if (!t->ddp_header.empty()) j["ddp_header"] = hex(t->ddp_header);
  if (!t->rdmap_header.empty()) j["rdma_header"] = hex(t->rdmap_header);
  if (!t->missing.empty()) j["missing"] = t->missing;
  return j;
}

// The message of send-lat / write-lat iteration i: the pattern with the
// iteration stamped in (send-lat: the first up to 4 octets; write-lat: the
// last octet, which the receiver polls).
inline void stamp_send(std::span<std::byte> b, std::uint64_t i) {
  for (std::size_t k = 0; k < std::min<std::size_t>(4, b.size()); ++k) b[k] = std::byte((i >> (8 * (3 - k))) & 0xff);
}
inline std::byte write_tag(std::uint64_t i) { return std::byte(1 + i % 255); }

// Whether ping i arrived intact: `base` is the pattern, compared everywhere
// but the octets a ping stamps with its number (the first four of a Send,
// the last of a Write), so a buffer that carries an older stamp serves.
inline bool same_message(Bytes got, Bytes base, std::uint64_t i, bool send_lat) {
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
// How long a side whose startup frame we withhold is given to give up (RFC
// 5044 §7.1.2 rules 8 and 10 ask for "a reasonable timeout"; siw's are 5 s
// as responder and 10 s as initiator, siw_cm.c:1216-1222).
constexpr int kStartupWaitMs = 20000;
constexpr std::uint64_t kCanarySeed = 0xca11;  // the pattern our buffers hold in terminate-* scenarios

// Number of slots in the responder's bandwidth buffer.
inline std::uint32_t bw_slots(std::uint32_t size, std::uint64_t iterations) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>((4u << 20) / std::max<std::uint32_t>(size, 1), 1,
                                                              std::max<std::uint64_t>(iterations, 1)));
}

// RFC 5040 §4.8: the parts of a received Terminate that describe the
// segment that caused it (`bad`, the one the fault went into). MUST: what
// M, D and R announce is there (§4.8 Figure 7's fields), the DDP Segment
// Length is valid with M, and the copied headers are that segment's ("the
// DDP Header of the incoming Message that is associated with the
// Terminate"; a Read Request's header as sent, since nothing of it was
// processed). SHOULD (Figure 10): a DDP error's Terminate includes the DDP
// header and length, an RDMAP error's too where it can, and an RDMA Read
// Request's protection error its RDMA header; only a Read Request's.
// Returns what breaks a MUST (empty: none); SHOULDs not met are appended
// to should_not_met (terminate_judge.cpp).
std::string copied_headers_problem(const eng::TerminateInfo& t, const SentSegment& bad, std::vector<std::string>& should_not_met);

// Serves one connection as the responder (responder.cpp).
nlohmann::json serve_one(Fd fd, const PeerOptions& o, const std::string& pcap, MemoryBudget* budget = nullptr,
                         std::stop_token stop = {});

// What a Refuser answers a connection beyond the session limit with
// (responder.cpp): given what it has sent, the rejecting MPA Reply that says
// busy once its Request is in, nullopt before, "" (close) for no Request.
std::optional<std::string> busy_reply(std::string_view received, const PeerOptions& o);

// The report of a refusal.
inline Refuser::Report refusal_report(std::function<void(const nlohmann::json&)> report, const PeerOptions& o) {
  return [report = std::move(report), &o](std::uint64_t index, bool answered, const std::string& outcome) {
    report({{"connection", index}, {"scenario", nullptr}, {"ok", false}, {"refused", true},
            {"message", fmt::format("busy: {} sessions in progress ({}{})", o.max_sessions, outcome,
                                    answered ? ": a rejecting MPA Reply" : ", closed without an MPA Reply")}});
  };
}

}  // namespace rdmaconf::interop::iwarp::detail

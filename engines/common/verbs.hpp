#pragma once
// The verbs-style API shared by the reference engines (iWARP in
// engines/iwarp, InfiniBand/RoCEv2 in engines/ib), in our own namespace.
//
//   ProtectionDomain pd;                       // owns memory regions
//   auto stag = pd.register_mr(buf, kRemoteWrite | kLocalWrite);
//   CompletionQueue scq, rcq;
//   QueuePair qp(pd, scq, rcq, config);        // engines/iwarp/qp.hpp, engines/ib/qp.hpp
//   qp.post_recv({.wr_id = 1, .sge = {stag, 0, 4096}});
//   qp.post_send({.wr_id = 2, .op = WrOpcode::write, .local = {...}, .remote_stag = peer_stag, .remote_to = 0});
//   while (auto c = scq.poll()) ...;           // Completion with a WcStatus
//
// A memory region is named by one key both locally (as an SGE's key) and by
// the peer: the STag of tagged DDP, the R_Key of an InfiniBand RETH. Tagged
// offsets (iWARP) and virtual addresses (InfiniBand) of a region run from
// its base_to.
// Nothing here does I/O: the queue pair turns work requests into bytes and
// bytes into completions (see qp.hpp and docs/engine.md).
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

namespace rdmaconf::engine {

enum Access : unsigned {
  kLocalWrite = 1,    // the region may receive Sends and Read Responses
  kRemoteRead = 2,    // the peer may RDMA Read it
  kRemoteWrite = 4,   // the peer may RDMA Write it
  kRemoteAtomic = 8,  // the peer may run RFC 7306 atomics on it
};

struct MemoryRegion {
  std::uint32_t stag = 0;
  std::span<std::byte> buf;
  std::uint64_t base_to = 0;  // tagged offset of buf[0]
  unsigned access = 0;
  bool valid = true;          // false after an invalidation
};

class ProtectionDomain {
 public:
  ProtectionDomain() = default;
  // Keys from a fixed sequence instead: for replaying a recorded stream
  // into a fresh domain (tests), never for a peer on a network.
  explicit ProtectionDomain(std::uint64_t key_seed) : seeded_(true), seed_(key_seed) {}
  // Registers `buf` and returns its STag: all 32 bits drawn from the
  // kernel's random source (seeded: a 24-bit index counting from 1 and an
  // 8-bit key from the seed).
  std::uint32_t register_mr(std::span<std::byte> buf, unsigned access, std::uint64_t base_to = 0);
  bool deregister(std::uint32_t stag);
  // Remote or local invalidation: the STag stops working until re-registered.
  bool invalidate(std::uint32_t stag);
  MemoryRegion* find(std::uint32_t stag);

  // A remote access to [to, to + len) of region `stag` that needs `access`:
  // what is wrong with it, or ok. On ok, *where points at the first octet.
  enum class Check { ok, invalid_key, not_permitted, out_of_bounds };
  Check check(std::uint32_t stag, std::uint64_t to, std::uint64_t len, unsigned access, std::byte** where);

 private:
  std::unordered_map<std::uint32_t, MemoryRegion> mrs_;
  std::uint32_t next_index_ = 1;
  bool seeded_ = false;
  std::uint64_t seed_ = 0;
};

enum class WcStatus {
  success,
  local_length_error,      // a Send larger than the posted receive buffer
  local_protection_error,  // an SGE outside its region, or a bad local STag
  remote_access_error,     // the peer answered with a protection Terminate
  remote_operation_error,  // the peer answered with an operation Terminate (or NAK)
  flushed,                 // the queue pair left the connected state first
  remote_invalid_request,  // InfiniBand: the peer answered NAK Invalid Request
  retry_exceeded,          // InfiniBand: no answer after the transport retries
  rnr_retry_exceeded,      // InfiniBand: the peer stayed Receiver Not Ready
};
std::string_view wc_status_name(WcStatus s);

enum class WcOpcode { send, rdma_write, rdma_read, atomic_fetch_add, atomic_compare_swap, immediate, recv, recv_immediate,
                      recv_rdma_with_imm };

struct Completion {
  Completion() = default;
  Completion(std::uint64_t id, WcOpcode o, WcStatus s = WcStatus::success, std::uint32_t len = 0)
      : wr_id(id), op(o), status(s), byte_len(len) {}
  std::uint64_t wr_id = 0;
  WcOpcode op = WcOpcode::send;
  WcStatus status = WcStatus::success;
  std::uint32_t byte_len = 0;
  std::optional<std::uint64_t> imm;          // received Immediate Data (RFC 7306)
  std::optional<std::uint32_t> invalidated;  // STag a Send with Invalidate invalidated
  bool solicited = false;
  std::optional<std::uint64_t> atomic_original;  // the value an atomic found
  std::optional<std::uint32_t> src_qp;           // InfiniBand UD: the sender's QP
};

class CompletionQueue {
 public:
  void push(Completion c) { q_.push_back(std::move(c)); }
  std::optional<Completion> poll() {
    if (q_.empty()) return std::nullopt;
    Completion c = std::move(q_.front());
    q_.pop_front();
    return c;
  }
  std::size_t size() const { return q_.size(); }

 private:
  std::deque<Completion> q_;
};

// A local buffer: region STag, offset into the region, length.
struct Sge {
  std::uint32_t stag = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
};

// immediate is RFC 7306's Immediate Data message (iWARP); send_imm and
// write_imm are InfiniBand's SEND / RDMA WRITE with Immediate (32 bits).
enum class WrOpcode { send, send_invalidate, write, read, immediate, atomic_fetch_add, atomic_compare_swap, send_imm,
                      write_imm };

struct SendWr {
  std::uint64_t wr_id = 0;
  WrOpcode op = WrOpcode::send;
  Sge local;                          // source (send, write) or sink (read, atomic result: 8 octets)
  bool solicited = false;             // Send with Solicited Event / Immediate with SE
  std::uint32_t remote_stag = 0;      // write, read, atomics
  std::uint64_t remote_to = 0;
  std::uint32_t invalidate_stag = 0;  // send_invalidate
  std::uint64_t imm = 0;              // immediate
  std::uint64_t add_swap = 0, compare = 0;  // atomics
  std::uint32_t remote_qpn = 0, remote_qkey = 0;  // InfiniBand UD: the destination
};

// The completion opcode of a work request.
WcOpcode wc_opcode(WrOpcode op);

// The 8-octet atomic operations both engines run on a responder's memory
// (host order, as the verbs do): Fetch and Add, or Compare and Swap, with the
// RFC 7306 masks (InfiniBand's are the defaults: whole-word compare and swap,
// one 64-bit addition). A set bit of `add_mask` ends a field of the masked
// FetchAdd: no carry leaves it (RFC 7306 §5.1.1). Returns the value found.
std::uint64_t atomic_apply(std::byte* where, bool compare_swap, std::uint64_t add_swap, std::uint64_t compare,
                           std::uint64_t swap_mask = ~0ull, std::uint64_t compare_mask = ~0ull, std::uint64_t add_mask = 0);
// The masked addition of RFC 7306 §5.1.1 (add_mask 0: the plain 64-bit sum).
std::uint64_t masked_add(std::uint64_t a, std::uint64_t b, std::uint64_t add_mask);

struct RecvWr {
  std::uint64_t wr_id = 0;
  Sge sge;
};

}  // namespace rdmaconf::engine

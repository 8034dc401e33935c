#include "engines/common/verbs.hpp"

#include <cstring>

#include "engines/common/socket.hpp"

namespace rdmaconf::engine {

std::uint32_t ProtectionDomain::register_mr(std::span<std::byte> buf, unsigned access, std::uint64_t base_to) {
  std::uint32_t stag = 0;
  if (seeded_) {
    // A fixed sequence: the index counts up, the key follows the seed.
    seed_ = seed_ * 6364136223846793005ull + 1442695040888963407ull;
    stag = (next_index_++ << 8) | static_cast<std::uint8_t>(seed_ >> 56);
  } else {
    // All 32 bits from the kernel's CSPRNG, index and key alike (RFC 5040
    // §8.1.1 asks that STags be hard to predict and spread sparsely over
    // the range): only an STag in use, or 0, is drawn again.
    do stag = static_cast<std::uint32_t>(random_u64());
    while (stag == 0 || mrs_.contains(stag));
  }
  mrs_[stag] = MemoryRegion{stag, buf, base_to, access, true};
  return stag;
}

bool ProtectionDomain::deregister(std::uint32_t stag) { return mrs_.erase(stag) > 0; }

bool ProtectionDomain::invalidate(std::uint32_t stag) {
  auto* m = find(stag);
  if (!m || !m->valid) return false;
  m->valid = false;
  return true;
}

MemoryRegion* ProtectionDomain::find(std::uint32_t stag) {
  auto it = mrs_.find(stag);
  return it == mrs_.end() ? nullptr : &it->second;
}

ProtectionDomain::Check ProtectionDomain::check(std::uint32_t stag, std::uint64_t to, std::uint64_t len,
                                                unsigned access, std::byte** where) {
  MemoryRegion* mr = find(stag);
  if (!mr || !mr->valid) return Check::invalid_key;
  if ((mr->access & access) != access) return Check::not_permitted;
  if (to < mr->base_to || to - mr->base_to > mr->buf.size() || len > mr->buf.size() - (to - mr->base_to))
    return Check::out_of_bounds;
  if (where) *where = mr->buf.data() + (to - mr->base_to);
  return Check::ok;
}

std::string_view wc_status_name(WcStatus s) {
  switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::local_length_error: return "local length error";
    case WcStatus::local_protection_error: return "local protection error";
    case WcStatus::remote_access_error: return "remote access error";
    case WcStatus::remote_operation_error: return "remote operation error";
    case WcStatus::flushed: return "flushed";
    case WcStatus::remote_invalid_request: return "remote invalid request";
    case WcStatus::retry_exceeded: return "transport retry counter exceeded";
    case WcStatus::rnr_retry_exceeded: return "RNR retry counter exceeded";
  }
  return "?";
}

WcOpcode wc_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::send:
    case WrOpcode::send_imm:
    case WrOpcode::send_invalidate: return WcOpcode::send;
    case WrOpcode::write:
    case WrOpcode::write_imm: return WcOpcode::rdma_write;
    case WrOpcode::read: return WcOpcode::rdma_read;
    case WrOpcode::immediate: return WcOpcode::immediate;
    case WrOpcode::atomic_fetch_add: return WcOpcode::atomic_fetch_add;
    case WrOpcode::atomic_compare_swap: return WcOpcode::atomic_compare_swap;
  }
  return WcOpcode::send;
}

std::uint64_t masked_add(std::uint64_t a, std::uint64_t b, std::uint64_t add_mask) {
  // Bit by bit: a carry out of a bit the mask sets is dropped.
  std::uint64_t sum = 0, carry = 0;
  for (unsigned bit = 0; bit < 64; ++bit) {
    const std::uint64_t s = ((a >> bit) & 1) + ((b >> bit) & 1) + carry;
    sum |= (s & 1) << bit;
    carry = (s >> 1) & ~((add_mask >> bit) & 1);
  }
  return sum;
}

std::uint64_t atomic_apply(std::byte* where, bool compare_swap, std::uint64_t add_swap, std::uint64_t compare,
                           std::uint64_t swap_mask, std::uint64_t compare_mask, std::uint64_t add_mask) {
  std::uint64_t cur;
  std::memcpy(&cur, where, 8);
  std::uint64_t next = add_mask ? masked_add(cur, add_swap, add_mask) : cur + add_swap;
  if (compare_swap) {
    next = cur;
    if ((cur & compare_mask) == (compare & compare_mask)) next = (cur & ~swap_mask) | (add_swap & swap_mask);
  }
  std::memcpy(where, &next, 8);
  return cur;
}

}  // namespace rdmaconf::engine

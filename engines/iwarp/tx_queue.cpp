#include "engines/iwarp/tx_queue.hpp"

#include <algorithm>
#include <cstring>

namespace rdmaconf::engine::iwarp {

namespace {
constexpr std::size_t kCompactPieces = 4096;        // spent pieces kept before the list is shifted
constexpr std::size_t kCompactArena = 512 * 1024;  // spent owned octets kept before the arena is shifted
}  // namespace

void TxQueue::made(protocols::Bytes b) {
  if (b.empty()) return;
  const protocols::MutBytes to = grow(b.size());
  std::memcpy(to.data(), b.data(), b.size());
}

protocols::MutBytes TxQueue::grow(std::size_t n) {
  const std::size_t at = arena_.size();
  if (n == 0) return {};
  if (pieces_.size() > first_ && !pieces_.back().ext && pieces_.back().off + pieces_.back().len == at)
    pieces_.back().len += n;
  else
    pieces_.push_back({nullptr, at, n});
  arena_.resize(at + n);
  appended_ += n;
  return protocols::MutBytes(arena_.data() + at, n);
}

void TxQueue::view(protocols::Bytes b) {
  if (b.empty()) return;
  if (b.size() < kMinView) return made(b);
  if (pieces_.size() > first_ && pieces_.back().ext && pieces_.back().ext + pieces_.back().len == b.data())
    pieces_.back().len += b.size();
  else
    pieces_.push_back({b.data(), 0, b.size()});
  appended_ += b.size();
}

std::size_t TxQueue::gather(std::span<iovec> iov) const {
  std::size_t n = 0, skip = skip_;
  for (std::size_t i = first_; i < pieces_.size() && n < iov.size(); ++i, skip = 0) {
    const protocols::Bytes b = bytes(pieces_[i]).subspan(skip);
    iov[n++] = {const_cast<std::byte*>(b.data()), b.size()};
  }
  return n;
}

void TxQueue::consume(std::size_t n) {
  n = std::min(n, size());
  consumed_ += n;
  while (n) {
    const std::size_t rest = pieces_[first_].len - skip_;
    if (n < rest) {
      skip_ += n;
      break;
    }
    n -= rest;
    ++first_;
    skip_ = 0;
  }
  compact();
}

void TxQueue::compact() {
  if (first_ == pieces_.size()) {
    pieces_.clear();
    arena_.clear();
    first_ = skip_ = 0;
    return;
  }
  if (first_ >= kCompactPieces && first_ * 2 >= pieces_.size()) {
    pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<std::ptrdiff_t>(first_));
    first_ = 0;
  }
  if (arena_.size() < 2 * kCompactArena) return;
  // Owned pieces lie in the arena in queue order: the first one still queued
  // marks where the live octets begin.
  auto live = std::find_if(pieces_.begin() + static_cast<std::ptrdiff_t>(first_), pieces_.end(),
                           [](const Piece& p) { return !p.ext; });
  const std::size_t from = live == pieces_.end() ? arena_.size() : live->off;
  if (from < kCompactArena || from * 2 < arena_.size()) return;
  arena_.erase(arena_.begin(), arena_.begin() + static_cast<std::ptrdiff_t>(from));
  for (auto p = live; p != pieces_.end(); ++p)
    if (!p->ext) p->off -= from;
}

void TxQueue::detach() {
  std::vector<std::byte> all = copy_out();
  const std::uint64_t total = appended_;
  pieces_.clear();
  arena_.clear();
  first_ = skip_ = 0;
  appended_ = consumed_;
  made(all);
  appended_ = total;
}

std::vector<std::byte> TxQueue::copy_out(std::size_t max) const {
  std::vector<std::byte> out;
  out.reserve(std::min(max, size()));
  std::size_t n = std::min(max, size()), skip = skip_;
  for (std::size_t i = first_; i < pieces_.size() && n; ++i, skip = 0) {
    const protocols::Bytes b = bytes(pieces_[i]).subspan(skip);
    const std::size_t k = std::min(n, b.size());
    out.insert(out.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(k));
    n -= k;
  }
  return out;
}

}  // namespace rdmaconf::engine::iwarp

#include "captures/io/tcp_copies.hpp"

namespace rdmaconf::captures::io {

TcpCopies::~TcpCopies() {
  if (budget_) budget_->used -= taken_;
}

bool TcpCopies::take(std::size_t n) {
  if (!budget_) return true;
  if (budget_->used + n <= budget_->limit) {
    budget_->used += n;
    taken_ += n;
    return true;
  }
  budget_->used -= taken_;
  taken_ = 0;
  std::vector<std::byte>().swap(bytes_);
  std::vector<std::pair<std::uint64_t, std::uint64_t>>().swap(segs_);
  off_ = true;
  return false;
}

void TcpCopies::data(std::uint64_t offset, protocols::Bytes b, std::uint64_t frame, std::vector<Finding>& out) {
  if (b.empty()) return;
  if (off_) {  // nothing kept: only where the stream is, for the copies waiting
    end_ = offset + b.size();
    return settle_waiting(out);
  }
  if (!started_ || offset != end_) {  // the first octets, or after a gap the caller did not report
    started_ = true;
    base_ = end_ = offset;
  }
  // Memory reserved in steps (drawn from the budget), up to the bounds.
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBytes, end_ - base_ + b.size()));
  if (bytes_.capacity() < want) {
    const std::size_t to = std::min(kBytes, std::max(want, 2 * bytes_.capacity()));
    if (!take(to - bytes_.capacity())) return data(offset, b, frame, out);
    bytes_.reserve(to);
  }
  if (segs_.size() == segs_.capacity() && segs_.size() < kSegments) {
    const std::size_t to = std::min(kSegments, std::max<std::size_t>(16, 2 * segs_.capacity()));
    if (!take((to - segs_.capacity()) * sizeof(segs_[0]))) return data(offset, b, frame, out);
    segs_.reserve(to);
  }
  // Segments: appended until kSegments, then the oldest overwritten.
  if (segs_.size() < kSegments) {
    segs_.emplace_back(offset, frame);
  } else {
    segs_[seg_head_] = {offset, frame};
    seg_head_ = (seg_head_ + 1) % kSegments;
  }
  // Only the last kBytes octets matter.
  const protocols::Bytes keep = b.size() > kBytes ? b.last(kBytes) : b;
  std::uint64_t at = offset + (b.size() - keep.size());
  for (std::size_t done = 0; done < keep.size();) {
    const auto pos = static_cast<std::size_t>((at - base_) % kBytes);
    if (bytes_.size() < kBytes && pos >= bytes_.size()) bytes_.resize(std::min(kBytes, pos + (keep.size() - done)));
    const std::size_t n = std::min(keep.size() - done, bytes_.size() - pos);
    std::copy_n(keep.begin() + static_cast<std::ptrdiff_t>(done), n, bytes_.begin() + static_cast<std::ptrdiff_t>(pos));
    done += n;
    at += n;
  }
  end_ = offset + b.size();
  settle_waiting(out);
}

void TcpCopies::settle_waiting(std::vector<Finding>& out) {
  // Copies whose first copy is now whole here.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->offset + it->bytes.size() > end_) {
      ++it;
      continue;
    }
    compare(it->offset, it->bytes, it->frame, out);
    waiting_bytes_ -= it->bytes.size();
    it = waiting_.erase(it);
  }
}

void TcpCopies::gap(std::uint64_t offset, std::uint64_t len, std::vector<Finding>& out) {
  flush_waiting(out);
  started_ = true;
  base_ = end_ = offset + len;
}

void TcpCopies::finish(std::vector<Finding>& out) { flush_waiting(out); }

void TcpCopies::flush_waiting(std::vector<Finding>& out) {
  // Their first copy will not come whole: compare what is here, name the rest.
  for (auto& w : waiting_) {
    const std::uint64_t here = std::clamp(end_, w.offset, w.offset + w.bytes.size());
    if (here > w.offset) compare(w.offset, {w.bytes.data(), static_cast<std::size_t>(here - w.offset)}, w.frame, out);
  }
  waiting_.clear();
  waiting_bytes_ = 0;
}

std::pair<std::uint64_t, std::uint64_t> TcpCopies::frames_of(std::uint64_t from, std::uint64_t to) const {
  if (segs_.empty()) return {0, 0};
  // In stream order: segment k covers from its offset to the next one's (the last to end_).
  const std::size_t n = segs_.size();
  auto seg = [&](std::size_t k) { return segs_[(seg_head_ + k) % n]; };
  if (from < seg(0).first) return {0, 0};  // older than the segments kept
  std::uint64_t lo = 0, hi = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t s = seg(k).first, e = k + 1 < n ? seg(k + 1).first : end_;
    if (s >= to) break;
    if (e <= from) continue;
    if (!lo) lo = seg(k).second;
    hi = std::max(hi, seg(k).second);
  }
  return {lo, hi};
}

void TcpCopies::compare(std::uint64_t offset, protocols::Bytes copy, std::uint64_t frame, std::vector<Finding>& out) const {
  if (off_) {  // nothing kept (the budget ran out): not compared, the first copy's frames unknown
    out.push_back({offset, copy.size(), 0, 0, frame, false});
    return;
  }
  const std::uint64_t end = offset + copy.size(), kept = kept_from();
  // Octets older than those kept cannot be compared.
  if (offset < kept) {
    const std::uint64_t to = std::min(end, kept);
    const auto [lo, hi] = frames_of(offset, to);
    out.push_back({offset, to - offset, lo, hi, frame, false});
  }
  // Where the kept octets and the copy differ: from the first such octet to the last.
  std::uint64_t first = 0, last = 0;
  bool differ = false;
  for (std::uint64_t o = std::max(offset, kept); o < std::min(end, end_); ++o)
    if (at(o) != copy[static_cast<std::size_t>(o - offset)]) {
      if (!differ) first = o;
      differ = true;
      last = o;
    }
  if (differ) {
    const auto [lo, hi] = frames_of(first, last + 1);
    out.push_back({first, last + 1 - first, lo, hi, frame, true});
  }
}

void TcpCopies::resent(std::uint64_t offset, protocols::Bytes copy, std::uint64_t frame, std::vector<Finding>& out) {
  if (copy.empty()) return;
  if (off_) return compare(offset, copy, frame, out);
  const std::uint64_t end = offset + copy.size();
  if (started_ && end <= end_) return compare(offset, copy, frame, out);
  // Its first copy is not (all) here yet: held until it is, within a bound.
  if (waiting_bytes_ + copy.size() > kWaiting) {
    out.push_back({offset, copy.size(), 0, 0, frame, false});
    return;
  }
  waiting_.push_back({offset, frame, {copy.begin(), copy.end()}});
  waiting_bytes_ += copy.size();
}

}  // namespace rdmaconf::captures::io

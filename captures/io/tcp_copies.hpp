#pragma once
// Later copies of a TCP direction's octets (TcpSink::on_resent) compared
// with the first copy, the one the stream delivered. The last octets of the
// direction are kept (kBytes of them) with the frame each segment came in
// (the last kSegments segments): a copy of octets still kept is compared
// octet for octet; one of older octets cannot be, and is named as such with
// the frames of the first copy when they are still known. A copy that
// arrives before its first copy (which waited for the other direction) is
// held, bounded, until the first copy is here.
//
// Memory grows with what a direction carried, up to kBytes plus kSegments
// frame entries (a connection that carries little keeps little), and is
// drawn from a budget shared by the connections of a run: past it, a
// direction keeps nothing more, and its later copies are named as not
// compared.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "protocols/core/bits.hpp"

namespace rdmaconf::captures::io {

class TcpCopies {
 public:
  static constexpr std::size_t kBytes = 64u << 10, kSegments = 2048, kWaiting = 64u << 10;

  // Octets of memory the copies of a run may keep together, and what they keep now.
  struct Budget {
    std::size_t limit = 0, used = 0;
  };
  explicit TcpCopies(Budget* budget = nullptr) : budget_(budget) {}
  ~TcpCopies();
  TcpCopies(const TcpCopies&) = delete;
  TcpCopies& operator=(const TcpCopies&) = delete;

  // Octets of which the capture holds two copies that differ, or a later
  // copy that could not be compared with the first.
  struct Finding {
    std::uint64_t offset = 0, len = 0;  // the octets (where they differ, when compared)
    std::uint64_t first = 0, last = 0;  // the frames the first copy came in (0: no longer known)
    std::uint64_t frame = 0;            // the frame of the later copy
    bool compared = false;              // false: the first copy was no longer kept
  };

  // The stream's octets, in order (`offset` at or after the last ones).
  void data(std::uint64_t offset, protocols::Bytes b, std::uint64_t frame, std::vector<Finding>& out);
  // The capture lacks [offset, offset+len): what came before cannot be
  // compared with what comes after. Copies still waiting are reported.
  void gap(std::uint64_t offset, std::uint64_t len, std::vector<Finding>& out);
  // A later copy of octets at `offset`.
  void resent(std::uint64_t offset, protocols::Bytes copy, std::uint64_t frame, std::vector<Finding>& out);
  // The stream ended: copies still waiting are reported.
  void finish(std::vector<Finding>& out);

 private:
  struct Copy {
    std::uint64_t offset = 0, frame = 0;
    std::vector<std::byte> bytes;
  };
  // The first offset whose octet is kept.
  std::uint64_t kept_from() const { return std::max(base_, end_ > kBytes ? end_ - kBytes : 0); }
  std::byte at(std::uint64_t off) const { return bytes_[static_cast<std::size_t>((off - base_) % kBytes)]; }
  // The frames of the segments that carried [from, to) (0, 0 when not known).
  std::pair<std::uint64_t, std::uint64_t> frames_of(std::uint64_t from, std::uint64_t to) const;
  // Compares the kept octets [offset, offset + copy.size()) with the copy.
  void compare(std::uint64_t offset, protocols::Bytes copy, std::uint64_t frame, std::vector<Finding>& out) const;
  void flush_waiting(std::vector<Finding>& out);
  // Compares the waiting copies whose first copy is whole here now.
  void settle_waiting(std::vector<Finding>& out);

  std::vector<std::byte> bytes_;  // circular by (offset - base_) % kBytes; grows up to kBytes
  std::uint64_t base_ = 0, end_ = 0;  // octets [kept_from(), end_) are kept
  bool started_ = false;
  // (first offset, frame) of each segment, circular past kSegments, oldest at seg_head_.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> segs_;
  std::size_t seg_head_ = 0;
  std::vector<Copy> waiting_;  // copies of octets not yet here
  std::size_t waiting_bytes_ = 0;
  // Takes `n` more octets of memory from the budget; false (and keeping
  // nothing from then on) when it has none left.
  bool take(std::size_t n);
  Budget* budget_;
  std::size_t taken_ = 0;  // drawn from the budget
  bool off_ = false;  // the budget ran out: nothing kept
};

}  // namespace rdmaconf::captures::io

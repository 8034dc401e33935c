#pragma once
// The queue pair's transmit queue: what is to be written to the peer, in
// order, as pieces. A piece is either octets the queue owns (MPA frames,
// DDP/RDMAP headers, markers, pad, CRC fields), copied in, or a view of a
// registered region (message payload), kept by reference until the octets
// have gone out: the transport gathers the pieces into one sendmsg() and no
// payload octet is staged. It is emit_fpdu's sink (protocols/iwarp/codec.hpp).
//
//   q.made(header); q.view(payload); q.made(crc);
//   iovec iov[64]; n = q.gather(iov); k = sendmsg(...); q.consume(k);
//
// Positions count octets since the queue was made: appended() is where the
// next octet will go, consumed() how many have been sent.
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "protocols/core/bits.hpp"

namespace rdmaconf::engine::iwarp {

class TxQueue {
 public:
  // Views shorter than this are copied in: a short view costs the kernel
  // more as one more iovec entry than a copy costs here (the pieces between
  // markers, small messages).
  static constexpr std::size_t kMinView = 1024;

  // Octets copied into the queue.
  void made(protocols::Bytes b);
  // Room for `n` octets in the queue's own storage, to be written in place
  // before anything else is added.
  protocols::MutBytes grow(std::size_t n);
  // Octets that stay where they are until consumed past.
  void view(protocols::Bytes b);

  std::size_t size() const { return static_cast<std::size_t>(appended_ - consumed_); }
  bool empty() const { return appended_ == consumed_; }
  std::uint64_t appended() const { return appended_; }
  std::uint64_t consumed() const { return consumed_; }

  // Fills iov from the front of the queue; returns the entries used.
  std::size_t gather(std::span<iovec> iov) const;
  // The front `n` octets (at most size()) have been sent.
  void consume(std::size_t n);
  // Copies every view into the queue's own storage, so that nothing refers
  // to registered memory any more (when its owner is told the work is over
  // before the octets went out: a Terminate, a flush).
  void detach();
  // The front octets in one piece (copied; tests and tools).
  std::vector<std::byte> copy_out(std::size_t max = SIZE_MAX) const;

 private:
  struct Piece {
    const std::byte* ext;  // a view; null when the octets are in arena_
    std::size_t off;       // offset in arena_ (owned pieces)
    std::size_t len;
  };
  protocols::Bytes bytes(const Piece& p) const {
    return p.ext ? protocols::Bytes{p.ext, p.len} : protocols::Bytes{arena_.data() + p.off, p.len};
  }
  void compact();

  // Octets grow() hands out are written at once: no zero fill first.
  struct NoFill : std::allocator<std::byte> {
    template <class U>
    struct rebind {
      using other = NoFill;
    };
    void construct(std::byte* p) { ::new (static_cast<void*>(p)) std::byte; }
    template <class... A>
    void construct(std::byte* p, A&&... a) { ::new (static_cast<void*>(p)) std::byte(std::forward<A>(a)...); }
  };
  std::vector<std::byte, NoFill> arena_;  // owned octets; owned pieces lie in it in queue order
  std::vector<Piece> pieces_;
  std::size_t first_ = 0;  // the front piece
  std::size_t skip_ = 0;   // octets of the front piece already sent
  std::uint64_t appended_ = 0, consumed_ = 0;
};

}  // namespace rdmaconf::engine::iwarp

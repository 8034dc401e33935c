#pragma once
// TCP stream reassembly per connection (4-tuple) and per direction. Delivers
// each direction's octets in order with the frame each came from; buffers
// out-of-order segments up to a bound, drops retransmitted duplicates, trims
// overlaps (first copy wins, later copies are handed on for comparison) and reports what the capture lacks as a gap,
// including a tail the capture never saw but the traffic proves was sent (the
// peer acknowledged it, or the FIN's sequence number lies beyond it).
//
// Across directions, octets are delivered in causal order: the ACK number of
// the segment that carried them says how much of the other direction its
// sender had received, and octets are held back until that much of the other
// direction has been delivered (or reported as a gap). A capture that
// records an answer before its request in file order is thus read in the
// order the endpoints saw. Memory is bounded per connection; closed
// connections are released.
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "captures/io/packet.hpp"

namespace rdmaconf::captures::io {

struct Endpoint {
  std::uint8_t ip_version = 0;
  Address addr{};
  std::uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

struct TcpStreamInfo {
  std::uint64_t id = 0;   // connection number in the capture, from 1
  Endpoint a, b;          // a: the side that sent the first SYN (or the first segment seen)
  bool saw_syn = false;   // false: the capture starts mid-connection (some direction's start is unknown)
  // Offset 0 of each direction is its first octet after the SYN: the capture
  // holds that direction's SYN, or (for the SYN's sender) a SYN-ACK whose
  // acknowledgement number names it.
  bool start_known[2] = {false, false};
  std::uint16_t mss[2] = {0, 0};  // MSS option each direction's sender put in its SYN (0: none seen)
  // At on_close: the direction's FIN was seen and every octet before it delivered.
  bool fin[2] = {false, false};
  // A direction of which the capture holds no segment (a mirror of one
  // side): how far the other side's acknowledgement numbers grew, a lower
  // bound of the octets it sent and the peer received.
  std::uint64_t acked_unseen[2] = {0, 0};
};

// on_data's `acked` when the capture cannot tell (no ACK flag, or nothing
// seen yet of the other direction).
inline constexpr std::uint64_t kAckUnknown = ~std::uint64_t{0};

// Receives reassembled streams. dir 0 is a→b, dir 1 is b→a.
class TcpSink {
 public:
  virtual ~TcpSink() = default;
  virtual void on_open(const TcpStreamInfo& c) = 0;
  // `offset` counts octets of this direction's stream from its first octet;
  // `acked` is the offset in the other direction's stream up to which the
  // sender of these octets had received that direction when it sent them
  // (the segment's acknowledgement number), or kAckUnknown.
  virtual void on_data(const TcpStreamInfo& c, int dir, std::uint64_t offset, protocols::Bytes data, std::uint64_t frame,
                       std::uint64_t acked) = 0;
  // The capture lacks [offset, offset+len) of this direction.
  virtual void on_gap(const TcpStreamInfo& c, int dir, std::uint64_t offset, std::uint64_t len, std::uint64_t frame) = 0;
  // Both directions are finished (FIN/RST seen, idle past the timeout, or
  // the capture ended).
  virtual void on_close(const TcpStreamInfo& c, bool reset, std::uint64_t frame) = 0;
  // A buffer limit made direction `dir` go on without waiting (for missing
  // segments, or for the other direction's octets): what follows is not read
  // in the order the endpoints saw, for `why`.
  virtual void on_limit(const TcpStreamInfo&, int /*dir*/, std::uint64_t /*frame*/, const char* /*why*/) {}
  // Another copy of octets [offset, offset + copy.size()) of direction
  // `dir`, which the stream already holds from an earlier segment (the first
  // copy is the one delivered): a retransmission that came before the peer
  // acknowledged those octets, so the capture cannot tell which copy the
  // receiver took. Copies of octets the peer had acknowledged are not
  // reported (the receiver had taken the first). It may come before the
  // first copy's on_data when that copy waits for the other direction.
  virtual void on_resent(const TcpStreamInfo&, int /*dir*/, std::uint64_t /*offset*/, protocols::Bytes /*copy*/,
                         std::uint64_t /*frame*/) {}
};

// on_limit's `why` when the limit reached was the one of all connections
// together (ReassemblyLimits::max_total_bytes).
inline constexpr const char* kAllBuffersFull = "the buffers of all connections together are full (--reassembly-memory)";
// on_limit's `why` (both directions, then on_close) for a connection closed
// early because the open connections reached ReassemblyLimits::max_open.
inline constexpr const char* kOpenStateFull =
    "the open connections reached the --state-memory bound: closed early as the least recently active (what follows is "
    "judged as a new connection)";

// on_limit's `why` (once per direction) for a segment whose sequence number
// lies 2^30 octets or more from the stream's, behind or ahead.
inline constexpr const char* kSequenceJump =
    "the sender's sequence numbers jump by 2^30 or more (no retransmission or window reaches that far): the stream "
    "is read as going on from the new ones, what lies between a gap of unknown length, and segments of the space "
    "left behind are not read";

struct ReassemblyLimits {
  std::size_t max_pending_bytes = 4u << 20;   // per direction, out-of-order data held
  std::size_t max_pending_segments = 2048;
  std::size_t max_held_bytes = 4u << 20;      // per direction, in-order data waiting for the other direction
  // All connections together, out-of-order and held data: past it, the
  // connection that asks for more goes on as if its own limit were reached.
  std::size_t max_total_bytes = 256u << 20;
  // A connection with no segment for this long in capture time is closed
  // (0: never), so that connections whose end the capture lacks do not stay.
  std::int64_t idle_timeout_us = 0;
  // Connections open at once (0: no bound). A new one beyond it closes the
  // least recently active first (on_limit with kOpenStateFull, on_close):
  // the checker's open state follows this bound, not the traffic.
  std::size_t max_open = 0;
};

class TcpReassembler {
 public:
  explicit TcpReassembler(TcpSink& sink, ReassemblyLimits limits = {});
  ~TcpReassembler();
  void add(const Packet& p);
  // A segment of a connection another reassembler keeps (a check that
  // spreads connections over threads): only capture time advances, so that
  // idle connections close at the same frame as when one reassembler sees all.
  void pass(std::int64_t ts_us, std::uint64_t frame);
  // Flushes every open connection (end of capture).
  void finish(std::uint64_t last_frame);

  std::size_t open_connections() const { return conns_.size(); }
  // Connections closed early at ReassemblyLimits::max_open.
  std::uint64_t closed_early() const { return closed_early_; }
  std::size_t buffered_bytes() const { return buffered_; }

  struct Conn;
  struct Key {
    Endpoint lo, hi;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };

 private:
  // The connection a segment belongs to (either direction).
  static Key key_of(const Packet& p);
  void close(Conn& c, bool reset, std::uint64_t frame);
  void close_idle(std::int64_t now_us, std::uint64_t frame);
  // Forgets a connection (closed already).
  void drop(const Key& k);
  TcpSink& sink_;
  ReassemblyLimits limits_;
  std::unordered_map<Key, std::unique_ptr<Conn>, KeyHash> conns_;
  std::list<Key> recent_;  // open connections, least recently active first
  std::uint64_t closed_early_ = 0;
  std::uint64_t next_id_ = 1;
  std::size_t buffered_ = 0;  // out-of-order and held octets of every connection
  std::int64_t last_sweep_us_ = 0;
};

}  // namespace rdmaconf::captures::io

#include "captures/io/tcp_reassembly.hpp"

#include <algorithm>
#include <cstring>
#include <list>

namespace rdmaconf::captures::io {

namespace {

// A segment this far behind the next expected octet is no retransmission.
constexpr std::int32_t kFarBehind = -(std::int32_t{1} << 30);

struct Pending {
  std::vector<std::byte> data;
  std::uint64_t frame;
  std::uint64_t acked;
  std::uint64_t peer_acked;  // how much of this direction the peer had acknowledged when it came
};

// Octets (or a gap, when `gap_len` is not 0) ready in order but waiting for the
// other direction to reach `acked`.
struct Held {
  std::uint64_t off;
  std::vector<std::byte> data;
  std::uint64_t gap_len = 0;
  std::uint64_t frame, acked;
};

}  // namespace

struct TcpReassembler::Conn {
  TcpStreamInfo info;
  struct Dir {
    bool started = false;
    std::uint32_t next_seq = 0;   // sequence number of the next octet expected
    std::uint64_t next_off = 0;   // stream offset of that octet
    bool fin = false;
    std::uint64_t fin_off = 0;
    // Out-of-order, by stream offset; copies with other content at the same
    // offset after the first (handed on as retransmissions once it is delivered).
    std::multimap<std::uint64_t, Pending> pending;
    std::size_t pending_bytes = 0;
    std::uint64_t delivered = 0;  // octets handed to the sink (data or gap)
    // In order, waiting for the other direction. (A list: a deque takes
    // some 600 octets before it holds anything, twice per connection, by
    // the thousand for half-open ones.)
    std::list<Held> held;
    std::size_t held_bytes = 0;
    std::uint64_t acked_by_peer = 0;  // the highest offset of this direction the peer acknowledged
    // While the other direction shows no segment: the first acknowledgement
    // number this one sent, against which later ones show the other's octets.
    bool ack_base_set = false;
    std::uint32_t ack_base = 0;
    bool far_behind = false;  // a jump of 2^30 or more came (on_limit said so)
    bool jumped = false;        // the stream went on after a jump
    std::uint32_t left_seq = 0; // the next sequence number the space left behind expected
  } dir[2];
  bool synack_seen = false;
  std::uint32_t synack_ack = 0;  // the SYN-ACK's acknowledgement number: side a's first sequence number
  std::int64_t last_ts_us = 0;   // capture time of its last segment
  std::list<Key>::iterator recent;  // its place in TcpReassembler::recent_
  std::size_t* total = nullptr;  // the reassembler's count of buffered octets
};

// Eight octets at a time with a multiply-xorshift mix: this runs once per
// TCP segment, and an octet-wise hash showed in profiles.
std::size_t TcpReassembler::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  auto word = [&](std::uint64_t w) {
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  };
  for (const Endpoint* e : {&k.lo, &k.hi}) {
    std::uint64_t w[2];
    std::memcpy(w, e->addr.data(), sizeof w);
    word(w[0]);
    word(w[1]);
    word(e->port);
  }
  return static_cast<std::size_t>(h);
}

TcpReassembler::TcpReassembler(TcpSink& sink, ReassemblyLimits limits) : sink_(sink), limits_(limits) {}
TcpReassembler::~TcpReassembler() = default;

namespace {

bool endpoint_less(const Endpoint& x, const Endpoint& y) {
  if (x.addr != y.addr) return x.addr < y.addr;
  return x.port < y.port;
}

// Hands held octets of direction `d` to the sink while the other direction
// has been delivered far enough (all of them when `force`), then the other
// direction's, until neither moves.
void release(TcpSink& sink, TcpReassembler::Conn& c, int d, bool force) {
  for (bool moved = true; moved;) {
    moved = false;
    for (int k : {d, 1 - d}) {
      auto& s = c.dir[k];
      const auto& o = c.dir[1 - k];
      while (!s.held.empty() && (force || s.held.front().acked <= o.delivered)) {
        Held h = std::move(s.held.front());
        s.held.pop_front();
        s.held_bytes -= h.data.size();
        *c.total -= h.data.size();
        if (h.gap_len) {
          sink.on_gap(c.info, k, h.off, h.gap_len, h.frame);
          s.delivered = h.off + h.gap_len;
        } else {
          sink.on_data(c.info, k, h.off, {h.data.data(), h.data.size()}, h.frame, h.acked);
          s.delivered = h.off + h.data.size();
        }
        moved = true;
      }
    }
    if (moved || force) continue;
    // Each direction waits on the other: a segment here holds octets the
    // other side acknowledged before its waiting octets, and more that came
    // after them (segments coalesced where the capture was taken carry
    // their last part's acknowledgement). The acknowledged part goes first,
    // its own acknowledgement unknown.
    for (int k : {d, 1 - d}) {
      auto& s = c.dir[k];
      const auto& o = c.dir[1 - k];
      if (s.held.empty() || o.held.empty()) continue;
      Held& h = s.held.front();
      const std::uint64_t need = o.held.front().acked;
      if (h.gap_len || need <= h.off || need >= h.off + h.data.size()) continue;
      const std::size_t n = static_cast<std::size_t>(need - h.off);
      sink.on_data(c.info, k, h.off, {h.data.data(), n}, h.frame, kAckUnknown);
      s.delivered = need;
      h.data.erase(h.data.begin(), h.data.begin() + static_cast<std::ptrdiff_t>(n));
      h.off = need;
      s.held_bytes -= n;
      *c.total -= n;
      moved = true;
      break;
    }
  }
}

// Delivers in-order octets of direction `d` (or a gap), unless the other
// direction has not yet reached what their sender had received: then they
// wait, and so does everything after them.
void emit(TcpSink& sink, TcpReassembler::Conn& c, int d, std::uint64_t off, protocols::Bytes b, std::uint64_t gap_len,
          std::uint64_t frame, std::uint64_t acked, const ReassemblyLimits& lim) {
  auto& s = c.dir[d];
  const bool wait = !s.held.empty() || (acked != kAckUnknown && acked > c.dir[1 - d].delivered);
  if (wait) {
    s.held.push_back(Held{off, {b.begin(), b.end()}, gap_len, frame, acked == kAckUnknown ? 0 : acked});
    s.held_bytes += b.size();
    *c.total += b.size();
    // Bounded: past the limit the other direction is not waited for.
    if (s.held_bytes > lim.max_held_bytes || *c.total > lim.max_total_bytes) {
      sink.on_limit(c.info, d, frame,
                    s.held_bytes > lim.max_held_bytes
                        ? "the connection's buffer for octets waiting on the other direction is full"
                        : kAllBuffersFull);
      release(sink, c, d, true);
    } else if (!c.dir[1 - d].held.empty()) {
      release(sink, c, d, false);  // both directions wait: one may hold what the other waits for
    }
    return;
  }
  if (gap_len) {
    sink.on_gap(c.info, d, off, gap_len, frame);
    s.delivered = off + gap_len;
  } else {
    sink.on_data(c.info, d, off, b, frame, acked);
    s.delivered = off + b.size();
  }
  if (!c.dir[1 - d].held.empty()) release(sink, c, 1 - d, false);
}

// Octets of direction `d` at `off` that the stream holds already: handed
// on as another copy unless the peer had acknowledged them when it came
// (`peer_acked`).
void resent(TcpSink& sink, TcpReassembler::Conn& c, int d, std::uint64_t off, protocols::Bytes b, std::uint64_t frame,
            std::uint64_t peer_acked) {
  if (!b.empty() && peer_acked < off + b.size()) sink.on_resent(c.info, d, off, b, frame);
}

// Delivers pending segments that have become contiguous; when `force`, skips
// holes (reporting them as gaps) until the pending map is empty.
void drain(TcpSink& sink, int d, TcpReassembler::Conn& c, bool force, const ReassemblyLimits& lim) {
  auto& s = c.dir[d];
  while (!s.pending.empty()) {
    auto it = s.pending.begin();
    std::uint64_t off = it->first;
    if (off > s.next_off) {
      if (!force) return;
      emit(sink, c, d, s.next_off, {}, off - s.next_off, it->second.frame, kAckUnknown, lim);
      s.next_seq += static_cast<std::uint32_t>(off - s.next_off);
      s.next_off = off;
    }
    Pending p = std::move(it->second);
    s.pending_bytes -= p.data.size();
    *c.total -= p.data.size();
    s.pending.erase(it);
    const std::uint64_t end = off + p.data.size();
    const std::size_t skip = static_cast<std::size_t>(std::min(s.next_off, end) - off);
    resent(sink, c, d, off, {p.data.data(), skip}, p.frame, p.peer_acked);  // what was delivered already
    if (end <= s.next_off) continue;
    protocols::Bytes b{p.data.data() + skip, p.data.size() - skip};
    const std::uint64_t at = s.next_off;
    s.next_off = end;
    s.next_seq += static_cast<std::uint32_t>(b.size());
    emit(sink, c, d, at, b, 0, p.frame, p.acked, lim);
  }
}

}  // namespace

void TcpReassembler::pass(std::int64_t ts_us, std::uint64_t frame) {
  if (limits_.idle_timeout_us > 0 && ts_us - last_sweep_us_ >= std::max<std::int64_t>(limits_.idle_timeout_us / 8, 1)) {
    if (last_sweep_us_) close_idle(ts_us, frame);
    last_sweep_us_ = ts_us;
  }
}

TcpReassembler::Key TcpReassembler::key_of(const Packet& p) {
  Endpoint src{p.ip_version, p.src, p.sport}, dst{p.ip_version, p.dst, p.dport};
  const bool src_lo = endpoint_less(src, dst) || src == dst;
  return Key{src_lo ? src : dst, src_lo ? dst : src};
}

void TcpReassembler::add(const Packet& p) {
  pass(p.ts_us, p.frame);
  Endpoint src{p.ip_version, p.src, p.sport}, dst{p.ip_version, p.dst, p.dport};
  const Key key = key_of(p);
  auto it = conns_.find(key);
  // A new SYN on a finished or data-carrying connection starts a new one (port reuse).
  if (it != conns_.end() && p.syn && !p.ack_flag) {
    auto& c = *it->second;
    const int d = c.info.a == src ? 0 : 1;
    const bool same_syn = c.dir[d].started && c.dir[d].next_off == 0 && c.dir[d].next_seq == p.seq + 1;
    if (!same_syn) {
      close(c, false, p.frame);
      drop(key);
      it = conns_.end();
    }
  }
  if (it == conns_.end()) {
    // Only a SYN or a segment with data opens a connection; a stray ACK, FIN or RST
    // (often the last packets of a connection already closed) does not.
    if (!p.syn && p.payload.empty()) return;
    if (limits_.max_open && conns_.size() >= limits_.max_open) {
      const Key oldest = recent_.front();
      Conn& o = *conns_.find(oldest)->second;
      for (int d = 0; d < 2; ++d) sink_.on_limit(o.info, d, p.frame, kOpenStateFull);
      close(o, false, p.frame);
      drop(oldest);
      ++closed_early_;
    }
    auto c = std::make_unique<Conn>();
    c->info.id = next_id_++;
    c->total = &buffered_;
    // The SYN sender is side a; without a SYN, a SYN-ACK's receiver is; otherwise the first sender.
    const bool src_is_a = !(p.syn && p.ack_flag);
    c->info.a = src_is_a ? src : dst;
    c->info.b = src_is_a ? dst : src;
    c->recent = recent_.insert(recent_.end(), key);
    it = conns_.emplace(key, std::move(c)).first;
    sink_.on_open(it->second->info);
  }
  Conn& c = *it->second;
  c.last_ts_us = p.ts_us;
  recent_.splice(recent_.end(), recent_, c.recent);
  const int d = c.info.a == src ? 0 : 1;
  auto& s = c.dir[d];

  std::uint32_t seq = p.seq;
  if (!s.started) {
    s.started = true;
    s.next_seq = p.syn ? seq + 1 : seq;
    s.next_off = 0;
    c.info.start_known[d] = p.syn || (d == 0 && c.synack_seen && c.synack_ack == seq);
    c.info.saw_syn = c.info.start_known[0] && c.info.start_known[1];
  }
  if (p.syn) {
    ++seq;  // the SYN occupies one sequence number before the data
    if (p.mss) c.info.mss[d] = p.mss;
    if (p.ack_flag && d == 1) {
      c.synack_seen = true;
      c.synack_ack = p.ack;
    }
  }
  // How much of the other direction this segment's sender had received.
  std::uint64_t acked = kAckUnknown;
  if (auto& o = c.dir[1 - d]; p.ack_flag && o.started) {
    const std::int64_t a = static_cast<std::int64_t>(o.next_off) + static_cast<std::int32_t>(p.ack - o.next_seq);
    acked = static_cast<std::uint64_t>(std::max<std::int64_t>(0, a));
    if (o.fin) acked = std::min(acked, o.fin_off);  // the FIN takes a sequence number but is no octet
    o.acked_by_peer = std::max(o.acked_by_peer, acked);
  } else if (p.ack_flag && !o.started) {
    if (!s.ack_base_set) {
      s.ack_base_set = true;
      s.ack_base = p.ack;
    } else if (const auto grew = static_cast<std::int32_t>(p.ack - s.ack_base); grew > 0) {
      c.info.acked_unseen[1 - d] = std::max<std::uint64_t>(c.info.acked_unseen[1 - d], static_cast<std::uint64_t>(grew));
    }
  }

  // Position relative to the next expected octet, in modular arithmetic.
  auto delta = static_cast<std::int32_t>(seq - s.next_seq);
  if ((!p.payload.empty() || p.fin) && (delta <= kFarBehind || delta >= -kFarBehind)) {
    // No retransmission or window reaches 2^30 octets (RFC 7323 §2.3 caps
    // the window below that): a jump in the sender's sequence numbers.
    // Read as the stream going on from there, what lies between a gap of
    // unknown length (taken as the distance forward, which keeps the
    // 512-octet phase of markers for a jump of 2^31); a segment of the
    // space left behind is not read.
    if (s.jumped && static_cast<std::int32_t>(seq - s.left_seq) > kFarBehind &&
        static_cast<std::int32_t>(seq - s.left_seq) <= 0)
      return;
    if (!s.far_behind) sink_.on_limit(c.info, d, p.frame, kSequenceJump);
    s.far_behind = s.jumped = true;
    s.left_seq = s.next_seq;
    drain(sink_, d, c, true, limits_);
    const std::uint64_t forward = static_cast<std::uint32_t>(seq - s.next_seq);
    emit(sink_, c, d, s.next_off, {}, forward, p.frame, kAckUnknown, limits_);
    s.next_off += forward;
    s.next_seq = seq;
    delta = 0;
  }
  if (!p.payload.empty()) {
    const std::int64_t off = static_cast<std::int64_t>(s.next_off) + delta;
    const std::int64_t end = off + static_cast<std::int64_t>(p.payload.size());
    const auto next = static_cast<std::int64_t>(s.next_off);
    if (off < next && end > 0) {  // a copy of octets the stream holds
      const std::int64_t from = std::max<std::int64_t>(off, 0), to = std::min(end, next);
      resent(sink_, c, d, static_cast<std::uint64_t>(from),
             p.payload.subspan(static_cast<std::size_t>(from - off), static_cast<std::size_t>(to - from)), p.frame,
             s.acked_by_peer);
    }
    if (end > next && off >= 0) {
      if (off <= next) {
        const std::size_t skip = static_cast<std::size_t>(next - off);
        protocols::Bytes b = p.payload.subspan(skip);
        const std::uint64_t at = s.next_off;
        s.next_off += b.size();
        s.next_seq += static_cast<std::uint32_t>(b.size());
        emit(sink_, c, d, at, b, 0, p.frame, acked, limits_);
        drain(sink_, d, c, false, limits_);
      } else {
        const auto uoff = static_cast<std::uint64_t>(off);
        auto existing = s.pending.find(uoff);
        // A copy of a waiting segment: the longer kept when they agree; a
        // copy with other content is kept beside the first, for comparison.
        bool keep = true;
        if (existing != s.pending.end()) {
          auto& x = existing->second.data;
          const std::size_t n = std::min(x.size(), p.payload.size());
          if (std::equal(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), p.payload.begin())) {
            keep = x.size() < p.payload.size();
            if (keep) {
              s.pending_bytes -= x.size();
              buffered_ -= x.size();
              s.pending.erase(existing);
            }
          }
        }
        if (keep) {
          s.pending.emplace(uoff, Pending{std::vector<std::byte>(p.payload.begin(), p.payload.end()), p.frame, acked,
                                          s.acked_by_peer});
          s.pending_bytes += p.payload.size();
          buffered_ += p.payload.size();
        }
        if (s.pending_bytes > limits_.max_pending_bytes || s.pending.size() > limits_.max_pending_segments ||
            buffered_ > limits_.max_total_bytes) {
          sink_.on_limit(c.info, d, p.frame,
                         buffered_ > limits_.max_total_bytes ? kAllBuffersFull
                                                             : "the connection's buffer for out-of-order segments is full");
          drain(sink_, d, c, true, limits_);
        }
      }
    }
  }
  if (p.fin && !s.fin) {
    s.fin = true;
    const auto fin_at = static_cast<std::int32_t>(seq - s.next_seq);  // (next_seq moved with what was delivered)
    s.fin_off = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(s.next_off) + fin_at)) +
                p.payload.size();
  }
  if (p.rst) {
    close(c, true, p.frame);
    drop(key);
    return;
  }
  const bool done0 = c.dir[0].fin && c.dir[0].next_off >= c.dir[0].fin_off && c.dir[0].pending.empty();
  const bool done1 = c.dir[1].fin && c.dir[1].next_off >= c.dir[1].fin_off && c.dir[1].pending.empty();
  if (done0 && done1) {
    close(c, false, p.frame);
    drop(key);
  }
}

void TcpReassembler::drop(const Key& k) {
  const auto it = conns_.find(k);
  recent_.erase(it->second->recent);
  conns_.erase(it);
}

void TcpReassembler::close(Conn& c, bool reset, std::uint64_t frame) {
  for (int d = 0; d < 2; ++d) drain(sink_, d, c, true, limits_);
  for (int d = 0; d < 2; ++d) {
    auto& s = c.dir[d];
    c.info.fin[d] = s.fin && s.next_off >= s.fin_off;
    // Octets the capture never saw although the traffic proves they were
    // sent: those before the FIN, or those the peer acknowledged (less the
    // last sequence number, which may have been an unseen FIN).
    const std::uint64_t proven = s.fin ? s.fin_off : (s.acked_by_peer ? s.acked_by_peer - 1 : 0);
    if (proven > s.next_off) {
      emit(sink_, c, d, s.next_off, {}, proven - s.next_off, frame, kAckUnknown, limits_);
      s.next_off = proven;
    }
  }
  release(sink_, c, 0, true);
  sink_.on_close(c.info, reset, frame);
}

void TcpReassembler::close_idle(std::int64_t now_us, std::uint64_t frame) {
  std::vector<std::pair<std::uint64_t, Key>> idle;
  for (const auto& [k, c] : conns_)
    if (now_us - c->last_ts_us > limits_.idle_timeout_us) idle.emplace_back(c->info.id, k);
  std::sort(idle.begin(), idle.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [id, k] : idle) {
    close(*conns_.find(k)->second, false, frame);
    drop(k);
  }
}

void TcpReassembler::finish(std::uint64_t last_frame) {
  // Close in connection order so reports are stable.
  std::vector<Conn*> open;
  for (auto& [k, c] : conns_) open.push_back(c.get());
  std::sort(open.begin(), open.end(), [](Conn* x, Conn* y) { return x->info.id < y->info.id; });
  for (Conn* c : open) close(*c, false, last_frame);
  conns_.clear();
  recent_.clear();
}

}  // namespace rdmaconf::captures::io

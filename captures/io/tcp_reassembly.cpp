#include "captures/io/tcp_reassembly.hpp"

#include <algorithm>
#include <cstring>

namespace rdmaconf::captures::io {

namespace {

struct Pending {
  std::vector<std::byte> data;
  std::uint64_t frame;
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
    std::map<std::uint64_t, Pending> pending;  // out-of-order, by stream offset
    std::size_t pending_bytes = 0;
  } dir[2];
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

// Delivers pending segments that have become contiguous; when `force`, skips
// holes (reporting them as gaps) until the pending map is empty.
void drain(TcpSink& sink, const TcpStreamInfo& info, int d, TcpReassembler::Conn& c, bool force) {
  auto& s = c.dir[d];
  while (!s.pending.empty()) {
    auto it = s.pending.begin();
    std::uint64_t off = it->first;
    if (off > s.next_off) {
      if (!force) return;
      sink.on_gap(info, d, s.next_off, off - s.next_off, it->second.frame);
      s.next_seq += static_cast<std::uint32_t>(off - s.next_off);
      s.next_off = off;
    }
    Pending p = std::move(it->second);
    s.pending_bytes -= p.data.size();
    s.pending.erase(it);
    const std::uint64_t end = off + p.data.size();
    if (end <= s.next_off) continue;  // covered by what was delivered already
    const std::size_t skip = static_cast<std::size_t>(s.next_off - off);
    protocols::Bytes b{p.data.data() + skip, p.data.size() - skip};
    sink.on_data(info, d, s.next_off, b, p.frame);
    s.next_off = end;
    s.next_seq += static_cast<std::uint32_t>(b.size());
  }
}

}  // namespace

void TcpReassembler::add(const Packet& p) {
  Endpoint src{p.ip_version, p.src, p.sport}, dst{p.ip_version, p.dst, p.dport};
  const bool src_lo = endpoint_less(src, dst) || src == dst;
  Key key{src_lo ? src : dst, src_lo ? dst : src};
  auto it = conns_.find(key);
  // A new SYN on a finished or data-carrying connection starts a new one (port reuse).
  if (it != conns_.end() && p.syn && !p.ack_flag) {
    auto& c = *it->second;
    const int d = c.info.a == src ? 0 : 1;
    const bool same_syn = c.dir[d].started && c.dir[d].next_off == 0 && c.dir[d].next_seq == p.seq + 1;
    if (!same_syn) {
      close(c, false, p.frame);
      conns_.erase(it);
      it = conns_.end();
    }
  }
  if (it == conns_.end()) {
    // Only a SYN or a segment with data opens a connection; a stray ACK, FIN or RST
    // (often the last packets of a connection already closed) does not.
    if (!p.syn && p.payload.empty()) return;
    auto c = std::make_unique<Conn>();
    c->info.id = next_id_++;
    // The SYN sender is side a; without a SYN, a SYN-ACK's receiver is; otherwise the first sender.
    const bool src_is_a = !(p.syn && p.ack_flag);
    c->info.a = src_is_a ? src : dst;
    c->info.b = src_is_a ? dst : src;
    c->info.saw_syn = p.syn;
    it = conns_.emplace(key, std::move(c)).first;
    sink_.on_open(it->second->info);
  }
  Conn& c = *it->second;
  const int d = c.info.a == src ? 0 : 1;
  auto& s = c.dir[d];

  std::uint32_t seq = p.seq;
  if (!s.started) {
    s.started = true;
    s.next_seq = p.syn ? seq + 1 : seq;
    s.next_off = 0;
  }
  if (p.syn) {
    ++seq;  // the SYN occupies one sequence number before the data
    if (p.mss) c.info.mss[d] = p.mss;
  }

  if (!p.payload.empty()) {
    // Position relative to the next expected octet, in modular arithmetic.
    const auto delta = static_cast<std::int32_t>(seq - s.next_seq);
    const std::int64_t off = static_cast<std::int64_t>(s.next_off) + delta;
    std::int64_t end = off + static_cast<std::int64_t>(p.payload.size());
    if (end > static_cast<std::int64_t>(s.next_off) && off >= 0) {
      if (off <= static_cast<std::int64_t>(s.next_off)) {
        const std::size_t skip = static_cast<std::size_t>(static_cast<std::int64_t>(s.next_off) - off);
        protocols::Bytes b = p.payload.subspan(skip);
        sink_.on_data(c.info, d, s.next_off, b, p.frame);
        s.next_off += b.size();
        s.next_seq += static_cast<std::uint32_t>(b.size());
        drain(sink_, c.info, d, c, false);
      } else {
        const auto uoff = static_cast<std::uint64_t>(off);
        auto existing = s.pending.find(uoff);
        if (existing == s.pending.end() || existing->second.data.size() < p.payload.size()) {
          if (existing != s.pending.end()) s.pending_bytes -= existing->second.data.size();
          s.pending[uoff] = Pending{std::vector<std::byte>(p.payload.begin(), p.payload.end()), p.frame};
          s.pending_bytes += p.payload.size();
        }
        if (s.pending_bytes > limits_.max_pending_bytes || s.pending.size() > limits_.max_pending_segments)
          drain(sink_, c.info, d, c, true);
      }
    }
  }
  if (p.fin && !s.fin) {
    s.fin = true;
    const auto delta = static_cast<std::int32_t>(seq - s.next_seq);
    s.fin_off = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(s.next_off) + delta)) +
                p.payload.size();
  }
  if (p.rst) {
    close(c, true, p.frame);
    conns_.erase(key);
    return;
  }
  const bool done0 = c.dir[0].fin && c.dir[0].next_off >= c.dir[0].fin_off && c.dir[0].pending.empty();
  const bool done1 = c.dir[1].fin && c.dir[1].next_off >= c.dir[1].fin_off && c.dir[1].pending.empty();
  if (done0 && done1) {
    close(c, false, p.frame);
    conns_.erase(key);
  }
}

void TcpReassembler::close(Conn& c, bool reset, std::uint64_t frame) {
  for (int d = 0; d < 2; ++d) drain(sink_, c.info, d, c, true);
  sink_.on_close(c.info, reset, frame);
}

void TcpReassembler::finish(std::uint64_t last_frame) {
  // Close in connection order so reports are stable.
  std::vector<Conn*> open;
  for (auto& [k, c] : conns_) open.push_back(c.get());
  std::sort(open.begin(), open.end(), [](Conn* x, Conn* y) { return x->info.id < y->info.id; });
  for (Conn* c : open) close(*c, false, last_frame);
  conns_.clear();
}

}  // namespace rdmaconf::captures::io

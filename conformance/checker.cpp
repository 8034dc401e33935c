#include "conformance/checker.hpp"
#include "captures/io/hash_cache.hpp"

#include <fnmatch.h>
#include <pcap/dlt.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "captures/io/pcap_reader.hpp"
#include "captures/io/tcp_reassembly.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::conformance {

using namespace captures::io;

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict) {
  if (c.level != Level::must && !strict) return false;
  if (patterns.empty()) return true;
  const std::string id(c.id);
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return fnmatch(p.c_str(), id.c_str(), 0) == 0; });
}

Checker::Checker(CheckOptions o) : opt_(std::move(o)) {
  const auto& all = opt_.families.empty() ? Registry::get().families() : opt_.families;
  for (const auto* f : all) {
    Active a{f, {}, f->claims(opt_.family_options)};
    for (std::size_t i = 0; i < f->cases().size(); ++i)
      if (case_selected(*f->cases()[i], opt_.case_patterns, opt_.strict)) a.cases.push_back(i);
    families_.push_back(std::move(a));
  }
}

std::vector<const CaseInfo*> Checker::active_cases() const {
  std::vector<const CaseInfo*> v;
  for (const auto& a : families_)
    for (std::size_t i : a.cases) v.push_back(a.family->cases()[i]);
  return v;
}

// A check split over threads (CheckOptions::threads). Every worker reads the
// whole input and keeps the TCP connections that hash to it. A frame whose
// Ethernet, IPv4 and TCP headers sit at fixed offsets is its connection's
// worker's alone; worker 0 does every other frame (frame counts, file-level
// warnings, UDP and link families, VLAN and IPv6 frames, which the other
// workers dissect only for their own connections' segments). Every frame's
// time passes in every worker, so idle connections close at the same frames
// as on one thread. Each worker hands the merger, in its own order, what one thread
// would have done: a connection opened, a scope ended, a connection closed,
// each with the frame it happened at. The merger numbers the connections in
// the order they opened across workers and hands the scopes on in the order
// one thread would have: by frame; within a frame, first the connections an
// idle sweep (or the end of the input) closed, by number, then the frame's
// own work; at the end, the families' leftovers in family order.
//
// The one thing a worker cannot see is the other workers' buffered octets:
// it gets an equal share of the reassembly memory of all connections, and
// when it reaches its share (which one thread might not have reached), the
// split is abandoned and the input checked again on one thread; the scopes
// the merger had handed on all ended before that frame, where one thread
// did the same.
namespace {

// Warnings in frame order, those of one frame by their text (a check split
// over threads raises them in another order), the first kMaxInputWarnings.
void order_warnings(InputResult& out) {
  std::vector<std::size_t> idx(out.warnings.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(out.warning_frames[x], out.warnings[x]) < std::tie(out.warning_frames[y], out.warnings[y]);
  });
  std::vector<std::string> w;
  std::vector<std::uint64_t> f;
  for (std::size_t i = 0; i < idx.size() && i < kMaxInputWarnings; ++i) {
    w.push_back(std::move(out.warnings[idx[i]]));
    f.push_back(out.warning_frames[idx[i]]);
  }
  out.warnings = std::move(w);
  out.warning_frames = std::move(f);
}

constexpr std::uint64_t kEndFrame = ~std::uint64_t{0};

struct SplitEvent {
  enum Kind : std::uint8_t { open, scope, close };
  Kind kind = scope;
  // 0: an idle sweep, or the end of the input closing the connections; 1: the
  // frame's own work; 2 + i: family i's leftovers at the end.
  std::uint32_t group = 1;
  std::uint64_t frame = 0;
  std::uint64_t stream = 0;  // the worker's connection number (0: not a TCP connection's)
  std::uint64_t seq = 0;     // the worker's count of events
  ScopeResult result;        // kind == scope
};

struct SplitShared {
  explicit SplitShared(unsigned n) : queues(n) {}
  // A worker's events in the batches it published. The merger reads them
  // in place and gives the batches back, so that what a worker allocated is
  // freed on its thread (freeing across threads made the allocator the
  // bottleneck).
  struct Queue {
    std::deque<std::vector<SplitEvent>> batches;
    std::size_t head = 0;        // the next event of batches.front()
    std::size_t queued = 0;      // events not yet taken
    std::uint64_t progress = 0;  // every event up to this frame was published
    std::vector<std::vector<SplitEvent>> spent;  // read: for the worker to clear
    const SplitEvent* front() const { return queued ? &batches.front()[head] : nullptr; }
  };
  std::mutex m;
  std::condition_variable ready, room;
  std::vector<Queue> queues;
  bool stop = false;      // the merger wants no more (a failure, or a worker reached its share)
  bool diverged = false;  // a worker reached its share of the reassembly memory
  std::exception_ptr failure;
};

// A worker hands the merger its events every this many frames or events
// (each hand-over may wake the merger: fewer, larger batches cost fewer
// context switches), and holds this many in the merger's queue before it
// waits (a scope is a few KiB: some tens of MiB a worker at most).
constexpr std::uint64_t kSplitBatchFrames = 4096;
constexpr std::size_t kSplitBatchEvents = 1024;
constexpr std::size_t kSplitQueueCap = 8192;

}  // namespace

// Aligned to a cache line: each worker writes its own on every frame.
struct alignas(64) SplitWorker {
  SplitShared& shared;
  unsigned index, count;
  std::vector<SplitEvent> local;  // not yet handed to the merger
  std::uint64_t frame = 0;
  std::uint32_t group = 1;
  std::uint64_t seq = 0;
  bool diverged = false;
  InputResult out;  // the worker's counts, warnings and verdicts

  bool owns(std::uint64_t connection_hash) const { return (connection_hash >> 8) % count == index; }
  void push(SplitEvent::Kind k, std::uint64_t stream, ScopeResult* r = nullptr) {
    SplitEvent& e = local.emplace_back();
    e.kind = k;
    e.group = group;
    e.frame = frame;
    e.stream = stream;
    e.seq = seq++;
    if (r) e.result = std::move(*r);
  }
  // Hands the merger what it has, every event up to frame `progress`;
  // waits while the merger has enough of this worker's. False: stop.
  bool publish(std::uint64_t progress) {
    std::vector<std::vector<SplitEvent>> spent;
    bool go = true;
    {
      std::unique_lock l(shared.m);
      auto& q = shared.queues[index];
      if (!local.empty()) {
        q.queued += local.size();
        q.batches.push_back(std::move(local));
      }
      q.progress = progress;
      shared.ready.notify_one();
      if (progress != kEndFrame) {
        shared.room.wait(l, [&] { return shared.stop || q.queued <= kSplitQueueCap; });
        go = !shared.stop;
      }
      spent.swap(q.spent);
    }
    if (!spent.empty()) {  // what the merger read is freed here, and a batch's room used again
      local = std::move(spent.back());
      local.clear();
    } else {
      local = {};
    }
    return go;
  }
  void fail(std::exception_ptr e) {
    std::lock_guard l(shared.m);
    if (e && !shared.failure) shared.failure = e;
    if (!e) shared.diverged = true;
    shared.stop = true;
    shared.ready.notify_all();
    shared.room.notify_all();
  }
};

namespace {

// Which worker of a split check keeps a TCP connection: a hash of its two
// endpoints that does not depend on their order.
std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
std::uint64_t endpoint_hash(const std::uint8_t* addr, bool v6, std::uint16_t port) {
  std::uint32_t a4;
  std::memcpy(&a4, addr, 4);
  std::uint64_t w = std::uint64_t{port} << 32 | a4;
  if (v6) {
    std::uint64_t x[2];
    std::memcpy(x, addr, 16);
    w ^= mix64(x[0]) ^ x[1];
  }
  return mix64(w);
}
std::uint64_t connection_hash(const Packet& p) {
  const bool v6 = p.ip_version == 6;
  return endpoint_hash(p.src.data(), v6, p.sport) + endpoint_hash(p.dst.data(), v6, p.dport);
}

// connection_hash() of an Ethernet II frame with an IPv4 header naming TCP,
// read without checking anything else; nullopt for any other frame. Where
// dissect() finds a TCP segment in such a frame, it finds this connection,
// so a split check's worker can pass over other workers' frames without
// dissecting them. The offsets are the header tables'.
namespace net = protocols::net;
constexpr std::size_t octet_of(const protocols::FieldDef& f) { return f.bit_offset / 8; }
constexpr std::size_t kEthType = octet_of(net::kEthFields[net::Eth::type]);
constexpr std::size_t kIpVersion = octet_of(net::kIpv4Fields[net::Ipv4::version]);
constexpr std::size_t kIpIhl = octet_of(net::kIpv4Fields[net::Ipv4::ihl]);
constexpr std::size_t kIpProtocol = octet_of(net::kIpv4Fields[net::Ipv4::protocol]);
constexpr std::size_t kIpSrc = octet_of(net::kIpv4Fields[net::Ipv4::src]);
constexpr std::size_t kIpDst = octet_of(net::kIpv4Fields[net::Ipv4::dst]);
constexpr std::size_t kTcpSport = octet_of(net::kTcpFields[net::Tcp::sport]);
constexpr std::size_t kTcpDport = octet_of(net::kTcpFields[net::Tcp::dport]);
static_assert(kIpVersion == 0 && kIpIhl == 0, "version and IHL share the first octet, version in its high nibble");

std::optional<std::uint64_t> quick_tcp_hash(int linktype, const Frame& f) {
  const auto* d = reinterpret_cast<const std::uint8_t*>(f.data.data());
  const std::size_t n = f.data.size();
  const std::size_t eth = net::kEth.size;
  if (linktype != DLT_EN10MB || n < eth + net::kIpv4.size || (d[kEthType] << 8 | d[kEthType + 1]) != 0x0800) return std::nullopt;
  const std::uint8_t* ip = d + eth;
  const std::size_t ihl = (ip[kIpIhl] & 0x0fu) * 4u;
  if ((ip[kIpVersion] >> 4) != 4 || ip[kIpProtocol] != 6 || ihl < net::kIpv4.size || n < eth + ihl + kTcpDport + 2)
    return std::nullopt;
  const std::uint8_t* tcp = ip + ihl;
  const auto sport = static_cast<std::uint16_t>(tcp[kTcpSport] << 8 | tcp[kTcpSport + 1]);
  const auto dport = static_cast<std::uint16_t>(tcp[kTcpDport] << 8 | tcp[kTcpDport + 1]);
  return endpoint_hash(ip + kIpSrc, false, sport) + endpoint_hash(ip + kIpDst, false, dport);
}

// Every TCP stream goes to each family that reads streams; the stream count
// is the capture's, whoever keeps the stream.
class StreamFanOut final : public TcpSink {
 public:
  StreamFanOut(std::vector<TcpSink*> sinks, std::uint64_t& opened, SplitWorker* split)
      : sinks_(std::move(sinks)), opened_(opened), split_(split) {}
  void on_open(const TcpStreamInfo& c) override {
    ++opened_;
    if (split_) split_->push(SplitEvent::open, c.id);
    for (auto* s : sinks_) s->on_open(c);
  }
  void on_data(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes data, std::uint64_t frame,
               std::uint64_t acked) override {
    for (auto* s : sinks_) s->on_data(c, dir, off, data, frame, acked);
  }
  void on_gap(const TcpStreamInfo& c, int dir, std::uint64_t off, std::uint64_t len, std::uint64_t frame) override {
    for (auto* s : sinks_) s->on_gap(c, dir, off, len, frame);
  }
  void on_resent(const TcpStreamInfo& c, int dir, std::uint64_t off, protocols::Bytes copy, std::uint64_t frame) override {
    for (auto* s : sinks_) s->on_resent(c, dir, off, copy, frame);
  }
  void on_close(const TcpStreamInfo& c, bool reset, std::uint64_t frame) override {
    for (auto* s : sinks_) s->on_close(c, reset, frame);
    if (split_) split_->push(SplitEvent::close, c.id);
  }
  void on_limit(const TcpStreamInfo& c, int dir, std::uint64_t frame, const char* why) override {
    // (By text: the same literal can sit at different addresses in different objects.)
    if (split_ && std::string_view(why) == kAllBuffersFull) split_->diverged = true;
    for (auto* s : sinks_) s->on_limit(c, dir, frame, why);
  }

 private:
  std::vector<TcpSink*> sinks_;
  std::uint64_t& opened_;
  SplitWorker* split_;
};

template <class Key>
FamilyRun* owner(const std::vector<std::pair<Key, FamilyRun*>>& claims, Key k) {
  for (const auto& [key, run] : claims)
    if (key == k) return run;
  return nullptr;
}

}  // namespace

namespace {

// Runs one input's check and records when it began and how long it took.
template <class F>
InputResult timed(F&& check) {
  const auto wall = std::chrono::system_clock::now();
  const auto t0 = std::chrono::steady_clock::now();
  InputResult out = check();
  out.started_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

InputResult Checker::check_file(const std::string& path) const {
  return timed([&] {
    // A file hashed before and unchanged since takes its hash from the
    // cache, and is read once, by the check alone.
    const captures::io::HashCache cache(opt_.hash ? opt_.hash_cache : std::filesystem::path());
    const auto id = opt_.hash && !opt_.hash_cache.empty() ? captures::io::identify(path) : std::nullopt;
    const std::string known = id ? cache.find(*id) : std::string();
    std::string err;
    auto reader = PcapReader::open(path, err, opt_.hash && known.empty());
    InputResult out = reader && splittable(path, *reader) ? check_split(path, std::move(reader))
                                                          : check(path, std::move(reader), err);
    if (!known.empty()) out.sha256 = known;
    // Kept only when the file did not change while it was read.
    else if (id && !out.sha256.empty() && captures::io::identify(path) == id) cache.store(*id, out.sha256);
    return out;
  });
}

InputResult Checker::check_memory(const std::string& name, protocols::Bytes data) const {
  return timed([&] {
    std::string err;
    return check(name, PcapReader::open_memory(name, data, err, opt_.hash), err);
  });
}

struct CheckRun::Impl {
  const Checker& checker;
  const CheckOptions& opt;
  std::string path;
  int linktype;
  InputResult& out;
  SplitWorker* split;    // set: one worker of a split check
  std::uint64_t skip_scopes = 0;  // counted but not handed on (Checker::check)
  bool refused = false;  // no one reads the link type
  // Each family's run on this input, and who gets what.
  std::vector<std::unique_ptr<RunContext>> contexts;
  std::vector<std::unique_ptr<FamilyRun>> runs;
  std::vector<std::pair<std::uint16_t, FamilyRun*>> by_port, by_ethertype;
  std::vector<FamilyRun*> all_udp;  // families that see every UDP datagram
  FamilyRun* whole_link = nullptr;  // a family that owns the input's link type
  std::unique_ptr<StreamFanOut> fan;
  std::unique_ptr<TcpReassembler> tcp;
  std::unique_ptr<RunContext> capture_ctx;
  std::uint64_t last = 0;
  std::int64_t latest_ts = std::numeric_limits<std::int64_t>::min();
  std::uint64_t latest_frame = 0;

  Impl(const Checker& c, std::string p, int lt, InputResult& o, SplitWorker* sw = nullptr)
      : checker(c), opt(c.opt_), path(std::move(p)), linktype(lt), out(o), split(sw) {
    out.path = path;
    out.linktype = linktype_name(linktype);
    std::vector<TcpSink*> stream_sinks;
    for (const auto& a : checker.families_) {
      contexts.push_back(std::make_unique<RunContext>(out, opt.family_options, a.cases, [this](ScopeResult&& r) { sink(std::move(r)); },
                                                      opt.reassembly.idle_timeout_us, state_share()));
      if (opt.on_unit && (opt.listing_family.empty() || a.family->name() == opt.listing_family))
        contexts.back()->on_unit = [this, f = a.family](std::string_view unit, nlohmann::json&& j) {
          if (opt.listing_unit.empty() || unit == opt.listing_unit) opt.on_unit(*f, unit, std::move(j));
        };
      contexts.back()->on_warning = opt.on_warning;
      runs.push_back(a.family->start(*contexts.back()));
      FamilyRun* run = runs.back().get();
      if (a.claims.tcp_streams)
        if (auto* s = run->streams()) stream_sinks.push_back(s);
      if (a.claims.all_udp) all_udp.push_back(run);
      for (auto port : a.claims.udp_ports)
        if (!owner(by_port, port)) by_port.emplace_back(port, run);
      for (auto t : a.claims.ethertypes)
        if (!owner(by_ethertype, t)) by_ethertype.emplace_back(t, run);
      if (!whole_link && std::find(a.claims.linktypes.begin(), a.claims.linktypes.end(), linktype) != a.claims.linktypes.end())
        whole_link = run;
    }
    if (!whole_link && !supported_linktype(linktype)) {
      std::string claimed;
      for (const auto& a : checker.families_)
        for (int t : a.claims.linktypes) claimed += ", " + linktype_name(t);
      out.error = fmt::format(
          "{}: link type {} is not supported (Ethernet, Linux cooked v1/v2, raw IP{}, and ERF records of Ethernet, InfiniBand "
          "or IP are)",
          path, out.linktype, claimed);
      refused = true;
      return;
    }
    fan = std::make_unique<StreamFanOut>(stream_sinks, out.stats.tcp_connections, split);
    ReassemblyLimits limits = opt.reassembly;
    if (split) limits.max_total_bytes = std::max<std::size_t>(1, limits.max_total_bytes / split->count);
    if (state_share()) limits.max_open = std::max<std::size_t>(1, state_share() / kOpenTcpConnectionBytes);
    tcp = std::make_unique<TcpReassembler>(*fan, limits);
    capture_ctx = std::make_unique<RunContext>(out, opt.family_options, std::vector<std::size_t>{});
    capture_ctx->on_warning = opt.on_warning;
  }

  // The open state one kind (TCP connections, RoCE conversations, UDP
  // conversations) may take on this thread: a third of the budget, shared
  // by a split check's threads.
  std::uint64_t state_share() const {
    if (!opt.state_memory) return 0;
    return std::max<std::uint64_t>(1, opt.state_memory / 3 / (split ? split->count : 1));
  }

  // Where ended scopes go: counted, then streamed out or kept.
  void sink(ScopeResult&& r) {
    for (const auto& o : r.outcomes) out.verdicts.add(o.tally.verdict());
    if (!opt.keep_scopes) return;
    if (split) {  // the merger hands on, in order
      split->push(SplitEvent::scope, r.tcp_stream, &r);
      return;
    }
    if (skip_scopes) --skip_scopes;
    else if (opt.on_scope) opt.on_scope(path, std::move(r));
    else out.scopes.push_back(std::move(r));
  }

  // A TCP segment, to the reassembler (a split check's worker: when its connection is the worker's).
  void segment(const Packet& p) {
    if (!split || split->owns(connection_hash(p))) tcp->add(p);
  }

  // File-level sanity, and the counts of frames and octets.
  void frame_sanity(const Frame& f) {
    ++out.stats.frames;
    // Warned with the frame number, never silent.
    if (f.caplen > f.orig_len)
      capture_ctx->anomaly(f.number, fmt::format("frame {}: captured length {} is greater than the original length {} (an "
                                       "inconsistent record; judged as captured)",
                                       f.number, f.caplen, f.orig_len));
    if (const std::int64_t ts = f.ts_sec * 1000000 + f.ts_usec; ts < latest_ts)
      capture_ctx->anomaly(f.number, fmt::format("frame {}: timestamp {} us earlier than frame {}'s", f.number, latest_ts - ts, latest_frame));
    else {
      latest_ts = ts;
      latest_frame = f.number;
    }
    out.stats.octets += f.data.size();
    if (f.problem) capture_ctx->undecodable(f.number, fmt::format("frame {}: {}", f.number, f.problem));
  }

  void frame(const Frame& f) {
    last = f.number;
    // Capture time passes with every frame: connections idle for the
    // timeout close here, before what the frame brings.
    if (split) {
      split->frame = f.number;
      split->group = 0;
    }
    tcp->pass(f.ts_sec * 1000000 + f.ts_usec, f.number);
    // A split check's worker: a frame that quick_tcp_hash() reads is its
    // connection's worker's alone (dissected, judged, or warned about as
    // undecodable there); worker 0 does every other frame, and the others
    // look at those only for their connections' TCP segments.
    std::optional<bool> owned;
    if (split) {
      split->group = 1;
      if (const auto h = quick_tcp_hash(linktype, f)) owned = split->owns(*h);
      if (split->index != 0 && !owned.has_value()) {
        const Dissected d = dissect(linktype, f);
        if (d.status == DissectStatus::ok && d.pkt.protocol == 6) segment(d.pkt);
        return;
      }
    }
    if (!split || split->index == 0) frame_sanity(f);
    if ((owned && !*owned) || f.problem) return;
    if (whole_link) {
      Packet p;
      p.frame = f.number;
      p.ts_us = f.ts_sec * 1000000 + f.ts_usec;
      p.l3 = f.data;
      p.orig_len = f.orig_len;
      whole_link->packet(p);
      return;
    }
    const Dissected d = dissect(linktype, f);
    switch (d.status) {
      case DissectStatus::error:
        capture_ctx->undecodable(f.number, d.error);
        if (d.udp_bad_length)
          for (auto* u : all_udp) u->packet(d.pkt);
        break;
      case DissectStatus::link:
        if (auto* r = owner(by_ethertype, d.pkt.ethertype)) r->packet(d.pkt);
        break;
      case DissectStatus::ok:
        if (d.pkt.protocol == 6) {
          segment(d.pkt);
        } else if (d.pkt.protocol == 17) {
          auto* r = owner(by_port, d.pkt.dport);
          if (r) r->packet(d.pkt);
          for (auto* u : all_udp)
            if (u != r) u->packet(d.pkt);
        }
        break;
      case DissectStatus::other:
        break;
    }
  }

  void finish() {
    if (refused) return;
    if (split) {
      split->frame = kEndFrame;
      split->group = 0;
    }
    tcp->finish(last);
    if (const auto n = tcp->closed_early())
      capture_ctx->bound_reached(
          last, fmt::format("TCP connections: {} closed early, the least recently active first ({} open at once, the bound of "
                            "this kind's {} KiB share of --state-memory); what they would have shown later is INCONCLUSIVE",
                            n, std::max<std::size_t>(1, state_share() / kOpenTcpConnectionBytes), state_share() >> 10));
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (split) split->group = static_cast<std::uint32_t>(2 + i);
      std::vector<ScopeResult> open;
      runs[i]->finish(open, out.stats.families);
      for (auto& s : open) sink(std::move(s));
    }
    checker.order_kept(out.scopes);
    order_warnings(out);
  }
};

void Checker::order_kept(std::vector<ScopeResult>& scopes) const {
  auto rank = [&](const ScopeResult& s) {
    std::size_t f = 0;
    while (f < families_.size() && families_[f].family->name() != s.family) ++f;
    return f;
  };
  std::stable_sort(scopes.begin(), scopes.end(), [&](const ScopeResult& x, const ScopeResult& y) {
    const auto fx = rank(x), fy = rank(y);
    return fx != fy ? fx < fy : x.order < y.order;
  });
}

CheckRun::CheckRun(const Checker& c, std::string path, int linktype, InputResult& out)
    : impl_(std::make_unique<Impl>(c, std::move(path), linktype, out)) {}
CheckRun::~CheckRun() = default;
void CheckRun::frame(const Frame& f) {
  if (!impl_->refused) impl_->frame(f);
}
void CheckRun::finish() { impl_->finish(); }

InputResult Checker::check(const std::string& path, std::unique_ptr<PcapReader> reader, const std::string& open_error,
                           std::uint64_t skip_scopes) const {
  InputResult out;
  out.path = path;
  if (!reader) {
    out.error = open_error;
    return out;
  }
  {
    CheckRun run(*this, path, reader->linktype(), out);
    run.impl_->skip_scopes = skip_scopes;
    if (!out.error.empty()) {
      out.sha256 = reader->sha256();
      return out;
    }
    while (auto f = reader->next()) {
      run.frame(*f);
      if (opt_.progress && (f->number & 0xfff) == 0) opt_.progress(reader->bytes_read(), reader->file_size());
    }
    if (!reader->error().empty()) out.error = reader->error();
    run.finish();
  }
  out.sha256 = reader->sha256();
  if (opt_.progress) opt_.progress(reader->file_size(), reader->file_size());
  return out;
}

}  // namespace rdmaconf::conformance

namespace rdmaconf::conformance {

bool Checker::splittable(const std::string& path, const PcapReader& r) const {
  if (opt_.threads < 2 || r.file_size() < opt_.split_min_size || opt_.on_unit || opt_.on_warning) return false;
  if (!supported_linktype(r.linktype())) return false;
  bool streams = false;
  for (const auto& a : families_) {
    if (std::find(a.claims.linktypes.begin(), a.claims.linktypes.end(), r.linktype()) != a.claims.linktypes.end()) return false;
    streams = streams || a.claims.tcp_streams;
  }
  if (!streams || opt_.split_min_size == 0) return streams;
  // Worth it only with connections to share: a few long connections would
  // leave one thread with all the work and the others reading for nothing.
  // The first frames tell (Ethernet and IPv4 frames; others count as none).
  std::string err;
  const auto head = PcapReader::open(path, err, false);
  if (!head) return false;
  std::unordered_set<std::uint64_t> seen;
  for (int i = 0; i < 20000 && seen.size() < 16u * opt_.threads; ++i) {
    const auto f = head->next();
    if (!f) break;
    if (const auto h = quick_tcp_hash(head->linktype(), *f)) seen.insert(*h);
  }
  return seen.size() >= 16u * opt_.threads;
}

namespace {

// The merger's order of two events at the heads of workers' queues (`gx`,
// `gy`: their connections' numbers across workers, where the order needs them).
bool split_before(const SplitEvent& x, unsigned wx, std::uint64_t gx, const SplitEvent& y, unsigned wy, std::uint64_t gy) {
  if (x.frame != y.frame) return x.frame < y.frame;
  if (x.group != y.group) return x.group < y.group;
  if (gx != gy) return gx < gy;
  return wx != wy ? wx < wy : x.seq < y.seq;
}

}  // namespace

InputResult Checker::check_split(const std::string& path, std::unique_ptr<PcapReader> first) const {
  const unsigned n = opt_.threads;
  std::vector<std::unique_ptr<PcapReader>> readers;
  readers.push_back(std::move(first));
  for (unsigned w = 1; w < n; ++w) {
    std::string err;
    readers.push_back(PcapReader::open(path, err, false));
    if (!readers.back()) return check(path, std::move(readers.front()), err);
  }
  SplitShared shared(n);
  std::vector<std::unique_ptr<SplitWorker>> workers;
  for (unsigned w = 0; w < n; ++w) workers.push_back(std::make_unique<SplitWorker>(SplitWorker{shared, w, n, {}, 0, 1, 0, false, {}}));

  const auto work = [&](unsigned w) {
    pthread_setname_np(pthread_self(), "rdmaconf-split");  // (for top and perf)
    SplitWorker& sw = *workers[w];
    PcapReader& rd = *readers[w];
    try {
      CheckRun::Impl run(*this, path, rd.linktype(), sw.out, &sw);
      std::uint64_t since = 0;
      while (auto f = rd.next()) {
        run.frame(*f);
        if (sw.diverged) return sw.fail(nullptr);
        if (w == 0 && opt_.progress && (f->number & 0xfff) == 0) opt_.progress(rd.bytes_read(), rd.file_size());
        if (++since >= kSplitBatchFrames || sw.local.size() >= kSplitBatchEvents) {
          since = 0;
          if (!sw.publish(f->number)) return;
        }
      }
      if (!rd.error().empty()) sw.out.error = rd.error();
      run.finish();
      if (sw.diverged) return sw.fail(nullptr);
      if (w == 0) sw.out.sha256 = rd.sha256();
      sw.publish(kEndFrame);
    } catch (...) {
      sw.fail(std::current_exception());
    }
  };

  // The merger, on this thread.
  std::vector<ScopeResult> kept;
  std::uint64_t handed = 0;  // scopes handed to on_scope
  std::vector<std::unordered_map<std::uint64_t, std::uint64_t>> number(n);  // worker's connection -> across workers
  std::uint64_t next_number = 1;
  {
    std::vector<std::jthread> threads;
    struct Stopper {  // whatever happens here, the workers end before they are joined
      SplitShared& s;
      ~Stopper() {
        std::lock_guard l(s.m);
        s.stop = true;
        s.room.notify_all();
      }
    } stopper{shared};
    for (unsigned w = 0; w < n; ++w) threads.emplace_back(work, w);
    std::vector<std::pair<SplitEvent*, unsigned>> todo;        // scopes to hand on, and their worker
    std::vector<std::vector<std::vector<SplitEvent>>> read(n);  // each worker's batches read through
    for (bool finished = false; !finished;) {
      {
        std::unique_lock l(shared.m);
        const auto give_back = [&] {  // the batches read through, to their workers; room for more
          for (unsigned w = 0; w < n; ++w)
            for (auto& b : read[w]) shared.queues[w].spent.push_back(std::move(b));
          for (auto& r : read) r.clear();
          shared.room.notify_all();
        };
        give_back();
        for (;;) {
          if (shared.stop) {
            finished = true;
            break;
          }
          bool all_done = true;
          for (;;) {  // take what can go: the least head that no worker with nothing queued could still precede
            int best = -1;
            std::uint64_t best_g = 0, waiting_at = kEndFrame;
            all_done = true;
            const auto g_of = [&](unsigned w, const SplitEvent& e) -> std::uint64_t {
              if (e.group == 1 || !e.stream) return 0;
              const auto it = number[w].find(e.stream);
              return it == number[w].end() ? 0 : it->second;
            };
            for (unsigned w = 0; w < n; ++w) {
              const auto& q = shared.queues[w];
              if (q.progress != kEndFrame) all_done = false;
              const SplitEvent* e = q.front();
              if (!e) {
                waiting_at = std::min(waiting_at, q.progress);
                continue;
              }
              all_done = false;
              const std::uint64_t g = g_of(w, *e);
              if (best < 0 || split_before(*e, w, g, *shared.queues[static_cast<unsigned>(best)].front(), static_cast<unsigned>(best), best_g)) {
                best = static_cast<int>(w);
                best_g = g;
              }
            }
            if (best < 0) break;
            const auto bw = static_cast<unsigned>(best);
            auto& q = shared.queues[bw];
            SplitEvent& e = q.batches.front()[q.head];
            if (e.frame > waiting_at) break;
            --q.queued;
            if (++q.head == q.batches.front().size()) {
              read[bw].push_back(std::move(q.batches.front()));  // its events stay where they are
              q.batches.pop_front();
              q.head = 0;
            }
            auto& mine = number[bw];
            if (e.kind == SplitEvent::open) {
              mine[e.stream] = next_number++;
            } else if (e.kind == SplitEvent::close) {
              mine.erase(e.stream);
            } else {
              if (e.stream) {
                const auto it = mine.find(e.stream);
                e.stream = it == mine.end() ? 0 : it->second;
              }
              todo.emplace_back(&e, bw);
              if (todo.size() >= 64) break;
            }
          }
          if (!todo.empty()) break;
          if (all_done) {
            finished = true;
            break;
          }
          give_back();
          shared.ready.wait(l);
        }
        shared.room.notify_all();
      }
      for (auto [e, w] : todo) {
        ScopeResult& r = e->result;
        if (e->stream) {  // numbered as one thread would have
          r.id.resize(r.id.rfind('/') + 1);
          r.id += std::to_string(e->stream);
          r.order = r.tcp_stream = e->stream;
        }
        if (opt_.on_scope) {
          opt_.on_scope(path, std::move(r));
          ++handed;
        } else {
          kept.push_back(std::move(r));
        }
      }
      todo.clear();
    }
  }
  if (shared.failure) std::rethrow_exception(shared.failure);
  if (shared.diverged) {
    std::string err;
    return check(path, PcapReader::open(path, err, opt_.hash), err, handed);
  }

  std::vector<std::string> warnings;
  std::vector<std::uint64_t> warning_frames;
  for (unsigned w = 0; w < n; ++w) {
    auto& o = workers[w]->out;
    std::move(o.warnings.begin(), o.warnings.end(), std::back_inserter(warnings));
    warning_frames.insert(warning_frames.end(), o.warning_frames.begin(), o.warning_frames.end());
  }
  InputResult out = std::move(workers[0]->out);
  out.threads = n;
  out.scopes = std::move(kept);
  order_kept(out.scopes);
  for (unsigned w = 1; w < n; ++w) {
    InputResult& o = workers[w]->out;
    out.stats.tcp_connections += o.stats.tcp_connections;
    out.stats.undecodable_frames += o.stats.undecodable_frames;
    out.stats.capture_anomalies += o.stats.capture_anomalies;
    out.verdicts.merge(o.verdicts);
    out.warnings_total += o.warnings_total;
    for (auto& c : o.stats.families) {
      auto it = std::find_if(out.stats.families.begin(), out.stats.families.end(), [&](const FamilyCount& x) { return x.key == c.key; });
      if (it != out.stats.families.end()) it->value += c.value;
      else out.stats.families.push_back(std::move(c));
    }
  }
  out.warnings = std::move(warnings);
  out.warning_frames = std::move(warning_frames);
  order_warnings(out);
  if (opt_.progress) opt_.progress(readers[0]->file_size(), readers[0]->file_size());
  return out;
}

}  // namespace rdmaconf::conformance

#pragma once
// A protocol family (iWARP, InfiniBand transport, ...) as the checker sees
// it: the traffic it claims from a capture, the cases it judges, a per-input
// run that turns claimed packets or TCP streams into scope results, its own
// command-line options and its decoded listing. The checker, the reports and
// the CLI loop over registered families and never name one.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/io/packet.hpp"
#include "captures/io/tcp_reassembly.hpp"
#include "conformance/ledger.hpp"
#include "conformance/result.hpp"
#include "protocols/core/field.hpp"

namespace rdmaconf::conformance {

// Values of a family's own options, by option name ("--roce-port" -> {4792, 4793}).
using FamilyOptions = std::map<std::string, std::vector<std::uint64_t>, std::less<>>;

// The values of one option, or `fallback` when it was not given.
std::vector<std::uint64_t> option_values(const FamilyOptions& o, std::string_view name, std::vector<std::uint64_t> fallback = {});

// A numeric command-line option a family adds to `rdmaconf check`.
struct OptionSpec {
  std::string name;                   // "--roce-port"
  std::string help;
  bool repeatable = false;            // a list rather than one value
  std::vector<std::uint64_t> allowed;  // empty: any value up to max
  std::uint64_t max = UINT64_MAX;
};

// An option's values given as text ("4791, 4792": numbers separated by
// commas or blanks; one unless the option is repeatable), each checked
// against the spec. Empty text gives no values. On error, returns a message
// naming the option and the value.
std::optional<std::string> parse_option(const OptionSpec& spec, std::string_view text, std::vector<std::uint64_t>& values);

// What a family takes from a capture. The checker offers every TCP stream to
// the families that read streams (each decides whether a stream is its own),
// UDP datagrams by destination port (and every one to the families that
// judge UDP itself), frames by EtherType, and whole inputs by link type.
struct Claims {
  bool tcp_streams = false;
  bool all_udp = false;  // every UDP datagram, besides the port's own family
  std::vector<std::uint16_t> udp_ports;
  std::vector<std::uint16_t> ethertypes;
  std::vector<int> linktypes;
};

// What a family's run may use of the checker.
class RunContext {
 public:
  using ScopeSink = std::function<void(ScopeResult&&)>;
  RunContext(InputResult& out, const FamilyOptions& options, std::vector<std::size_t> active, ScopeSink sink = {},
             std::int64_t idle_timeout_us = 0, std::uint64_t state_memory = 0)
      : out_(out), options_(options), active_(std::move(active)), sink_(std::move(sink)), idle_timeout_us_(idle_timeout_us),
        state_memory_(state_memory) {}
  // The family's cases that run (indices into ProtocolFamily::cases()).
  const std::vector<std::size_t>& active() const { return active_; }
  // The values of one of the family's options, or `fallback` when it was not given.
  std::vector<std::uint64_t> option(std::string_view name, std::vector<std::uint64_t> fallback = {}) const {
    return option_values(options_, name, std::move(fallback));
  }
  // A frame the family claimed but could not decode: counted and, the first
  // few times, reported with the input's name.
  void undecodable(std::uint64_t frame, const std::string& message);
  // A file-level oddity of one frame (warned, counted; the frame is still judged).
  void anomaly(std::uint64_t frame, const std::string& message);
  // A bound of the checker's own reached at this frame (the open state's):
  // warned, and not counted as the capture's fault.
  void bound_reached(std::uint64_t frame, const std::string& message) { notice(frame, message); }
  // Traffic the family saw and did not judge, and why: warned, not counted
  // as the capture's fault.
  void notice(std::uint64_t frame, const std::string& message);
  // Set by the dissector: called with every warning and its frame
  // (`undecodable` true for a frame not decoded, false for an oddity).
  std::function<void(std::uint64_t frame, bool undecodable, const std::string& message)> on_warning;
  // A scope that has ended (its connection closed, its conversation went
  // idle): handed on at once, so that the family keeps only open state.
  void scope_done(ScopeResult&& r) { sink_(std::move(r)); }
  // A scope with no traffic for this long in capture time has ended (0: a
  // scope ends only with its protocol's close or the capture).
  std::int64_t idle_timeout_us() const { return idle_timeout_us_; }
  // Octets the family's open scopes may take together (0: no bound): a
  // family that keeps scopes open by the thousand closes the least recently
  // active early beyond it (its share of CheckOptions::state_memory; see
  // Recency).
  std::uint64_t state_memory() const { return state_memory_; }
  // The bound in words, for the messages of a scope closed early.
  std::string state_bound(std::uint64_t max_open) const;
  // Set by `rdmaconf <listing>` and the dissector: called with every decoded
  // unit as JSON, with the name of its listing's unit (Listing::unit).
  std::function<void(std::string_view unit, nlohmann::json&&)> on_unit;

 private:
  void warn(std::uint64_t frame, const std::string& message);
  InputResult& out_;
  const FamilyOptions& options_;
  std::vector<std::size_t> active_;
  ScopeSink sink_;
  std::int64_t idle_timeout_us_;
  std::uint64_t state_memory_;
};

// The run's share of a family's case objects: those ctx.active() names, and
// their infos (from `all_infos`, the family's cases(), in the same order).
template <class CaseT>
void take_active(const std::vector<std::unique_ptr<CaseT>>& all, const std::vector<const CaseInfo*>& all_infos,
                 const RunContext& ctx, std::vector<const CaseT*>& cases, std::vector<const CaseInfo*>& infos) {
  cases.reserve(ctx.active().size());
  infos.reserve(ctx.active().size());
  for (std::size_t i : ctx.active()) {
    cases.push_back(all[i].get());
    infos.push_back(all_infos[i]);
  }
}

// Ends the scopes in `open` (a map to unique_ptrs of states with an `id`,
// their order, and `last_ts`, their latest packet's capture time) that saw no
// traffic for the run's idle time by `now_us`: each goes to
// RunContext::scope_done as `result(state)` makes it, in the order they began.
template <class Map, class Result>
void end_idle_scopes(Map& open, std::int64_t now_us, RunContext& ctx, Result result) {
  std::vector<typename Map::iterator> idle;
  for (auto it = open.begin(); it != open.end(); ++it)
    if (now_us - it->second->last_ts > ctx.idle_timeout_us()) idle.push_back(it);
  std::sort(idle.begin(), idle.end(), [](const auto& x, const auto& y) { return x->second->id < y->second->id; });
  for (auto it : idle) {
    ctx.scope_done(result(*it->second));
    open.erase(it);
  }
}

// Ends the scopes still open at the end of an input: each goes to
// RunContext::scope_done as `result(state)` makes it, in the order they
// began, its state freed before the next is made (so that the end of a
// capture with many open scopes needs no more memory than its middle).
template <class Map, class Result>
void end_open_scopes(Map& open, RunContext& ctx, Result result) {
  std::vector<typename Map::iterator> v;
  v.reserve(open.size());
  for (auto it = open.begin(); it != open.end(); ++it) v.push_back(it);
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x->second->id < y->second->id; });
  for (auto it : v) {
    ctx.scope_done(result(*it->second));
    open.erase(it);
  }
}

// The open scopes of a family in the order they were last active, for
// closing the least recently active early at the bound its share of
// CheckOptions::state_memory sets. Each open scope's state holds an Entry,
// which leaves the order when the state is destroyed (however it ends).
template <class Key>
class Recency {
 public:
  class Entry {
   public:
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() {
      if (owner_) owner_->order_.erase(it_);
    }

   private:
    friend class Recency;
    Recency* owner_ = nullptr;
    typename std::list<Key>::iterator it_;
  };
  // `per_scope`: the octets one open scope takes (measured). No bound when
  // the context sets none, or when per_scope is 0 (a family that keeps no
  // bound).
  Recency(const RunContext& ctx, std::uint64_t per_scope)
      : max_open_(ctx.state_memory() && per_scope ? std::max<std::uint64_t>(1, ctx.state_memory() / per_scope) : 0) {}
  void add(Entry& e, const Key& k) {
    e.owner_ = this;
    e.it_ = order_.insert(order_.end(), k);
  }
  void touch(Entry& e) { order_.splice(order_.end(), order_, e.it_); }
  // Before a new scope opens: is the bound reached (close oldest() first)?
  bool full(std::size_t open) const { return max_open_ && open >= max_open_; }
  const Key& oldest() const { return order_.front(); }
  std::uint64_t max_open() const { return max_open_; }

 private:
  std::list<Key> order_;
  std::uint64_t max_open_;
};

// When a family looks for idle scopes as capture time passes: every eighth
// of the run's idle time (never with no idle time set), not on the first
// packet.
class IdleSweep {
 public:
  bool due(std::int64_t now_us, const RunContext& ctx) {
    const std::int64_t idle = ctx.idle_timeout_us();
    if (idle <= 0 || (last_us_ && now_us - *last_us_ < std::max<std::int64_t>(idle / 8, 1))) return false;
    const bool first = !last_us_;
    last_us_ = now_us;
    return !first;
  }

 private:
  std::optional<std::int64_t> last_us_;
};

// The open conversations of a family that keys its scopes by a pair of
// endpoints (RoCE, UDP, U-Net): each a Conv with an `id`, its latest
// packet's capture time `last_ts` and a `Recency<Key>::Entry recent`. A
// conversation with no traffic for the run's idle time ends (sweep), the
// least recently active ends early when a new one would pass the family's
// share of the state bound (get), and those still open end with the input
// (finish); each end hands its scope to RunContext::scope_done.
template <class Key, class Conv>
class Conversations {
 public:
  // `per_conversation`: the octets one open conversation takes (measured;
  // 0: no bound on how many are open).
  Conversations(RunContext& ctx, std::uint64_t per_conversation) : ctx_(ctx), recent_(ctx, per_conversation) {}
  // Before a packet of capture time `now_us`: the conversations idle by
  // then end, each scope made by `result(Conv&)`.
  template <class Result>
  void sweep(std::int64_t now_us, Result result) {
    if (sweep_.due(now_us, ctx_)) end_idle_scopes(open_, now_us, ctx_, result);
  }
  // The conversation of `key`, made by `make()` (a unique_ptr<Conv>) when
  // there is none. Before a new one opens past the bound, the least
  // recently active ends: `early(Conv&, frame, first)` makes its scope
  // (`first`: the first closed early in this run, whose message the family
  // gives once).
  template <class Make, class Early>
  Conv& get(const Key& key, std::uint64_t frame, Make make, Early early) {
    auto it = open_.find(key);
    if (it == open_.end()) {
      if (recent_.full(open_.size())) {
        const auto oldest = open_.find(recent_.oldest());
        ctx_.scope_done(early(*oldest->second, frame, closed_early_++ == 0));
        open_.erase(oldest);
      }
      std::unique_ptr<Conv> c = make();
      recent_.add(c->recent, key);
      it = open_.emplace(key, std::move(c)).first;
    }
    Conv& c = *it->second;
    recent_.touch(c.recent);
    return c;
  }
  // At the end of the input: those still open end, in the order they began.
  template <class Result>
  void finish(Result result) {
    end_open_scopes(open_, ctx_, result);
  }
  std::uint64_t closed_early() const { return closed_early_; }
  // The bound in words, for a family's messages.
  std::string bound() const { return ctx_.state_bound(recent_.max_open()); }

 private:
  RunContext& ctx_;
  Recency<Key> recent_;  // (before open_: a Conv leaves it when destroyed)
  std::map<Key, std::unique_ptr<Conv>> open_;
  IdleSweep sweep_;
  std::uint64_t closed_early_ = 0;
};

// One family's work on one input.
class FamilyRun {
 public:
  virtual ~FamilyRun() = default;
  // A claimed UDP datagram, frame of a claimed EtherType, or frame of a claimed link type.
  virtual void packet(const captures::io::Packet&) {}
  // Claimed TCP streams arrive here (families with Claims::tcp_streams).
  virtual captures::io::TcpSink* streams() { return nullptr; }
  // End of input: the scopes still open (those that ended went to
  // RunContext::scope_done), in a stable order, and the family's counters.
  virtual void finish(std::vector<ScopeResult>& scopes, std::vector<FamilyCount>& counts) = 0;
};

// A `rdmaconf <command> PATH` listing of every decoded unit, one JSON object
// per line. A unit's keys are its headers (objects keyed by their tables'
// field abbreviations) and its own values, which `fields` declares (abbrev:
// the JSON key; width and display: the value's), so that the dissector can
// show and filter them as `rdmaconf.<unit>.<key>`.
struct Listing {
  std::string_view command;  // "fpdus"
  std::string_view help;
  std::string_view unit;     // "fpdu"
  std::string_view unit_title;  // "FPDU"
  std::span<const protocols::FieldDef> fields;
};

class ProtocolFamily {
 public:
  virtual ~ProtocolFamily() = default;
  // Short name, as reports name the family of its cases and scopes ("iwarp", "ib").
  virtual std::string_view name() const = 0;
  // For people: "iWARP (MPA, DDP, RDMAP over TCP)".
  virtual std::string_view title() const = 0;
  // Every case, in catalog order; each CaseInfo names this family.
  virtual const std::vector<const CaseInfo*>& cases() const = 0;
  virtual std::vector<OptionSpec> options() const { return {}; }
  virtual Claims claims(const FamilyOptions&) const = 0;
  virtual std::vector<Listing> listings() const { return {}; }
  // The header tables the family's listings and cases decode (the
  // dissector registers their fields).
  virtual std::span<const protocols::HeaderDef* const> headers() const { return {}; }
  // The EtherTypes the family's frames carry, with their names: the
  // Ethernet, VLAN and cooked-capture tables Registry::headers() hands out
  // name them beside the IEEE and IETF ones protocols/net lists.
  virtual std::span<const protocols::ValueName> ether_types() const { return {}; }
  virtual std::unique_ptr<FamilyRun> start(RunContext& ctx) const = 0;
  // The family's requirement ledger (conformance/ledger.hpp), if it has one:
  // every normative statement of its specifications and what judges it.
  virtual const Ledger* ledger() const { return nullptr; }
};

// The registered families, built-in ones first (conformance/families.cpp
// holds one line per family), then any added at run time (a test family).
class Registry {
 public:
  static Registry& get();
  void add(const ProtocolFamily& f);
  const std::vector<const ProtocolFamily*>& families() const { return families_; }
  // Every case of every family, in registration order.
  std::vector<const CaseInfo*> all_cases() const;
  // Every header table: the link, network and transport ones (their
  // EtherType fields naming the families' EtherTypes too), then each
  // family's, once each.
  const std::vector<const protocols::HeaderDef*>& headers() const { return headers_; }
  const ProtocolFamily* find(std::string_view name) const;

 private:
  Registry();
  // A net header table whose EtherType field names the families' EtherTypes.
  struct NetTable {
    std::vector<protocols::FieldDef> fields;
    protocols::HeaderDef def;
  };
  std::vector<const ProtocolFamily*> families_;
  std::vector<const protocols::HeaderDef*> headers_;
  // Kept as long as the registry (tables handed out before a family was
  // added still point into them).
  std::list<std::vector<protocols::ValueName>> ether_types_;
  std::list<NetTable> net_tables_;
};

// The ledger statements a case judges (fully or partly), from its family's
// ledger; empty when the family has none.
std::vector<const LedgerEntry*> statements_of(const CaseInfo& c);

}  // namespace rdmaconf::conformance

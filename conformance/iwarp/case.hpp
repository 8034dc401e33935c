#pragma once
// iWARP cases: the events of an MPA connection they observe (Request/Reply,
// FPDU, framing stop, close), and the builder each case file uses to state
// its requirement and check and nothing else.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "captures/io/tcp_reassembly.hpp"
#include "conformance/iwarp/mpa_stream.hpp"
#include "conformance/scope.hpp"

namespace rdmaconf::conformance {

struct IwarpConn {
  const captures::io::TcpStreamInfo* info = nullptr;
  const iwarp::MpaConnection* mpa = nullptr;
  bool reset = false;  // at close: the connection ended with a RST
};

// The kinds of FPDU a case's FPDU handler is called for, as a mask of
// fpdu_kind() bits: a decoded segment by its buffer model and RDMAP opcode
// (untagged opcode n: bit n, tagged: bit 16 + n), or an FPDU whose DDP/RDMAP
// headers did not decode. A case whose handler returns at once for other
// kinds says so, and the checker does not call it for them (the FPDU path
// runs every handler for every FPDU).
inline constexpr std::uint64_t kAnyUntagged = 0xffff, kAnyTagged = 0xffff0000, kAnySegment = kAnyUntagged | kAnyTagged;
inline constexpr std::uint64_t kUndecodedFpdu = std::uint64_t{1} << 32, kAnyFpdu = kAnySegment | kUndecodedFpdu;
inline constexpr unsigned kFpduKinds = 33;
constexpr std::uint64_t untagged_ops(std::initializer_list<unsigned> ops) {
  std::uint64_t m = 0;
  for (const unsigned op : ops) m |= std::uint64_t{1} << (op & 15);
  return m;
}
inline unsigned fpdu_kind(const iwarp::FpduEvent& e) {
  if (!e.ddp->ok()) return 32;
  return ((*e.ddp)->tagged ? 16u : 0u) + ((*e.ddp)->opcode & 15u);
}

// An FPDU handler as a case builder holds it.
using IwarpFpduFn = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::FpduEvent&)>;

class IwarpCase {
 public:
  // The events a case handles; the checker calls a case only for those.
  enum Event : unsigned { rr = 1, fpdu = 2, stop = 4, close = 8, all = 15 };
  virtual ~IwarpCase() = default;
  virtual const CaseInfo& info() const = 0;
  virtual unsigned events() const { return all; }
  // The FPDUs on_fpdu is called for (see kAnyFpdu).
  virtual std::uint64_t fpdu_kinds() const { return kAnyFpdu; }
  // The function on_fpdu calls, when it only calls one: the checker calls
  // it directly (one indirect call less for every case and FPDU).
  virtual const IwarpFpduFn* fpdu_fn() const { return nullptr; }
  virtual void on_rr(CaseCtx&, const IwarpConn&, const iwarp::RrEvent&) const {}
  virtual void on_fpdu(CaseCtx&, const IwarpConn&, const iwarp::FpduEvent&) const {}
  virtual void on_stop(CaseCtx&, const IwarpConn&, const iwarp::StopEvent&) const {}
  virtual void on_close(CaseCtx&, const IwarpConn&) const {}
};

// Evidence at an MPA frame or FPDU: its frames, stream offset and sender.
template <class Event>
Evidence evidence_at(const Event& e, const std::string& side) {
  Evidence ev;
  ev.frames = {e.first_frame};
  if (e.last_frame != e.first_frame) ev.frames.push_back(e.last_frame);
  ev.stream_offset = e.offset;
  ev.side = side;
  return ev;
}
// Records a failure at the point where a direction's framing stopped.
inline void fail_at_stop(CaseCtx& ctx, const iwarp::StopEvent& e, std::string expected, std::string actual) {
  Evidence ev;
  ev.frames = {e.frame};
  ev.stream_offset = e.offset;
  ev.side = ctx.side(e.dir);
  ev.expected = std::move(expected);
  ev.actual = std::move(actual);
  ctx.tally.doubtful(std::move(ev), (1u << e.dir) | kCopiesOnly);  // (see fail_shown)
}
// A framing stop caused by missing octets makes an FPDU-level case INCONCLUSIVE.
void inconclusive_on_gap(CaseCtx& ctx, const iwarp::StopEvent& e);

class BuiltIwarpCase final : public IwarpCase {
 public:
  using Rr = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::RrEvent&)>;
  using Fpdu = IwarpFpduFn;
  using Stop = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::StopEvent&)>;
  using Close = std::function<void(CaseCtx&, const IwarpConn&)>;
  explicit BuiltIwarpCase(CaseInfo i) : info_(i) {}
  BuiltIwarpCase& close(Close f) { close_ = std::move(f); return *this; }
  BuiltIwarpCase& rr(Rr f) { rr_ = std::move(f); return *this; }
  BuiltIwarpCase& fpdu(Fpdu f) { fpdu_ = std::move(f); return *this; }
  BuiltIwarpCase& stop(Stop f) { stop_ = std::move(f); return *this; }
  // The handler needs only these kinds of FPDU (fpdu_kind); further calls narrow it.
  BuiltIwarpCase& only(std::uint64_t kinds) { kinds_ &= kinds; return *this; }
  std::uint64_t fpdu_kinds() const override { return kinds_; }
  const IwarpFpduFn* fpdu_fn() const override { return fpdu_ ? &fpdu_ : nullptr; }
  const CaseInfo& info() const override { return info_; }
  unsigned events() const override {
    return (rr_ ? Event::rr : 0u) | (fpdu_ ? Event::fpdu : 0u) | (stop_ ? Event::stop : 0u) | (close_ ? Event::close : 0u);
  }
  void on_rr(CaseCtx& c, const IwarpConn& k, const iwarp::RrEvent& e) const override { if (rr_) rr_(c, k, e); }
  void on_fpdu(CaseCtx& c, const IwarpConn& k, const iwarp::FpduEvent& e) const override { if (fpdu_) fpdu_(c, k, e); }
  void on_stop(CaseCtx& c, const IwarpConn& k, const iwarp::StopEvent& e) const override { if (stop_) stop_(c, k, e); }
  void on_close(CaseCtx& c, const IwarpConn& k) const override { if (close_) close_(c, k); }

 private:
  CaseInfo info_;
  Rr rr_;
  Fpdu fpdu_;
  Stop stop_;
  Close close_;
  std::uint64_t kinds_ = kAnyFpdu;
};

// Records a failure that octets of direction `dir` show (in the evidence's
// frames): a FAIL unless the capture holds another copy of those octets
// that the receiver may have taken instead (settled when the connection ends).
inline void fail_shown(CaseCtx& ctx, int dir, Evidence ev) { ctx.tally.doubtful(std::move(ev), (1u << dir) | kCopiesOnly); }
// Records a failure at an MPA frame or FPDU (fail_shown).
template <class Event>
void fail_at(CaseCtx& ctx, const Event& e, std::string expected, std::string actual, std::string detail = {}) {
  Evidence ev = evidence_at(e, ctx.side(e.dir));
  ev.expected = std::move(expected);
  ev.actual = std::move(actual);
  ev.detail = std::move(detail);
  fail_shown(ctx, e.dir, std::move(ev));
}
// Passes when `ok`, else fails with the given texts, which are only built
// on failure (this runs for every FPDU and case, so formatting must not).
#define RDMACONF_JUDGE(ctx, e, ok, ...) ((ok) ? (ctx).tally.pass() : fail_at((ctx), (e), __VA_ARGS__))

// The decoded DDP segment of an FPDU, or null when it did not decode.
inline const protocols::iwarp::DdpSegment* segment_of(const iwarp::FpduEvent& e) { return e.ddp->ok() ? &**e.ddp : nullptr; }

// Fields of a DDP segment (both layouts share the control rows).
struct Seg {
  const protocols::iwarp::DdpSegment& s;
  std::uint64_t get(std::size_t f) const { return s.ddp.get(f); }
  bool tagged() const { return s.tagged; }
  bool last() const { return get(protocols::iwarp::DdpTagged::l); }
  std::uint8_t opcode() const { return s.opcode; }
  std::uint32_t qn() const { return static_cast<std::uint32_t>(get(protocols::iwarp::DdpUntagged::qn)); }
  std::uint32_t msn() const { return static_cast<std::uint32_t>(get(protocols::iwarp::DdpUntagged::msn)); }
  std::uint32_t mo() const { return static_cast<std::uint32_t>(get(protocols::iwarp::DdpUntagged::mo)); }
  std::uint32_t stag() const { return static_cast<std::uint32_t>(get(protocols::iwarp::DdpTagged::stag)); }
  std::uint64_t to() const { return get(protocols::iwarp::DdpTagged::to); }
  // DDP payload: what follows the DDP header (RDMAP bodies included).
  std::size_t ddp_payload(const iwarp::FpduEvent& e) const { return e.fpdu->ulpdu_len - s.ddp.def().size; }
};

// A case that looks at each decoded DDP segment; FPDU framing stops caused by
// missing octets make it INCONCLUSIVE.
template <class F>
BuiltIwarpCase& on_segments(BuiltIwarpCase& c, F f) {
  return c.only(kAnySegment)
      .fpdu([f](CaseCtx& ctx, const IwarpConn& k, const iwarp::FpduEvent& e) {
        if (const auto* s = segment_of(e)) f(ctx, k, e, Seg{*s});
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });
}
// The same for the segments of the given kinds only (fpdu_kind): F must
// do nothing for the others.
template <class F>
BuiltIwarpCase& on_segments(BuiltIwarpCase& c, std::uint64_t kinds, F f) {
  return on_segments(c.only(kinds), f);
}

// Answers (Read Response, Atomic Response) with no request to match. They are
// violations unless the other direction turns out to be only partly in the
// capture (a gap may be found only at its end), so they are settled at close.
struct Orphans : CaseState {
  std::vector<std::pair<int, Evidence>> v;  // direction, evidence
};
template <class Event>
void unmatched(CaseCtx& ctx, Orphans& o, const Event& e, std::string expected) {
  Evidence ev = evidence_at(e, ctx.side(e.dir));
  ev.expected = std::move(expected);
  ev.actual = "none";
  o.v.emplace_back(e.dir, std::move(ev));
}
template <class State>
void settle_orphans(CaseCtx& ctx, const IwarpConn& c) {
  for (auto& [dir, ev] : ctx.state<State>().v) {
    if (!c.mpa->partial(1 - dir)) {
      fail_shown(ctx, dir, std::move(ev));
      continue;
    }
    if (const auto& root = c.mpa->damaged(1 - dir)) {
      ev.detail = "the request may be in an FPDU of the other direction whose CRC failed, whose content is not used";
      ev.caused_by = root;
    } else {
      ev.detail = "the other direction is not wholly in the capture: the request may be missing";
    }
    ctx.tally.inconclusive(std::move(ev));
  }
}

using IwarpCases = std::vector<std::unique_ptr<IwarpCase>>;

inline constexpr std::string_view kIwarpFamily = "iwarp";

inline BuiltIwarpCase& add(IwarpCases& k, const CaseText& t) {
  auto c = std::make_unique<BuiltIwarpCase>(t.in(kIwarpFamily));
  auto& ref = *c;
  k.push_back(std::move(c));
  return ref;
}

// Registration, one function per case file (conformance/iwarp/cases/).
void add_iwarp_mpa_setup_cases(IwarpCases&);
void add_iwarp_mpa_order_cases(IwarpCases&);
void add_iwarp_mpa_enhanced_cases(IwarpCases&);
void add_iwarp_mpa_fpdu_cases(IwarpCases&);
void add_iwarp_ddp_cases(IwarpCases&);
void add_iwarp_rdmap_cases(IwarpCases&);

}  // namespace rdmaconf::conformance

#pragma once
// Builds a case from its CaseInfo and the handlers it needs, so each case
// file states requirements and checks and nothing else.
#include <functional>

#include "conformance/catalog.hpp"

namespace rdmaconf::conformance {

class BuiltIwarpCase final : public IwarpCase {
 public:
  using Rr = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::RrEvent&)>;
  using Fpdu = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::FpduEvent&)>;
  using Stop = std::function<void(CaseCtx&, const IwarpConn&, const iwarp::StopEvent&)>;
  using Close = std::function<void(CaseCtx&, const IwarpConn&)>;
  explicit BuiltIwarpCase(CaseInfo i) : info_(i) {}
  BuiltIwarpCase& close(Close f) { close_ = std::move(f); return *this; }
  BuiltIwarpCase& rr(Rr f) { rr_ = std::move(f); return *this; }
  BuiltIwarpCase& fpdu(Fpdu f) { fpdu_ = std::move(f); return *this; }
  BuiltIwarpCase& stop(Stop f) { stop_ = std::move(f); return *this; }
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
};

class BuiltRoceCase final : public RoceCase {
 public:
  using Packet = std::function<void(CaseCtx&, const RocePacketEvent&)>;
  using Close = std::function<void(CaseCtx&, const roce::Closing&)>;
  BuiltRoceCase(CaseInfo i, Packet f, Close c = {}) : info_(i), f_(std::move(f)), close_(std::move(c)) {}
  const CaseInfo& info() const override { return info_; }
  void on_packet(CaseCtx& c, const RocePacketEvent& e) const override { if (f_) f_(c, e); }
  void on_close(CaseCtx& c, const roce::Closing& k) const override { if (close_) close_(c, k); }

 private:
  CaseInfo info_;
  Packet f_;
  Close close_;
};

// Evidence at a RoCE packet: its frame, sender, opcode, QP and PSN.
Evidence packet_evidence(CaseCtx& ctx, const RocePacketEvent& e);
// Records a failure at a RoCE packet (texts built only on failure, through the macro below).
void roce_fail(CaseCtx& ctx, const RocePacketEvent& e, std::string expected, std::string actual, std::string detail = {});
#define RDMACONF_ROCE_JUDGE(ctx, e, ok, ...) ((ok) ? (ctx).tally.pass() : roce_fail((ctx), (e), __VA_ARGS__))
// Settles one item left open at the end of a conversation.
void settle(CaseCtx& ctx, const roce::Closing::Item& item, std::string expected);
inline void add_roce(Catalog& k, CaseInfo i, BuiltRoceCase::Packet f, BuiltRoceCase::Close c = {}) {
  k.roce.push_back(std::make_unique<BuiltRoceCase>(i, std::move(f), std::move(c)));
}

// Records a failure at an MPA frame or FPDU.
template <class Event>
void fail_at(CaseCtx& ctx, const Event& e, std::string expected, std::string actual, std::string detail = {}) {
  Evidence ev = evidence_at(e, ctx.side(e.dir));
  ev.expected = std::move(expected);
  ev.actual = std::move(actual);
  ev.detail = std::move(detail);
  ctx.tally.fail(std::move(ev));
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
  return c
      .fpdu([f](CaseCtx& ctx, const IwarpConn& k, const iwarp::FpduEvent& e) {
        if (const auto* s = segment_of(e)) f(ctx, k, e, Seg{*s});
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });
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
      ctx.tally.fail(std::move(ev));
      continue;
    }
    ev.detail = "the other direction is not wholly in the capture: the request may be missing";
    ctx.tally.inconclusive(std::move(ev));
  }
}

inline BuiltIwarpCase& add(Catalog& k, CaseInfo i) {
  auto c = std::make_unique<BuiltIwarpCase>(i);
  auto& ref = *c;
  k.iwarp.push_back(std::move(c));
  return ref;
}

}  // namespace rdmaconf::conformance

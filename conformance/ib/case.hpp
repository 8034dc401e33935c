#pragma once
// InfiniBand transport cases: each sees every packet of a conversation
// (RoCEv2, RoCEv1 or native) with the per-QP facts the tracker derived, and
// what the tracker left open at the end.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance/ib/frame.hpp"
#include "conformance/ib/qp_state.hpp"
#include "conformance/scope.hpp"
#include "protocols/ib/packet.hpp"

namespace rdmaconf::conformance {

struct RocePacketEvent {
  const ib::IbFrame* pkt = nullptr;
  const protocols::Result<protocols::ib::IbPacket>* ib = nullptr;
  std::uint32_t icrc_computed = 0;
  int dir = 0;
  const ib::Facts* facts = nullptr;  // set when the packet decoded
};

class RoceCase {
 public:
  virtual ~RoceCase() = default;
  virtual const CaseInfo& info() const = 0;
  virtual void on_packet(CaseCtx&, const RocePacketEvent&) const {}
  // End of the conversation: what the per-QP state left open.
  virtual void on_close(CaseCtx&, const ib::Closing&) const {}
};

class BuiltRoceCase final : public RoceCase {
 public:
  using Packet = std::function<void(CaseCtx&, const RocePacketEvent&)>;
  using Close = std::function<void(CaseCtx&, const ib::Closing&)>;
  BuiltRoceCase(CaseInfo i, Packet f, Close c = {}) : info_(i), f_(std::move(f)), close_(std::move(c)) {}
  const CaseInfo& info() const override { return info_; }
  void on_packet(CaseCtx& c, const RocePacketEvent& e) const override { if (f_) f_(c, e); }
  void on_close(CaseCtx& c, const ib::Closing& k) const override { if (close_) close_(c, k); }

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
// A violation that a packet the capture lost, saw twice or saw out of order
// could explain (the sequence of a QP's packets): settled at the end of the
// conversation against the artefacts the family recorded (Tally::doubtful).
// `dirs`: the directions (bit 1 << dir) whose artefacts could explain it.
void roce_doubt(CaseCtx& ctx, const RocePacketEvent& e, std::string expected, std::string actual, std::string detail = {},
                unsigned dirs = 3);
#define RDMACONF_ROCE_DOUBT(ctx, e, ok, ...) ((ok) ? (ctx).tally.pass() : roce_doubt((ctx), (e), __VA_ARGS__))
// A failure when `proved` (the traffic rules the artefacts out), else a doubtful violation.
#define RDMACONF_ROCE_CHECK(ctx, e, ok, proved, ...) \
  ((ok) ? (ctx).tally.pass() : (proved) ? roce_fail((ctx), (e), __VA_ARGS__) : roce_doubt((ctx), (e), __VA_ARGS__))
// Settles one item left open at the end of a conversation.
void settle(CaseCtx& ctx, const ib::Closing::Item& item, std::string expected);
using IbCases = std::vector<std::unique_ptr<RoceCase>>;

inline constexpr std::string_view kIbFamily = "ib";

inline void add_roce(IbCases& k, const CaseText& t, BuiltRoceCase::Packet f, BuiltRoceCase::Close c = {}) {
  k.push_back(std::make_unique<BuiltRoceCase>(t.in(kIbFamily), std::move(f), std::move(c)));
}

// Registration, one function per case file (conformance/ib/cases/).
void add_roce_transport_cases(IbCases&);
void add_ib_link_cases(IbCases&);
void add_ib_reliable_cases(IbCases&);

}  // namespace rdmaconf::conformance

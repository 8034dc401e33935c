#pragma once
// The case catalog: every conformance case, iWARP and RoCE, with the events
// each one observes. Cases live one file per spec-section group under cases/.
#include <memory>
#include <string>
#include <vector>

#include "conformance/capture/packet.hpp"
#include "conformance/case.hpp"
#include "conformance/iwarp/mpa_stream.hpp"
#include "conformance/roce/qp_state.hpp"
#include "protocols/ib/packet.hpp"

namespace rdmaconf::conformance {

// What a case sees of the scope (connection or conversation) it checks.
struct CaseCtx {
  Tally& tally;
  std::unique_ptr<CaseState>& slot;
  const std::string* sides;  // label of each direction: sides[0], sides[1]
  template <class T>
  T& state() {
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }
  const std::string& side(int dir) const { return sides[dir]; }
};

struct IwarpConn {
  const capture::TcpStreamInfo* info = nullptr;
  const iwarp::MpaConnection* mpa = nullptr;
};

class IwarpCase {
 public:
  // The events a case handles; the checker calls a case only for those.
  enum Event : unsigned { rr = 1, fpdu = 2, stop = 4, close = 8, all = 15 };
  virtual ~IwarpCase() = default;
  virtual const CaseInfo& info() const = 0;
  virtual unsigned events() const { return all; }
  virtual void on_rr(CaseCtx&, const IwarpConn&, const iwarp::RrEvent&) const {}
  virtual void on_fpdu(CaseCtx&, const IwarpConn&, const iwarp::FpduEvent&) const {}
  virtual void on_stop(CaseCtx&, const IwarpConn&, const iwarp::StopEvent&) const {}
  virtual void on_close(CaseCtx&, const IwarpConn&) const {}
};

struct RocePacketEvent {
  const capture::Packet* pkt = nullptr;
  const protocols::Result<protocols::ib::IbPacket>* ib = nullptr;
  std::uint32_t icrc_computed = 0;
  int dir = 0;
  const roce::Facts* facts = nullptr;  // set when the packet decoded
};

class RoceCase {
 public:
  virtual ~RoceCase() = default;
  virtual const CaseInfo& info() const = 0;
  virtual void on_packet(CaseCtx&, const RocePacketEvent&) const {}
  // End of the conversation: what the per-QP state left open.
  virtual void on_close(CaseCtx&, const roce::Closing&) const {}
};

class Catalog {
 public:
  static const Catalog& get();
  std::vector<std::unique_ptr<IwarpCase>> iwarp;
  std::vector<std::unique_ptr<RoceCase>> roce;
  std::vector<const CaseInfo*> all() const;
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
// A framing stop caused by missing octets makes an FPDU-level case INCONCLUSIVE.
void inconclusive_on_gap(CaseCtx& ctx, const iwarp::StopEvent& e);

// Registration, one function per case file.
void add_iwarp_mpa_setup_cases(Catalog&);
void add_iwarp_mpa_order_cases(Catalog&);
void add_iwarp_mpa_enhanced_cases(Catalog&);
void add_iwarp_mpa_fpdu_cases(Catalog&);
void add_iwarp_ddp_cases(Catalog&);
void add_iwarp_rdmap_cases(Catalog&);
void add_roce_transport_cases(Catalog&);
void add_ib_link_cases(Catalog&);
void add_ib_reliable_cases(Catalog&);

}  // namespace rdmaconf::conformance

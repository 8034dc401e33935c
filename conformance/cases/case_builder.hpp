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
  explicit BuiltIwarpCase(CaseInfo i) : info_(i) {}
  BuiltIwarpCase& rr(Rr f) { rr_ = std::move(f); return *this; }
  BuiltIwarpCase& fpdu(Fpdu f) { fpdu_ = std::move(f); return *this; }
  BuiltIwarpCase& stop(Stop f) { stop_ = std::move(f); return *this; }
  const CaseInfo& info() const override { return info_; }
  void on_rr(CaseCtx& c, const IwarpConn& k, const iwarp::RrEvent& e) const override { if (rr_) rr_(c, k, e); }
  void on_fpdu(CaseCtx& c, const IwarpConn& k, const iwarp::FpduEvent& e) const override { if (fpdu_) fpdu_(c, k, e); }
  void on_stop(CaseCtx& c, const IwarpConn& k, const iwarp::StopEvent& e) const override { if (stop_) stop_(c, k, e); }

 private:
  CaseInfo info_;
  Rr rr_;
  Fpdu fpdu_;
  Stop stop_;
};

class BuiltRoceCase final : public RoceCase {
 public:
  using Packet = std::function<void(CaseCtx&, const RocePacketEvent&)>;
  BuiltRoceCase(CaseInfo i, Packet f) : info_(i), f_(std::move(f)) {}
  const CaseInfo& info() const override { return info_; }
  void on_packet(CaseCtx& c, const RocePacketEvent& e) const override { f_(c, e); }

 private:
  CaseInfo info_;
  Packet f_;
};

inline BuiltIwarpCase& add(Catalog& k, CaseInfo i) {
  auto c = std::make_unique<BuiltIwarpCase>(i);
  auto& ref = *c;
  k.iwarp.push_back(std::move(c));
  return ref;
}

}  // namespace rdmaconf::conformance

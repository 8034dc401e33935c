#include "conformance/catalog.hpp"

#include <fmt/format.h>

namespace rdmaconf::conformance {

const Catalog& Catalog::get() {
  static const Catalog c = [] {
    Catalog k;
    add_iwarp_mpa_setup_cases(k);
    add_iwarp_mpa_order_cases(k);
    add_iwarp_mpa_enhanced_cases(k);
    add_iwarp_mpa_fpdu_cases(k);
    add_iwarp_ddp_cases(k);
    add_iwarp_rdmap_cases(k);
    add_roce_transport_cases(k);
    add_ib_link_cases(k);
    add_ib_reliable_cases(k);
    return k;
  }();
  return c;
}

std::vector<const CaseInfo*> Catalog::all() const {
  std::vector<const CaseInfo*> v;
  for (const auto& c : iwarp) v.push_back(&c->info());
  for (const auto& c : roce) v.push_back(&c->info());
  return v;
}

void inconclusive_on_gap(CaseCtx& ctx, const iwarp::StopEvent& e) {
  if (!e.gap) return;
  Evidence ev;
  if (e.frame) ev.frames = {e.frame};
  ev.stream_offset = e.offset;
  ev.side = ctx.side(e.dir);
  ev.detail = fmt::format("not checked after this point: {}", e.reason);
  ctx.tally.inconclusive(std::move(ev));
}

}  // namespace rdmaconf::conformance

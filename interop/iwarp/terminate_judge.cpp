// How a received Terminate describes the segment that caused it (RFC 5040
// §4.8), for whichever of our sides planted the fault.
#include "interop/iwarp/session.hpp"

namespace rdmaconf::interop::iwarp::detail {

std::string copied_headers_problem(const eng::TerminateInfo& t, const SentSegment& bad, std::vector<std::string>& should_not_met) {
  const Bytes head = bad.head_bytes();
  namespace pi = protocols::iwarp;
  const bool tagged = pi::ddp_control(head, pi::DdpTagged::t);
  const std::size_t ddp = tagged ? pi::kDdpTagged.size : pi::kDdpUntagged.size;
  const bool read_request = !tagged && head.size() >= ddp + pi::kReadRequest.size &&
                            pi::ddp_control(head, pi::DdpTagged::opcode) == pi::kOpReadRequest;
  auto hex = [](Bytes b) { return fmt::format("{:02x}", fmt::join(b, "")); };
  auto wrong = [](std::string what) { return fmt::format("{} (RFC 5040 §4.8)", what); };
  if (!t.missing.empty())
    return wrong(fmt::format("its M, D and R bits ({}{}{}) announce {}, which it lacks", int(t.seglen_valid),
                             int(t.ddp_copied), int(t.rdmap_copied), t.missing));
  if (t.seglen_valid && t.seglen != bad.ulpdu_size)
    return wrong(fmt::format("with M set its DDP Segment Length is {}, but the segment that caused it was {} octets",
                             t.seglen.value_or(0), bad.ulpdu_size));
  if (t.ddp_copied && !std::ranges::equal(Bytes(t.ddp_header), head.first(std::min(ddp, head.size()))))
    return wrong(fmt::format("the DDP header it copies ({}) is not that of the segment that caused it ({})",
                             hex(t.ddp_header), hex(head.first(std::min(ddp, head.size())))));
  if (t.rdmap_copied && read_request && !std::ranges::equal(Bytes(t.rdmap_header), head.subspan(ddp, pi::kReadRequest.size)))
    return wrong(fmt::format("the RDMA header it copies ({}) is not the Read Request's ({})", hex(t.rdmap_header),
                             hex(head.subspan(ddp, pi::kReadRequest.size))));
  auto should = [&](bool met, std::string what) {
    if (!met) should_not_met.push_back(std::move(what));
  };
  if (t.layer == kTermLayerDdp || t.layer == kTermLayerRdma)
    should(t.seglen_valid && t.ddp_copied, fmt::format("Figure 10: a {} error's Terminate includes the DDP header and "
                                                       "segment length (M = D = 1); it has M = {}, D = {}",
                                                       t.layer == kTermLayerDdp ? "DDP" : "RDMAP", int(t.seglen_valid),
                                                       int(t.ddp_copied)));
  if (t.layer == kTermLayerRdma && t.etype == kTermRdmaProtection && read_request)
    should(t.rdmap_copied, "Figure 10: a Read Request's protection error Terminate includes its RDMA header (R = 1)");
  if (t.rdmap_copied && !read_request)
    should(false, "the Terminated RDMA header is sent back only for an RDMA Read Request; R is set for another message");
  return {};
}

}  // namespace rdmaconf::interop::iwarp::detail

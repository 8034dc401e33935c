#include "engines/iwarp/device.hpp"

#include <fmt/format.h>

namespace rdmaconf::engine::iwarp {

std::string Device::validate(const QpConfig& c) const {
  if (c.revision < attr_.min_mpa_revision || c.revision > attr_.max_mpa_revision)
    return fmt::format("MPA revision {} (the device does {} to {})", c.revision, attr_.min_mpa_revision,
                       attr_.max_mpa_revision);
  if (c.ird > attr_.max_ird || c.ord > attr_.max_ord)
    return fmt::format("IRD {} / ORD {} (at most {} / {})", c.ird, c.ord, attr_.max_ird, attr_.max_ord);
  const std::size_t word = c.revision == 2 && c.enhanced ? 4 : 0;  // the RFC 6581 IRD/ORD word
  if (c.private_data.size() + word > attr_.max_private_data)
    return fmt::format("{} octets of private data (at most {} here)", c.private_data.size(),
                       attr_.max_private_data - word);
  if (c.mulpdu < attr_.min_mulpdu || c.mulpdu > attr_.max_mulpdu)
    return fmt::format("MULPDU {} (from {} to {})", c.mulpdu, attr_.min_mulpdu, attr_.max_mulpdu);
  if (c.p2p && c.revision != 2) return "peer-to-peer mode needs MPA revision 2 with the enhanced word";
  if (c.p2p && !c.enhanced) return "peer-to-peer mode needs the RFC 6581 enhanced word";
  if (c.markers && !attr_.markers) return "markers are not supported by this device";
  return {};
}

std::unique_ptr<QueuePair> Device::create_qp(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq,
                                             QpConfig cfg, std::string& why) const {
  why = validate(cfg);
  if (!why.empty()) return nullptr;
  return std::make_unique<QueuePair>(pd, send_cq, recv_cq, std::move(cfg));
}

}  // namespace rdmaconf::engine::iwarp

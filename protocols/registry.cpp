#include "protocols/registry.hpp"

#include "protocols/ib/headers.hpp"
#include "protocols/iwarp/headers.hpp"
#include "protocols/net/headers.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::protocols {

std::span<const HeaderDef* const> all_headers() {
  static constexpr const HeaderDef* kAll[] = {
      &net::kEth, &net::kVlan, &net::kSll, &net::kSll2, &net::kIpv4, &net::kIpv6, &net::kIpv6Ext, &net::kTcp, &net::kUdp,
      &iwarp::kMpaRr, &iwarp::kMpaV2, &iwarp::kMpaFpdu, &iwarp::kMpaMarker, &iwarp::kDdpTagged, &iwarp::kDdpUntagged,
      &iwarp::kReadRequest, &iwarp::kTerminate, &iwarp::kDdpSegLen, &iwarp::kImmediate, &iwarp::kAtomicRequest,
      &iwarp::kAtomicResponse,
      &ib::kLrh, &ib::kGrh, &ib::kBth, &ib::kRdeth, &ib::kDeth, &ib::kXrceth, &ib::kReth, &ib::kAtomicEth, &ib::kAeth,
      &ib::kAtomicAckEth, &ib::kImmDt, &ib::kIeth, &ib::kFeth,
      &unet::kUnet,
  };
  return kAll;
}

}  // namespace rdmaconf::protocols

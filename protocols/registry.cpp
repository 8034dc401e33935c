#include "protocols/registry.hpp"

#include "protocols/net/headers.hpp"

namespace rdmaconf::protocols {

std::span<const HeaderDef* const> net_headers() {
  static constexpr const HeaderDef* kAll[] = {&net::kEth,  &net::kVlan,    &net::kSll, &net::kSll2, &net::kIpv4,
                                              &net::kIpv6, &net::kIpv6Ext, &net::kTcp, &net::kUdp};
  return kAll;
}

}  // namespace rdmaconf::protocols

#pragma once
// The link, network and transport header tables every family's traffic
// rides on. Each family names its own tables (ProtocolFamily::headers());
// conformance::Registry::headers() gives both together.
#include <span>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols {

std::span<const HeaderDef* const> net_headers();

}  // namespace rdmaconf::protocols

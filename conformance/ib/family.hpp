#pragma once
#include "conformance/family.hpp"

namespace rdmaconf::conformance::ib {

// The ib protocol family (registered in conformance/families.cpp).
const ProtocolFamily& family();

}  // namespace rdmaconf::conformance::ib

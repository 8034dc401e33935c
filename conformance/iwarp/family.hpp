#pragma once
#include "conformance/family.hpp"

namespace rdmaconf::conformance::iwarp {

// The iwarp protocol family (registered in conformance/families.cpp).
const ProtocolFamily& family();

}  // namespace rdmaconf::conformance::iwarp

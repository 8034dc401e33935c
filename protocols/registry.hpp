#pragma once
// Every header table the project defines, for table-wide tests, the
// Wireshark field registration and the documentation generator.
#include <span>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols {

std::span<const HeaderDef* const> all_headers();

}  // namespace rdmaconf::protocols

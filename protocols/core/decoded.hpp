#pragma once
#include <cstddef>

#include "protocols/core/header.hpp"

namespace rdmaconf::protocols {

// A header together with the octets it took from the input (options,
// extension headers and variable parts included).
struct Decoded {
  Header hdr;
  std::size_t consumed = 0;
};

}  // namespace rdmaconf::protocols

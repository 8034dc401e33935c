#pragma once
// What the golden-capture generator's parts share: octet buffers and the
// payload pattern. The families' traffic builders and scenarios are in
// their folders (captures/gen/F/), the registry in scenarios.cpp, the
// program in main.cpp.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/io/pcap_writer.hpp"

namespace rdmaconf::captures::gen {

using namespace rdmaconf::captures::io;
using namespace rdmaconf::protocols;
using Buf = std::vector<std::byte>;

inline Bytes B(const Buf& b) { return {b.data(), b.size()}; }

inline Buf pattern(std::size_t n, unsigned seed) {
  Buf b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte((i * 31 + seed * 7 + (i >> 8)) & 0xff);
  return b;
}

}  // namespace rdmaconf::captures::gen

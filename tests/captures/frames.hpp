#pragma once
// Building frames by hand for the dissection tests.
#include <initializer_list>
#include <vector>

#include "captures/io/packet.hpp"

namespace rdmaconf::tests {

inline std::vector<std::byte> v(std::initializer_list<int> l) {
  std::vector<std::byte> b;
  for (int x : l) b.push_back(std::byte(x));
  return b;
}

inline std::vector<std::byte> cat(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Dissects `b` as frame 7 of a capture of link type `lt`.
inline captures::io::Dissected go(int lt, const std::vector<std::byte>& b) {
  captures::io::Frame f;
  f.number = 7;
  f.data = protocols::Bytes(b);
  return captures::io::dissect(lt, f);
}

}  // namespace rdmaconf::tests

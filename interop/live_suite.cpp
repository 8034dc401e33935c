#include "interop/live_suite.hpp"

#include <fmt/format.h>

namespace rdmaconf::interop {

LiveSuite* LiveSuites::find(std::string_view name) const {
  for (const auto& s : suites_) {
    if (s->family() == name) return s.get();
    for (const auto& a : s->aliases())
      if (a == name) return s.get();
  }
  return nullptr;
}

std::string scenario_lines(const LiveSuite& s) {
  std::size_t w = 0;
  const auto all = s.scenarios();
  for (const auto& sc : all) w = std::max(w, sc.name.size());
  std::string out;
  for (const auto& sc : all) out += fmt::format("  {:<{}} {}\n", sc.name, w, sc.summary);
  return out;
}

}  // namespace rdmaconf::interop

#include "interop/live_suite.hpp"

#include <fmt/format.h>

namespace rdmaconf::interop {

#define RDMACONF_FAMILY(f) \
  namespace f {            \
  std::unique_ptr<LiveSuite> live_suite(); \
  }
#include "conformance/families.def"
#undef RDMACONF_FAMILY

LiveSuites::LiveSuites() {
  // A family without a live side returns no suite.
#define RDMACONF_FAMILY(f) \
  if (auto s = f::live_suite()) add(std::move(s));
#include "conformance/families.def"
#undef RDMACONF_FAMILY
}

LiveSuites& LiveSuites::get() {
  static LiveSuites s;
  return s;
}

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

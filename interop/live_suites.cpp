// The live suites of the program's families, in conformance/families.def's
// order: like conformance/families.cpp, the program's list, which a test
// with families of its own compiles again with RDMACONF_FAMILIES_DEF.
#include "interop/live_suite.hpp"

#ifndef RDMACONF_FAMILIES_DEF
#define RDMACONF_FAMILIES_DEF "conformance/families.def"
#endif

namespace rdmaconf::interop {

#define RDMACONF_FAMILY(f) \
  namespace f {            \
  std::unique_ptr<LiveSuite> live_suite(); \
  }
#include RDMACONF_FAMILIES_DEF
#undef RDMACONF_FAMILY

LiveSuites::LiveSuites() {
  // A family without a live side returns no suite.
#define RDMACONF_FAMILY(f) \
  if (auto s = f::live_suite()) add(std::move(s));
#include RDMACONF_FAMILIES_DEF
#undef RDMACONF_FAMILY
}

LiveSuites& LiveSuites::get() {
  static LiveSuites s;
  return s;
}

}  // namespace rdmaconf::interop

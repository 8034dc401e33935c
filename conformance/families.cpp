// The registry's families: those of conformance/families.def, in its order.
// This file is the family list of a program: a test with families of its
// own compiles it again with RDMACONF_FAMILIES_DEF naming its list (which
// includes this one and adds its families), and its object then stands for
// this one (the library's copy is never linked in).
#include "conformance/family.hpp"

#ifndef RDMACONF_FAMILIES_DEF
#define RDMACONF_FAMILIES_DEF "conformance/families.def"
#endif

namespace rdmaconf::conformance {

#define RDMACONF_FAMILY(f) \
  namespace f {            \
  const ProtocolFamily& family(); \
  }
#include RDMACONF_FAMILIES_DEF
#undef RDMACONF_FAMILY

Registry::Registry() {
#define RDMACONF_FAMILY(f) add(f::family());
#include RDMACONF_FAMILIES_DEF
#undef RDMACONF_FAMILY
}

Registry& Registry::get() {
  static Registry r;
  return r;
}

}  // namespace rdmaconf::conformance

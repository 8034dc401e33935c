// The registry's families: those of conformance/families.def, in its order.
#include "conformance/family.hpp"

namespace rdmaconf::conformance {

#define RDMACONF_FAMILY(f) \
  namespace f {            \
  const ProtocolFamily& family(); \
  }
#include "conformance/families.def"
#undef RDMACONF_FAMILY

Registry::Registry() {
#define RDMACONF_FAMILY(f) add(f::family());
#include "conformance/families.def"
#undef RDMACONF_FAMILY
}

}  // namespace rdmaconf::conformance

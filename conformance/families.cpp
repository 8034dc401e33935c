// The built-in protocol families, one line each. A family lives in its own
// folders (protocols/<f>/, engines/<f>/, conformance/<f>/, interop/<f>/) and
// is known to the rest of the suite through this list only.
#include "conformance/family.hpp"
#include "conformance/ib/family.hpp"
#include "conformance/iwarp/family.hpp"
#include "conformance/udp/family.hpp"
#include "conformance/unet/family.hpp"

namespace rdmaconf::conformance {

Registry::Registry() {
  add(iwarp::family());
  add(ib::family());
  add(udp::family());
  add(unet::family());
}

}  // namespace rdmaconf::conformance

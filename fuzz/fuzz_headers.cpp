// Every table-driven header decoder: the first octet picks the header.
#include <nlohmann/json.hpp>

#include "protocols/core/header.hpp"
#include "conformance/family.hpp"

using namespace rdmaconf::protocols;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const auto all = rdmaconf::conformance::Registry::get().headers();
  const HeaderDef& def = *all[data[0] % all.size()];
  auto h = Header::decode(def, as_bytes(data + 1, size - 1));
  if (!h) {
    (void)h.error().message();
    return 0;
  }
  (void)to_text(*h);
  nlohmann::json j;
  to_json(j, *h);
  (void)h->nonzero_reserved();
  return 0;
}

// Frame dissection (link, IP, TCP/UDP) for every supported link type.
#include "captures/io/packet.hpp"

using namespace rdmaconf::captures::io;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const int kTypes[] = {1, 113, 276, 12, 101, 228, 229, 247};
  Frame f;
  f.number = 1;
  f.data = rdmaconf::protocols::as_bytes(data + 1, size - 1);
  f.orig_len = static_cast<std::uint32_t>(f.data.size());
  (void)dissect(kTypes[data[0] % std::size(kTypes)], f);
  return 0;
}

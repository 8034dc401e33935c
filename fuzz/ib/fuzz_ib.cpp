// InfiniBand transport decoder and the RoCEv2 ICRC over arbitrary IP octets.
#include "protocols/ib/packet.hpp"

using namespace rdmaconf::protocols;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes in = as_bytes(data, size);
  (void)ib::decode_transport(in);
  if (size >= 2) {
    const std::size_t iph = data[0] & 1 ? 40 : 20;
    (void)ib::roce_icrc(in.subspan(1), data[0] & 1, iph);
  }
  return 0;
}

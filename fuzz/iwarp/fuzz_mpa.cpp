// MPA Request/Reply, FPDU framing and the DDP/RDMAP segment decoder.
#include "protocols/iwarp/codec.hpp"

using namespace rdmaconf::protocols;
using namespace rdmaconf::protocols::iwarp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Bytes in = as_bytes(data, size);
  if (auto rr = decode_mpa_rr(in)) (void)rr->kind();
  if (auto f = decode_fpdu(in)) {
    (void)fpdu_crc(in.first(f->consumed - kMpaCrcSize));
    (void)decode_ddp(f->ulpdu);
  }
  (void)decode_ddp(in);
  return 0;
}

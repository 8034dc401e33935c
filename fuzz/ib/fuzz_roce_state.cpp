// The per-QP state of a RoCE conversation over a sequence of packets: each
// record is a 2-octet header (top bit: direction, low 15 bits: length) and
// that many octets of transport packet (BTH to ICRC). The ICRC's low bit
// stands for "the ICRC was found wrong", so dropped requests are explored too.
#include "conformance/ib/qp_state.hpp"

using namespace rdmaconf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  conformance::ib::Conversation conv(data && size && (data[0] & 1) ? 1024 : 0);
  std::size_t off = 0;
  std::uint64_t frame = 0;
  while (off + 2 <= size) {
    const int dir = data[off] >> 7;
    const std::size_t len = static_cast<std::size_t>(((data[off] & 0x7f) << 8) | data[off + 1]);
    off += 2;
    const std::size_t n = std::min(len, size - off);
    const auto pkt = protocols::ib::decode_transport(protocols::as_bytes(data + off, n));
    if (pkt.ok()) (void)conv.packet(dir, *pkt, ++frame, ((*pkt).icrc & 1u) != 0);
    off += n;
  }
  (void)conv.close();
  return 0;
}

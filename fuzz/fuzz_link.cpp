// Frame dissection (link, IP, TCP/UDP) for every supported link type, and the
// InfiniBand family's decoding of what the capture layer hands on undecoded:
// native link frames (LINKTYPE_INFINIBAND) and RoCEv1 (EtherType 0x8915).
#include <pcap/dlt.h>

#include "captures/io/packet.hpp"
#include "conformance/ib/frame.hpp"
#include "protocols/ib/packet.hpp"

using namespace rdmaconf::captures::io;
namespace ib = rdmaconf::conformance::ib;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const int kTypes[] = {1, 113, 276, 12, 101, 228, 229, DLT_INFINIBAND};
  Frame f;
  f.number = 1;
  f.data = rdmaconf::protocols::as_bytes(data + 1, size - 1);
  f.orig_len = static_cast<std::uint32_t>(f.data.size());
  const int linktype = kTypes[data[0] % std::size(kTypes)];
  const Dissected d = dissect(linktype, f);
  if (d.status != DissectStatus::link) return 0;
  if (linktype == DLT_INFINIBAND) {
    (void)ib::decode_native(d.pkt);
  } else if (d.pkt.ethertype == rdmaconf::protocols::ib::kRoceV1Ethertype) {
    (void)ib::decode_roce_v1(d.pkt);
  }
  return 0;
}

// The MPA stream decoder fed a hostile connection: the input is
// [starts known:1] then a sequence of chunks [dir+flags:1][len:1][octets],
// with gaps mixed in. Bit 0 and 1 of the first octet say whether each
// direction's start is in the capture (a SYN seen: MPA keys or, failing
// them, FPDUs from the first octet), bit 2 and 3 whether it ended with a FIN.
#include "conformance/iwarp/mpa_stream.hpp"

using namespace rdmaconf::conformance;

namespace {
struct Sink : iwarp::MpaListener {};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Sink sink;
  rdmaconf::captures::io::TcpStreamInfo info;
  if (size > 0) {
    for (int d = 0; d < 2; ++d) {
      info.start_known[d] = data[0] >> d & 1;
      info.fin[d] = data[0] >> (2 + d) & 1;
    }
    info.saw_syn = info.start_known[0] && info.start_known[1];
  }
  iwarp::MpaConnection c(info, sink);
  std::uint64_t off[2] = {0, 0}, frame = 1;
  std::size_t i = size > 0 ? 1 : 0;
  while (i + 2 <= size) {
    const int dir = data[i] & 1;
    const bool gap = data[i] & 2;
    std::size_t len = data[i + 1];
    i += 2;
    if (gap) {
      c.gap(dir, off[dir], len, frame);
      off[dir] += len;
      continue;
    }
    len = std::min(len, size - i);
    c.data(dir, off[dir], rdmaconf::protocols::as_bytes(data + i, len), frame++);
    off[dir] += len;
    i += len;
  }
  c.close(frame);
  return 0;
}

// The whole path: capture bytes -> our pcap walker or libpcap -> link/IP/TCP/UDP ->
// reassembly -> MPA and RoCE decoding -> every case -> JSON report. The
// capture is read from memory (no file, no reader thread), as the check of a
// file reads it.
#include <string>

#include "conformance/checker.hpp"
#include "reports/report.hpp"

using namespace rdmaconf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const conformance::Checker checker([] {
    conformance::CheckOptions o;
    o.strict = true;  // every case, SHOULD level included
    return o;
  }());
  std::vector<conformance::InputResult> r{checker.check_memory("fuzz.pcap", protocols::as_bytes(data, size))};
  // The JSON report costs 15 times the check itself: it is built for one
  // input in eight (chosen by length, so the same input always takes the
  // same path), which keeps the writer under fuzzing without slowing the rest.
  if (size % 8 == 0) {
    reports::RunInfo run{"fuzz", {}, true, {}, checker.active_cases()};
    (void)reports::to_json(run, r).dump();
  }
  return 0;
}

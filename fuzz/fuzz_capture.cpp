// The whole path: capture bytes -> our pcap walker or libpcap -> link/IP/TCP/UDP ->
// reassembly -> MPA and RoCE decoding -> every case -> JSON report. The
// capture is read from memory (no file, no reader thread), as the check of a
// file reads it.
#include <sstream>
#include <string>

#include "conformance/checker.hpp"
#include "reports/report.hpp"

using namespace rdmaconf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const conformance::Checker checker([] {
    conformance::CheckOptions o;
    o.strict = true;  // every case, SHOULD level included
    // No SHA-256 of the input: nettle's code, the same for every input, and
    // 7 % of the time per input (perf, coverage-only build).
    o.hash = false;
    return o;
  }());
  std::vector<conformance::InputResult> r;
  r.push_back(checker.check_memory("fuzz.pcap", protocols::as_bytes(data, size)));
  // The JSON report of what the input produced, written as `rdmaconf check`
  // writes it. The catalog is left out: it does not depend on the input, and
  // writing its 90 cases every time cost more than the check of a small input.
  static const reports::RunInfo run{"fuzz", {}, true, {}, {}};
  // The report is JSON whatever the capture held (to_json, the one-document
  // form, is this text parsed). Validated on one input in 128, some 8 000 in
  // a run of CI's million: a parse costs more than the check of a small
  // input, and at one in 32 it was 2.4 % of the run. The other inputs' text
  // is written all the same, to a stream that keeps none of it.
  const bool validate = size % 128 == 0;
  std::ostringstream kept;
  std::ostream dropped(nullptr);
  reports::replay(*reports::json_writer(validate ? static_cast<std::ostream&>(kept) : dropped, run), r);
  if (validate && !nlohmann::json::accept(std::move(kept).str())) __builtin_trap();
  return 0;
}

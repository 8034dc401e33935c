// The whole path: capture file bytes -> libpcap -> link/IP/TCP/UDP ->
// reassembly -> MPA and RoCE decoding -> every case -> JSON report.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "conformance/checker.hpp"
#include "reports/report.hpp"

using namespace rdmaconf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/rdmaconf-fuzz-" + std::to_string(getpid()) + ".pcap";
  static const conformance::Checker checker([] {
    conformance::CheckOptions o;
    o.strict = true;  // every case, SHOULD level included
    return o;
  }());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  std::vector<conformance::InputResult> r{checker.check_file(path)};
  reports::RunInfo run{"fuzz", {}, true, {}, checker.active_cases()};
  (void)reports::to_json(run, r).dump();
  return 0;
}

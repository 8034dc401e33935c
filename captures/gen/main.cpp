// rdmaconf-gen: writes the golden captures and their manifests.
//   rdmaconf-gen OUTDIR            every scenario
//   rdmaconf-gen OUTDIR NAME...    only those
//   rdmaconf-gen --OPTION FILE N   a large capture for bench/
// Each scenario builds its traffic with the project's encoders and states,
// from how it builds it, which verdict each exercised case must reach: the
// manifest is written from that declaration, never from running the checker.
// The scenarios and bench captures are the families' (captures/gen/F/).
#include "captures/gen/scenarios.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::captures::gen;

int main(int argc, char** argv) {
  const auto bench = bench_captures();
  if (argc == 4 && std::string_view(argv[1]).starts_with("--")) {
    for (const auto& b : bench)
      if (argv[1] == "--" + b.option) return b.make(argv[2], std::stoul(argv[3]));
  }
  if (argc < 2 || std::string_view(argv[1]).starts_with("--")) {
    std::cerr << "usage: rdmaconf-gen OUTDIR [SCENARIO...]\n";
    for (const auto& b : bench) std::cerr << "       rdmaconf-gen --" << b.option << " FILE " << b.count << "\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  std::vector<std::string> only(argv + 2, argv + argc);
  int made = 0;
  for (const auto& s : scenarios()) {
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    const fs::path pcap = out / (s.name + ".pcap");
    nlohmann::json m;
    m["capture"] = pcap.filename().string();
    m["made_by"] = "rdmaconf-gen (captures/gen/main.cpp), scenario " + s.name;
    m["description"] = s.description;
    m["config"] = s.make(pcap.string());
    m["expected"] = s.expected;
    std::ofstream(out / (s.name + ".manifest.json")) << m.dump(2) << "\n";
    ++made;
  }
  if (!only.empty() && made != static_cast<int>(only.size())) {
    std::cerr << "rdmaconf-gen: unknown scenario name\n";
    return 2;
  }
  return 0;
}

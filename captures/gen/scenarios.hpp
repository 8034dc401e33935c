#pragma once
// The golden-capture scenarios: each builds its traffic and declares, from
// how it builds it, the verdict each exercised case must reach. Each family
// keeps its scenarios (and the large captures bench/ asks for) in its own
// folder, captures/gen/F/, and registers them here with one line.
#include "captures/gen/common.hpp"

namespace rdmaconf::captures::gen {

using Expect = std::map<std::string, std::string>;
struct Scenario {
  std::string name, description;
  std::function<nlohmann::json(const std::string&)> make;  // writes the capture, returns its config
  Expect expected;
};

// A large capture for bench/: `rdmaconf-gen --OPTION FILE COUNT`.
struct BenchCapture {
  std::string option;    // "bench-connections"
  std::string count;     // what COUNT counts: "MEGABYTES", "COUNT"
  std::function<int(const std::string& path, std::size_t count)> make;
};

// A family's part of the generator, registered by a namespace-scope object
// in its folder: `const RegisterScenarios r{"iwarp", &add_scenarios};`.
struct RegisterScenarios {
  RegisterScenarios(std::string family, void (*add)(std::vector<Scenario>&));
};
struct RegisterBench {
  explicit RegisterBench(BenchCapture b);
};

// Every registered family's scenarios, families in name order.
std::vector<Scenario> scenarios();
// Every registered bench capture, in option order.
std::vector<BenchCapture> bench_captures();

}  // namespace rdmaconf::captures::gen

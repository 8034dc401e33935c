// The generator's registry of families' scenarios and bench captures.
#include "captures/gen/scenarios.hpp"

#include <algorithm>

namespace rdmaconf::captures::gen {

namespace {

struct Registered {
  std::vector<std::pair<std::string, void (*)(std::vector<Scenario>&)>> families;
  std::vector<BenchCapture> bench;
};
Registered& registered() {
  static Registered r;
  return r;
}

}  // namespace

RegisterScenarios::RegisterScenarios(std::string family, void (*add)(std::vector<Scenario>&)) {
  registered().families.emplace_back(std::move(family), add);
}
RegisterBench::RegisterBench(BenchCapture b) { registered().bench.push_back(std::move(b)); }

std::vector<Scenario> scenarios() {
  auto families = registered().families;
  std::sort(families.begin(), families.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Scenario> v;
  for (const auto& [family, add] : families) add(v);
  return v;
}

std::vector<BenchCapture> bench_captures() {
  auto v = registered().bench;
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.option < b.option; });
  return v;
}

}  // namespace rdmaconf::captures::gen

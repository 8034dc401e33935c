#pragma once
// The golden-capture scenarios: each builds its traffic and declares, from
// how it builds it, the verdict each exercised case must reach.
#include "captures/gen/common.hpp"

namespace rdmaconf::captures::gen {

using Expect = std::map<std::string, std::string>;
struct Scenario {
  std::string name, description;
  std::function<nlohmann::json(const std::string&)> make;  // writes the capture, returns its config
  Expect expected;
};
std::vector<Scenario> scenarios();

}  // namespace rdmaconf::captures::gen

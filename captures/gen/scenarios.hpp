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
// The UDP family's captures (captures/gen/udp.cpp).
void add_udp_scenarios(std::vector<Scenario>& v);
// The U-Net family's captures (captures/gen/unet.cpp).
void add_unet_scenarios(std::vector<Scenario>& v);

}  // namespace rdmaconf::captures::gen

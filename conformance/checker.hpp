#pragma once
// Runs the active cases of the catalog over a capture, streaming: frames are
// read one at a time, TCP is reassembled per connection, MPA is decoded per
// direction, UDP to the RoCEv2 port is decoded as InfiniBand transport.
#include <functional>
#include <string>
#include <vector>

#include "conformance/catalog.hpp"
#include "conformance/result.hpp"

namespace rdmaconf::conformance {

struct CheckOptions {
  std::vector<std::string> case_patterns;  // globs; empty = all
  bool strict = false;                     // also SHOULD and MAY cases
  std::vector<std::uint16_t> roce_ports{protocols::ib::kRoceV2Port};
  // Path MTU of the RoCE conversations (0: found from the traffic).
  std::uint32_t roce_mtu = 0;
  // Called now and then with octets read so far and the file size.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // Called for every FPDU decoded (for `rdmaconf fpdus` and the tshark cross-check).
  std::function<void(const iwarp::FpduEvent&)> on_fpdu;
  // Called for every RoCE packet (for `rdmaconf packets` and the tshark cross-check).
  std::function<void(const RocePacketEvent&)> on_roce;
  // Compute each capture's SHA-256 (for the JSON report), on a second thread.
  bool hash = true;
};

class Checker {
 public:
  explicit Checker(CheckOptions o);
  // The cases that will run (pattern and level applied), in catalog order.
  std::vector<const CaseInfo*> active_cases() const;
  InputResult check_file(const std::string& path) const;

 private:
  CheckOptions opt_;
  std::vector<const IwarpCase*> iwarp_;
  std::vector<const RoceCase*> roce_;
};

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict);

}  // namespace rdmaconf::conformance

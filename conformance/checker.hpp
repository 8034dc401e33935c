#pragma once
// Runs the active cases of the registered protocol families over a capture,
// streaming: frames are read one at a time and dissected to the transport
// layer, TCP is reassembled per connection, and each family gets what it
// claims (TCP streams, UDP ports, EtherTypes, link types).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "captures/io/pcap_reader.hpp"
#include "captures/io/tcp_reassembly.hpp"
#include "conformance/family.hpp"
#include "conformance/result.hpp"

namespace rdmaconf::conformance {

struct CheckOptions {
  std::vector<std::string> case_patterns;  // globs; empty = all
  bool strict = false;                     // also SHOULD and MAY cases
  FamilyOptions family_options;            // the families' own options (--roce-port ...)
  // Called now and then with octets read so far and the file size.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // A family's decoded listing (`rdmaconf fpdus`): its name, and what gets each unit.
  std::string listing_family;
  std::function<void(const nlohmann::json&)> on_unit;
  // Compute each capture's SHA-256 (for the JSON report), on a second thread.
  bool hash = true;
  // TCP reassembly's bounds: per connection, for all together, and the
  // idle time (in capture time) after which a connection is closed.
  captures::io::ReassemblyLimits reassembly;
  // The families to run; empty: every registered one.
  std::vector<const ProtocolFamily*> families;
  // When set, each scope goes here as soon as it ends, with the input's
  // path, and InputResult::scopes stays empty: memory follows the open
  // connections, not the capture's history (a streamed report).
  std::function<void(const std::string& path, ScopeResult&&)> on_scope;
};

class Checker {
 public:
  explicit Checker(CheckOptions o);
  // The cases that will run (pattern and level applied), in catalog order.
  std::vector<const CaseInfo*> active_cases() const;
  InputResult check_file(const std::string& path) const;
  // A capture held in memory (`name` stands for its path in the result).
  InputResult check_memory(const std::string& name, protocols::Bytes data) const;

 private:
  InputResult check(const std::string& path, std::unique_ptr<captures::io::PcapReader> reader, const std::string& open_error) const;
  struct Active {
    const ProtocolFamily* family;
    std::vector<std::size_t> cases;  // indices into family->cases()
    Claims claims;
  };
  CheckOptions opt_;
  std::vector<Active> families_;
};

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict);

}  // namespace rdmaconf::conformance

#pragma once
// A family's live suite, beside its ProtocolFamily: the scenarios it drives
// over a wire of its own (a peer over the network, a NIC plug-in in the
// harness, two nodes of its own), the cases they judge, the options of its
// two roles and the run. `rdmaconf live FAMILY` and `rdmaconf serve FAMILY`,
// `rdmaconf cases` and `report coverage` loop over the registered suites and
// never name one.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "conformance/case.hpp"
#include "conformance/result.hpp"

namespace rdmaconf::interop {

// `live`: we drive the scenarios (an initiator against a peer, a harness
// around a plug-in, two nodes of our own); `serve`: we answer a peer that
// drives them.
enum class LiveRole { live, serve };

struct LiveScenario {
  std::string name;
  std::string summary;
  std::vector<std::string> cases;  // the IDs of the cases its run judges (live or capture cases)
};

// What every live command takes, whatever the family.
struct LiveCommon {
  std::vector<std::string> scenarios;  // --scenario (repeatable); empty: the suite's default
  std::vector<std::string> patterns;   // --cases globs; empty: every case
  std::string json, junit;             // report files
  bool quiet = false, verbose = false, list = false;
  std::vector<std::string> arguments;  // the command line, for the report
};

// A run's outcome: scope results, reported like `rdmaconf check`'s (the
// command writes the JSON, JUnit and text reports), or, for suites whose
// runs end in one scenario's own verdict, only an exit status (0 passed, 1
// failed, 2 usage or set-up error).
struct LiveOutcome {
  int status = 0;
  std::optional<conformance::InputResult> input;
  std::vector<const conformance::CaseInfo*> cases;  // the cases the run judged (with `input`)
};

// A command line of an earlier release that meant a live suite: the words
// it began with ("nic", "check"), the value of its --transport option that
// chose this suite (empty: no such option), whether an absent --transport
// chose it too, and the words it stands for now ("live", "fastudp").
struct OldSpelling {
  std::vector<std::string> words;
  std::string transport;
  bool transport_default = false;
  std::vector<std::string> now;
};

class LiveSuite {
 public:
  virtual ~LiveSuite() = default;
  // The family's one name (its ProtocolFamily's), and the spellings of
  // earlier releases that still select it.
  virtual std::string_view family() const = 0;
  virtual std::vector<std::string> aliases() const { return {}; }
  virtual std::vector<OldSpelling> old_spellings() const { return {}; }
  // The command's help for a role; empty when the family has no such role.
  virtual std::string_view help(LiveRole role) const = 0;
  virtual std::vector<LiveScenario> scenarios() const = 0;
  // The suite's own cases (judged by its runs, not by `rdmaconf check`);
  // empty when its scenarios judge catalog cases only.
  virtual std::vector<const conformance::CaseInfo*> cases() const { return {}; }
  // Adds the family's own options for `role` to its command (the values live
  // in the suite object until run()).
  virtual void add_options(CLI::App& cmd, LiveRole role) = 0;
  virtual LiveOutcome run(LiveRole role, const LiveCommon& common) = 0;
};

// The registered suites, one per family that has a live side, in the
// families' order.
class LiveSuites {
 public:
  static LiveSuites& get();
  const std::vector<std::unique_ptr<LiveSuite>>& all() const { return suites_; }
  // By name or alias; null when none.
  LiveSuite* find(std::string_view name) const;
  void add(std::unique_ptr<LiveSuite> s) { suites_.push_back(std::move(s)); }

 private:
  LiveSuites();
  std::vector<std::unique_ptr<LiveSuite>> suites_;
};

// "  name   summary" lines of a suite's scenarios, for --list and usage errors.
std::string scenario_lines(const LiveSuite& s);

}  // namespace rdmaconf::interop

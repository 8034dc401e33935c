#pragma once
// Requirement coverage, in the manner of duvet, counted in the
// specifications' statements: for every statement of a family's ledger
// (conformance/ledger.hpp) whether a case judges it (fully or partly), a
// live scenario of the catalog provokes it, a lab cell runs that scenario
// against a kernel peer, or why none does; per RFC and class. Then, for
// every case, how many golden and lab captures exercise it with PASS and
// with FAIL (from the captures' manifests, which say how each was made),
// and which live lab cells run it or are made to FAIL it (docs/reports.md).
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"

namespace rdmaconf::reports {

struct CoverageCell {
  std::string id;
  std::string family;                  // the family whose cases judge its capture ("iwarp", "ib")
  std::vector<std::string> must_fail;  // cases its planted fault or a known finding makes FAIL
  std::string scenario;                // the live scenario it provokes (interop::lab::provoked_scenario)
  std::string kernel;                  // the kernel peer ("siw", "rxe")
};

// A family's live suite (interop/live_suite.hpp) as coverage counts it: its
// own cases and its scenarios with the cases each judges.
struct CoverageLiveSuite {
  std::string family;
  std::vector<const conformance::CaseInfo*> cases;
  std::vector<std::pair<std::string, std::vector<std::string>>> scenarios;  // name, case IDs
};

struct CoverageInputs {
  std::vector<const conformance::CaseInfo*> catalog;
  // Capture manifests: golden ones carry "expected" (case -> verdict), lab
  // ones "must_fail" (case -> why) and "others" (no other case FAILs).
  std::vector<nlohmann::json> manifests;
  std::vector<CoverageCell> cells;
  std::vector<CoverageLiveSuite> live;
};

nlohmann::json requirement_coverage(const CoverageInputs& in);
// The statements part alone: {"totals", "by_spec": [{spec, family, classes: {class: counts}}], "entries"}.
nlohmann::json statement_coverage(const std::vector<CoverageCell>& cells);
// Its table in Markdown: one row per RFC and class.
std::string statement_coverage_markdown(const nlohmann::json& statements);
// The totals and the requirements that lack a FAIL capture or a live cell.
void write_coverage_text(std::ostream& os, const nlohmann::json& coverage);

// Throws ReportError ("FILE: /statements/by_spec/3/classes/live/judged:
// expected a number, got a string") unless `coverage` has the form
// requirement_coverage() gives in every field the dashboard reads: a
// coverage file is handed to `report html --coverage` from wherever it was
// made, and may have been edited by hand.
void validate_coverage(const nlohmann::json& coverage, const std::string& file);

}  // namespace rdmaconf::reports

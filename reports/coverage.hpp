#pragma once
// Requirement coverage, in the manner of duvet: for every requirement the
// catalog cites (specification and section), the cases that judge it, how
// many golden and lab captures exercise each case with PASS and with FAIL
// (from the captures' manifests, which say how each was made), and which
// live lab cells run it or are made to FAIL it (docs/reports.md).
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
};

struct CoverageInputs {
  std::vector<const conformance::CaseInfo*> catalog;
  // Capture manifests: golden ones carry "expected" (case -> verdict), lab
  // ones "must_fail" (case -> why) and "others" (no other case FAILs).
  std::vector<nlohmann::json> manifests;
  std::vector<CoverageCell> cells;
};

nlohmann::json requirement_coverage(const CoverageInputs& in);
// The totals and the requirements that lack a FAIL capture or a live cell.
void write_coverage_text(std::ostream& os, const nlohmann::json& coverage);

}  // namespace rdmaconf::reports

#pragma once
// Findings as records: each departure from a requirement that the lab
// documents for a kernel peer (interop/lab/cells.json "findings"), joined
// with what a lab run saw of it: the peer and its kernel and packages, the
// cases and the requirements they cite, every cell that showed it with the
// evidence frames from that cell's check report and its capture, and the
// source lines that cause it where known. `rdmaconf report findings` writes
// one Markdown bug report per record, for the peer's upstream; the dashboard
// lists them (docs/reports.md).
#include <iosfwd>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"

namespace rdmaconf::reports {

// The records of the findings a lab report names (its "findings" and the
// cells that carry one), in name order. A cell's check report, when it can
// be read, gives the evidence of the finding's cases (the first three of
// each); when it cannot, the record says so.
std::vector<nlohmann::json> finding_records(const nlohmann::json& lab_report,
                                            const std::vector<const conformance::CaseInfo*>& catalog);

// An upstream-ready bug report for one record.
void write_finding_markdown(std::ostream& os, const nlohmann::json& record, std::string_view tool_version);

}  // namespace rdmaconf::reports

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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"

namespace rdmaconf::reports {

// Holds a lab report to the shape this tool writes, field by field: a
// ReportError names the file and the JSON path of the first field of
// another type ("FILE: /cells/3/verdict: expected one of green, red,
// skipped, got \"x\""). Every reader of lab reports calls it first.
void validate_lab_report(const nlohmann::json& doc, const std::string& file);

// The records of the findings a lab report names (its "findings" and the
// cells that carry one), in name order. A cell's check report, when it can
// be read, gives the evidence of the finding's cases (the first three of
// each); when it cannot, the record says so.
std::vector<nlohmann::json> finding_records(const nlohmann::json& lab_report,
                                            const std::vector<const conformance::CaseInfo*>& catalog);

// The records of the findings several lab reports name, one report per
// kernel of the lab's matrix (lab run --kernel): each finding once, its
// cells from every report (each with its report's kernel_file), and
// "kernels": for each report in order, its kernel file's name and release,
// the user space packages, whether the finding was "reproduced" (its cells
// red for it: which), "not reproduced" (they ran green), "unclear" (red for
// another reason) or "not run", and the problems the lab found holding the
// finding's citations against that kernel's source.
std::vector<nlohmann::json> finding_records_across(const std::vector<nlohmann::json>& lab_reports,
                                                   const std::vector<const conformance::CaseInfo*>& catalog);

// One line naming the device a lab cell ran against, from a lab report's
// "device" (top level or a cell's): a device under test by its profile,
// driver, RDMA device, firmware and kernel as it reported them and how it
// was reached; a kernel peer in the lab's guest by its driver and kernel.
// `fallback_kernel` stands in for a device object without one (an older
// report: the lab's kernel).
std::string device_label(const nlohmann::json& device, const std::string& fallback_kernel = {});

// The file names (NAME.md) `report findings` gives the records, in their
// order: each a single file name whatever the finding's key holds (a key is
// a lab report's to choose, and a report can come from anywhere). Octets
// outside [A-Za-z0-9._-] become '_', a name starting with '.' (".", "..", a
// hidden file) gets a leading '_', a name is cut at 120 octets, an empty key
// is "finding", and a name already given (in any letter case) gets "-2",
// "-3", ... so that no record overwrites another.
std::vector<std::string> finding_file_names(const std::vector<nlohmann::json>& records);

// An upstream-ready bug report for one record.
void write_finding_markdown(std::ostream& os, const nlohmann::json& record, std::string_view tool_version);

}  // namespace rdmaconf::reports

#pragma once
// The nightly dashboard (`rdmaconf report html`): one self-contained HTML
// page (data and script inline, no network, opens from file://) with the
// lab's matrix of cells by peer, program and configuration, the captures'
// matrix of inputs by case family, each cell's or input's evidence, history
// sparklines, regressions against a baseline at the top, requirement
// coverage and the kernel peers' findings; filters by family, level, verdict
// and peer (docs/reports.md).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/case.hpp"

namespace rdmaconf::reports {

struct DashboardInputs {
  std::vector<std::filesystem::path> reports;      // check and lab reports
  std::optional<std::filesystem::path> baseline;   // last night's report of one of those kinds
  std::optional<std::filesystem::path> history;    // a folder with history.jsonl (report history)
  std::optional<nlohmann::json> coverage;          // report coverage --json
  std::vector<const conformance::CaseInfo*> catalog;  // requirement texts (the reports' own catalogs win)
  std::string title = "rdmaconf";
  std::string generated;  // date and time of this page
  std::size_t history_runs = 30;
  // Links to captures, manifests and check reports: relative to the folder
  // the page is written to (so that they work where page and files are
  // kept together, a CI artifact), or, with link_base, that URL followed by
  // the same relative path.
  std::filesystem::path page_dir = ".";
  std::string link_base;
};

// What the page shows, as the data block its script reads. Throws
// ReportError naming the file that cannot be read.
nlohmann::json dashboard_model(const DashboardInputs& in);
// The page.
std::string dashboard_html(const nlohmann::json& model);

}  // namespace rdmaconf::reports

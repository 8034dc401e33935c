#pragma once
// Reports over time: the verdicts of a report as one flat map (a check
// report's every input, scope and case; a lab report's every cell), the
// differences between two (`rdmaconf report diff`, a CI gate), a Markdown
// summary for CI comments, and an append-only history (docs/reports.md).
//
// A report is read with a streaming parser that keeps only the verdicts, so
// that the report of a capture of a million connections (gigabytes of JSON)
// is compared in the memory its verdicts take.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace rdmaconf::reports {

// A report that cannot be read: the message names the file and the offset.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Snapshot {
  std::string kind;          // "check" or "lab"
  std::string tool_version;  // check reports
  // Item -> verdict. Check: "INPUT SCOPE CASE" -> PASS/FAIL/INCONCLUSIVE/NOT_APPLICABLE,
  // with INPUT relative to the folder all of the report's inputs share.
  // Lab: "CELL" -> green/red/skipped.
  std::map<std::string, std::string> verdicts;
  // Lab: the device the cells ran against (a device under test's profile,
  // driver, firmware and kernel, or the guest's kernel).
  std::string device;
};

Snapshot read_snapshot(const std::filesystem::path& report);

// The folder every path shares, with its final '/' ("" when they share
// none): what a check report's item names leave out of its input paths.
std::string common_folder(const std::vector<std::string>& paths);

// The same, one path at a time (a report read as a stream).
class CommonFolder {
 public:
  void add(const std::string& path);
  bool any() const { return any_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  bool any_ = false;
};

struct Change {
  std::string item, before, after;
};

struct Diff {
  std::vector<Change> regressions;   // worse than before (PASS or green -> FAIL or red, -> INCONCLUSIVE)
  std::vector<Change> improvements;  // better than before
  std::vector<Change> appeared;      // not in the baseline (after: the new verdict)
  std::vector<Change> vanished;      // in the baseline only (before: the old verdict)
  std::string base_device, now_device;  // lab: the devices compared (Snapshot::device)
};

// `base` and `now` must be of one kind.
Diff diff(const Snapshot& base, const Snapshot& now);

// How bad a verdict is: 0 good or not applicable, 1 inconclusive, 2 failed.
int severity(const std::string& verdict);

// The text `rdmaconf report diff` prints.
void write_diff(std::ostream& os, const Diff& d);

// Counts by verdict, the items that failed (grouped by case or cell) and,
// with a baseline, the regressions: for a CI comment.
void write_markdown(std::ostream& os, const Snapshot& now, const std::string& title, const Diff* against_baseline);

// One JSON Lines record per item, appended to DIR/history.jsonl: run id,
// date, tool version, commit, item, verdict. Returns the records written.
struct RunStamp {
  std::string run_id, date, tool_version, commit;
};
std::size_t append_history(const std::filesystem::path& dir, const Snapshot& s, const RunStamp& stamp);

// Keeps DIR/history.jsonl to its last `keep_runs` runs (0: all) and to the
// runs dated within `keep_days` days before `now` (0: any age; `now` and a
// record's date as "YYYY-MM-DDTHH:MM:SSZ", which order as text), under the
// same lock appending takes. Returns the runs removed.
std::size_t prune_history(const std::filesystem::path& dir, std::size_t keep_runs, std::size_t keep_days,
                          const std::string& now);

}  // namespace rdmaconf::reports

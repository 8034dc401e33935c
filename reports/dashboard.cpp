#include "reports/dashboard.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "reports/compare.hpp"
#include "reports/findings.hpp"
#include "reports/json_input.hpp"
#include "reports/report.hpp"

namespace rdmaconf::reports {

namespace dashboard_assets {
extern const char* const kScript;
extern const char* const kStyle;
}  // namespace dashboard_assets

namespace {

using json = nlohmann::json;

// What the page draws is bounded, whatever the size of the reports (a check
// of a million connections writes gigabytes): a check report is read as a
// stream, one result at a time, and of its inputs the page keeps at most
// kInputRows, those with a FAIL, an INCONCLUSIVE or an error before those
// without; of each input's FAIL and INCONCLUSIVE results the first
// kProblemsPerInput (each with its first three pieces of evidence), and at
// most kProblemsPerPage in all. What is left out is counted and the page
// says so. A page of these bounds draws in a few seconds.
constexpr std::size_t kProblemsPerInput = 200;
constexpr std::size_t kProblemsPerPage = 10'000;
constexpr std::size_t kInputRows = 5'000;
constexpr std::size_t kCasesPerInput = 1'000;
constexpr std::size_t kFamilies = 512;
constexpr std::size_t kRegressionsDrawn = 10'000;


int verdict_index(const std::string& v) {
  return v == "PASS" ? 0 : v == "FAIL" ? 1 : v == "INCONCLUSIVE" ? 2 : 3;
}
// One letter a run for the sparklines.
char letter(const std::string& v) {
  if (v == "PASS" || v == "green") return 'g';
  if (v == "FAIL" || v == "red") return 'r';
  if (v == "INCONCLUSIVE") return 'i';
  return 's';
}

// History: for each item, its verdict letter in each of the last runs; each
// run's name, date and commit, and its totals by verdict.
struct History {
  std::vector<std::string> runs;  // oldest first
  std::vector<json> run_info;     // {run, date, commit} of each
  std::vector<std::map<std::string, std::uint64_t>> totals;  // verdict -> records, per run
  std::map<std::string, std::map<std::size_t, char>> by_item;
  std::vector<std::string> skipped;  // the lines that were not records (a cut append), each named
  std::string line(const std::string& item) const {
    const auto it = by_item.find(item);
    if (it == by_item.end()) return {};
    std::string s(runs.size(), '-');
    for (const auto& [run, c] : it->second) s[run] = c;
    return s;
  }
};

// What an item's line of letters says: the run its present failure began
// in (the first of the red or inconclusive runs that end the line; -1 when
// its last run was not one), and whether it is flaky (its verdict moved
// between good and bad twice or more over the runs kept).
json history_marks(const std::string& line) {
  const auto bad = [](char c) { return c == 'r' || c == 'i'; };
  const auto good = [](char c) { return c == 'g' || c == 's'; };
  long since = -1;
  std::size_t end = line.size();
  while (end > 0 && line[end - 1] == '-') --end;  // runs that did not have it
  if (end > 0 && bad(line[end - 1])) {
    std::size_t b = end;
    while (b > 0 && (bad(line[b - 1]) || line[b - 1] == '-')) --b;
    while (b < end && line[b] == '-') ++b;
    since = static_cast<long>(b);
  }
  int flips = 0;
  char last = 0;
  for (char c : line) {
    if (!bad(c) && !good(c)) continue;
    if (last && bad(last) != bad(c)) ++flips;
    last = c;
  }
  return {{"since", since}, {"flaky", flips >= 2}};
}

// Check items ("INPUT SCOPE CASE") are kept per input, the worst verdict of a
// run; lab items (a cell's id) as they are. The file is read twice, so that
// what is held is only the runs kept: the first pass learns the runs (and
// names the lines that are not records), the second reads those runs'
// records. A history of months is read in the memory of its last runs.
History read_history(const std::filesystem::path& dir, std::size_t keep) {
  History h;
  const auto file = dir / "history.jsonl";
  // Each line that is a record, with its line number, to `each`.
  const auto records = [&](bool first_pass, const auto& each) {
    std::ifstream f(file);
    if (!f) throw ReportError(fmt::format("{}: cannot open the history", file.string()));
    std::size_t line_no = 0;
    for (std::string line; std::getline(f, line);) {
      ++line_no;
      if (line.empty()) continue;
      // A line that is not a record (an append cut short by a full disk or a
      // crash, a line edited by hand) is named and skipped: the runs before
      // and after it are still the history.
      json r;
      try {
        r = parse_input_json(line, fmt::format("{}:{}", file.string(), line_no));
      } catch (const ReportError& e) {
        if (first_pass) h.skipped.push_back(fmt::format("{} (skipped)", e.what()));
        continue;
      }
      // (reports/schema/history-record-v1.schema.json)
      const auto text_or_absent = [&](const char* k) { return !r.contains(k) || r[k].is_string(); };
      const auto verdict_known = [&] {
        if (!r.contains("verdict")) return true;
        if (!r["verdict"].is_string()) return false;
        const auto& v = r["verdict"].get_ref<const std::string&>();
        return std::count(kCheckVerdicts.begin(), kCheckVerdicts.end(), v) || std::count(kLabVerdicts.begin(), kLabVerdicts.end(), v);
      };
      if (r.is_discarded() || !r.is_object() || !r.contains("item") || !r.contains("run") || !r["item"].is_string() ||
          !r["run"].is_string() || !verdict_known() || !text_or_absent("date") || !text_or_absent("commit") ||
          !text_or_absent("tool_version")) {
        if (first_pass) h.skipped.push_back(fmt::format("{}:{}: not a history record (skipped)", file.string(), line_no));
        continue;
      }
      each(r);
    }
  };
  std::map<std::string, std::size_t> run_index;
  records(true, [&](const json& r) {
    const std::string& run = r["run"].get_ref<const std::string&>();
    if (run_index.emplace(run, h.runs.size()).second) h.runs.push_back(run);
  });
  const std::size_t first = h.runs.size() > keep ? h.runs.size() - keep : 0;
  h.runs.erase(h.runs.begin(), h.runs.begin() + static_cast<std::ptrdiff_t>(first));
  h.run_info.assign(h.runs.size(), json());
  h.totals.assign(h.runs.size(), {});
  auto severity_of = [](char c) { return c == 'r' ? 3 : c == 'i' ? 2 : c == 'g' ? 1 : 0; };
  records(false, [&](const json& r) {
    const auto at = run_index.find(r["run"].get_ref<const std::string&>());
    if (at == run_index.end() || at->second < first) return;  // (a run appended between the passes is not drawn)
    const std::size_t run = at->second - first;
    auto& info = h.run_info[run];
    if (info.is_null()) info = {{"run", r.value("run", "")}, {"date", r.value("date", "")}, {"commit", r.value("commit", "")}};
    ++h.totals[run][r.value("verdict", "")];
    std::string item = r.value("item", "");
    const char c = letter(r.value("verdict", ""));
    // "INPUT SCOPE CASE": the input's line is its worst result of the run.
    if (const auto sp = item.rfind(' '); sp != std::string::npos) {
      const auto sp2 = item.rfind(' ', sp - 1);
      item = sp2 == std::string::npos ? item.substr(0, sp) : item.substr(0, sp2);
    }
    char& slot = h.by_item[item][run];
    if (severity_of(c) > severity_of(slot)) slot = c;
  });
  return h;
}

// A link to a file the page names (DashboardInputs::page_dir, link_base).
struct Links {
  std::filesystem::path dir;
  std::string base;
  std::string operator()(const std::string& path) const {
    if (path.empty()) return {};
    std::error_code ec;
    const auto abs = std::filesystem::absolute(path, ec).lexically_normal();
    if (ec) return path;
    const auto rel = abs.lexically_relative(dir).generic_string();
    if (rel.empty()) return path;
    if (base.empty()) return rel;
    return base.back() == '/' ? base + rel : base + "/" + rel;
  }
};

json lab_cells(const json& report, const Shape& s, const History* hist, const std::set<std::string>& regressed,
               const Links& link) {
  json out = json::array();
  const std::string kernel = s.text_of(s.object_of(report, "", "lab"), "/lab", "kernel");
  const json& cells = s.array_of(report, "", "cells");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const json& c = cells[i];
    const std::string at = fmt::format("/cells/{}", i);
    s.object(c, at);
    const std::string id = s.text_of(c, at, "id");
    const std::string peer = s.text_of(c, at, "peer");
    const json& check = s.object_of(c, at, "check");
    const std::string check_at = at + "/check";
    const json* device = s.member(c, at, "device", false);
    if (device) s.object(*device, at + "/device");
    const json& failed = s.array_of(check, check_at, "failed_cases");
    s.texts(failed, check_at + "/failed_cases");
    json cell = {{"id", id},
                 {"peer", peer},
                 {"device", device_label(!device && !peer.empty() ? json{{"driver", peer}} : device ? *device : json(), kernel)},
                 {"family", s.text_of(c, at, "family")},
                 {"role", s.text_of(c, at, "our_role")},
                 {"program", s.text_of(c, at, "peer_program")},
                 {"scenario", s.text_of(c, at, "scenario")},
                 {"config", s.text_of(s.object_of(c, at, "configuration"), at + "/configuration", "label")},
                 {"verdict", s.one_of(c, at, "verdict", kLabVerdicts, true)},
                 {"reason", s.text_of(c, at, "reason")},
                 {"finding", s.text_of(c, at, "finding")},
                 {"regression", s.flag_of(c, at, "regression") || regressed.count(id) > 0},
                 {"capture", s.text_of(c, at, "capture")},
                 {"check_report", s.text_of(c, at, "check_report")},
                 {"capture_href", link(s.text_of(c, at, "capture"))},
                 {"check_report_href", link(s.text_of(c, at, "check_report"))},
                 {"failed", failed},
                 {"check",
                  {{"pass", s.count_of(check, check_at, "pass")},
                   {"fail", s.count_of(check, check_at, "fail")},
                   {"inconclusive", s.count_of(check, check_at, "inconclusive")}}},
                 {"hist", hist ? hist->line(id) : std::string()}};
    cell["marks"] = history_marks(cell["hist"].get<std::string>());
    out.push_back(std::move(cell));
  }
  return out;
}

// The check reports' inputs as the page draws them, within the budgets above.
class CheckPage {
 public:
  // Reads a report as a stream. A check report's inputs go to the page as
  // they end and leave the document; what is returned is the rest (a lab
  // report whole). Throws ReportError naming the file and the field.
  json read(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw ReportError(fmt::format("{}: cannot open the report", p.string()));
    const Shape s{p.string()};
    StreamPath where;
    const std::size_t report = folders_.size();
    folders_.emplace_back();
    Row row;
    row.report = report;
    std::size_t scope_mark = 0;
    bool had_results = false;
    using ev_t = json::parse_event_t;
    const json::parser_callback_t keep = [&](int depth, ev_t ev, json& parsed) {
      where.event(depth, ev, parsed);
      // A scope's parameters and coverage lines are not shown.
      if (ev == ev_t::key && where.at({"inputs", "*", "scopes", "*"}) && (parsed == "parameters" || parsed == "coverage"))
        return false;
      const bool ends = ev == ev_t::object_end || ev == ev_t::array_end;
      // Entries of the three arrays streamed must be objects.
      if (ev == ev_t::value &&
          (where.at({"inputs"}) || where.at({"inputs", "*", "scopes"}) || where.at({"inputs", "*", "scopes", "*", "results"})))
        s.fail(where.entry_pointer(), "an object", parsed);
      if (ev == ev_t::array_end &&
          (where.at({"inputs", "*"}) || where.at({"inputs", "*", "scopes", "*"}) || where.at({"inputs", "*", "scopes", "*", "results", "*"})))
        s.fail(where.pointer(), "an object", parsed);
      if (!ends || ev != ev_t::object_end) return true;
      if (where.at({"inputs", "*", "scopes", "*", "results", "*"})) {
        result(row, parsed, s, where.pointer());
        had_results = true;
        return false;
      }
      if (where.at({"inputs", "*", "scopes", "*"})) {
        const std::string at = where.pointer();
        s.array_of(parsed, at, "results");
        const std::string label = s.text_of(parsed, at, "label", s.text_of(parsed, at, "id"));
        for (std::size_t i = scope_mark; i < row.problems.size(); ++i) row.problems[i]["scope"] = label;
        scope_mark = row.problems.size();
        return false;
      }
      if (where.at({"inputs", "*"})) {
        const std::string at = where.pointer();
        s.array_of(parsed, at, "scopes");
        row.path = s.text_of(parsed, at, "path");
        row.sha256 = s.text_of(parsed, at, "sha256");
        row.error = s.text_of(parsed, at, "error");
        if (had_results) folders_[report].with_results.add(row.path);
        folders_[report].all.add(row.path);
        add(std::move(row));
        row = Row{};
        row.report = report;
        scope_mark = 0;
        had_results = false;
        return false;
      }
      return true;
    };
    json doc = parse_input_json(f, p.string(), keep);
    if (doc.is_discarded() || !doc.is_object()) throw ReportError(fmt::format("{}: not a JSON report", p.string()));
    if (!doc.contains("inputs") && !doc.contains("cells"))
      throw ReportError(fmt::format("{}: neither a check report (inputs) nor a lab report (cells)", p.string()));
    if (doc.contains("inputs")) s.array_of(doc, "", "inputs");
    return doc;
  }

  std::uint64_t inputs_seen() const { return seen_; }

  // The inputs drawn, in the order read, with their history lines and links.
  json rows(const History* hist, const Links& link, std::set<std::string>& families) {
    std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.seq < b.seq; });
    json out = json::array();
    for (auto& r : rows_) {
      // An item's name in the history leaves out what its report's inputs share.
      const auto& f = folders_[r.report];
      const std::string& strip = f.with_results.any() ? f.with_results.prefix() : f.all.prefix();
      json res = json::object();
      for (const auto& [id, n] : r.res) {
        res[id] = n;
        if (families.size() < kFamilies) families.insert(id.substr(0, id.find('.', id.find('.') + 1)));
      }
      const std::string key = r.path.compare(0, strip.size(), strip) == 0 ? r.path.substr(strip.size()) : r.path;
      std::string manifest;
      if (const auto dot = r.path.rfind('.'); dot != std::string::npos) {
        std::error_code ec;
        if (const std::string m = r.path.substr(0, dot) + ".manifest.json"; std::filesystem::exists(m, ec)) manifest = m;
      }
      const std::string line = hist ? hist->line(key) : std::string();
      out.push_back({{"path", r.path},
                     {"key", key},
                     {"href", link(r.path)},
                     {"manifest", manifest},
                     {"manifest_href", link(manifest)},
                     {"sha256", r.sha256},
                     {"error", r.error},
                     {"res", std::move(res)},
                     {"problems", std::move(r.problems)},
                     {"problems_left_out", r.problems_left_out},
                     {"cases_left_out", r.cases_left_out},
                     {"hist", line},
                     {"marks", history_marks(line)}});
    }
    return out;
  }

  // What the page does not draw.
  json left_out() const {
    return {{"inputs", left_.inputs},
            {"with_problems", left_.with_problems},
            {"pass", left_.n[0]},
            {"fail", left_.n[1]},
            {"inconclusive", left_.n[2]},
            {"not_applicable", left_.n[3]},
            {"problems", problems_left_out_},
            {"budget", {{"inputs", kInputRows}, {"problems", kProblemsPerPage}, {"problems_per_input", kProblemsPerInput}}}};
  }

 private:
  struct Row {
    std::uint64_t seq = 0;
    std::size_t report = 0;
    std::string path, sha256, error;
    std::map<std::string, std::array<std::uint64_t, 4>> res;
    json problems = json::array();
    std::uint64_t problems_left_out = 0, cases_left_out = 0;
    bool troubled() const { return !problems.empty() || problems_left_out > 0 || !error.empty(); }
  };
  struct LeftOut {
    std::uint64_t inputs = 0, with_problems = 0;
    std::array<std::uint64_t, 4> n{};
    void add(const Row& r) {
      ++inputs;
      with_problems += r.troubled();
      for (const auto& [id, c] : r.res)
        for (std::size_t k = 0; k < 4; ++k) n[k] += c[k];
    }
  };

  void result(Row& row, const json& r, const Shape& s, const std::string& at) {
    const std::string id = s.text_of(r, at, "case");
    if (id.empty()) s.fail(at + "/case", "missing");
    const std::string v = s.one_of(r, at, "verdict", kCheckVerdicts, true);
    const std::uint64_t failed = s.count_of(r, at, "failed"), inconclusive = s.count_of(r, at, "inconclusive");
    const json& evidence = s.array_of(r, at, "evidence");
    if (const auto it = row.res.find(id); it != row.res.end())
      ++it->second[static_cast<std::size_t>(verdict_index(v))];
    else if (row.res.size() < kCasesPerInput)
      ++row.res[id][static_cast<std::size_t>(verdict_index(v))];
    else
      ++row.cases_left_out;
    if (v != "FAIL" && v != "INCONCLUSIVE") return;
    if (row.problems.size() >= kProblemsPerInput || problems_ >= kProblemsPerPage) {
      ++row.problems_left_out;
      ++problems_left_out_;
      return;
    }
    json ev = json::array();
    for (std::size_t i = 0; i < evidence.size() && i < 3; ++i) ev.push_back(evidence[i]);
    row.problems.push_back(
        {{"scope", ""}, {"case", id}, {"verdict", v}, {"failed", failed}, {"inconclusive", inconclusive}, {"evidence", std::move(ev)}});
    ++problems_;
  }

  void add(Row&& row) {
    row.seq = seen_++;
    if (rows_.size() < kInputRows) {
      if (!row.troubled()) clean_.push_back(rows_.size());
      rows_.push_back(std::move(row));
    } else if (row.troubled() && !clean_.empty()) {
      // An input with problems takes the place of one without.
      Row& out = rows_[clean_.back()];
      clean_.pop_back();
      left_.add(out);
      out = std::move(row);
    } else {
      problems_ -= std::min<std::uint64_t>(problems_, row.problems.size());
      problems_left_out_ += row.problems.size();
      left_.add(row);
    }
  }

  std::vector<Row> rows_;
  std::vector<std::size_t> clean_;  // rows without problems, which an input with problems may replace
  LeftOut left_;
  std::uint64_t seen_ = 0, problems_ = 0, problems_left_out_ = 0;
  struct Folders {
    CommonFolder with_results, all;
  };
  std::vector<Folders> folders_;  // per report
};

}  // namespace

json dashboard_model(const DashboardInputs& in) {
  json m;
  m["title"] = in.title;
  m["generated"] = in.generated;
  m["catalog"] = json::object();
  for (const auto* c : in.catalog) m["catalog"][std::string(c->id)] = case_json(*c);
  std::optional<History> hist;
  if (in.history) try {
      hist = read_history(*in.history, in.history_runs);
    } catch (const json::exception& e) {
      throw ReportError(fmt::format("{}/history.jsonl: a record of another form: {}", in.history->string(), e.what()));
    }

  std::optional<Snapshot> base;
  if (in.baseline) base = read_snapshot(*in.baseline);
  m["baseline"] = in.baseline ? json(in.baseline->string()) : json();
  m["regressions"] = json::array();

  std::error_code ec;
  const Links links{std::filesystem::absolute(in.page_dir, ec).lexically_normal(), in.link_base};
  std::uint64_t regressions_left_out = 0;
  json lab = json::array(), tools = json::array(), findings = json::array();
  json lab_sum = nullptr, check_sum = nullptr;
  std::set<std::string> families, tool_set;
  std::vector<json> lab_docs;  // their findings are listed once each, with every kernel's status
  CheckPage check_page;
  for (const auto& p : in.reports) try {
    const Shape s{p.string()};
    const auto seen = check_page.inputs_seen();
    json doc = check_page.read(p);
    const bool is_lab = doc.contains("cells") && !doc.contains("inputs");
    std::set<std::string> regressed;
    if (base) {
      const Snapshot now = read_snapshot(p);
      if (now.kind == base->kind)
        for (const auto& c : diff(*base, now).regressions) {
          regressed.insert(c.item);
          if (m["regressions"].size() >= kRegressionsDrawn) {
            ++regressions_left_out;
            continue;
          }
          m["regressions"].push_back({{"report", p.string()}, {"item", c.item}, {"before", c.before}, {"after", c.after}});
        }
    }
    if (is_lab) {
      validate_lab_report(doc, p.string());
      for (auto& c : lab_cells(doc, s, hist ? &*hist : nullptr, regressed, links)) lab.push_back(std::move(c));
      const json& sum = s.object_of(doc, "", "summary");
      if (lab_sum.is_null()) lab_sum = {{"cells", 0}, {"green", 0}, {"red", 0}, {"skipped", 0}, {"regressions", 0}, {"flaky", 0}};
      for (const char* k : {"cells", "green", "red", "skipped", "regressions", "flaky"})
        lab_sum[k] = lab_sum[k].get<std::uint64_t>() + s.count_of(sum, "/summary", k);
      tool_set.insert(fmt::format("lab on kernel {}", s.text_of(s.object_of(doc, "", "lab"), "/lab", "kernel", "?")));
      lab_docs.push_back(std::move(doc));
    } else {
      const json& catalog = s.array_of(doc, "", "catalog");
      for (std::size_t i = 0; i < catalog.size(); ++i) {
        const std::string at = fmt::format("/catalog/{}", i);
        s.object(catalog[i], at);
        m["catalog"][s.text_of(catalog[i], at, "id")] = catalog[i];  // case_json's form
      }
      const json& sum = s.object_of(doc, "", "summary");
      if (check_sum.is_null()) check_sum = {{"inputs", 0}, {"pass", 0}, {"fail", 0}, {"inconclusive", 0}, {"not_applicable", 0}};
      check_sum["inputs"] = check_sum["inputs"].get<std::uint64_t>() + (check_page.inputs_seen() - seen);
      for (const char* k : {"pass", "fail", "inconclusive", "not_applicable"})
        check_sum[k] = check_sum[k].get<std::uint64_t>() + s.count_of(sum, "/summary", k);
      tool_set.insert(fmt::format("rdmaconf {}", s.text_of(s.object_of(doc, "", "tool"), "/tool", "version", "?")));
    }
  } catch (const json::exception& e) {
    // A field of another type than a report has (a hand-edited or foreign file).
    throw ReportError(fmt::format("{}: not a report of this tool's form: {}", p.string(), e.what()));
  }
  for (auto& r : finding_records_across(lab_docs, in.catalog)) findings.push_back(std::move(r));
  for (const auto& t : tool_set) tools.push_back(t);
  m["tools"] = tools;
  m["lab"] = std::move(lab);
  m["inputs"] = check_page.rows(hist ? &*hist : nullptr, links, families);
  m["inputs_left_out"] = check_page.left_out();
  m["regressions_left_out"] = regressions_left_out;
  m["families"] = json(std::vector<std::string>(families.begin(), families.end()));
  m["summary"] = {{"lab", lab_sum}, {"check", check_sum}};
  m["history_runs"] = hist ? json(hist->run_info) : json::array();
  m["history_skipped"] = hist ? json(hist->skipped) : json::array();
  m["history_totals"] = json::array();
  if (hist)
    for (const auto& t : hist->totals) m["history_totals"].push_back(t);
  m["coverage"] = in.coverage ? *in.coverage : json();
  m["findings"] = std::move(findings);
  return m;
}

std::string dashboard_html(const json& model) {
  // Inside a script element "</script" ends it early, and "<!--" followed
  // by "<script" makes the parser look past the real end tag, so that the
  // page comes out blank: no '<' reaches the element. In JSON a '<' can
  // only stand inside a string, where "\u003c" is the same character.
  std::string data = model.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string safe;
  safe.reserve(data.size() + data.size() / 64);
  for (const char ch : data) {
    if (ch == '<')
      safe += "\\u003c";
    else
      safe += ch;
  }
  std::string title = model.value("title", "rdmaconf");
  std::string t;
  for (char c : title) t += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{0}</title><style>{1}</style></head>
<body>
<header><h1>{0}</h1><div class="meta" id="meta"></div></header>
<main>
<section id="regressions"></section>
<section id="trend"><h2>Totals per run</h2><div id="trend-chart"></div><p class="muted" id="trend-note"></p></section>
<section id="filters">
  <input id="q" type="search" placeholder="search cells, captures, cases" size="32">
  <label>family <select id="f-family"><option value="">all</option></select></label>
  <label>level <select id="f-level"><option value="">all</option></select></label>
  <label>verdict <select id="f-verdict"><option value="">all</option></select></label>
  <label>peer <select id="f-peer"><option value="">all</option></select></label>
  <label>as of <select id="f-run"><option value="">this run</option></select></label>
</section>
<section id="lab"><h2>Lab: cells by device, peer's program and our engine's role (one square a configuration)</h2>
  <p id="lab-counts"></p><table id="lab-table"></table></section>
<section id="captures"><h2>Captures: inputs by case family</h2>
  <p id="input-counts"></p><table id="input-table"></table></section>
<section id="findings"><h2>Findings: what the devices do against the specifications</h2><table id="findings-table"></table></section>
<section id="coverage"><h2>Requirement coverage</h2><div id="coverage-table"></div></section>
</main>
<aside id="detail" class="hidden"></aside>
<script type="application/json" id="data">{2}</script>
<script>{3}</script>
</body></html>
)",
                     t, dashboard_assets::kStyle, safe, dashboard_assets::kScript);
}

}  // namespace rdmaconf::reports

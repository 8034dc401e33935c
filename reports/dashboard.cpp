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

// Results that FAIL or are INCONCLUSIVE kept per input (with their first
// three pieces of evidence); the rest are counted and left to the report.
constexpr std::size_t kProblemsPerInput = 200;

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

json read_report(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw ReportError(fmt::format("{}: cannot open the report", p.string()));
  // A scope's parameters and coverage lines are not shown: left out while parsing.
  const json::parser_callback_t drop = [](int depth, json::parse_event_t ev, json& parsed) {
    return !(ev == json::parse_event_t::key && depth == 5 && (parsed == "parameters" || parsed == "coverage"));
  };
  json doc = parse_input_json(f, p.string(), drop);
  if (doc.is_discarded() || !doc.is_object())
    throw ReportError(fmt::format("{}: not a JSON report", p.string()));
  if (!doc.contains("inputs") && !doc.contains("cells"))
    throw ReportError(fmt::format("{}: neither a check report (inputs) nor a lab report (cells)", p.string()));
  return doc;
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
// run; lab items (a cell's id) as they are.
History read_history(const std::filesystem::path& dir, std::size_t keep) {
  History h;
  const auto file = dir / "history.jsonl";
  std::ifstream f(file);
  if (!f) throw ReportError(fmt::format("{}: cannot open the history", file.string()));
  std::vector<json> records;
  std::map<std::string, std::size_t> run_index;
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
      h.skipped.push_back(fmt::format("{} (skipped)", e.what()));
      continue;
    }
    const auto text_or_absent = [&](const char* k) { return !r.contains(k) || r[k].is_string(); };
    if (r.is_discarded() || !r.is_object() || !r.contains("item") || !r.contains("run") || !r["item"].is_string() ||
        !r["run"].is_string() || !text_or_absent("verdict") || !text_or_absent("date") || !text_or_absent("commit")) {
      h.skipped.push_back(fmt::format("{}:{}: not a history record (skipped)", file.string(), line_no));
      continue;
    }
    const std::string run = r.value("run", "");
    if (!run_index.count(run)) {
      run_index.emplace(run, h.runs.size());
      h.runs.push_back(run);
    }
    records.push_back(std::move(r));
  }
  const std::size_t first = h.runs.size() > keep ? h.runs.size() - keep : 0;
  h.runs.erase(h.runs.begin(), h.runs.begin() + static_cast<std::ptrdiff_t>(first));
  h.run_info.assign(h.runs.size(), json());
  h.totals.assign(h.runs.size(), {});
  auto severity_of = [](char c) { return c == 'r' ? 3 : c == 'i' ? 2 : c == 'g' ? 1 : 0; };
  for (const auto& r : records) {
    const std::size_t run = run_index[r.value("run", "")];
    if (run < first) continue;
    auto& info = h.run_info[run - first];
    if (info.is_null())
      info = {{"run", r.value("run", "")}, {"date", r.value("date", "")}, {"commit", r.value("commit", "")}};
    ++h.totals[run - first][r.value("verdict", "")];
    std::string item = r.value("item", "");
    const char c = letter(r.value("verdict", ""));
    // "INPUT SCOPE CASE": the input's line is its worst result of the run.
    if (const auto sp = item.rfind(' '); sp != std::string::npos) {
      const auto sp2 = item.rfind(' ', sp - 1);
      item = sp2 == std::string::npos ? item.substr(0, sp) : item.substr(0, sp2);
    }
    char& slot = h.by_item[item][run - first];
    if (severity_of(c) > severity_of(slot)) slot = c;
  }
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

json lab_cells(const json& report, const History* hist, const std::set<std::string>& regressed, const Links& link) {
  json out = json::array();
  for (const auto& c : report.value("cells", json::array())) {
    const std::string id = c.value("id", "");
    const std::string peer = c.value("peer", "");
    const json check = c.value("check", json::object());
    const json device = c.value("device", json());
    json cell = {{"id", id},
                 {"peer", peer},
                 {"device", device_label(device.is_null() && !peer.empty() ? json{{"driver", peer}} : device,
                                         report.value("lab", json::object()).value("kernel", ""))},
                 {"family", c.value("family", "")},
                 {"role", c.value("our_role", "")},
                 {"program", c.value("peer_program", "")},
                 {"scenario", c.value("scenario", "")},
                 {"config", c.value("configuration", json::object()).value("label", "")},
                 {"verdict", c.value("verdict", "")},
                 {"reason", c.value("reason", "")},
                 {"finding", c.value("finding", json()).is_string() ? c["finding"] : json("")},
                 {"regression", c.value("regression", false) || regressed.count(id) > 0},
                 {"capture", c.value("capture", "")},
                 {"check_report", c.value("check_report", "")},
                 {"capture_href", link(c.value("capture", ""))},
                 {"check_report_href", link(c.value("check_report", ""))},
                 {"failed", check.value("failed_cases", json::array())},
                 {"check", {{"pass", check.value("pass", 0)}, {"fail", check.value("fail", 0)}, {"inconclusive", check.value("inconclusive", 0)}}},
                 {"hist", hist ? hist->line(id) : std::string()}};
    cell["marks"] = history_marks(cell["hist"].get<std::string>());
    out.push_back(std::move(cell));
  }
  return out;
}

json check_inputs(const json& report, const History* hist, std::set<std::string>& families, const Links& link) {
  const json inputs = report.value("inputs", json::array());
  std::vector<std::string> with_results, all;
  for (const auto& in : inputs) {
    all.push_back(in.value("path", ""));
    for (const auto& s : in.value("scopes", json::array()))
      if (!s.value("results", json::array()).empty()) {
        with_results.push_back(all.back());
        break;
      }
  }
  const std::string strip = common_folder(with_results.empty() ? all : with_results);
  json out = json::array();
  for (const auto& in : inputs) {
    const std::string path = in.value("path", "");
    const std::string key = path.compare(0, strip.size(), strip) == 0 ? path.substr(strip.size()) : path;
    json res = json::object(), problems = json::array();
    std::size_t left_out = 0;
    for (const auto& s : in.value("scopes", json::array()))
      for (const auto& r : s.value("results", json::array())) {
        const std::string id = r.value("case", ""), v = r.value("verdict", "");
        if (!res.contains(id)) res[id] = json::array({0, 0, 0, 0});
        res[id][verdict_index(v)] = res[id][verdict_index(v)].get<std::uint64_t>() + 1;
        families.insert(id.substr(0, id.find('.', id.find('.') + 1)));
        if (v != "FAIL" && v != "INCONCLUSIVE") continue;
        if (problems.size() >= kProblemsPerInput) {
          ++left_out;
          continue;
        }
        json ev = r.value("evidence", json::array());
        if (ev.size() > 3) ev.erase(ev.begin() + 3, ev.end());
        problems.push_back({{"scope", s.value("label", s.value("id", ""))},
                            {"case", id},
                            {"verdict", v},
                            {"failed", r.value("failed", 0)},
                            {"inconclusive", r.value("inconclusive", 0)},
                            {"evidence", ev}});
      }
    std::string manifest;
    if (const auto dot = path.rfind('.'); dot != std::string::npos) {
      std::error_code ec;
      if (const std::string m = path.substr(0, dot) + ".manifest.json"; std::filesystem::exists(m, ec)) manifest = m;
    }
    out.push_back({{"path", path},
                   {"key", key},
                   {"href", link(path)},
                   {"manifest", manifest},
                   {"manifest_href", link(manifest)},
                   {"sha256", in.value("sha256", "")},
                   {"error", in.value("error", "")},
                   {"res", res},
                   {"problems", problems},
                   {"problems_left_out", left_out},
                   {"hist", hist ? hist->line(key) : std::string()}});
    out.back()["marks"] = history_marks(out.back()["hist"].get<std::string>());
  }
  return out;
}

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
  json lab = json::array(), inputs = json::array(), tools = json::array(), findings = json::array();
  json lab_sum = nullptr, check_sum = nullptr;
  std::set<std::string> families, tool_set;
  std::vector<json> lab_docs;  // their findings are listed once each, with every kernel's status
  for (const auto& p : in.reports) try {
    const json doc = read_report(p);
    const bool is_lab = doc.contains("cells") && !doc.contains("inputs");
    std::set<std::string> regressed;
    if (base) {
      const Snapshot now = read_snapshot(p);
      if (now.kind == base->kind)
        for (const auto& c : diff(*base, now).regressions) {
          m["regressions"].push_back({{"report", p.string()}, {"item", c.item}, {"before", c.before}, {"after", c.after}});
          regressed.insert(c.item);
        }
    }
    if (is_lab) {
      for (auto& c : lab_cells(doc, hist ? &*hist : nullptr, regressed, links)) lab.push_back(std::move(c));
      finding_records(doc, in.catalog);  // (a report whose findings are not of this tool's form is named here)
      lab_docs.push_back(doc);
      const json s = doc.value("summary", json::object());
      if (lab_sum.is_null()) lab_sum = {{"cells", 0}, {"green", 0}, {"red", 0}, {"skipped", 0}, {"regressions", 0}, {"flaky", 0}};
      for (const char* k : {"cells", "green", "red", "skipped", "regressions", "flaky"})
        lab_sum[k] = lab_sum[k].get<std::uint64_t>() + s.value(k, std::uint64_t{0});
      tool_set.insert(fmt::format("lab on kernel {}", doc.value("lab", json::object()).value("kernel", "?")));
    } else {
      for (const auto& c : doc.value("catalog", json::array())) m["catalog"][c.value("id", "")] = c;  // case_json's form
      const auto n = inputs.size();
      for (auto& x : check_inputs(doc, hist ? &*hist : nullptr, families, links)) inputs.push_back(std::move(x));
      const json s = doc.value("summary", json::object());
      if (check_sum.is_null()) check_sum = {{"inputs", 0}, {"pass", 0}, {"fail", 0}, {"inconclusive", 0}, {"not_applicable", 0}};
      check_sum["inputs"] = check_sum["inputs"].get<std::uint64_t>() + (inputs.size() - n);
      for (const char* k : {"pass", "fail", "inconclusive", "not_applicable"})
        check_sum[k] = check_sum[k].get<std::uint64_t>() + s.value(k, std::uint64_t{0});
      tool_set.insert(fmt::format("rdmaconf {}", doc.value("tool", json::object()).value("version", "?")));
    }
  } catch (const json::exception& e) {
    // A field of another type than a report has (a hand-edited or foreign file).
    throw ReportError(fmt::format("{}: not a report of this tool's form: {}", p.string(), e.what()));
  }
  for (auto& r : finding_records_across(lab_docs, in.catalog)) findings.push_back(std::move(r));
  for (const auto& t : tool_set) tools.push_back(t);
  m["tools"] = tools;
  m["lab"] = std::move(lab);
  m["inputs"] = std::move(inputs);
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

#include "reports/coverage.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "conformance/family.hpp"
#include "reports/compare.hpp"
#include "reports/json_input.hpp"

namespace rdmaconf::reports {

using nlohmann::json;

namespace {

struct CaseCounts {
  std::uint64_t golden_pass = 0, golden_fail = 0, lab_captures = 0, lab_fail = 0;
  std::vector<std::string> cells, fail_cells;
};

}  // namespace

namespace {

constexpr const char* kClasses[] = {"capture", "live", "unobservable", "sctp"};
constexpr const char* kCounts[] = {"statements", "judged", "partly", "provoked", "provoked_in_lab", "exception", "permitted", "todo"};

json zero_counts() {
  json c = json::object();
  for (const char* k : kCounts) c[k] = 0;
  c["judged_score"] = 0.0;
  return c;
}
void add_counts(json& into, const json& from) {
  for (const char* k : kCounts) into[k] = into[k].get<std::uint64_t>() + from[k].get<std::uint64_t>();
}
// (fully judged + half of the partly judged) over the requirements (the
// statements less those that only permit), in percent.
void score(json& c) {
  const auto n = c["statements"].get<std::uint64_t>() - c["permitted"].get<std::uint64_t>();
  c["judged_score"] = n ? std::round(1000.0 * (c["judged"].get<double>() + c["partly"].get<double>() / 2) / static_cast<double>(n)) / 10 : 0.0;
}

}  // namespace

json statement_coverage(const std::vector<CoverageCell>& cells) {
  json out = {{"by_spec", json::array()}, {"entries", json::array()}};
  json totals = zero_counts();
  for (const auto* f : conformance::Registry::get().families()) {
    const auto* ledger = f->ledger();
    if (!ledger) continue;
    for (const auto& spec : ledger->specs()) {
      json classes = json::object();
      for (const char* c : kClasses) classes[c] = zero_counts();
      for (const auto& e : ledger->entries()) {
        if (e.spec != spec) continue;
        std::vector<std::string> lab;
        for (const auto& cell : cells)
          if (cell.family == f->name() && !cell.kernel.empty() &&
              std::count(e.provoked.begin(), e.provoked.end(), cell.scenario))
            lab.push_back(cell.id);
        auto& k = classes[std::string(conformance::class_name(e.cls))];
        k["statements"] = k["statements"].get<std::uint64_t>() + 1;
        const auto status = e.status();
        auto bump = [&](const char* what) { k[what] = k[what].get<std::uint64_t>() + 1; };
        if (!e.judged.empty()) bump("judged");
        else if (!e.partly.empty()) bump("partly");
        if (!e.provoked.empty()) bump("provoked");
        if (!lab.empty()) bump("provoked_in_lab");
        if (status == "exception") bump("exception");
        if (status == "permitted") bump("permitted");
        if (status == "todo") bump("todo");
        out["entries"].push_back({{"id", e.id}, {"spec", e.spec}, {"section", e.section}, {"level", level_name(e.level())},
                                  {"class", conformance::class_name(e.cls)}, {"status", status}, {"judged", e.judged},
                                  {"partly", e.partly}, {"provoked", e.provoked}, {"lab_cells", lab}});
      }
      json all = zero_counts();
      for (auto& [name, c] : classes.items()) {
        score(c);
        add_counts(all, c);
      }
      score(all);
      add_counts(totals, all);
      out["by_spec"].push_back({{"spec", spec}, {"family", f->name()}, {"classes", classes}, {"all", all}});
    }
  }
  score(totals);
  out["totals"] = totals;
  return out;
}

std::string statement_coverage_markdown(const json& st) {
  std::string m =
      "| specification | class | statements | judged | partly | judged score (of requirements) | provoked | in the lab | exception | permitted (MAY) | todo |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& spec, const std::string& cls, const json& c) {
    m += fmt::format("| {} | {} | {} | {} | {} | {:.1f} % | {} | {} | {} | {} | {} |\n", spec, cls, c["statements"].get<std::uint64_t>(),
                     c["judged"].get<std::uint64_t>(), c["partly"].get<std::uint64_t>(), c["judged_score"].get<double>(),
                     c["provoked"].get<std::uint64_t>(), c["provoked_in_lab"].get<std::uint64_t>(), c["exception"].get<std::uint64_t>(),
                     c["permitted"].get<std::uint64_t>(), c["todo"].get<std::uint64_t>());
  };
  for (const auto& s : st["by_spec"]) {
    for (const char* cls : kClasses)
      if (s["classes"][cls]["statements"].get<std::uint64_t>()) row(s["spec"], cls, s["classes"][cls]);
  }
  row("all", "all", st["totals"]);
  return m;
}

json requirement_coverage(const CoverageInputs& in) {
  std::map<std::string, CaseCounts> by_case;
  for (const auto* c : in.catalog) by_case[std::string(c->id)];
  for (const auto& m : in.manifests) {
    if (const auto e = m.find("expected"); e != m.end() && e->is_object()) {
      for (const auto& [id, v] : e->items())
        if (const auto it = by_case.find(id); it != by_case.end() && v.is_string()) {
          it->second.golden_pass += v == "PASS";
          it->second.golden_fail += v == "FAIL";
        }
    } else if (const auto f = m.find("must_fail"); f != m.end() && f->is_object()) {
      for (auto& [id, counts] : by_case) {
        ++counts.lab_captures;  // every case judges a lab capture (no other case may FAIL)
        counts.lab_fail += f->contains(id);
      }
    }
  }
  for (const auto& cell : in.cells)
    for (const auto* c : in.catalog) {
      if (c->family != cell.family) continue;
      auto& counts = by_case[std::string(c->id)];
      counts.cells.push_back(cell.id);
      if (std::count(cell.must_fail.begin(), cell.must_fail.end(), std::string(c->id))) counts.fail_cells.push_back(cell.id);
    }

  // The live scenarios that judge each case (capture cases and live cases alike).
  std::map<std::string, std::vector<std::string>> scenarios_of;
  for (const auto& l : in.live)
    for (const auto& [name, ids] : l.scenarios)
      for (const auto& id : ids) scenarios_of[id].push_back(fmt::format("{} {}", l.family, name));

  json out = {{"statements", statement_coverage(in.cells)}, {"cases", json::array()}, {"live", json::array()}};
  std::uint64_t live_cases = 0, live_scenarios = 0;
  for (const auto& l : in.live) {
    json cases = json::array(), scenarios = json::array();
    for (const auto* c : l.cases) {
      json statements = json::array();
      for (const auto* e : conformance::statements_of(*c)) statements.push_back(e->id);
      cases.push_back({{"id", c->id}, {"level", level_name(c->level)}, {"cites", fmt::format("{} {}", c->spec, c->section)},
                       {"statements", statements}, {"live_scenarios", scenarios_of[std::string(c->id)]}});
    }
    for (const auto& [name, ids] : l.scenarios) scenarios.push_back({{"name", name}, {"cases", ids}});
    live_cases += l.cases.size();
    live_scenarios += l.scenarios.size();
    out["live"].push_back({{"family", l.family}, {"cases", cases}, {"scenarios", scenarios}});
  }
  std::uint64_t with_fail_capture = 0, with_live_cell = 0, with_live_fail = 0;
  json no_fail_capture = json::array(), no_live_cell = json::array(), no_live_fail = json::array();
  for (const auto* c : in.catalog) {
    const auto& k = by_case[std::string(c->id)];
    json statements = json::array();
    for (const auto* e : conformance::statements_of(*c)) statements.push_back(e->id);
    out["cases"].push_back({{"id", c->id},
                            {"family", c->family},
                            {"level", level_name(c->level)},
                            {"cites", fmt::format("{} {}", c->spec, c->section)},
                            {"statements", statements},
                            {"golden_pass", k.golden_pass},
                            {"golden_fail", k.golden_fail},
                            {"lab_captures", k.lab_captures},
                            {"lab_captures_fail", k.lab_fail},
                            {"live_scenarios", scenarios_of[std::string(c->id)]},
                            {"live_cells", k.cells.size()},
                            {"live_cells_fail", k.fail_cells}});
    const bool fail_capture = k.golden_fail + k.lab_fail > 0;
    with_fail_capture += fail_capture;
    with_live_cell += !k.cells.empty();
    with_live_fail += !k.fail_cells.empty();
    if (!fail_capture) no_fail_capture.push_back(c->id);
    if (k.cells.empty()) no_live_cell.push_back(c->id);
    if (k.fail_cells.empty()) no_live_fail.push_back(c->id);
  }
  out["totals"] = {{"statements", out["statements"]["totals"]["statements"]},
                   {"cases", in.catalog.size()},
                   {"cases_with_a_fail_capture", with_fail_capture},
                   {"cases_with_a_live_cell", with_live_cell},
                   {"cases_with_a_live_cell_that_fails_it", with_live_fail},
                   {"live_cases", live_cases},
                   {"live_scenarios", live_scenarios},
                   {"captures", in.manifests.size()},
                   {"cells", in.cells.size()}};
  out["lacking"] = {{"a_fail_capture", no_fail_capture}, {"a_live_cell", no_live_cell}, {"a_live_cell_that_fails_it", no_live_fail}};
  return out;
}

void write_coverage_text(std::ostream& os, const json& c) {
  const auto& st = c["statements"];
  fmt::print(os, "{} normative statements in the ledgers (one per sentence with a BCP 14 keyword):\n",
             st["totals"]["statements"].get<std::uint64_t>());
  fmt::print(os, "  {:<10} {:<13} {:>10} {:>7} {:>7} {:>7} {:>9} {:>7} {:>10} {:>10} {:>5}\n", "spec", "class", "statements", "judged",
             "partly", "score", "provoked", "in lab", "exception", "permitted", "todo");
  auto row = [&](const std::string& spec, const std::string& cls, const json& k) {
    fmt::print(os, "  {:<10} {:<13} {:>10} {:>7} {:>7} {:>6.1f}% {:>9} {:>7} {:>10} {:>10} {:>5}\n", spec, cls,
               k["statements"].get<std::uint64_t>(), k["judged"].get<std::uint64_t>(), k["partly"].get<std::uint64_t>(),
               k["judged_score"].get<double>(), k["provoked"].get<std::uint64_t>(), k["provoked_in_lab"].get<std::uint64_t>(),
               k["exception"].get<std::uint64_t>(), k["permitted"].get<std::uint64_t>(), k["todo"].get<std::uint64_t>());
  };
  for (const auto& s : st["by_spec"])
    for (const char* cls : kClasses)
      if (s["classes"][cls]["statements"].get<std::uint64_t>()) row(s["spec"], cls, s["classes"][cls]);
  row("all", "all", st["totals"]);
  const auto& t = c["totals"];
  fmt::print(os, "\n{} cases, over {} captures and {} lab cells:\n", t["cases"].get<int>(), t["captures"].get<int>(),
             t["cells"].get<int>());
  fmt::print(os, "  with a capture that FAILs it      {}\n", t["cases_with_a_fail_capture"].get<int>());
  fmt::print(os, "  with a live lab cell              {}\n", t["cases_with_a_live_cell"].get<int>());
  fmt::print(os, "  with a live cell that FAILs it    {}\n", t["cases_with_a_live_cell_that_fails_it"].get<int>());
  if (t.contains("live_cases")) {
    fmt::print(os, "\n{} live scenarios, and {} cases of their own judged by rdmaconf live:\n", t["live_scenarios"].get<int>(),
               t["live_cases"].get<int>());
    for (const auto& l : c["live"])
      fmt::print(os, "  {:<10} {:>3} scenarios {:>3} cases\n", l["family"].get<std::string>(), l["scenarios"].size(),
                 l["cases"].size());
  }
  for (const auto& [what, title] : {std::pair{"a_fail_capture", "cases no capture FAILs"}, std::pair{"a_live_cell", "cases no live cell runs"},
                                    std::pair{"a_live_cell_that_fails_it", "cases no live cell FAILs"}}) {
    const auto& list = c["lacking"][what];
    if (list.empty()) continue;
    fmt::print(os, "\n{} ({}):\n", title, list.size());
    for (const auto& r : list) fmt::print(os, "  {}\n", r.get<std::string>());
  }
}

void validate_coverage(const json& coverage, const std::string& file) {
  const Shape s{file};
  if (!coverage.is_object()) s.fail("", "an object", coverage);
  if (const json* st = s.member(coverage, "", "statements", false)) {
    if (const json* t = s.member(*st, "/statements", "totals", false)) s.numbers(*t, "/statements/totals", {"statements"}, false);
    if (const json* by = s.member(*st, "/statements", "by_spec", false)) {
      if (!by->is_array()) s.fail("/statements/by_spec", "an array", *by);
      for (std::size_t i = 0; i < by->size(); ++i) {
        const std::string at = fmt::format("/statements/by_spec/{}", i);
        s.text(*s.member((*by)[i], at, "spec", true), at + "/spec");
        if (const json* classes = s.member((*by)[i], at, "classes", false)) {
          if (!classes->is_object()) s.fail(at + "/classes", "an object", *classes);
          for (const auto& [cls, c] : classes->items()) {
            const std::string cat = fmt::format("{}/classes/{}", at, pointer_token(cls));
            s.numbers(c, cat, {"statements", "judged", "partly", "provoked", "provoked_in_lab", "exception", "permitted", "todo", "judged_score"},
                      false);
          }
        }
      }
    }
  }
  if (const json* t = s.member(coverage, "", "totals", false)) s.numbers(*t, "/totals", {"cases", "captures", "cells"}, false);
  if (const json* l = s.member(coverage, "", "lacking", false)) {
    if (!l->is_object()) s.fail("/lacking", "an object", *l);
    for (const auto& [k, v] : l->items()) s.texts(v, "/lacking/" + pointer_token(k));
  }
  if (const json* cases = s.member(coverage, "", "cases", false)) {
    if (!cases->is_array()) s.fail("/cases", "an array", *cases);
    for (std::size_t i = 0; i < cases->size(); ++i) {
      const std::string at = fmt::format("/cases/{}", i);
      const json& c = (*cases)[i];
      for (const char* k : {"id", "level", "cites"})
        if (const json* v = s.member(c, at, k, false)) s.text(*v, fmt::format("{}/{}", at, k));
      if (const json* v = s.member(c, at, "statements", false)) s.texts(*v, at + "/statements");
      s.numbers(c, at, {"golden_pass", "golden_fail", "lab_captures", "lab_captures_fail", "live_cells"}, false);
      if (const json* v = s.member(c, at, "live_cells_fail", false)) s.texts(*v, at + "/live_cells_fail");
    }
  }
}

}  // namespace rdmaconf::reports

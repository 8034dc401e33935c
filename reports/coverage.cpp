#include "reports/coverage.hpp"

#include <map>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace rdmaconf::reports {

using nlohmann::json;

namespace {

struct CaseCounts {
  std::uint64_t golden_pass = 0, golden_fail = 0, lab_captures = 0, lab_fail = 0;
  std::vector<std::string> cells, fail_cells;
};

}  // namespace

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

  // Requirements in catalog order, each with its cases.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const conformance::CaseInfo*>> reqs;
  for (const auto* c : in.catalog) {
    const auto key = std::make_pair(std::string(c->spec), std::string(c->section));
    if (!reqs.count(key)) order.push_back(key);
    reqs[key].push_back(c);
  }
  json out = {{"requirements", json::array()}};
  std::uint64_t with_fail_capture = 0, with_live_cell = 0, with_live_fail = 0;
  json no_fail_capture = json::array(), no_live_cell = json::array(), no_live_fail = json::array();
  for (const auto& key : order) {
    json r = {{"spec", key.first}, {"section", key.second}, {"cases", json::array()}};
    bool fail_capture = false, live = false, live_fail = false;
    for (const auto* c : reqs[key]) {
      const auto& k = by_case[std::string(c->id)];
      r["cases"].push_back({{"id", c->id},
                            {"level", level_name(c->level)},
                            {"golden_pass", k.golden_pass},
                            {"golden_fail", k.golden_fail},
                            {"lab_captures", k.lab_captures},
                            {"lab_captures_fail", k.lab_fail},
                            {"live_cells", k.cells.size()},
                            {"live_cells_fail", k.fail_cells}});
      fail_capture |= k.golden_fail + k.lab_fail > 0;
      live |= !k.cells.empty();
      live_fail |= !k.fail_cells.empty();
    }
    const std::string name = fmt::format("{} {}", key.first, key.second);
    with_fail_capture += fail_capture;
    with_live_cell += live;
    with_live_fail += live_fail;
    if (!fail_capture) no_fail_capture.push_back(name);
    if (!live) no_live_cell.push_back(name);
    if (!live_fail) no_live_fail.push_back(name);
    out["requirements"].push_back(std::move(r));
  }
  out["totals"] = {{"requirements", order.size()},
                   {"cases", in.catalog.size()},
                   {"with_a_case", order.size()},  // (every requirement here is cited by a case)
                   {"with_a_fail_capture", with_fail_capture},
                   {"with_a_live_cell", with_live_cell},
                   {"with_a_live_cell_that_fails_it", with_live_fail},
                   {"captures", in.manifests.size()},
                   {"cells", in.cells.size()}};
  out["lacking"] = {{"a_fail_capture", no_fail_capture}, {"a_live_cell", no_live_cell}, {"a_live_cell_that_fails_it", no_live_fail}};
  return out;
}

void write_coverage_text(std::ostream& os, const json& c) {
  const auto& t = c["totals"];
  fmt::print(os, "{} requirements cited by {} cases, over {} captures and {} lab cells:\n", t["requirements"].get<int>(),
             t["cases"].get<int>(), t["captures"].get<int>(), t["cells"].get<int>());
  fmt::print(os, "  with a case                       {}\n", t["with_a_case"].get<int>());
  fmt::print(os, "  with a capture that FAILs it      {}\n", t["with_a_fail_capture"].get<int>());
  fmt::print(os, "  with a live lab cell              {}\n", t["with_a_live_cell"].get<int>());
  fmt::print(os, "  with a live cell that FAILs it    {}\n", t["with_a_live_cell_that_fails_it"].get<int>());
  for (const auto& [what, title] : {std::pair{"a_fail_capture", "no capture FAILs"}, std::pair{"a_live_cell", "no live cell runs"},
                                    std::pair{"a_live_cell_that_fails_it", "no live cell FAILs"}}) {
    const auto& list = c["lacking"][what];
    if (list.empty()) continue;
    fmt::print(os, "\n{} ({}):\n", title, list.size());
    for (const auto& r : list) fmt::print(os, "  {}\n", r.get<std::string>());
  }
}

}  // namespace rdmaconf::reports

#include "reports/findings.hpp"

#include "reports/json_input.hpp"
#include "reports/markdown.hpp"
#include "reports/report.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <ostream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rdmaconf::reports {

namespace {

using json = nlohmann::json;

const conformance::CaseInfo* find_case(const std::vector<const conformance::CaseInfo*>& catalog, std::string_view id) {
  for (const auto* c : catalog)
    if (c->id == id) return c;
  return nullptr;
}

// The lines of the lab's package manifest that name what a report upstream
// asks for: the kernel, the RDMA user space and the test programs.
json packages(const json& lab) {
  json v = json::array();
  std::istringstream in(lab.value("manifest", std::string()));
  for (std::string line; std::getline(in, line);)
    for (const char* p : {"linux-image", "linux-binary", "linux-modules", "linux-source", "build root", "rdma-core", "ibverbs-providers",
                          "librdmacm", "rdmacm-utils", "perftest", "ibverbs-utils"})
      if (line.rfind(p, 0) == 0) {
        v.push_back(line);
        break;
      }
  return v;
}

// What a cell's check report says of `cases`: the results that FAIL, with
// their first three pieces of evidence.
json cell_evidence(const std::string& check_report, const std::vector<std::string>& cases, std::string& problem) {
  json out = json::array();
  std::ifstream f(check_report);
  if (check_report.empty() || !f) {
    problem = check_report.empty() ? "the cell has no check report" : fmt::format("{}: cannot be read", check_report);
    return out;
  }
  const json r = parse_input_json(f, check_report);
  if (r.is_discarded() || !r.is_object()) {
    problem = fmt::format("{}: not a JSON report", check_report);
    return out;
  }
  try {
    // What the Markdown shows of each piece of evidence is held to its type.
    const Shape sh{check_report};
    const json& inputs = sh.array_of(r, "", "inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string iat = fmt::format("/inputs/{}", i);
      const json& scopes = sh.array_of(inputs[i], iat, "scopes");
      for (std::size_t k = 0; k < scopes.size(); ++k) {
        const std::string sat = fmt::format("{}/scopes/{}", iat, k);
        const json& results = sh.array_of(scopes[k], sat, "results");
        for (std::size_t n = 0; n < results.size(); ++n) {
          const std::string rat = fmt::format("{}/results/{}", sat, n);
          const json& res = results[n];
          const std::string id = sh.text_of(res, rat, "case");
          if (sh.text_of(res, rat, "verdict") != "FAIL" || std::find(cases.begin(), cases.end(), id) == cases.end()) continue;
          const json& all = sh.array_of(res, rat, "evidence");
          json ev = json::array();
          for (std::size_t e = 0; e < all.size() && e < 3; ++e) {
            const std::string eat = fmt::format("{}/evidence/{}", rat, e);
            const json& x = all[e];
            for (const char* key : {"expected", "actual"}) sh.text_of(x, eat, key);
            if (const json* fr = sh.member(x, eat, "frames", false)) {
              if (!fr->is_array()) sh.fail(eat + "/frames", "an array", *fr);
              for (std::size_t j = 0; j < fr->size(); ++j)
                if (!(*fr)[j].is_number_unsigned()) sh.fail(fmt::format("{}/frames/{}", eat, j), "a frame number", (*fr)[j]);
            }
            if (const json* o = sh.member(x, eat, "stream_offset", false)) sh.number(*o, eat + "/stream_offset");
            ev.push_back(x);
          }
          out.push_back({{"case", id}, {"scope", sh.text_of(scopes[k], sat, "label")}, {"failed", sh.count_of(res, rat, "failed")}, {"evidence", ev}});
        }
      }
    }
  } catch (const ReportError& e) {
    problem = fmt::format("not a check report of this tool's form: {}", e.what());
    out = json::array();
  } catch (const json::exception& e) {
    problem = fmt::format("{}: not a check report of this tool's form: {}", check_report, e.what());
    out = json::array();
  }
  return out;
}

// A string field of a device object, or `otherwise`.
std::string device_field(const json& d, const char* key, const std::string& otherwise) {
  if (!d.is_object()) return otherwise;
  const auto it = d.find(key);
  return it != d.end() && it->is_string() && !it->get<std::string>().empty() ? it->get<std::string>() : otherwise;
}

bool is_device_under_test(const json& d) { return !device_field(d, "profile", "").empty(); }


void validate_device(const Shape& s, const json& d, const std::string& at) {
  s.object(d, at);
  for (const auto& [k, v] : d.items()) {
    const std::string kat = at + "/" + pointer_token(k);
    if (k == "recoveries") {  // how often --dut-recover brought the device back
      s.object(v, kat);
      for (const char* n : {"tried", "recovered"}) s.count_of(v, kat, n);
    } else if (!v.is_string() && !(k == "tested_profile" && v.is_boolean()) && !v.is_null()) {
      s.fail(kat, k == "tested_profile" ? "a boolean" : "a string", v);
    }
  }
}

}  // namespace

void validate_lab_report(const json& doc, const std::string& file) {
  const Shape s{file};
  s.object(doc, "");
  const json& lab = s.object_of(doc, "", "lab");
  for (const char* k : {"kernel", "kernel_file", "manifest", "topology"}) s.text_of(lab, "/lab", k);
  if (const json* d = s.member(doc, "", "device", false)) validate_device(s, *d, "/device");
  s.numbers(s.object_of(doc, "", "summary"), "/summary", {"cells", "green", "red", "skipped", "regressions", "flaky"}, false);
  const json& cells = s.array_of(doc, "", "cells");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string at = fmt::format("/cells/{}", i);
    const json& c = cells[i];
    s.object(c, at);
    for (const char* k : {"id", "peer", "family", "our_role", "peer_program", "scenario", "reason", "capture", "check_report", "finding"})
      s.text_of(c, at, k);
    s.one_of(c, at, "verdict", kLabVerdicts, true);
    s.flag_of(c, at, "regression");
    s.text_of(s.object_of(c, at, "configuration"), at + "/configuration", "label");
    const json& check = s.object_of(c, at, "check");
    for (const char* k : {"pass", "fail", "inconclusive"}) s.count_of(check, at + "/check", k);
    s.texts(s.array_of(check, at + "/check", "failed_cases"), at + "/check/failed_cases");
    if (const json* d = s.member(c, at, "device", false)) validate_device(s, *d, at + "/device");
  }
  for (const auto& [name, f] : s.object_of(doc, "", "findings").items()) {
    const std::string at = "/findings/" + pointer_token(name);
    s.object(f, at);
    for (const char* k : {"title", "text", "severity", "impact", "trigger", "root_cause", "fix"}) s.text_of(f, at, k);
    s.texts(s.array_of(f, at, "cases"), at + "/cases");
    const json& source = s.array_of(f, at, "source");
    for (std::size_t i = 0; i < source.size(); ++i) {
      const std::string sat = fmt::format("{}/source/{}", at, i);
      if (source[i].is_string()) continue;
      if (!source[i].is_object()) s.fail(sat, "a string or an object", source[i]);
      for (const char* k : {"file", "function", "anchor", "what"}) s.text_of(source[i], sat, k);
      for (const auto& [kernel, lines] : s.object_of(source[i], sat, "lines").items())
        if (!lines.is_string()) s.fail(sat + "/lines/" + pointer_token(kernel), "a string", lines);
    }
  }
  s.texts(s.array_of(s.object_of(doc, "", "citations"), "/citations", "problems"), "/citations/problems");
}

std::string device_label(const json& d, const std::string& fallback_kernel) {
  const std::string kernel = device_field(d, "kernel", fallback_kernel.empty() ? "?" : fallback_kernel);
  const std::string driver = device_field(d, "driver", "");
  if (!is_device_under_test(d))
    return driver.empty() ? fmt::format("the lab's guest (kernel {})", kernel)
                          : fmt::format("{} in the lab's guest (kernel {})", driver, kernel);
  return fmt::format("{} (driver {}, device {}, firmware {}, kernel {}; {})", device_field(d, "profile", ""),
                     driver.empty() ? "?" : driver, device_field(d, "device", "?"),
                     device_field(d, "firmware", "not reported"), kernel, device_field(d, "dut", "?"));
}

std::vector<json> finding_records(const json& lab_report, const std::vector<const conformance::CaseInfo*>& catalog) {
  std::vector<json> out;
  const json lab = lab_report.value("lab", json::object());
  const json findings = lab_report.value("findings", json::object());
  for (const auto& [name, f] : findings.items()) {
    json rec = f;
    rec["name"] = name;
    rec["kernel"] = lab.value("kernel", "");
    rec["packages"] = packages(lab);
    rec["topology"] = lab.value("topology", "");
    rec["device"] = lab_report.value("device", json());
    const auto cases = f.value("cases", std::vector<std::string>{});
    rec["requirements"] = json::array();
    for (const auto& id : cases) {
      const auto* c = find_case(catalog, id);
      rec["requirements"].push_back(c ? case_json(*c) : json{{"id", id}, {"requirement", "(not in this build's catalog)"}});
    }
    rec["cells"] = json::array();
    std::string peer;
    for (const auto& c : lab_report.value("cells", json::array())) {
      if (c.value("finding", json()).is_null() || c.value("finding", json()) != name) continue;
      if (peer.empty()) {
        peer = c.value("peer", "");
        // The device the first cell ran against (a guest run's report has no top-level device).
        if (rec["device"].is_null()) rec["device"] = c.value("device", json());
      }
      std::string problem;
      json cell = {{"id", c.value("id", "")},
                   {"verdict", c.value("verdict", "")},
                   {"our_role", c.value("our_role", "")},
                   {"peer_program", c.value("peer_program", "")},
                   {"scenario", c.value("scenario", "")},
                   {"configuration", c.value("configuration", json::object()).value("label", "")},
                   {"reason", c.value("reason", "")},
                   {"capture", c.value("capture", "")},
                   {"check_report", c.value("check_report", "")},
                   {"evidence", cell_evidence(c.value("check_report", ""), cases, problem)}};
      if (!problem.empty()) cell["evidence_problem"] = problem;
      rec["cells"].push_back(std::move(cell));
    }
    rec["peer"] = peer;
    if (rec["device"].is_null() && !peer.empty()) rec["device"] = {{"driver", peer}};
    rec["device_label"] = device_label(rec["device"], rec.value("kernel", ""));
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<json> finding_records_across(const std::vector<json>& lab_reports,
                                        const std::vector<const conformance::CaseInfo*>& catalog) {
  std::map<std::string, json> merged;
  for (std::size_t k = 0; k < lab_reports.size(); ++k) {
    const json& report = lab_reports[k];
    const json lab = report.value("lab", json::object());
    const std::string kernel_file = lab.value("kernel_file", "");
    json problems = json::array();
    if (const auto c = report.find("citations"); c != report.end() && c->is_object())
      for (const auto& p : c->value("problems", json::array()))
        if (p.is_string()) problems.push_back(p);
    std::map<std::string, bool> regression_of;  // cell id -> the lab counted it a regression
    if (const auto cs = report.find("cells"); cs != report.end() && cs->is_array())
      for (const auto& rc : *cs)
        if (rc.is_object()) regression_of[rc.value("id", "")] = rc.value("regression", false);
    for (auto& rec : finding_records(report, catalog)) {
      const std::string name = rec.value("name", "");
      json entry = {{"kernel_file", kernel_file}, {"kernel", lab.value("kernel", "")}, {"packages", packages(lab)}};
      json red = json::array(), green = json::array(), other = json::array();
      for (auto& c : rec["cells"]) {
        const std::string verdict = c.value("verdict", "");
        // (A red cell of a finding is that finding only when the lab explained it so: not a regression.)
        const auto r = regression_of.find(c.value("id", ""));
        const bool regression = r != regression_of.end() && r->second;
        (verdict == "green" ? green : verdict == "red" && !regression ? red : other).push_back(c.value("id", ""));
        c["kernel_file"] = kernel_file;
      }
      entry["status"] = !red.empty() ? "reproduced" : !other.empty() ? "unclear" : "not reproduced";
      entry["reproduced_by"] = red;
      entry["green_cells"] = green;
      entry["unclear_cells"] = other;
      json mine = json::array();
      const std::string prefix = fmt::format("findings.{}.source[", name);
      for (const auto& p : problems)
        if (p.get<std::string>().rfind(prefix, 0) == 0) mine.push_back(p);
      entry["citation_problems"] = mine;
      const auto it = merged.find(name);
      if (it == merged.end()) {
        rec["kernels"] = json::array();
        rec["kernels"].push_back(std::move(entry));
        merged.emplace(name, std::move(rec));
      } else {
        for (auto& c : rec["cells"]) it->second["cells"].push_back(std::move(c));
        it->second["kernels"].push_back(std::move(entry));
      }
    }
  }
  // The kernels whose report names the finding in no cell: not run there (in report order).
  std::vector<json> out;
  for (auto& [name, rec] : merged) {
    json kernels = json::array();
    for (const auto& report : lab_reports) {
      const json lab = report.value("lab", json::object());
      const std::string kf = lab.value("kernel_file", ""), kv = lab.value("kernel", "");
      json found;
      for (const auto& e : rec["kernels"])
        if (e.value("kernel_file", "") == kf && e.value("kernel", "") == kv) found = e;
      kernels.push_back(found.is_null() ? json{{"kernel_file", kf}, {"kernel", kv}, {"packages", packages(lab)}, {"status", "not run"}}
                                        : found);
    }
    rec["kernels"] = std::move(kernels);
    out.push_back(std::move(rec));
  }
  return out;
}

void write_finding_markdown(std::ostream& os, const json& r, std::string_view tool_version) {
  const std::string peer = r.value("peer", "");
  const json device = r.value("device", json());
  const bool dut = is_device_under_test(device);
  const bool security = r.value("severity", "") == "security";
  const json kernels = r.value("kernels", json::array());
  os << "# " << (security ? "[security] " : "") << r.value("title", r.value("name", "")) << "\n\n";
  if (dut)
    os << fmt::format("**Device under test:** {}{}. **Seen in:** {} lab cell(s).\n\n", r.value("device_label", ""),
                      device.value("tested_profile", false) ? "" : " (a profile the project has not run against this hardware)",
                      r["cells"].size());
  else
    os << fmt::format("**Peer:** Linux {} (kernel {}). **Seen in:** {} lab cell(s).{}\n\n", peer.empty() ? "?" : peer,
                      r.value("kernel", "?"), r["cells"].size(),
                      r.value("severity", "").empty() ? "" : fmt::format(" **Severity:** {}.", r.value("severity", "")));
  // The kernels of the lab's matrix, each with what its run showed.
  const auto kernel_table = [&](const char* heading) {
    if (kernels.empty()) return;
    os << "## " << heading << "\n\n| kernel | release | status | cells | user space |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& k : kernels) {
      const std::string status = k.value("status", "");
      std::string cells;
      for (const auto& [key, how] : {std::pair{"reproduced_by", ""}, {"unclear_cells", " (red for another reason)"}, {"green_cells", " (green)"}})
        for (const auto& id : k.value(key, json::array())) cells += (cells.empty() ? "" : ", ") + md_code(id.get<std::string>()) + how;
      std::string space;
      for (const auto& p : k.value("packages", json::array()))
        if (p.get<std::string>().rfind("linux-", 0) != 0) space += (space.empty() ? "" : ", ") + p.get<std::string>();
      os << fmt::format("| {} | {} | {} | {} | {} |\n", md_text(k.value("kernel_file", "")), md_text(k.value("kernel", "")),
                        md_text(status), cells.empty() ? "none" : cells, md_text(space));
    }
    os << "\n";
    for (const auto& k : kernels) {
      const auto& problems = k.value("citation_problems", json::array());
      if (k.value("status", "") == "not reproduced")
        os << fmt::format("On {} the finding did not show: {}.\n", md_text(k.value("kernel_file", "")),
                          problems.empty() ? "the cited code is unchanged there, so the cause lies elsewhere (timing, or a change "
                                             "outside the cited lines)"
                                           : "the cited code changed there (below)");
      for (const auto& p : problems) os << fmt::format("- on {}: {}\n", md_text(k.value("kernel_file", "")), md_text(p.get<std::string>()));
    }
    os << "\n";
  };
  const std::string how = dut ? fmt::format("rdmaconf lab run --dut {} --profile {} --our-iface IF --our-addr ADDR",
                                            device_field(device, "dut", "?"), device_field(device, "profile", "?"))
                              : std::string("rdmaconf lab run");
  if (security) {
    // Written for a security contact: what a remote peer can do, exactly how, where, and what fixes it.
    os << "## Impact\n\n" << md_text(r.value("impact", "")) << "\n\n";
    os << "## Trigger\n\n" << md_text(r.value("trigger", "")) << "\n\n";
    kernel_table("Affected kernels");
    os << "## Reproducer\n\n";
    for (const auto& k : kernels)
      for (const auto& id : k.value("reproduced_by", json::array()))
        os << fmt::format("- {}: {}\n", md_text(k.value("kernel_file", "")),
                          md_code(fmt::format("{}{} --cell {}", how,
                                                dut || k.value("kernel_file", "").empty() ? std::string()
                                                                                          : " --kernel " + k.value("kernel_file", ""),
                                                id.get<std::string>())));
    os << "\n## Root cause\n\n" << md_text(r.value("root_cause", "")) << "\n\n";
    os << "## Fix direction\n\n" << md_text(r.value("fix", "")) << "\n\n";
  }
  os << "## What happens\n\n" << r.value("text", "") << "\n\n";
  if (!r["requirements"].empty()) {
    os << "## What the specification requires\n\n";
    for (const auto& q : r["requirements"])
      os << fmt::format("- {} {} ({}): {} (checked by `{}`)\n", q.value("spec", ""), q.value("section", ""),
                        q.value("level", ""), q.value("requirement", ""), q.value("id", ""));
    os << "\n";
  }
  if (!security) kernel_table("Kernels");
  if (const auto& src = r.value("source", json::array()); !src.empty()) {
    os << "## Where in the source\n\n";
    for (const auto& c : src) {
      if (c.is_string()) {
        os << "- " << md_text(c.get<std::string>()) << "\n";
        continue;
      }
      const std::string fn = c.value("function", "");
      os << fmt::format("- {}{}: {}\n", md_code(c.value("file", "")), fn.empty() ? "" : " " + md_code(fn + "()"),
                        md_text(c.value("what", "")));
      const json by_kernel = c.value("lines", json::object());
      for (const auto& [kernel, lines] : by_kernel.items()) {
        std::string release;
        for (const auto& k : kernels)
          if (k.value("kernel_file", "") == kernel) release = k.value("kernel", "");
        os << fmt::format("  - {}{}: lines {}\n", md_text(kernel), release.empty() ? "" : fmt::format(" ({})", md_text(release)),
                          md_text(lines.is_string() ? lines.get<std::string>() : lines.dump()));
      }
      os << fmt::format("  - the code: {}\n", md_code(c.value("anchor", "")));
    }
    os << "\n";
  }
  os << "## Environment\n\n";
  if (dut) {
    os << fmt::format("- device: {} ({}), RDMA device {} on {} ({})\n", device_field(device, "title", "?"),
                      device_field(device, "driver", "?"), device_field(device, "device", "?"),
                      device_field(device, "netdev", "?"), device_field(device, "address", "?"));
    os << fmt::format("- as the device reports itself: kernel {}, firmware {}, node description {}, host name {}\n",
                      device_field(device, "kernel", "?"), device_field(device, "firmware", "not reported"),
                      device_field(device, "node_desc", "not reported"), device_field(device, "host", "not reported"));
    os << fmt::format("- profile: {} ({})\n", device_field(device, "profile_file", device_field(device, "profile", "?")),
                      device.value("tested_profile", false) ? "tested by the project" : "untested");
  } else if (kernels.empty()) {
    os << fmt::format("- kernel: {}\n", r.value("kernel", "?"));
    for (const auto& p : r.value("packages", json::array())) os << "- " << p.get<std::string>() << "\n";
  } else {
    for (const auto& k : kernels) {
      os << fmt::format("- kernel {}: {}\n", md_text(k.value("kernel_file", "")), md_text(k.value("kernel", "?")));
      for (const auto& p : k.value("packages", json::array())) os << "  - " << p.get<std::string>() << "\n";
    }
  }
  os << fmt::format("- {} (rdmaconf's lab, docs/lab.md)\n\n",
                    r.value("topology", "").empty() ? "a qemu guest built from Debian packages; the peer on a veth pair"
                                                    : r.value("topology", ""));
  os << "## How to reproduce\n\n";
  for (const auto& c : r["cells"]) {
    const std::string kf = c.value("kernel_file", "");
    os << fmt::format("- `{}`{}: {}{} ({}); {}\n", c.value("id", ""), kf.empty() ? "" : fmt::format(" on {}", md_text(kf)),
                      c.value("peer_program", ""),
                      c.value("our_role", "") == "none" ? "" : fmt::format(" against rdmaconf as {}", c.value("our_role", "")),
                      c.value("configuration", ""),
                      md_code(fmt::format("{}{} --cell {}", how, dut || kf.empty() ? std::string() : " --kernel " + kf,
                                            c.value("id", ""))));
  }
  os << "\n## What the capture shows\n\n";
  bool any = false;
  for (const auto& c : r["cells"]) {
    for (const auto& e : c.value("evidence", json::array()))
      for (const auto& ev : e.value("evidence", json::array())) {
        if (!any) os << "| cell | case | frames | stream offset | expected | actual |\n| --- | --- | --- | --- | --- | --- |\n";
        any = true;
        os << fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.value("id", ""), e.value("case", ""),
                          fmt::join(ev.value("frames", std::vector<std::uint64_t>{}), ", "),
                          ev.contains("stream_offset") ? ev["stream_offset"].dump() : "", ev.value("expected", ""),
                          ev.value("actual", ""));
      }
    if (c.contains("evidence_problem")) os << fmt::format("- {}: {}\n", c.value("id", ""), c.value("evidence_problem", ""));
  }
  if (!any) os << "The finding shows in the programs' behaviour rather than in one frame: see each cell's reason.\n";
  os << "\n## Captures\n\n";
  for (const auto& c : r["cells"])
    os << fmt::format("- {}: `{}` (checked: `{}`)\n  - {}\n", c.value("id", ""), c.value("capture", ""),
                      c.value("check_report", ""), c.value("reason", ""));
  os << fmt::format("\n---\nFound by rdmaconf {} (an open conformance suite for RDMA wire protocols).\n", tool_version);
}

std::vector<std::string> finding_file_names(const std::vector<json>& records) {
  constexpr std::size_t kMaxName = 120;
  std::vector<std::string> out;
  std::set<std::string> taken;
  for (const auto& r : records) {
    const auto it = r.find("name");
    const std::string key = it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
    std::string base;
    for (const char ch : key.substr(0, kMaxName)) {
      const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                         ch == '_' || ch == '-';
      base += plain ? ch : '_';
    }
    if (base.empty()) base = "finding";
    if (base.front() == '.') base.insert(base.begin(), '_');
    // (Taken as lower case: two names that differ only in case are one file
    // on a case-insensitive file system.)
    const auto lower = [](std::string x) {
      std::transform(x.begin(), x.end(), x.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return x;
    };
    std::string name = base;
    for (int n = 2; !taken.insert(lower(name)).second; ++n) name = fmt::format("{}-{}", base, n);
    out.push_back(name + ".md");
  }
  return out;
}

}  // namespace rdmaconf::reports

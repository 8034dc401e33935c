// The lab's cells, read from their table (interop/lab/cells.json; the
// format is in docs/lab.md). The orchestration, the guest's plan and the
// judging are in lab.cpp.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/args.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/control.hpp"
#include "interop/lab/lab.hpp"
#include "interop/lab/network.hpp"
#include "interop/lab/peers.hpp"

namespace rdmaconf::interop::lab {

namespace {

using nlohmann::json;

constexpr std::string_view kCellsFormat = "rdmaconf lab cells 1";
constexpr std::size_t kMaxText = 4096;

struct CrcMode {
  const char* name;
  bool required, strict;
};
constexpr CrcMode kCrcModes[] = {
    {"crc-off", false, false}, {"crc-required", true, false}, {"crc-strict", false, true}, {"crc-required-strict", true, true}};

// A cell ID is also a folder name in the guest and on the host.
bool good_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 && id.front() != '.' &&
         std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                  c == '_';
         });
}

// Fills one template of a cell; throws fmt::format_error on an unknown or
// unavailable placeholder.
std::string fill(const std::string& tpl, const Cell& c) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("port", c.port));
  args.push_back(fmt::arg("iterations", c.iterations));
  args.push_back(fmt::arg("size", c.size));
  args.push_back(fmt::arg("siw", kSiwAddr));
  args.push_back(fmt::arg("ours", kOurAddr));
  args.push_back(fmt::arg("server", kSiwPairServer));
  args.push_back(fmt::arg("client", kSiwPairClient));
  // The catalog rule the cell's fault or scenario breaks, and the Terminate it requires.
  const auto rule = c.peer->rule(c), terminate = c.peer->terminate(c);
  if (rule) args.push_back(fmt::arg("rule", *rule));
  if (terminate) args.push_back(fmt::arg("terminate", *terminate));
  return fmt::vformat(tpl, args);
}

void fill_templates(Cell& c) {
  for (std::string* t : {&c.program, &c.why, &c.server_cmd, &c.client_cmd}) *t = fill(*t, c);
}

// One cell: its group's defaults overlaid with its own fields.
Cell read_cell(const json& merged, const std::string& what, const std::map<std::string, Finding>& findings) {
  ControlFields f(merged, what);
  std::vector<std::string_view> fields = {"id",   "kernel", "role", "program", "scenario", "fault",    "connection",
                                          "args", "label",  "expect", "crc",   "why",      "finding",  "run_last",
                                          "connections", "iterations", "size", "server", "client", "sweep"};
  std::map<std::string_view, std::string> configs;  // each peer's configuration field, as given
  for (const auto& p : kernel_peers())
    if (!p.config_field.empty()) fields.push_back(p.config_field);
  f.only(fields);
  Cell c;
  c.id = f.text("id", 128);
  c.kernel = f.text("kernel", 8, std::string(kernel_peers().front().name));
  for (const auto& p : kernel_peers())
    if (!p.config_field.empty()) configs[p.config_field] = f.text(std::string(p.config_field).c_str(), 64, "");
  c.our_role = f.text("role", 16);
  c.program = f.text("program", kMaxText);
  c.scenario = f.text("scenario", 64);
  c.fault = f.text("fault", 64, "");
  c.connection = f.text("connection", 4, "RC");
  c.our_args = f.strings("args", kMaxText, true);
  c.ours_label = f.text("label", 64, "");
  const std::string expect = f.text("expect", 16, "data");
  c.expect_crc = f.flag("crc", false);
  c.why = f.text("why", kMaxText);
  const std::string finding = f.text("finding", 64, "");
  c.run_last = f.flag("run_last", false);
  c.connections = static_cast<unsigned>(f.integer("connections", 1, 50, 1));  // port + 1000 * k stays a port
  c.iterations = static_cast<unsigned>(f.integer("iterations", 1, 1'000'000, 10));
  c.size = static_cast<unsigned>(f.integer("size", 1, 64u << 20, 64));
  c.server_cmd = f.text("server", kMaxText, "");
  c.client_cmd = f.text("client", kMaxText, "");
  c.sweep = f.flag("sweep", false);
  if (!f.ok()) throw CellsError(f.error());

  // Rules across fields, each with the same kind of message.
  if (!good_id(c.id)) f.fail(fmt::format("id: \"{}\" is not a folder name (letters, digits, '.', '-', '_')", c.id));
  c.peer = find_peer(c.kernel);
  if (!c.peer) f.fail(fmt::format("kernel: expected one of {}, got \"{}\"", peer_names(), c.kernel));
  if (c.our_role != "initiator" && c.our_role != "responder" && c.our_role != "none")
    f.fail(fmt::format("role: expected initiator, responder or none, got \"{}\"", c.our_role));
  if (const auto e = parse_expect(expect)) c.expect = *e;
  else f.fail(fmt::format("expect: expected data, reject, terminate or close, got \"{}\"", expect));
  if (c.connection != "RC" && c.connection != "UC" && c.connection != "UD")
    f.fail(fmt::format("connection: expected RC, UC or UD, got \"{}\"", c.connection));
  // The peer's own configuration, and what its cells must keep.
  if (c.peer && f.ok()) {
    for (const auto& [field, text] : configs)
      if (field != c.peer->config_field && !text.empty())
        f.fail(fmt::format("{}: the configuration of another kernel peer, in a {} cell", field, c.kernel));
    if (const std::string bad = c.peer->configure(c, c.peer->config_field.empty() ? "" : configs[c.peer->config_field]);
        !bad.empty())
      f.fail(bad);
    if (const std::string bad = c.peer->rules(c, expect); !bad.empty()) f.fail(bad);
  }
  if ((c.our_role == "none") != (!c.server_cmd.empty() && !c.client_cmd.empty()))
    f.fail("server, client: a kernel-against-kernel cell (role none) has both command lines, other cells neither");
  if (!finding.empty()) {
    if (const auto it = findings.find(finding); it != findings.end()) {
      c.known_finding = it->second.text;
      c.finding = finding;
      c.finding_cases = it->second.cases;
      c.finding_capture_only = it->second.capture_only;
    } else {
      f.fail(fmt::format("finding: \"{}\" is not in findings", finding));
    }
  }
  if (f.ok()) {
    Cell trial = c;
    trial.port = kFirstPort;
    try {
      fill_templates(trial);
    } catch (const fmt::format_error& e) {
      f.fail(fmt::format("a template (program, why, server or client) does not fill: {} (placeholders: {{port}} "
                         "{{iterations}} {{size}} {{siw}} {{ours}} {{server}} {{client}}, and {{rule}} {{terminate}} "
                         "where the catalog has them)",
                         e.what()));
    }
    if (f.ok() && trial.why.empty()) f.fail("why: empty (say what the RFCs or IBTA require of this cell)");
  }
  if (!f.ok()) throw CellsError(f.error());
  return c;
}

std::string position(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return fmt::format("line {}, column {}", line, col);
}

}  // namespace

std::string SiwKnobs::label() const {
  std::string s = kCrcModes[(crc_required ? 1 : 0) + (crc_strict ? 2 : 0)].name;
  s += fmt::format(".v{}", mpa_version);
  if (peer_to_peer) s += ".p2p";
  if (try_gso) s += ".gso";
  return s;
}

std::optional<SiwKnobs> SiwKnobs::parse(std::string_view label) {
  SiwKnobs k;
  const auto dot = label.find('.');
  const std::string_view crc = label.substr(0, dot);
  const auto* mode = std::find_if(std::begin(kCrcModes), std::end(kCrcModes), [&](const CrcMode& m) { return crc == m.name; });
  if (mode == std::end(kCrcModes) || dot == std::string_view::npos) return std::nullopt;
  k.crc_required = mode->required;
  k.crc_strict = mode->strict;
  std::string_view rest = label.substr(dot + 1);
  if (rest.starts_with("v1")) k.mpa_version = 1;
  else if (rest.starts_with("v2")) k.mpa_version = 2;
  else return std::nullopt;
  rest.remove_prefix(2);
  if (rest.starts_with(".p2p")) k.peer_to_peer = true, rest.remove_prefix(4);
  if (rest.starts_with(".gso")) k.try_gso = true, rest.remove_prefix(4);
  return rest.empty() ? std::optional(k) : std::nullopt;
}

std::string SiwKnobs::load_args() const {
  return fmt::format("{} {} {} {} {}", int(crc_required), int(crc_strict), mpa_version, int(peer_to_peer), int(try_gso));
}

nlohmann::json SiwKnobs::to_json() const {
  return {{"mpa_crc_required", crc_required},
          {"mpa_crc_strict", crc_strict},
          {"mpa_version", mpa_version},
          {"peer_to_peer", peer_to_peer},
          {"try_gso", try_gso}};
}

const char* expect_name(Expect e) {
  switch (e) {
    case Expect::data: return "data";
    case Expect::reject: return "reject";
    case Expect::terminate: return "terminate";
    case Expect::close: return "close";
  }
  return "?";
}

std::optional<Expect> parse_expect(std::string_view name) {
  for (const Expect e : {Expect::data, Expect::reject, Expect::terminate, Expect::close})
    if (name == expect_name(e)) return e;
  return std::nullopt;
}

CellTable parse_cells(std::string_view text, std::string_view file_name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw CellsError(fmt::format("{}: not JSON at {}: {}", file_name, position(text, e.byte ? e.byte - 1 : 0), e.what()));
  }
  ControlFields top(doc, file_name);
  top.only({"format", "comment", "findings", "not_run", "groups"});
  if (const std::string format = top.text("format", 64); top.ok() && format != kCellsFormat)
    top.fail(fmt::format("format: expected \"{}\", got \"{}\"", kCellsFormat, format));
  const json* findings_json = top.object("findings", true);
  const json* not_run_json = top.object("not_run", true);
  const json* groups = top.array("groups");
  if (!top.ok()) throw CellsError(top.error());

  std::map<std::string, Finding> findings;
  if (findings_json)
    for (const auto& [name, value] : findings_json->items()) {
      ControlFields f(value, fmt::format("{}: findings.{}", file_name, name));
      f.only({"title", "text", "cases", "source", "capture_only", "severity", "impact", "trigger", "root_cause", "fix"});
      Finding x;
      x.name = name;
      x.title = f.text("title", 200);
      x.text = f.text("text", kMaxText);
      x.cases = f.strings("cases", 128, true);
      if (const json* src = f.array("source", true))
        for (std::size_t i = 0; i < src->size() && f.ok(); ++i) try {
            x.source.push_back(parse_citation((*src)[i]));
          } catch (const std::invalid_argument& e) {
            f.fail(fmt::format("source[{}]: {}", i, e.what()));
          }
      x.capture_only = f.flag("capture_only", false);
      x.severity = f.text("severity", 16, std::string(x.capture_only ? "conformance" : "interop"));
      x.impact = f.text("impact", kMaxText, std::string());
      x.trigger = f.text("trigger", kMaxText, std::string());
      x.root_cause = f.text("root_cause", kMaxText, std::string());
      x.fix = f.text("fix", kMaxText, std::string());
      if (f.ok() && x.text.empty()) f.fail("text: empty");
      if (f.ok() && x.title.empty()) f.fail("title: empty");
      if (f.ok() && x.severity != "security" && x.severity != "interop" && x.severity != "conformance")
        f.fail(fmt::format("severity: expected security, interop or conformance, got \"{}\"", x.severity));
      // A security finding's report is written for a security contact: it needs all four.
      for (const auto& [key, v] : {std::pair{"impact", &x.impact}, {"trigger", &x.trigger}, {"root_cause", &x.root_cause}, {"fix", &x.fix}})
        if (f.ok() && x.severity == "security" && v->empty()) f.fail(fmt::format("{}: a security finding needs it", key));
      if (!f.ok()) throw CellsError(f.error());
      findings.emplace(name, std::move(x));
    }
  CellTable table;
  if (not_run_json)
    for (const auto& [scenario, why] : not_run_json->items()) {
      if (!why.is_string() || why.get_ref<const std::string&>().empty())
        throw CellsError(fmt::format("{}: not_run.{}: expected the reason as a string", file_name, scenario));
      if (!known_scenario(scenario))
        throw CellsError(fmt::format("{}: not_run.{}: not a scenario of our engines", file_name, scenario));
      table.not_run.emplace(scenario, why.get<std::string>());
    }

  std::set<std::string> ids;
  for (std::size_t g = 0; g < groups->size(); ++g) {
    const std::string gwhat = fmt::format("{}: groups[{}]", file_name, g);
    ControlFields gf((*groups)[g], gwhat);
    gf.only({"name", "comment", "defaults", "cells"});
    gf.text("name", 64, "");
    gf.text("comment", kMaxText, "");
    const json* defaults = gf.object("defaults", true);
    const json* cells = gf.array("cells");
    if (!gf.ok()) throw CellsError(gf.error());
    for (std::size_t i = 0; i < cells->size(); ++i) {
      const json& own = (*cells)[i];
      json merged = defaults ? *defaults : json::object();
      if (own.is_object()) merged.update(own);
      else merged = own;  // ControlFields names the wrong type
      const auto id = own.is_object() ? own.find("id") : own.end();
      const std::string what = fmt::format("{}.cells[{}]{}", gwhat, i,
                                           own.is_object() && id != own.end() && id->is_string()
                                               ? fmt::format(" ({})", id->get<std::string>())
                                               : std::string());
      Cell c = read_cell(merged, what, findings);
      if (!ids.insert(c.id).second) throw CellsError(fmt::format("{}: id: {} appears twice", what, c.id));
      table.cells.push_back(std::move(c));
    }
  }
  if (table.cells.empty()) throw CellsError(fmt::format("{}: no cells", file_name));
  table.findings = std::move(findings);
  return table;
}

CellTable read_cells(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CellsError(fmt::format("{}: cannot open the lab's cells file", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw CellsError(fmt::format("{}: read error", file.string()));
  return parse_cells(ss.str(), file.string());
}

std::filesystem::path default_cells_file(const std::filesystem::path& lab_dir) { return lab_dir / "cells.json"; }

std::string kernel_names(const std::filesystem::path& lab_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(lab_dir / "kernels", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".kernel") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names.empty() ? std::string("none found") : fmt::format("{}", fmt::join(names, ", "));
}

std::filesystem::path kernel_file(const std::filesystem::path& lab_dir, const std::string& kernel) {
  std::error_code ec;
  if (kernel.empty()) {  // the matrix's default kernel is the data's to name
    std::vector<std::filesystem::path> marked;
    for (std::filesystem::directory_iterator it(lab_dir / "kernels", ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() != ".kernel") continue;
      std::ifstream in(it->path());
      for (std::string line; std::getline(in, line);)
        if (line.rfind("default:", 0) == 0 && line.find("yes") != std::string::npos) marked.push_back(it->path());
    }
    return marked.size() == 1 ? std::filesystem::absolute(marked.front(), ec) : std::filesystem::path();
  }
  const bool is_name = !kernel.empty() && kernel.find('/') == std::string::npos && kernel.find(".kernel") == std::string::npos;
  const std::filesystem::path f = is_name ? lab_dir / "kernels" / (kernel + ".kernel") : std::filesystem::path(kernel);
  return std::filesystem::is_regular_file(f, ec) ? std::filesystem::absolute(f, ec) : std::filesystem::path();
}

std::vector<Cell> select_cells(const CellTable& table, bool sweep, const std::vector<std::string>& scenarios) {
  std::vector<Cell> cells;
  for (const auto& c : table.cells)
    if ((sweep || !c.sweep) &&
        (scenarios.empty() || std::find(scenarios.begin(), scenarios.end(), c.scenario) != scenarios.end()))
      cells.push_back(c);
  std::stable_partition(cells.begin(), cells.end(), [](const Cell& c) { return !c.run_last; });
  unsigned port = kFirstPort;
  for (auto& c : cells) {
    c.port = port++;
    fill_templates(c);  // read_cells has tried each: they fill
  }
  return cells;
}

nlohmann::json Finding::to_json() const {
  nlohmann::json src = nlohmann::json::array();
  for (const auto& c : source) src.push_back(c.to_json());
  nlohmann::json j = {{"name", name},     {"title", title},          {"text", text},        {"cases", cases},
                      {"source", src},    {"capture_only", capture_only}, {"severity", severity}};
  if (severity == "security") j.update({{"impact", impact}, {"trigger", trigger}, {"root_cause", root_cause}, {"fix", fix}});
  return j;
}

}  // namespace rdmaconf::interop::lab

#include "reports/report.hpp"

#include <map>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace rdmaconf::reports {

using namespace conformance;

Totals totals(const std::vector<InputResult>& inputs) {
  Totals t;
  for (const auto& in : inputs) {
    if (!in.error.empty()) ++t.input_errors;
    for (const auto& s : in.scopes)
      for (const auto& o : s.outcomes) {
        switch (o.tally.verdict()) {
          case Verdict::pass: ++t.pass; break;
          case Verdict::fail: ++t.fail; break;
          case Verdict::not_applicable: ++t.not_applicable; break;
          case Verdict::inconclusive: ++t.inconclusive; break;
        }
      }
  }
  return t;
}

nlohmann::json case_json(const CaseInfo& c) {
  return {{"id", c.id},
          {"family", c.family},
          {"spec", c.spec},
          {"section", c.section},
          {"level", level_name(c.level)},
          {"requirement", c.requirement}};
}

namespace {

nlohmann::json evidence_json(const Evidence& e) {
  nlohmann::json j;
  j["frames"] = e.frames;
  if (e.stream_offset) j["stream_offset"] = *e.stream_offset;
  if (!e.side.empty()) j["side"] = e.side;
  if (!e.expected.empty()) j["expected"] = e.expected;
  if (!e.actual.empty()) j["actual"] = e.actual;
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

std::string xml_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += '?';
        else o += c;
    }
  }
  return o;
}

std::string evidence_text(const Evidence& e) {
  std::string s;
  if (!e.frames.empty()) {
    s += "frame";
    if (e.frames.size() > 1) s += "s";
    for (std::size_t i = 0; i < e.frames.size(); ++i) s += fmt::format("{}{}", i ? "-" : " ", e.frames[i]);
  }
  if (e.stream_offset) s += fmt::format(", stream offset {}", *e.stream_offset);
  if (!e.side.empty()) s += fmt::format(", from {}", e.side);
  if (!e.expected.empty() || !e.actual.empty()) s += fmt::format(": expected {}, got {}", e.expected, e.actual);
  if (!e.detail.empty()) s += fmt::format(" ({})", e.detail);
  return s;
}

}  // namespace

nlohmann::json to_json(const RunInfo& run, const std::vector<InputResult>& inputs) {
  nlohmann::json j;
  j["$schema"] = kSchemaId;
  j["schema_version"] = kSchemaVersion;
  j["tool"] = {{"name", "rdmaconf"}, {"version", run.tool_version}};
  j["options"] = {{"strict", run.strict}, {"cases", run.case_patterns}, {"arguments", run.arguments}};
  j["catalog"] = nlohmann::json::array();
  for (const auto* c : run.cases) j["catalog"].push_back(case_json(*c));
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : inputs) {
    nlohmann::json ji;
    ji["path"] = in.path;
    ji["sha256"] = in.sha256;
    ji["linktype"] = in.linktype;
    if (!in.error.empty()) ji["error"] = in.error;
    ji["stats"] = {{"frames", in.stats.frames},
                   {"octets", in.stats.octets},
                   {"tcp_connections", in.stats.tcp_connections},
                   {"undecodable_frames", in.stats.undecodable_frames},
                   {"capture_anomalies", in.stats.capture_anomalies}};
    for (const auto& c : in.stats.families) ji["stats"][c.key] = c.value;
    ji["warnings"] = in.warnings;
    ji["warnings_total"] = in.warnings_total;
    ji["scopes"] = nlohmann::json::array();
    for (const auto& s : in.scopes) {
      nlohmann::json js;
      js["id"] = s.id;
      js["family"] = s.family;
      js["label"] = s.label;
      js["frames"] = {s.first_frame, s.last_frame};
      js["parameters"] = s.params;
      js["coverage"] = nlohmann::json::array();
      for (const auto& c : s.coverage)
        js["coverage"].push_back({{"side", c.side}, {"unit", c.unit}, {"captured", c.captured}, {"judged", c.judged},
                                  {"skipped", c.skipped()}, {"missing", c.missing}, {"why", c.why}});
      js["results"] = nlohmann::json::array();
      for (const auto& o : s.outcomes) {
        nlohmann::json jr;
        jr["case"] = o.info->id;
        jr["verdict"] = verdict_name(o.tally.verdict());
        jr["checked"] = o.tally.checked();
        jr["failed"] = o.tally.failed();
        jr["inconclusive"] = o.tally.inconclusive_count();
        jr["evidence"] = nlohmann::json::array();
        for (const auto& e : o.tally.evidence()) jr["evidence"].push_back(evidence_json(e));
        js["results"].push_back(std::move(jr));
      }
      ji["scopes"].push_back(std::move(js));
    }
    j["inputs"].push_back(std::move(ji));
  }
  const Totals t = totals(inputs);
  j["summary"] = {{"pass", t.pass},
                  {"fail", t.fail},
                  {"not_applicable", t.not_applicable},
                  {"inconclusive", t.inconclusive},
                  {"input_errors", t.input_errors}};
  return j;
}

void write_junit(std::ostream& os, const RunInfo& run, const std::vector<InputResult>& inputs) {
  const Totals t = totals(inputs);
  fmt::print(os, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fmt::print(os, "<testsuites name=\"rdmaconf {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
             xml_escape(run.tool_version), t.pass + t.fail + t.not_applicable + t.inconclusive + t.input_errors, t.fail,
             t.input_errors, t.not_applicable + t.inconclusive);
  for (const auto& in : inputs) {
    std::uint64_t tests = 0, fails = 0, skipped = 0;
    for (const auto& s : in.scopes)
      for (const auto& o : s.outcomes) {
        ++tests;
        fails += o.tally.verdict() == Verdict::fail;
        skipped += o.tally.verdict() == Verdict::not_applicable || o.tally.verdict() == Verdict::inconclusive;
      }
    fmt::print(os, "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
               xml_escape(in.path), tests + !in.error.empty(), fails, in.error.empty() ? 0 : 1, skipped);
    if (!in.error.empty())
      fmt::print(os, "    <testcase classname=\"input\" name=\"read\"><error message=\"{}\"/></testcase>\n",
                 xml_escape(in.error));
    for (const auto& s : in.scopes) {
      for (const auto& o : s.outcomes) {
        fmt::print(os, "    <testcase classname=\"{}\" name=\"{}\">", xml_escape(fmt::format("{} {}", s.id, s.label)),
                   xml_escape(o.info->id));
        const Verdict v = o.tally.verdict();
        if (v == Verdict::fail) {
          std::string body;
          for (const auto& e : o.tally.evidence()) body += evidence_text(e) + "\n";
          fmt::print(os, "<failure message=\"{} {} {}: {} of {} checks failed\">{}</failure>", xml_escape(o.info->spec),
                     xml_escape(o.info->section), level_name(o.info->level), o.tally.failed(), o.tally.checked(),
                     xml_escape(body));
        } else if (v == Verdict::not_applicable || v == Verdict::inconclusive) {
          fmt::print(os, "<skipped message=\"{}\"/>", verdict_name(v));
        }
        fmt::print(os, "</testcase>\n");
      }
    }
    fmt::print(os, "  </testsuite>\n");
  }
  fmt::print(os, "</testsuites>\n");
}

void write_summary(std::ostream& os, const std::vector<InputResult>& inputs, bool verbose) {
  for (const auto& in : inputs) {
    fmt::print(os, "{}: {} frames, {} TCP connections", in.path, in.stats.frames, in.stats.tcp_connections);
    for (const auto& c : in.stats.families) fmt::print(os, ", {} {}", c.value, c.label);
    fmt::print(os, "\n");
    if (!in.error.empty()) fmt::print(os, "  error: {}\n", in.error);
    if (in.stats.undecodable_frames)
      fmt::print(os, "  {} frame(s) could not be decoded\n", in.stats.undecodable_frames);
    if (in.stats.capture_anomalies)
      fmt::print(os, "  {} frame(s) with capture anomalies (length or timestamp)\n", in.stats.capture_anomalies);
    if (in.warnings_total) fmt::print(os, "  {} warning(s); first: {}\n", in.warnings_total, in.warnings.front());
    for (const auto& s : in.scopes) {
      std::map<Verdict, int> n;
      for (const auto& o : s.outcomes) ++n[o.tally.verdict()];
      fmt::print(os, "  {} {}: {} pass, {} fail, {} inconclusive, {} n/a\n", s.id, s.label, n[Verdict::pass],
                 n[Verdict::fail], n[Verdict::inconclusive], n[Verdict::not_applicable]);
      for (const auto& c : s.coverage) {
        fmt::print(os, "    coverage, {}: {} {} captured, {} judged, {} skipped", c.side, c.captured, c.unit, c.judged, c.skipped());
        if (c.missing) fmt::print(os, ", {} missing from the capture", c.missing);
        if (!c.why.empty()) fmt::print(os, " ({})", fmt::join(c.why, "; "));
        fmt::print(os, "\n");
      }
      for (const auto& o : s.outcomes) {
        const Verdict v = o.tally.verdict();
        if (v == Verdict::fail || (verbose && v != Verdict::not_applicable)) {
          fmt::print(os, "    {:<13} {:<28} {} {} {}\n", verdict_name(v), o.info->id, o.info->spec, o.info->section,
                     level_name(o.info->level));
          for (const auto& e : o.tally.evidence()) fmt::print(os, "        {}\n", evidence_text(e));
          if (o.tally.failed() > o.tally.evidence().size())
            fmt::print(os, "        ... {} failures in all, of {} checks\n", o.tally.failed(), o.tally.checked());
        }
      }
    }
  }
  const Totals t = totals(inputs);
  fmt::print(os, "\n{:<16}{:>8}\n", "verdict", "count");
  fmt::print(os, "{:<16}{:>8}\n{:<16}{:>8}\n{:<16}{:>8}\n{:<16}{:>8}\n", "PASS", t.pass, "FAIL", t.fail, "INCONCLUSIVE",
             t.inconclusive, "NOT_APPLICABLE", t.not_applicable);
  if (t.input_errors) fmt::print(os, "{:<16}{:>8}\n", "input errors", t.input_errors);
}

}  // namespace rdmaconf::reports

#include "reports/compare.hpp"
#include "reports/findings.hpp"
#include "reports/json_input.hpp"
#include "reports/markdown.hpp"
#include "reports/terminal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <fstream>
#include <set>
#include <map>
#include <ctime>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

namespace rdmaconf::reports {

namespace {


using nlohmann::json;

std::string json_line(const RunStamp& s, const std::string& item, const std::string& verdict) {
  return json{{"run", s.run_id}, {"date", s.date}, {"tool_version", s.tool_version}, {"commit", s.commit},
              {"item", item}, {"verdict", verdict}}
             .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

void CommonFolder::add(const std::string& path) {
  if (!any_) {
    prefix_ = path.substr(0, path.rfind('/') + 1);
    any_ = true;
  }
  while (!prefix_.empty() && path.compare(0, prefix_.size(), prefix_) != 0)
    prefix_ = prefix_.substr(0, prefix_.rfind('/', prefix_.size() - 2) + 1);
}

std::string common_folder(const std::vector<std::string>& paths) {
  CommonFolder f;
  for (const auto& p : paths) f.add(p);
  return f.prefix();
}

// A check report's results and a lab report's cells are taken as they end
// and leave the document, each field held to its type and each verdict to
// the ones the tool writes; what stays is the verdicts, by item.
Snapshot read_snapshot(const std::filesystem::path& report) {
  std::ifstream in(report, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot open the report", report.string()));
  const Shape s{report.string()};
  StreamPath where;
  struct Result {
    std::string input, scope, test_case, verdict;
  };
  std::vector<Result> results;
  std::vector<std::pair<std::string, std::string>> cells;  // lab: id, verdict
  std::size_t input_mark = 0, scope_mark = 0;  // the first result of the input, of the scope
  using ev_t = json::parse_event_t;
  const json::parser_callback_t keep = [&](int depth, ev_t ev, json& parsed) {
    where.event(depth, ev, parsed);
    // What no verdict needs is not built: a scope's parameters and coverage, a result's fields but its case and verdict.
    if (ev == ev_t::key && where.at({"inputs", "*", "scopes", "*"}) && (parsed == "parameters" || parsed == "coverage"))
      return false;
    if (ev == ev_t::key && where.at({"inputs", "*", "scopes", "*", "results", "*"}) && parsed != "case" && parsed != "verdict")
      return false;
    const bool entries = where.at({"inputs"}) || where.at({"inputs", "*", "scopes"}) ||
                         where.at({"inputs", "*", "scopes", "*", "results"}) || where.at({"cells"});
    if (ev == ev_t::value && entries) s.fail(where.entry_pointer(), "an object", parsed);
    if (ev == ev_t::array_end && (where.at({"inputs", "*"}) || where.at({"inputs", "*", "scopes", "*"}) ||
                                  where.at({"inputs", "*", "scopes", "*", "results", "*"}) || where.at({"cells", "*"})))
      s.fail(where.pointer(), "an object", parsed);
    if (ev != ev_t::object_end) return true;
    const std::string at = where.pointer();
    if (where.at({"inputs", "*", "scopes", "*", "results", "*"})) {
      results.push_back({{}, {}, s.text_of(parsed, at, "case"), s.one_of(parsed, at, "verdict", kCheckVerdicts, true)});
      if (results.back().test_case.empty()) s.fail(at + "/case", "missing");
      return false;
    }
    if (where.at({"inputs", "*", "scopes", "*"})) {
      s.array_of(parsed, at, "results");
      const std::string id = s.text_of(parsed, at, "id");
      for (std::size_t i = scope_mark; i < results.size(); ++i) results[i].scope = id;
      scope_mark = results.size();
      return false;
    }
    if (where.at({"inputs", "*"})) {
      s.array_of(parsed, at, "scopes");
      const std::string path = s.text_of(parsed, at, "path");
      for (std::size_t i = input_mark; i < results.size(); ++i) results[i].input = path;
      input_mark = scope_mark = results.size();
      return false;
    }
    if (where.at({"cells", "*"})) {
      const std::string id = s.text_of(parsed, at, "id");
      if (id.empty()) s.fail(at + "/id", "missing");
      cells.emplace_back(id, s.one_of(parsed, at, "verdict", kLabVerdicts, true));
      return false;
    }
    return true;
  };
  const json doc = parse_input_json(in, report.string(), keep, true);
  if (doc.is_discarded() || !doc.is_object()) throw ReportError(fmt::format("{}: not a JSON report", report.string()));
  Snapshot snap;
  snap.tool_version = s.text_of(doc, "", "tool_version", s.text_of(s.object_of(doc, "", "tool"), "/tool", "version"));
  if (doc.contains("cells") && !doc.contains("inputs")) {
    s.array_of(doc, "", "cells");
    snap.kind = "lab";
    for (auto& [id, v] : cells) snap.verdicts[id] = v;
    // A lab report's device under test, or the guest's kernel: their texts.
    json device = json::object();
    for (const char* part : {"device", "lab"})
      for (const auto& [k, v] : s.object_of(doc, "", part).items())
        if (v.is_string() && !v.get_ref<const std::string&>().empty()) device[k] = v;
    snap.device = device_label(device);
  } else if (doc.contains("inputs")) {
    s.array_of(doc, "", "inputs");
    snap.kind = "check";
    CommonFolder folder;
    for (const auto& r : results) folder.add(r.input);
    const std::string strip = folder.prefix();
    for (const auto& r : results)
      snap.verdicts[fmt::format("{} {} {}", r.input.substr(strip.size()), r.scope, r.test_case)] = r.verdict;
  } else {
    throw ReportError(fmt::format("{}: neither a check report (inputs) nor a lab report (cells)", report.string()));
  }
  return snap;
}

int severity(const std::string& v) {
  if (v == "FAIL" || v == "red") return 2;
  if (v == "INCONCLUSIVE") return 1;
  return 0;  // PASS, NOT_APPLICABLE, green, skipped
}

Diff diff(const Snapshot& base, const Snapshot& now) {
  if (base.kind != now.kind)
    throw ReportError(fmt::format("a {} report cannot be compared with a {} report", base.kind, now.kind));
  Diff d;
  d.base_device = base.device;
  d.now_device = now.device;
  for (const auto& [item, after] : now.verdicts) {
    const auto it = base.verdicts.find(item);
    if (it == base.verdicts.end()) {
      d.appeared.push_back({item, "", after});
      continue;
    }
    const int b = severity(it->second), a = severity(after);
    if (a > b) d.regressions.push_back({item, it->second, after});
    else if (a < b) d.improvements.push_back({item, it->second, after});
  }
  for (const auto& [item, before] : base.verdicts)
    if (!now.verdicts.count(item)) d.vanished.push_back({item, before, ""});
  return d;
}

void write_diff(std::ostream& os, const Diff& d) {
  // (Items and devices are the reports' text: escaped for the terminal. Verdicts are the tool's own.)
  if (!d.base_device.empty() && d.base_device != d.now_device)
    fmt::print(os, "devices: {} -> {}\n", term_text(d.base_device), term_text(d.now_device));
  for (const auto& c : d.regressions) fmt::print(os, "REGRESSION {}: {} -> {}\n", term_text(c.item), c.before, c.after);
  for (const auto& c : d.improvements) fmt::print(os, "improved   {}: {} -> {}\n", term_text(c.item), c.before, c.after);
  for (const auto& c : d.appeared)
    if (severity(c.after)) fmt::print(os, "new        {}: {}\n", term_text(c.item), c.after);
  for (const auto& c : d.vanished) fmt::print(os, "gone       {}: was {}\n", term_text(c.item), c.before);
  fmt::print(os, "{} regression(s), {} improvement(s), {} new item(s), {} gone\n", d.regressions.size(),
             d.improvements.size(), d.appeared.size(), d.vanished.size());
}

void write_markdown(std::ostream& os, const Snapshot& now, const std::string& title, const Diff* base) {
  std::map<std::string, std::uint64_t> counts;
  // Failed items grouped: a check's by case (the last word), a lab's one by one.
  std::map<std::string, std::vector<std::string>> failed;
  for (const auto& [item, v] : now.verdicts) {
    ++counts[v];
    if (severity(v) == 2) {
      const auto sp = item.rfind(' ');
      if (now.kind == "check") failed[item.substr(sp + 1)].push_back(item.substr(0, sp));
      else failed[item].push_back({});
    }
  }
  fmt::print(os, "### {}\n\n", md_text(title));
  if (base) {
    fmt::print(os, "{}\n\n", base->regressions.empty() ? "No regression against the baseline."
                                                      : fmt::format("**{} regression(s) against the baseline.**",
                                                                    base->regressions.size()));
    if (!base->regressions.empty()) {
      fmt::print(os, "| {} | before | now |\n| --- | --- | --- |\n", now.kind == "lab" ? "cell" : "input scope case");
      for (const auto& c : base->regressions) fmt::print(os, "| {} | {} | {} |\n", md_code(c.item), md_text(c.before), md_text(c.after));
      fmt::print(os, "\n");
    }
  }
  fmt::print(os, "| verdict | count |\n| --- | ---: |\n");
  for (const auto& [v, n] : counts) fmt::print(os, "| {} | {} |\n", md_text(v), n);
  if (!failed.empty() && now.kind == "lab") {
    fmt::print(os, "\n| red cell |\n| --- |\n");
    for (const auto& [what, where] : failed) fmt::print(os, "| {} |\n", md_code(what));
  } else if (!failed.empty()) {
    fmt::print(os, "\n| failed case | where |\n| --- | --- |\n");
    for (const auto& [what, where] : failed) {
      std::string list;
      for (std::size_t i = 0; i < where.size() && i < 5; ++i) list += (i ? ", " : "") + md_code(where[i]);
      if (where.size() > 5) list += fmt::format(" and {} more", where.size() - 5);
      fmt::print(os, "| {} | {} |\n", md_code(what), list);
    }
  }
}

std::size_t append_history(const std::filesystem::path& dir, const Snapshot& s, const RunStamp& stamp) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto file = dir / "history.jsonl";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ReportError(fmt::format("{}: cannot open for appending", file.string()));
  // One writer at a time (shards of a run may append at once); each record a line.
  ::flock(fd, LOCK_EX);
  // Where the file ended before this append, so that a write that fails
  // part way (a full disk) is cut back off: no record is left half written.
  struct stat st {};
  const off_t before = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  std::string out;
  for (const auto& [item, v] : s.verdicts) {
    out += json_line(stamp, item, v);
    out += '\n';
  }
  std::size_t done = 0;
  bool failed = false;
  int err = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = true;
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  const bool restored = failed && before >= 0 && ::ftruncate(fd, before) == 0;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (failed)
    throw ReportError(fmt::format("{}: write failed after {} of {} octets: {}; {}", file.string(), done, out.size(), std::strerror(err),
                                  restored ? "the file was cut back to what it held before" : "the file could not be cut back"));
  return s.verdicts.size();
}

std::size_t prune_history(const std::filesystem::path& dir, std::size_t keep_runs, std::size_t keep_days,
                          const std::string& now) {
  const auto file = dir / "history.jsonl";
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw ReportError(fmt::format("{}: cannot open for pruning", file.string()));
  ::flock(fd, LOCK_EX);
  std::string text;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  // The runs in the order they first appear, with their date.
  std::vector<std::pair<std::string, std::string>> runs;
  std::map<std::string, std::size_t> index;
  std::vector<std::pair<std::string_view, std::string>> lines;  // line, its run
  for (std::size_t at = 0; at < text.size();) {
    auto nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    // (A line nested too deep to read is kept as it is, as one of no run.)
    json r;
    try {
      r = parse_input_json(line, file.string());
    } catch (const ReportError&) {
    }
    const std::string run = r.is_object() ? r.value("run", "") : "";
    if (!index.count(run)) {
      index.emplace(run, runs.size());
      runs.emplace_back(run, r.is_object() ? r.value("date", "") : "");
    }
    lines.emplace_back(line, run);
  }
  // The oldest date kept: `now` less keep_days, compared as text.
  std::string oldest;
  if (keep_days) {
    std::tm tm{};
    if (strptime(now.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) {
      const std::time_t t = timegm(&tm) - static_cast<std::time_t>(keep_days) * 86400;
      std::tm o{};
      gmtime_r(&t, &o);
      char b[32];
      std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &o);
      oldest = b;
    }
  }
  std::set<std::string> drop;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool too_many = keep_runs && i + keep_runs < runs.size();
    const bool too_old = !oldest.empty() && !runs[i].second.empty() && runs[i].second < oldest;
    if (too_many || too_old) drop.insert(runs[i].first);
  }
  if (!drop.empty()) {
    std::string out;
    for (const auto& [line, run] : lines)
      if (!drop.count(run)) {
        out.append(line);
        out += '\n';
      }
    bool ok = ::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0;
    for (std::size_t done = 0; ok && done < out.size();) {
      const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
      ok = n > 0;
      if (ok) done += static_cast<std::size_t>(n);
    }
    if (!ok) {
      ::flock(fd, LOCK_UN);
      ::close(fd);
      throw ReportError(fmt::format("{}: rewriting it failed", file.string()));
    }
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return drop.size();
}

}  // namespace rdmaconf::reports

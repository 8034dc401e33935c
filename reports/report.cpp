#include "reports/report.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "conformance/family.hpp"
#include "conformance/params.hpp"
#include "reports/compare.hpp"
#include "reports/json_input.hpp"
#include "reports/terminal.hpp"

namespace rdmaconf::reports {

using namespace conformance;

void Totals::add(const InputResult& in) {
  if (!in.error.empty()) ++input_errors;
  pass += in.verdicts.pass;
  fail += in.verdicts.fail;
  not_applicable += in.verdicts.not_applicable;
  inconclusive += in.verdicts.inconclusive;
}

Totals totals(const std::vector<InputResult>& inputs) {
  Totals t;
  for (const auto& in : inputs) t.add(in);
  return t;
}

namespace {

// XML text: markup characters as entities, control characters XML 1.0
// cannot carry as '?', bytes that are not UTF-8 as U+FFFD (the document
// says it is UTF-8), and so are U+FFFE and U+FFFF, UTF-8 that XML 1.0
// does not allow in a document (a file named with one made the JUnit
// report not well-formed).
std::string xml_escape(std::string_view s) {
  std::string o;
  utf8_runs(
      s,
      [&](std::string_view run) {
        for (std::size_t i = 0; i < run.size(); ++i) {
          const char c = run[i];
          if (c == '\xef' && i + 2 < run.size() && run[i + 1] == '\xbf' && (run[i + 2] == '\xbe' || run[i + 2] == '\xbf')) {
            o += "\xef\xbf\xbd";
            i += 2;
            continue;
          }
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
      },
      [&](unsigned char) { o += "\xef\xbf\xbd"; });
  return o;
}

std::string evidence_text(const Evidence& e) {
  std::string s;
  if (!e.frames.empty()) {
    s += "frame";
    if (e.frames.size() > 1) s += "s";
    for (std::size_t i = 0; i < e.frames.size(); ++i) s += fmt::format("{}{}", i ? "-" : " ", e.frames[i]);
  }
  // Each part after the first is set off by a comma (evidence of no frame starts with its side).
  if (e.stream_offset) s += fmt::format("{}stream offset {}", s.empty() ? "" : ", ", *e.stream_offset);
  if (!e.side.empty()) s += fmt::format("{}from {}", s.empty() ? "" : ", ", e.side);
  if (!e.expected.empty() || !e.actual.empty()) s += fmt::format("{}expected {}, got {}", s.empty() ? "" : ": ", e.expected, e.actual);
  if (!e.detail.empty()) s += fmt::format(" ({})", e.detail);
  if (e.caused_by)
    s += e.caused_by->frame ? fmt::format(" [consequence of {} at frame {}]", e.caused_by->case_id, e.caused_by->frame)
                            : fmt::format(" [consequence of {}]", e.caused_by->case_id);
  return s;
}

}  // namespace

namespace {

// A scope as JSON text, written directly: a large capture has millions of
// scopes, and building each as a nlohmann::json document first cost seven
// times the check itself (measured on 100 000 connections). The document
// form (to_json) parses this text, so the two cannot differ.
void put_number(std::string& out, std::uint64_t v) {
  char buf[24];
  out.append(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
}
// `"key":` and the number.
void put_field(std::string& out, std::string_view key_colon, std::uint64_t v) {
  out += key_colon;
  put_number(out, v);
}

void put_evidence(std::string& out, const Evidence& e) {
  out += "{\"frames\":[";
  for (std::size_t i = 0; i < e.frames.size(); ++i) {
    if (i) out += ',';
    put_number(out, e.frames[i]);
  }
  out += ']';
  if (e.stream_offset) {
    out += ",\"stream_offset\":";
    put_number(out, *e.stream_offset);
  }
  for (const auto& [key, value] : {std::pair{"side", &e.side}, std::pair{"expected", &e.expected},
                                   std::pair{"actual", &e.actual}, std::pair{"detail", &e.detail}})
    if (!value->empty()) {
      out += ",\"";
      out += key;
      out += "\":";
      put_json_string(out, *value);
    }
  if (e.caused_by) {
    out += ",\"caused_by\":{\"case\":";
    put_json_string(out, e.caused_by->case_id);
    put_field(out, ",\"frame\":", e.caused_by->frame);
    out += '}';
  }
  out += '}';
}

void put_scope(std::string& out, const ScopeResult& s) {
  // Room for the usual scope at once (a result without evidence takes some
  // 90 octets besides its case ID), not by repeated growth.
  std::size_t need = 512 + s.params.size();
  for (const auto& o : s.outcomes) need += 96 + o.info->id.size();
  if (out.capacity() - out.size() < need) out.reserve(std::max(out.size() + need, 2 * out.capacity()));
  out += "{\"id\":";
  put_json_string(out, s.id);
  out += ",\"family\":";
  put_json_string(out, s.family);
  out += ",\"label\":";
  put_json_string(out, s.label);
  put_field(out, ",\"frames\":[", s.first_frame);
  put_field(out, ",", s.last_frame);
  out += "],\"parameters\":";
  out += s.params;
  out += ",\"coverage\":[";
  for (std::size_t i = 0; i < s.coverage.size(); ++i) {
    const auto& c = s.coverage[i];
    out += i ? ",{\"side\":" : "{\"side\":";
    put_json_string(out, c.side);
    out += ",\"unit\":";
    put_json_string(out, c.unit);
    put_field(out, ",\"captured\":", c.captured);
    put_field(out, ",\"judged\":", c.judged);
    put_field(out, ",\"skipped\":", c.skipped());
    put_field(out, ",\"missing\":", c.missing);
    out += ",\"why\":[";
    for (std::size_t k = 0; k < c.why.size(); ++k) {
      if (k) out += ',';
      put_json_string(out, c.why[k]);
    }
    out += "]}";
  }
  out += "],\"results\":[";
  for (std::size_t i = 0; i < s.outcomes.size(); ++i) {
    const auto& o = s.outcomes[i];
    out += i ? ",{\"case\":" : "{\"case\":";
    put_json_string(out, o.info->id);
    out += ",\"verdict\":\"";
    out += verdict_name(o.tally.verdict());
    put_field(out, "\",\"checked\":", o.tally.checked());
    put_field(out, ",\"failed\":", o.tally.failed());
    put_field(out, ",\"inconclusive\":", o.tally.inconclusive_count());
    out += ",\"evidence\":[";
    for (std::size_t k = 0; k < o.tally.evidence().size(); ++k) {
      if (k) out += ',';
      put_evidence(out, o.tally.evidence()[k]);
    }
    out += "]}";
  }
  out += "]}";
}

std::string strings_array(const std::vector<std::string>& v) {
  std::string out = "[";
  for (const auto& e : v) {
    if (out.size() > 1) out += ',';
    put_json_string(out, e);
  }
  out += ']';
  return out;
}

// The report's other pieces, as JSON object text built without a document:
// every input writes a header, its stats and the summary, and as
// nlohmann::json documents they were most of what a small input cost
// (fuzz_capture on inputs of up to 24 octets: 15 us an input, 8 us without
// the documents, 5 us without the report). Params sorts the keys as
// nlohmann::json does, so the text is the one the documents wrote.
std::string case_text(const CaseInfo& c) {
  Params p;
  p.set_string("id", c.id)
      .set_string("family", c.family)
      .set_string("spec", c.spec)
      .set_string("section", c.section)
      .set_string("level", level_name(c.level))
      .set_string("requirement", c.requirement);
  // The ledger statements it judges (the families that have a ledger).
  std::vector<std::string> ids;
  for (const auto* e : statements_of(c)) ids.push_back(nlohmann::json(e->id).dump());
  if (!ids.empty()) p.set_json("statements", json_array(ids));
  return p.text();
}

std::string run_text(const RunInfo& run) {
  std::vector<std::string> catalog;
  catalog.reserve(run.cases.size());
  for (const auto* c : run.cases) catalog.push_back(case_text(*c));
  Params p;
  p.set_string("$schema", kSchemaId)
      .set("schema_version", kSchemaVersion)
      .set("tool", Params{}.set_string("name", "rdmaconf").set_string("version", run.tool_version))
      .set("options", Params{}
                          .set("strict", run.strict)
                          .set_json("cases", strings_array(run.case_patterns))
                          .set_json("arguments", strings_array(run.arguments)))
      .set_json("catalog", json_array(catalog));
  if (run.shard)
    p.set("shard", Params{}
                       .set("index", run.shard->index)
                       .set("count", run.shard->count)
                       .set("inputs_in_all_shards", run.inputs_in_all_shards));
  return p.text();
}

// Everything of an input but its path and scopes.
std::string input_text(const InputResult& in) {
  Params stats;
  stats.set("frames", in.stats.frames)
      .set("octets", in.stats.octets)
      .set("tcp_connections", in.stats.tcp_connections)
      .set("undecodable_frames", in.stats.undecodable_frames)
      .set("capture_anomalies", in.stats.capture_anomalies);
  for (const auto& c : in.stats.families) stats.set(c.key, c.value);
  Params p;
  p.set_string("sha256", in.sha256).set_string("linktype", in.linktype);
  if (!in.error.empty()) p.set_string("error", in.error);
  p.set("stats", stats).set_json("warnings", strings_array(in.warnings)).set("warnings_total", in.warnings_total);
  return p.text();
}

std::string summary_text(const Totals& t) {
  return Params{}
      .set("pass", t.pass)
      .set("fail", t.fail)
      .set("not_applicable", t.not_applicable)
      .set("inconclusive", t.inconclusive)
      .set("input_errors", t.input_errors)
      .text();
}

// An object's members as JSON text without the braces.
std::string_view members(std::string_view object) { return object.substr(1, object.size() - 2); }

class JsonWriter final : public ReportWriter {
 public:
  JsonWriter(std::ostream& os, const RunInfo& run) : os_(os) { os_ << '{' << members(run_text(run)) << ",\"inputs\":["; }
  void begin_input(const std::string& path) override {
    text_ += inputs_++ ? ",\n{\"path\":" : "\n{\"path\":";
    put_json_string(text_, path);
    text_ += ",\"scopes\":[";
    scopes_ = 0;
  }
  // Scopes are gathered into large writes (one system call a scope cost
  // more than writing the text).
  void scope(const ScopeResult& s) override {
    text_ += scopes_++ ? ",\n" : "\n";
    put_scope(text_, s);
    if (text_.size() >= kFlushAt) flush();
  }
  void end_input(const InputResult& in) override {
    text_ += "],\n";
    text_ += members(input_text(in));
    text_ += '}';
    flush();
  }
  void end(const Totals& t) override {
    text_ += "\n],\"summary\":";
    text_ += summary_text(t);
    text_ += "}\n";
    flush();
    os_.flush();
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  void flush() {
    os_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }
  std::ostream& os_;
  std::uint64_t inputs_ = 0, scopes_ = 0;
  std::string text_;
};

// A temporary file the XML of a part is written to until its counts are known.
class Spool {
 public:
  Spool() : f_(std::tmpfile()) {
    if (!f_) throw std::runtime_error("JUnit: cannot create a temporary file");
  }
  ~Spool() { std::fclose(f_); }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  std::FILE* get() const { return f_; }
  // Appends the contents to `to` and empties the spool.
  template <class Out>
  void drain(Out&& to) {
    std::rewind(f_);
    char buf[1 << 16];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) to(std::string_view(buf, n));
    std::fclose(f_);
    f_ = std::tmpfile();
    if (!f_) throw std::runtime_error("JUnit: cannot create a temporary file");
  }

 private:
  std::FILE* f_;
};

// What a JUnit reader shows as the name of an input's suite and the package
// part of its test cases.
std::string suite_name(const std::string& path, const std::string& base) {
  if (base.empty()) return path;
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return path;
  const auto rel = abs.lexically_relative(base);
  if (rel.empty() || rel == "." || *rel.begin() == "..") return path;
  return rel.generic_string();
}

std::string iso_utc(std::int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

class JunitWriter final : public ReportWriter {
 public:
  JunitWriter(std::ostream& os, const RunInfo& run)
      : os_(os), version_(run.tool_version), base_(run.base), inconclusive_fails_(run.junit_inconclusive_fails),
        host_(host_name()) {}
  void begin_input(const std::string& path) override {
    tests_ = fails_ = skipped_ = inconclusive_ = 0;
    suite_ = suite_name(path, base_);
    package_ = suite_;
    std::replace(package_.begin(), package_.end(), '.', '_');
  }
  void scope(const ScopeResult& s) override {
    for (const auto& o : s.outcomes) {
      const Verdict v = o.tally.verdict();
      const bool as_failure = v == Verdict::fail || (v == Verdict::inconclusive && inconclusive_fails_);
      ++tests_;
      fails_ += as_failure;
      skipped_ += !as_failure && v != Verdict::pass;
      inconclusive_ += v == Verdict::inconclusive;
      // kTimeMark stands for the case's time until the input's is known (end_input).
      fmt::print(cases_.get(), "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">",
                 xml_escape(fmt::format("{}.{}", package_, s.id)), xml_escape(o.info->id), kTimeMark);
      const std::string what = fmt::format("{} {} {}", o.info->spec, o.info->section, level_name(o.info->level));
      std::string body;
      for (const auto& e : o.tally.evidence()) body += evidence_text(e) + "\n";
      if (v == Verdict::fail) {
        fmt::print(cases_.get(), "<failure type=\"FAIL\" message=\"{}: {} of {} checks failed\">{}</failure>",
                   xml_escape(what), o.tally.failed(), o.tally.checked(), xml_escape(body));
      } else if (v == Verdict::inconclusive) {
        const std::string message = fmt::format("INCONCLUSIVE: {}: {} of {} checks could not be decided", what,
                                                o.tally.inconclusive_count(), o.tally.checked());
        fmt::print(cases_.get(), "<{} type=\"INCONCLUSIVE\" message=\"{}\"/>", as_failure ? "failure" : "skipped",
                   xml_escape(message));
        fmt::print(cases_.get(), "<system-out>{} ({} {})\n{}</system-out>", xml_escape(message), xml_escape(s.id),
                   xml_escape(s.label), xml_escape(body));
      } else if (v == Verdict::not_applicable) {
        fmt::print(cases_.get(), "<skipped type=\"NOT_APPLICABLE\" message=\"not applicable: {}\"/>", xml_escape(what));
      }
      if (v == Verdict::fail) fmt::print(cases_.get(), "<system-out>{} {}</system-out>", xml_escape(s.id), xml_escape(s.label));
      fmt::print(cases_.get(), "</testcase>\n");
    }
  }
  void end_input(const InputResult& in) override {
    const std::uint64_t tests = tests_ + !in.error.empty();
    seconds_ += in.seconds;
    fmt::print(suites_.get(),
               "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
               "timestamp=\"{}\" hostname=\"{}\">\n",
               xml_escape(suite_), tests, fails_, in.error.empty() ? 0 : 1, skipped_, in.seconds,
               iso_utc(in.started_unix_ms), xml_escape(host_));
    fmt::print(suites_.get(), "    <properties><property name=\"rdmaconf.path\" value=\"{}\"/>", xml_escape(in.path));
    if (!in.sha256.empty()) fmt::print(suites_.get(), "<property name=\"rdmaconf.sha256\" value=\"{}\"/>", in.sha256);
    fmt::print(suites_.get(), "<property name=\"rdmaconf.inconclusive\" value=\"{}\"/></properties>\n", inconclusive_);
    // The check is not timed case by case: each test case gets an equal share of its input's time.
    const std::string share = fmt::format("{:.6f}", tests ? in.seconds / static_cast<double>(tests) : 0.0);
    if (!in.error.empty())
      fmt::print(suites_.get(), "    <testcase classname=\"{}.input\" name=\"read\" time=\"{}\"><error message=\"{}\"/></testcase>\n",
                 xml_escape(package_), share, xml_escape(in.error));
    cases_.drain([&](std::string_view part) {
      for (std::size_t at = 0; at < part.size();) {
        const auto mark = part.find(kTimeMark, at);
        const auto upto = mark == std::string_view::npos ? part.size() : mark;
        std::fwrite(part.data() + at, 1, upto - at, suites_.get());
        if (mark != std::string_view::npos) std::fwrite(share.data(), 1, share.size(), suites_.get());
        at = upto + (mark != std::string_view::npos);
      }
    });
    fmt::print(suites_.get(), "  </testsuite>\n");
  }
  void end(const Totals& t) override {
    const std::uint64_t fails = t.fail + (inconclusive_fails_ ? t.inconclusive : 0);
    fmt::print(os_, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fmt::print(os_, "<testsuites name=\"rdmaconf {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
               xml_escape(version_), t.pass + t.fail + t.not_applicable + t.inconclusive + t.input_errors, fails,
               t.input_errors, seconds_);
    suites_.drain([&](std::string_view part) { os_ << part; });
    fmt::print(os_, "</testsuites>\n");
  }

 private:
  // xml_escape turns every control character but tab and newline into '?',
  // so this one appears in the spooled cases only where it was put.
  static constexpr char kTimeMark = '\x01';
  std::ostream& os_;
  std::string version_, base_;
  bool inconclusive_fails_;
  std::string host_, suite_, package_;
  Spool cases_, suites_;
  std::uint64_t tests_ = 0, fails_ = 0, skipped_ = 0, inconclusive_ = 0;
  double seconds_ = 0;
};

class SummaryWriter final : public ReportWriter {
 public:
  SummaryWriter(std::ostream& os, bool verbose) : os_(os), verbose_(verbose) {}
  void begin_input(const std::string& path) override { fmt::print(os_, "{}:\n", term_text(path)); }
  void scope(const ScopeResult& s) override {
    std::string text;
    render(s, text);
    write_text(text);
  }
  bool render(const ScopeResult& s, std::string& out) override {
    auto to = std::back_inserter(out);
    VerdictCounts n;
    for (const auto& o : s.outcomes) n.add(o.tally.verdict());
    fmt::format_to(to, "  {} {}: {} pass, {} fail, {} inconclusive, {} n/a\n", term_text(s.id), term_text(s.label), n.pass, n.fail, n.inconclusive,
                   n.not_applicable);
    for (const auto& c : s.coverage) {
      fmt::format_to(to, "    coverage, {}: {} {} captured, {} judged, {} skipped", term_text(c.side), c.captured, c.unit, c.judged,
                     c.skipped());
      if (c.missing) fmt::format_to(to, ", {} missing from the capture", c.missing);
      if (!c.why.empty()) fmt::format_to(to, " ({})", term_text(fmt::format("{}", fmt::join(c.why, "; "))));
      out += '\n';
    }
    if (!n.fail && !verbose_) return true;
    for (const auto& o : s.outcomes) {
      const Verdict v = o.tally.verdict();
      if (v == Verdict::fail || (verbose_ && v != Verdict::not_applicable)) {
        fmt::format_to(to, "    {:<13} {:<28} {} {} {}\n", verdict_name(v), o.info->id, o.info->spec, o.info->section,
                       level_name(o.info->level));
        for (const auto& e : o.tally.evidence()) fmt::format_to(to, "        {}\n", term_text(evidence_text(e)));
        if (o.tally.failed() > o.tally.evidence().size())
          fmt::format_to(to, "        ... {} failures in all, of {} checks\n", o.tally.failed(), o.tally.checked());
      }
    }
    return true;
  }
  void write_text(std::string_view text) override { os_.write(text.data(), static_cast<std::streamsize>(text.size())); }
  void end_input(const InputResult& in) override {
    fmt::print(os_, "  {} frames, {} TCP connections", in.stats.frames, in.stats.tcp_connections);
    for (const auto& c : in.stats.families) fmt::print(os_, ", {} {}", c.value, c.label);
    fmt::print(os_, "\n");
    if (!in.error.empty()) fmt::print(os_, "  error: {}\n", term_text(in.error));
    if (in.stats.undecodable_frames) fmt::print(os_, "  {} frame(s) could not be decoded\n", in.stats.undecodable_frames);
    if (in.stats.capture_anomalies)
      fmt::print(os_, "  {} frame(s) with capture anomalies (length or timestamp)\n", in.stats.capture_anomalies);
    if (in.warnings_total) fmt::print(os_, "  {} warning(s); first: {}\n", in.warnings_total, term_text(in.warnings.front()));
  }
  void end(const Totals& t) override {
    fmt::print(os_, "\n{:<16}{:>8}\n", "verdict", "count");
    fmt::print(os_, "{:<16}{:>8}\n{:<16}{:>8}\n{:<16}{:>8}\n{:<16}{:>8}\n", "PASS", t.pass, "FAIL", t.fail,
               "INCONCLUSIVE", t.inconclusive, "NOT_APPLICABLE", t.not_applicable);
    if (t.input_errors) fmt::print(os_, "{:<16}{:>8}\n", "input errors", t.input_errors);
  }

 private:
  std::ostream& os_;
  bool verbose_;
};

// One thread runs the writers; the check hands it events in batches (one
// handover per batch, not per scope), at most `limit` batches queued (memory
// stays bounded when the disk is slow).
class Background final : public ReportWriter {
 public:
  Background(std::vector<std::unique_ptr<ReportWriter>> writers, std::size_t limit)
      : writers_(std::move(writers)), limit_(std::max<std::size_t>(limit / kBatch, 2)), thread_([this] {
          pthread_setname_np(pthread_self(), "rdmaconf-report");  // (for top and perf)
          run();
        }) {}
  ~Background() override {
    if (thread_.joinable()) {
      add(Stop{}, true);
      thread_.join();
    }
  }
  void begin_input(const std::string& path) override { add(path, false); }
  void scope(const ScopeResult& s) override { add(s, false); }
  // A lone writer that renders its scopes does so here, on the caller's
  // thread; the scope stays with the caller.
  void take(ScopeResult&& s) override {
    if (writers_.size() == 1 && writers_.front()->render(s, text_)) {
      if (text_.size() >= kTextBatch) add(Rendered{std::exchange(text_, {})}, true);  // (the queue bounds its memory)
      return;
    }
    add(std::move(s), false);
  }
  void end_input(const InputResult& in) override {
    InputResult head = in;  // without scopes: they went one by one
    head.scopes.clear();
    add(std::move(head), true);
  }
  void end(const Totals& t) override {
    add(t, false);
    add(Stop{}, true);
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  static constexpr std::size_t kBatch = 64;
  static constexpr std::size_t kTextBatch = 1u << 16;
  struct Stop {};
  struct Rendered {
    std::string text;
  };
  using Event = std::variant<std::string, ScopeResult, InputResult, Totals, Stop, Rendered>;

  void add(Event e, bool hand_over) {
    if (!text_.empty() && !std::holds_alternative<Rendered>(e)) batch_.push_back(Rendered{std::exchange(text_, {})});
    batch_.push_back(std::move(e));
    if (!hand_over && batch_.size() < kBatch) return;
    std::vector<std::vector<Event>> spent;
    {
      std::unique_lock lock(mu_);
      room_.wait(lock, [&] { return queue_.size() < limit_; });
      queue_.push_back(std::move(batch_));
      spent.swap(spent_);
      ready_.notify_one();
    }
    // The written events are freed here, on the thread that allocated them:
    // freed on the writer's thread, each free went to this thread's malloc
    // arena under its lock, and the two threads contended for it.
    batch_.clear();
    if (!spent.empty()) {
      batch_ = std::move(spent.back());
      batch_.clear();
    }
  }
  void run() {
    for (;;) {
      std::vector<Event> events;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        events = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      bool stop = false;
      for (auto& e : events) {
        if (std::holds_alternative<Stop>(e)) {
          stop = true;
          break;
        }
        if (failure_) continue;  // (drain: the check must not block on a dead writer)
        try {
          for (auto& w : writers_) {
            if (auto* p = std::get_if<std::string>(&e)) w->begin_input(*p);
            else if (auto* sc = std::get_if<ScopeResult>(&e)) w->scope(*sc);
            else if (auto* in = std::get_if<InputResult>(&e)) w->end_input(*in);
            else if (auto* t = std::get_if<Totals>(&e)) w->end(*t);
            else if (auto* r = std::get_if<Rendered>(&e)) w->write_text(r->text);
          }
        } catch (...) {
          failure_ = std::current_exception();
        }
      }
      std::lock_guard lock(mu_);
      spent_.push_back(std::move(events));  // for the check's thread to free
      if (stop) return;
    }
  }

  std::vector<std::unique_ptr<ReportWriter>> writers_;
  std::size_t limit_;
  std::vector<Event> batch_;  // the check's side: not yet handed over
  std::string text_;          // the check's side: scopes rendered, not yet in batch_
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::vector<Event>> queue_;
  std::vector<std::vector<Event>> spent_;  // written, to be freed by the check's thread
  std::exception_ptr failure_;
  std::thread thread_;  // last: starts when the rest exists
};

}  // namespace

std::unique_ptr<ReportWriter> in_background(std::vector<std::unique_ptr<ReportWriter>> writers, std::size_t queue) {
  return std::make_unique<Background>(std::move(writers), queue);
}

std::unique_ptr<ReportWriter> json_writer(std::ostream& os, const RunInfo& run) { return std::make_unique<JsonWriter>(os, run); }
std::string run_base(const std::vector<std::string>& paths) {
  std::optional<std::filesystem::path> base;
  for (const auto& p : paths) {
    std::error_code ec;
    auto abs = std::filesystem::absolute(p, ec).lexically_normal();
    if (ec) continue;
    if (!std::filesystem::is_directory(abs, ec)) abs = abs.parent_path();
    if (!abs.has_filename() && abs != abs.root_path()) abs = abs.parent_path();  // "dir/" normalizes to "dir/"
    if (!base) {
      base = abs;
      continue;
    }
    std::filesystem::path shared;
    for (auto a = base->begin(), b = abs.begin(); a != base->end() && b != abs.end() && *a == *b; ++a, ++b) shared /= *a;
    base = shared;
  }
  return base ? base->string() : std::string();
}

std::unique_ptr<ReportWriter> junit_writer(std::ostream& os, const RunInfo& run) { return std::make_unique<JunitWriter>(os, run); }
std::unique_ptr<ReportWriter> summary_writer(std::ostream& os, bool verbose) {
  return std::make_unique<SummaryWriter>(os, verbose);
}

void replay(ReportWriter& w, const std::vector<InputResult>& inputs) {
  for (const auto& in : inputs) {
    w.begin_input(in.path);
    for (const auto& s : in.scopes) w.scope(s);
    w.end_input(in);
  }
  w.end(totals(inputs));
}

// The document is the streamed report parsed: the two forms cannot differ.
nlohmann::json to_json(const RunInfo& run, const std::vector<InputResult>& inputs) {
  std::ostringstream os;
  replay(*json_writer(os, run), inputs);
  return nlohmann::json::parse(std::move(os).str());
}

nlohmann::json case_json(const CaseInfo& c) { return nlohmann::json::parse(case_text(c)); }

void write_junit(std::ostream& os, const RunInfo& run, const std::vector<InputResult>& inputs) {
  replay(*junit_writer(os, run), inputs);
}

namespace {

// What a shard's report holds, by kind: its items, what names one, how many
// all shards share, and the counts its summary adds up.
struct ShardedKind {
  const char* items;
  const char* id;
  const char* total;
  std::vector<const char*> sums;
};
const ShardedKind kCheckShards{"inputs", "path", "inputs_in_all_shards", {"pass", "fail", "not_applicable", "inconclusive", "input_errors"}};
const ShardedKind kLabShards{"cells", "id", "cells_in_all_shards", {"cells", "green", "red", "skipped", "regressions", "flaky"}};

}  // namespace

nlohmann::json merge_shards(const std::vector<std::string>& reports) {
  if (reports.empty()) throw ReportError("no shard reports given");
  nlohmann::json out;
  const ShardedKind* kind = nullptr;
  std::map<std::uint64_t, std::string> shards;  // index -> the report that holds it
  std::map<std::string, std::string> owner;     // item -> the report that holds it
  std::uint64_t count = 0, all_items = 0;
  for (const auto& file : reports) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ReportError(fmt::format("{}: cannot open the report", file));
    const nlohmann::json doc = parse_input_json(in, file);
    if (doc.is_discarded() || !doc.is_object()) throw ReportError(fmt::format("{}: not a JSON report", file));
    const ShardedKind* k = doc.contains("inputs") ? &kCheckShards : doc.contains("cells") ? &kLabShards : nullptr;
    const auto shard = doc.find("shard");
    if (!k || shard == doc.end() || !shard->is_object())
      throw ReportError(fmt::format("{}: not a shard's report (no \"shard\": run check or lab run with --shard I/N)", file));
    const Shape sh{file};
    const auto index = sh.count_of(*shard, "/shard", "index"), n = sh.count_of(*shard, "/shard", "count"),
               total = sh.count_of(*shard, "/shard", k->total);
    if (!kind) {
      kind = k;
      count = n;
      all_items = total;
      out = doc;
      out.erase("shard");
      out[k->items] = nlohmann::json::array();
      for (const char* key : k->sums) out["summary"][key] = 0;
    } else if (k != kind || n != count || total != all_items) {
      throw ReportError(fmt::format("{}: shard {} of {} ({} {} in all) does not belong with {} ({} of {}, {})", file, index, n,
                                    total, k->items, shards.begin()->second, shards.begin()->first, count, all_items));
    }
    if (const auto [it, fresh] = shards.emplace(index, file); !fresh)
      throw ReportError(fmt::format("shard {} of {} appears twice: {} and {}", index, count, it->second, file));
    const auto& items = sh.array_of(doc, "", k->items);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& item = items[i];
      const std::string id = sh.text_of(item, fmt::format("/{}/{}", k->items, i), k->id);
      if (const auto [it, fresh] = owner.emplace(id, file); !fresh)
        throw ReportError(fmt::format("{} {} is in two shards' reports: {} and {}", k->id, id, it->second, file));
      out[k->items].push_back(item);
    }
    // A lab shard names the findings its cells showed: the merged report names them all.
    if (const auto& f = sh.object_of(doc, "", "findings"); !f.empty()) out["findings"].update(f);
    const auto& s = sh.object_of(doc, "", "summary");
    for (const char* key : k->sums) out["summary"][key] = out["summary"][key].get<std::uint64_t>() + sh.count_of(s, "/summary", key);
  }
  std::vector<std::string> missing;
  for (std::uint64_t i = 0; i < count; ++i)
    if (!shards.count(i)) missing.push_back(std::to_string(i));
  if (!missing.empty())
    throw ReportError(fmt::format("shard(s) {} of {} missing (given: {})", fmt::join(missing, ", "), count, shards.size()));
  if (owner.size() != all_items)
    throw ReportError(fmt::format("the shards hold {} {}, the run had {}", owner.size(), kind->items, all_items));
  return out;
}

void write_summary(std::ostream& os, const std::vector<InputResult>& inputs, bool verbose) {
  replay(*summary_writer(os, verbose), inputs);
}


std::string scope_json(const ScopeResult& s) {
  std::string out;
  put_scope(out, s);
  return out;
}

namespace {

// Reads the report's JSON back, every field checked: a wrong one is a
// ReportError that names it.
struct Reader {
  std::string where;
  const nlohmann::json& at(const nlohmann::json& j, const char* key, nlohmann::json::value_t type) const {
    const auto it = j.find(key);
    const bool number = type == nlohmann::json::value_t::number_unsigned;
    if (it == j.end() || (number ? !it->is_number_unsigned() : it->type() != type))
      throw ReportError(fmt::format("{}: {} is missing or not {}", where, key,
                                    number ? "a non-negative integer" : nlohmann::json(type).type_name()));
    return *it;
  }
  std::uint64_t number(const nlohmann::json& j, const char* key) const {
    return at(j, key, nlohmann::json::value_t::number_unsigned).get<std::uint64_t>();
  }
  std::string text(const nlohmann::json& j, const char* key, bool optional = false) const {
    if (optional && !j.contains(key)) return {};
    return at(j, key, nlohmann::json::value_t::string).get<std::string>();
  }
  const nlohmann::json& array(const nlohmann::json& j, const char* key) const { return at(j, key, nlohmann::json::value_t::array); }
};

Evidence evidence_from_json(const nlohmann::json& e, const Reader& r) {
  if (!e.is_object()) throw ReportError(fmt::format("{}: evidence that is not an object", r.where));
  Evidence ev;
  for (const auto& f : r.array(e, "frames")) {
    if (!f.is_number_unsigned()) throw ReportError(fmt::format("{}: evidence frames: not a frame number", r.where));
    ev.frames.push_back(f.get<std::uint64_t>());
  }
  if (e.contains("stream_offset")) ev.stream_offset = r.number(e, "stream_offset");
  ev.side = r.text(e, "side", true);
  ev.expected = r.text(e, "expected", true);
  ev.actual = r.text(e, "actual", true);
  ev.detail = r.text(e, "detail", true);
  if (e.contains("caused_by")) {
    const auto& c = r.at(e, "caused_by", nlohmann::json::value_t::object);
    ev.caused_by = Evidence::Cause{r.text(c, "case"), r.number(c, "frame")};
  }
  return ev;
}

}  // namespace

ScopeResult scope_from_json(const nlohmann::json& j, const std::vector<const CaseInfo*>& catalog) {
  Reader r{"scope"};
  if (!j.is_object()) throw ReportError("scope: not a JSON object");
  ScopeResult s;
  s.id = r.text(j, "id");
  r.where = fmt::format("scope {}", s.id);
  const std::string family = r.text(j, "family");
  s.label = r.text(j, "label");
  const auto& frames = r.array(j, "frames");
  if (frames.size() != 2 || !frames[0].is_number_unsigned() || !frames[1].is_number_unsigned())
    throw ReportError(fmt::format("{}: frames is not [first, last]", r.where));
  s.first_frame = frames[0].get<std::uint64_t>();
  s.last_frame = frames[1].get<std::uint64_t>();
  s.params = conformance::params_text(r.at(j, "parameters", nlohmann::json::value_t::object));
  for (const auto& c : r.array(j, "coverage")) {
    if (!c.is_object()) throw ReportError(fmt::format("{}: coverage that is not an object", r.where));
    Coverage cov;
    cov.side = r.text(c, "side");
    cov.unit = r.text(c, "unit");
    cov.captured = r.number(c, "captured");
    cov.judged = r.number(c, "judged");
    cov.missing = r.number(c, "missing");
    for (const auto& w : r.array(c, "why"))
      if (w.is_string()) cov.why.push_back(w.get<std::string>());
    s.coverage.push_back(std::move(cov));
  }
  for (const auto* c : catalog)
    if (c->family == family) s.family = c->family;
  if (s.family.empty()) throw ReportError(fmt::format("{}: no case of the catalog is of family {}", r.where, family));
  for (const auto& o : r.array(j, "results")) {
    if (!o.is_object()) throw ReportError(fmt::format("{}: a result that is not an object", r.where));
    const std::string id = r.text(o, "case");
    const auto c = std::find_if(catalog.begin(), catalog.end(), [&](const CaseInfo* x) { return x->id == id; });
    if (c == catalog.end()) throw ReportError(fmt::format("{}: case {} is not in the catalog", r.where, id));
    std::vector<Evidence> ev;
    for (const auto& e : r.array(o, "evidence")) ev.push_back(evidence_from_json(e, r));
    s.outcomes.push_back(
        {*c, conformance::Tally::restore(r.number(o, "checked"), r.number(o, "failed"), r.number(o, "inconclusive"), std::move(ev))});
  }
  return s;
}

}  // namespace rdmaconf::reports

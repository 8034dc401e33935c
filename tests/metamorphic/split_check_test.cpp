// A check whose TCP connections are spread over threads (CheckOptions::
// threads) must report exactly what one thread reports: the same scopes in
// the same order with the same numbers, verdicts, evidence, parameters and
// coverage, the same counts and warnings. One thread is the oracle here;
// the captures are the golden and lab captures one by one, and all of their
// Ethernet captures woven into one (connections overlapping in time, idle
// gaps, four-tuples that repeat), checked with and without an idle timeout
// and with a reassembly memory small enough that a thread's share of it runs
// out (the check must then start again on one thread and still agree).
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "captures/io/packet.hpp"
#include "conformance/checker.hpp"
#include "tests/metamorphic/capture_edit.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::test;

namespace {

// Everything a report could show of a scope, as text.
std::string text_of(const conformance::ScopeResult& s) {
  std::string t = fmt::format("{} {} {} {} [{},{}] {}\n", s.family, s.id, s.order, s.label, s.first_frame, s.last_frame, s.params);
  for (const auto& o : s.outcomes) {
    t += fmt::format("  {} {} {}/{}/{}", o.info->id, static_cast<int>(o.tally.verdict()), o.tally.checked(), o.tally.failed(),
                     o.tally.inconclusive_count());
    for (const auto& e : o.tally.evidence())
      t += fmt::format(" <{} {} {}|{}|{}|{}>", fmt::join(e.frames, ","), e.stream_offset.value_or(~0ull), e.side, e.expected,
                       e.actual, e.detail);
    t += "\n";
  }
  for (const auto& c : s.coverage)
    t += fmt::format("  {} {} {} {} {} {}\n", c.side, c.unit, c.captured, c.judged, c.missing, fmt::join(c.why, ";"));
  return t;
}

// Where two outcomes' texts part: the first line that differs, of each.
std::string first_difference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const std::size_t from = a.rfind('\n', i) == std::string::npos ? 0 : a.rfind('\n', i) + 1;
  const auto line = [&](const std::string& s) { return s.substr(from, s.find('\n', from) - from); };
  return fmt::format("\n  one thread: {}\n  split:      {}", line(a), line(b));
}

struct Outcome {
  std::string text;
  unsigned threads = 0;
  std::size_t scopes = 0;
};

// Checks `path` on `threads` threads, the scopes streamed (on_scope) or kept.
Outcome run(const std::string& path, unsigned threads, bool streamed, std::int64_t idle_us = 0,
            std::size_t reassembly = 256u << 20) {
  conformance::CheckOptions o;
  o.threads = threads;
  o.split_min_size = 0;
  o.reassembly.idle_timeout_us = idle_us;
  o.reassembly.max_total_bytes = reassembly;
  std::string scopes;
  std::size_t n = 0;
  if (streamed)
    o.on_scope = [&](const std::string&, conformance::ScopeResult&& s) {
      scopes += text_of(s);
      ++n;
    };
  const auto r = conformance::Checker(o).check_file(path);
  for (const auto& s : r.scopes) {
    scopes += text_of(s);
    ++n;
  }
  std::string t = fmt::format("{} {} {} err={} frames={} octets={} tcp={} undecodable={} anomalies={}\n", r.path, r.sha256,
                              r.linktype, r.error, r.stats.frames, r.stats.octets, r.stats.tcp_connections,
                              r.stats.undecodable_frames, r.stats.capture_anomalies);
  for (const auto& c : r.stats.families) t += fmt::format("{}={} ", c.key, c.value);
  t += fmt::format("\nverdicts {} {} {} {}\nwarnings {} {}\n", r.verdicts.pass, r.verdicts.fail, r.verdicts.not_applicable,
                   r.verdicts.inconclusive, r.warnings_total, fmt::join(r.warnings, "\n"));
  return {t + scopes, r.threads, n};
}

std::vector<fs::path> sample_captures() {
  std::vector<fs::path> v;
  for (const char* dir : {"captures/golden", "captures/lab"})
    for (const auto& e : fs::directory_iterator(fs::path(RDMACONF_SOURCE_DIR) / dir))
      if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-split-{}", getpid());
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(split_check)

BOOST_AUTO_TEST_CASE(each_capture_reports_the_same_on_several_threads) {
  std::size_t split = 0;
  for (const auto& p : sample_captures()) {
    for (bool streamed : {true, false}) {
      const Outcome one = run(p.string(), 1, streamed);
      for (unsigned n : {2u, 3u}) {
        const Outcome many = run(p.string(), n, streamed);
        BOOST_TEST(many.text == one.text, p.filename().string() << " on " << n << " threads" << first_difference(one.text, many.text));
        if (many.threads == n) ++split;
      }
    }
  }
  // Every Ethernet capture with TCP is split (not a check that did nothing).
  BOOST_TEST(split > 40u);
}

BOOST_AUTO_TEST_CASE(woven_captures_report_the_same_on_several_threads) {
  // Every Ethernet capture's frames in turn, one from each, each capture's
  // time moved so that they overlap; every 500th frame waits 40 s, so that
  // an idle timeout of 30 s closes connections in the middle.
  std::vector<Capture> all;
  for (const auto& p : sample_captures()) {
    Capture c = load(p.string());
    if (c.linktype == DLT_EN10MB && !c.frames.empty()) all.push_back(std::move(c));
  }
  BOOST_TEST_REQUIRE(all.size() > 20u);
  Capture woven;
  woven.linktype = DLT_EN10MB;
  std::int64_t t = 1700000000LL * 1000000;
  for (std::size_t i = 0, left = 1; left; ++i) {
    left = 0;
    for (const auto& c : all)
      if (i < c.frames.size()) {
        ++left;
        RawFrame f = c.frames[i];
        t += woven.frames.size() % 500 == 499 ? 40000000 : 100;
        f.sec = t / 1000000;
        f.usec = t % 1000000;
        woven.frames.push_back(std::move(f));
      }
  }
  TempDir tmp;
  const std::string path = (tmp.dir / "woven.pcap").string();
  save(path, woven);

  for (std::int64_t idle : {std::int64_t{0}, std::int64_t{30000000}}) {
    const Outcome one = run(path, 1, true, idle);
    BOOST_TEST(one.scopes > 60u);
    for (unsigned n : {2u, 3u, 4u}) {
      const Outcome many = run(path, n, true, idle);
      BOOST_TEST(many.threads == n);
      BOOST_TEST(many.text == one.text, "idle " << idle << " us, " << n << " threads" << first_difference(one.text, many.text));
    }
    const Outcome one_kept = run(path, 1, false, idle), kept = run(path, 2, false, idle);
    BOOST_TEST(kept.text == one_kept.text, "idle " << idle << " us, scopes kept" << first_difference(one_kept.text, kept.text));
  }

  // At the end, the capture with the most TCP payload once more, the
  // segments of its busiest direction in reverse order: all of them wait
  // for the first. With reassembly memory for all connections so small that
  // a thread's share runs out there, the split starts again on one thread
  // after it has handed on most scopes, and must hand none on twice.
  const auto payload = [](const Capture& c, std::size_t i, std::string* flow) {
    captures::io::Frame f;
    f.number = i + 1;
    f.data = {c.frames[i].data.data(), c.frames[i].data.size()};
    const auto d = captures::io::dissect(c.linktype, f);
    if (d.status != captures::io::DissectStatus::ok || d.pkt.protocol != 6) return std::size_t{0};
    if (flow) *flow = fmt::format("{}:{}", fmt::join(d.pkt.src, "."), d.pkt.sport);
    return d.pkt.payload.size();
  };
  const Capture* busiest = nullptr;
  std::size_t most = 0;
  for (const auto& c : all) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < c.frames.size(); ++i) n += payload(c, i, nullptr);
    if (n > most) {
      most = n;
      busiest = &c;
    }
  }
  Capture late = *busiest;
  std::string first_flow, flow;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < late.frames.size(); ++i)
    if (payload(late, i, &flow) && (first_flow.empty() || flow == first_flow)) {
      first_flow = flow;
      at.push_back(i);
    }
  BOOST_TEST_REQUIRE(at.size() > 4u);
  std::vector<RawFrame> moved;
  for (std::size_t i : at) moved.push_back(late.frames[i]);
  for (std::size_t k = 0; k < at.size(); ++k) late.frames[at[k]].data = moved[at.size() - 1 - k].data;
  Capture ooo = woven;
  for (RawFrame f : late.frames) {
    t += 100;
    f.sec = t / 1000000;
    f.usec = t % 1000000;
    ooo.frames.push_back(std::move(f));
  }
  const std::string ooo_path = (tmp.dir / "late-reordering.pcap").string();
  save(ooo_path, ooo);
  std::size_t again = 0;
  for (std::size_t budget : {most / 8, most / 4, most / 2, most, 2 * most}) {
    const Outcome one = run(ooo_path, 1, true, 0, budget);
    const Outcome many = run(ooo_path, 2, true, 0, budget);
    BOOST_TEST(many.text == one.text, "reassembly memory " << budget << first_difference(one.text, many.text));
    BOOST_TEST(many.scopes == one.scopes);
    if (many.threads == 1) ++again;
  }
  BOOST_TEST(again > 0u);  // the start again was tried
}

BOOST_AUTO_TEST_SUITE_END()

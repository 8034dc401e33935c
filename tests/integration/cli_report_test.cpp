// The command line: exit codes, messages for bad input, and every report it
// writes validated against the JSON Schema (python3-jsonschema, not our code)
// and the JUnit XML parsed by Python's XML parser.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::test;

namespace {

void validate(const fs::path& json, const fs::path& xml) {
  const auto v = run("/usr/bin/python3 -c \"import json,sys,jsonschema; "
                     "s=json.load(open('" + kSource + "/reports/schema/report-v1.schema.json')); "
                     "jsonschema.Draft202012Validator.check_schema(s); "
                     "jsonschema.validate(json.load(open('" + json.string() + "')), s, cls=jsonschema.Draft202012Validator); "
                     "import xml.etree.ElementTree as E; E.parse('" + xml.string() + "'); print('valid')\" 2>&1");
  BOOST_TEST(v.status == 0, v.out);
  BOOST_TEST(v.out.find("valid") != std::string::npos, v.out);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(reports_validate_against_the_schema) {
  const auto dir = temp_dir("schema");
  // Every golden capture, clean and faulty, plus strict mode and a selection.
  for (const std::string extra : {"", "--strict", "--cases 'iwarp.mpa.*,roce.icrc'"}) {
    const auto r = run(kBin + " check --quiet " + extra + " --json " + (dir / "r.json").string() + " --junit " +
                       (dir / "r.xml").string() + " " + kGolden + " 2>&1");
    BOOST_TEST(r.status == 1, r.out);  // the faulty goldens FAIL
    validate(dir / "r.json", dir / "r.xml");
  }
  fs::remove_all(dir);
}

// The JUnit report as CI servers read it (tests/reports/junit_check.py): it
// validates against tests/reports/junit.xsd, junitparser reads unique
// (classname, name) pairs, suites named relative to the folder given, and
// counts equal to the JSON report of the same run, with INCONCLUSIVE shown
// as skipped or, on request, as failure. The golden captures hold FAIL,
// INCONCLUSIVE and NOT_APPLICABLE results, so every mapping is exercised.
BOOST_AUTO_TEST_CASE(junit_identities_are_unique_and_counts_match_the_json) {
  const auto dir = temp_dir("junit");
  for (const std::string mode : {"skipped", "failure"}) {
    const auto json = (dir / "r.json").string(), xml = (dir / "r.xml").string();
    const auto r = run(kBin + " check --quiet --junit-inconclusive " + mode + " --json " + json + " --junit " + xml + " " +
                       kGolden + " 2>&1");
    BOOST_TEST(r.status == 1, r.out);
    const auto c = run("/usr/bin/python3 " + kSource + "/tests/reports/junit_check.py " + xml + " " + kSource +
                       "/tests/reports/junit.xsd " + json + " " + fs::canonical(kGolden).string() + " " + mode + " 2>&1");
    BOOST_TEST(c.status == 0, mode << ": " << c.out);
    BOOST_TEST(c.out.find("all (classname, name) pairs unique") != std::string::npos, c.out);
    // The same inputs checked from another folder get the same suite names.
    const auto xml2 = (dir / "r2.xml").string();
    BOOST_TEST_REQUIRE(run("cd " + kGolden + "/.. && " + kBin + " check --quiet --junit-inconclusive " + mode + " --junit " +
                           xml2 + " " + fs::path(kGolden).filename().string() + " >/dev/null 2>&1").status == 1);
    const auto names = [](const std::string& f) {
      std::string out;
      std::istringstream in(slurp(f));
      for (std::string line; std::getline(in, line);)
        if (const auto at = line.find("<testsuite name=\""); at != std::string::npos) out += line.substr(at, line.find('"', at + 18) - at) + "\n";
      return out;
    };
    BOOST_TEST(names(xml) == names(xml2));
    BOOST_TEST(names(xml).find(kGolden) == std::string::npos);
  }
  fs::remove_all(dir);
}

// A capture named with U+FFFE and U+FFFF (UTF-8, but no XML character)
// still gives a JUnit report that an XML parser we did not write accepts.
BOOST_AUTO_TEST_CASE(junit_is_well_formed_for_noncharacters_in_names) {
  const auto dir = temp_dir("junit-nonchar");
  const auto pcap = dir / "a\xef\xbf\xbe-b\xef\xbf\xbf.pcap";
  fs::copy_file(kGolden + "/iwarp-fault-pad.pcap", pcap);
  const auto xml = (dir / "r.xml").string();
  const auto r = run(kBin + " check --quiet --junit " + xml + " '" + pcap.string() + "' 2>&1");
  BOOST_TEST_REQUIRE(r.status == 1, r.out);
  const auto p = run("/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1]); print(\"well-formed\")' " + xml + " 2>&1");
  BOOST_TEST(p.status == 0, p.out);
  BOOST_TEST(p.out.find("well-formed") != std::string::npos, p.out);
  fs::remove_all(dir);
}

// The JSON report's SHA-256 (read in 1 MiB chunks through a 4-slot ring,
// hashed on a second thread) equals coreutils' sha256sum: for a small golden,
// for a capture long enough to reuse every ring slot, and for a capture cut
// mid-record, where the decoder stops early and the rest must still be hashed.
// The checker's memory follows a budget, not the open state: a million RoCE
// conversations open at once, and a million half-open TCP connections, each
// check within 256 MB peak, without a FAIL, warning that the bound was
// reached. (Not in a sanitizer build, whose own memory is another matter.)
BOOST_AUTO_TEST_CASE(a_million_open_conversations_check_within_256_mb) {
#ifdef RDMACONF_SANITIZED
  if (RDMACONF_SANITIZED) return;
#endif
  const auto dir = temp_dir("open-state");
  for (const std::string kind : {"roce-open", "syns"}) {
    const auto cap = (dir / (kind + ".pcap")).string();
    BOOST_TEST_REQUIRE(run(fmt::format("{} --bench-{} {} 1000000", kGen, kind, cap)).status == 0);
    const auto r = run(fmt::format("/usr/bin/time -f 'peak %M KiB' {} check --jobs 1 {} 2>&1 | tail -8", kBin, cap));
    const auto at = r.out.find("peak ");
    BOOST_TEST_REQUIRE(at != std::string::npos, r.out);
    const long kib = std::stol(r.out.substr(at + 5));
    BOOST_TEST(kib < 256 * 1000, kind << ": " << kib << " KiB peak");
    BOOST_TEST(r.out.find("FAIL                   0") != std::string::npos, kind << ": " << r.out);
    BOOST_TEST(r.out.find("share of --state-memory") != std::string::npos, kind << ": " << r.out);
    std::filesystem::remove(cap);
  }
  std::filesystem::remove_all(dir);
}

// `report html` reads a check report as a stream and draws within budgets
// (reports/dashboard.cpp): on a report of about 300 MB (24 000 inputs, 2.4
// million results, a FAIL in every seventh, each with evidence) its peak
// memory stays under 400 MB, the page stays under 40 MB, and the page says
// what it left out: every FAIL counted, the inputs with a FAIL drawn before
// those without. Before, the page's memory was 14 times the report's. (Not
// in a sanitizer build.)
BOOST_AUTO_TEST_CASE(report_html_of_a_large_report_stays_in_budget) {
#ifdef RDMACONF_SANITIZED
  if (RDMACONF_SANITIZED) return;
#endif
  const auto dir = temp_dir("html-budget");
  const auto report = dir / "big.json";
  constexpr int kInputs = 24'000, kScopes = 10, kResults = 10;
  std::uint64_t fails = 0, results = 0;
  {
    std::ofstream out(report, std::ios::binary);
    out << R"({"tool": {"name": "rdmaconf", "version": "test"}, "catalog": [], "inputs": [)";
    std::string buf;
    for (int i = 0; i < kInputs; ++i) {
      buf.clear();
      // Inputs 0..9999 are clean; later ones have a FAIL in every seventh result.
      fmt::format_to(std::back_inserter(buf), R"({}{{"path": "/captures/run/c{:05}.pcap", "sha256": "", "scopes": [)", i ? "," : "", i);
      for (int s = 0; s < kScopes; ++s) {
        fmt::format_to(std::back_inserter(buf), R"({}{{"id": "s{}", "label": "conn {}", "results": [)", s ? "," : "", s, s);
        for (int r = 0; r < kResults; ++r) {
          const bool fail = i >= 10'000 && (s * kResults + r) % 7 == 0;
          fails += fail;
          ++results;
          fmt::format_to(std::back_inserter(buf),
                         R"({}{{"case": "iwarp.ddp.case{}", "verdict": "{}", "checked": 3, "failed": {}, "inconclusive": 0, "evidence": [{}]}})",
                         r ? "," : "", r, fail ? "FAIL" : "PASS", fail ? 1 : 0,
                         fail ? R"({"frames": [12, 13], "stream_offset": 4096, "side": "initiator 192.0.2.1:40001", "expected": "a tagged buffer this STag names", "actual": "STag 0x1234 unknown", "detail": "placed nowhere"},{"frames": [14], "expected": "x", "actual": "y"})"
                              : "");
        }
        buf += "]}";
      }
      buf += "]}";
      out << buf;
    }
    out << fmt::format(R"(], "summary": {{"pass": {}, "fail": {}, "not_applicable": 0, "inconclusive": 0, "input_errors": 0}}}})", results - fails, fails);
  }
  const auto size_mb = fs::file_size(report) >> 20;
  BOOST_TEST_REQUIRE(size_mb > 250, size_mb << " MB");
  const auto page = dir / "big.html";
  const auto r = run(fmt::format("/usr/bin/time -f 'peak %M KiB' {} report html {} -o {} 2>&1", kBin, report.string(), page.string()));
  const auto at = r.out.find("peak ");
  BOOST_TEST_REQUIRE(at != std::string::npos, r.out);
  const long kib = std::stol(r.out.substr(at + 5));
  BOOST_TEST(kib < 400 * 1024, kib << " KiB peak for a report of " << size_mb << " MB");
  BOOST_TEST(fs::file_size(page) < (40u << 20), fs::file_size(page));
  const std::string html = slurp(page);
  const auto open = html.find(R"(<script type="application/json" id="data">)"), end = html.find("</script>", open);
  BOOST_TEST_REQUIRE((open != std::string::npos && end != std::string::npos));
  const auto data_at = open + std::string(R"(<script type="application/json" id="data">)").size();
  const auto m = nlohmann::json::parse(html.substr(data_at, end - data_at));
  const auto& left = m["inputs_left_out"];
  const auto drawn = m["inputs"].size();
  BOOST_TEST(drawn + left["inputs"].get<std::uint64_t>() == static_cast<std::uint64_t>(kInputs));
  BOOST_TEST(drawn <= left["budget"]["inputs"].get<std::uint64_t>());
  BOOST_TEST(m["summary"]["check"]["inputs"] == kInputs);
  // Every input drawn has a FAIL (there are more of those than rows), and every FAIL is drawn or counted.
  std::uint64_t drawn_fails = 0, shown = 0, counted = 0;
  for (const auto& x : m["inputs"]) {
    std::uint64_t f = 0;
    for (const auto& [id, n] : x["res"].items()) f += n[1].get<std::uint64_t>();
    BOOST_TEST(f > 0, x["key"]);
    drawn_fails += f;
    shown += x["problems"].size();
    counted += x["problems_left_out"].get<std::uint64_t>();
  }
  BOOST_TEST(drawn_fails + left["fail"].get<std::uint64_t>() == fails);
  BOOST_TEST(shown <= left["budget"]["problems"].get<std::uint64_t>());
  BOOST_TEST(shown + counted == drawn_fails);
  BOOST_TEST(m["inputs"][0]["key"] == "c10000.pcap");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(report_sha256_matches_sha256sum) {
  const auto dir = temp_dir("sha");
  const auto big = dir / "big.pcap", cut = dir / "cut.pcap";
  BOOST_REQUIRE(run(kGen + " --bench " + big.string() + " 9").status == 0);
  BOOST_REQUIRE(run("head -c 3000001 " + big.string() + " > " + cut.string()).status == 0);
  for (const auto& f : {fs::path(kGolden) / "iwarp-rev2-crc.pcap", big, cut}) {
    const auto json = dir / "r.json";
    const auto r = run(kBin + " check --quiet --json " + json.string() + " " + f.string() + " 2>&1");
    BOOST_TEST(r.status <= 2, r.out);
    const auto report = nlohmann::json::parse(slurp(json));
    const auto sum = run("sha256sum " + f.string());
    BOOST_TEST(report["inputs"][0]["sha256"].get<std::string>() == sum.out.substr(0, 64), f);
  }
  fs::remove_all(dir);
}

// An input hashed once per content (captures/io/hash_cache.hpp): the second
// run of an unchanged file takes the cache's hash and does not hash it (a
// planted entry shows which was used); a file written again, even with the
// same octets, is hashed afresh; --no-hash-cache and RDMACONF_HASH_CACHE=off
// leave the cache alone. sha256sum is the judge of every true hash.
BOOST_AUTO_TEST_CASE(an_unchanged_input_is_hashed_once) {
  const auto dir = temp_dir("hashcache");
  const auto cache = dir / "cache", f = dir / "a.pcap", json = dir / "r.json";
  fs::copy_file(fs::path(kGolden) / "iwarp-rev2-crc.pcap", f);
  const std::string truth = run("sha256sum " + f.string()).out.substr(0, 64);
  auto check = [&](const std::string& env, const std::string& extra = "") {
    fs::remove(json);
    const auto r = run(env + " " + kBin + " check --quiet --json " + json.string() + " " + extra + " " + f.string() + " 2>&1");
    BOOST_REQUIRE_MESSAGE(r.status <= 1, r.out);
    return nlohmann::json::parse(slurp(json))["inputs"][0]["sha256"].get<std::string>();
  };
  const std::string env = "RDMACONF_HASH_CACHE=" + cache.string();
  auto entries = [&] {
    std::vector<fs::path> v;
    if (fs::exists(cache))
      for (const auto& e : fs::directory_iterator(cache)) v.push_back(e.path());
    return v;
  };
  BOOST_TEST(check(env) == truth);
  BOOST_REQUIRE_EQUAL(entries().size(), 1u);
  const auto entry = entries()[0];
  BOOST_TEST(slurp(entry).find(truth) != std::string::npos);
  auto plant = [&] {
    std::string text = slurp(entry);
    text.replace(text.find(truth), 64, std::string(64, 'a'));
    std::ofstream(entry) << text;
  };
  plant();
  BOOST_TEST(check(env) == std::string(64, 'a'));  // taken from the cache: the file was not hashed
  BOOST_TEST(check(env, "--no-hash-cache") == truth);
  BOOST_TEST(check("RDMACONF_HASH_CACHE=off") == truth);
  BOOST_TEST(check(env) == std::string(64, 'a'));  // neither of those touched the entry
  // The same octets written again: a new change time, so hashed afresh, and the entry replaced.
  fs::copy_file(fs::path(kGolden) / "iwarp-rev2-crc.pcap", f, fs::copy_options::overwrite_existing);
  BOOST_TEST(check(env) == truth);
  BOOST_TEST(slurp(entry).find(truth) != std::string::npos);
  // Other octets in the same file: its own hash.
  std::ofstream(f, std::ios::app) << std::string(16, '\0');
  const std::string grown = run("sha256sum " + f.string()).out.substr(0, 64);
  BOOST_TEST(grown != truth);
  fs::remove(json);
  run(env + " " + kBin + " check --quiet --json " + json.string() + " " + f.string());
  BOOST_TEST(nlohmann::json::parse(slurp(json))["inputs"][0]["sha256"].get<std::string>() == grown);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(exit_codes_and_messages) {
  const auto dir = temp_dir("exit");
  auto r = run(kBin + " check " + kGolden + "/roce-v4.pcap 2>&1");
  BOOST_TEST(r.status == 0, r.out);
  BOOST_TEST(r.out.find("PASS") != std::string::npos);
  r = run(kBin + " check " + kGolden + "/iwarp-fault-crc.pcap 2>&1");
  BOOST_TEST(r.status == 1, r.out);
  BOOST_TEST(r.out.find("iwarp.mpa.fpdu.crc") != std::string::npos);
  r = run(kBin + " check /nonexistent.pcap 2>&1");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("/nonexistent.pcap") != std::string::npos, r.out);
  r = run(kBin + " check --bogus x 2>&1");
  BOOST_TEST(r.status == 2);
  r = run(kBin + " check --cases 'nomatch.*' " + kGolden + " 2>&1");
  BOOST_TEST(r.status == 2);
  // Not a capture at all: named, non-zero, no crash.
  const auto junk = dir / "junk.pcap";
  std::ofstream(junk) << "this is not a capture file at all";
  r = run(kBin + " check " + junk.string() + " 2>&1");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.out.find("junk.pcap") != std::string::npos, r.out);
  // A capture cut in the middle of a record: what was read is reported, the error names the frame.
  const auto whole = slurp(fs::path(kGolden) / "iwarp-rev2-crc.pcap");
  const auto cut = dir / "cut.pcap";
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() - 30);
  r = run(kBin + " check --json " + (dir / "c.json").string() + " " + cut.string() + " 2>&1");
  BOOST_TEST(r.status == 2, r.out);
  // capinfos (Wireshark) counts the records of the whole file; the last one is cut.
  const int records = std::stoi(run("capinfos -M -c -T -r " + (fs::path(kGolden) / "iwarp-rev2-crc.pcap").string() + " | cut -f2").out);
  BOOST_TEST(r.out.find(fmt::format("frame {}", records)) != std::string::npos, r.out);
  const auto j = nlohmann::json::parse(slurp(dir / "c.json"));
  BOOST_TEST(j["inputs"][0]["stats"]["frames"].get<int>() == records - 1);
  BOOST_TEST(j["inputs"][0].contains("error"));
  // pcapng and Linux cooked v2 read the same as pcap/Ethernet.
  r = run("editcap -F pcapng " + kGolden + "/iwarp-fault-crc.pcap " + (dir / "x.pcapng").string() + " 2>&1 && " + kBin +
          " check " + (dir / "x.pcapng").string() + " 2>&1");
  BOOST_TEST(r.status == 1, r.out);
  BOOST_TEST(r.out.find("iwarp.mpa.fpdu.crc") != std::string::npos, r.out);
  r = run("editcap -T linux-sll2 " + kGolden + "/roce-fault-tver.pcap " + (dir / "sll2.pcap").string() + " 2>&1; " +
          kBin + " check " + (dir / "sll2.pcap").string() + " 2>&1");
  // editcap cannot re-encapsulate Ethernet as SLL2; the unit tests cover SLL2 frames directly.
  (void)r;
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(cases_lists_the_catalog) {
  auto r = run(kBin + " cases --json");
  BOOST_TEST_REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  BOOST_TEST(j.size() >= 13u);
  for (const auto& c : j) {
    BOOST_TEST(!c["requirement"].get<std::string>().empty());
    BOOST_TEST((c["level"] == "MUST" || c["level"] == "SHOULD" || c["level"] == "MAY"));
  }
}

// `rdmaconf report`: diff exits 1 on a regression and names it, 0 when the
// new report is no worse; the summary marks regressions; history appends one
// record per item; a report that is no JSON is refused with its name. The
// baseline is a real check of the golden captures; the new report is that
// one with two results made worse and one input gone (edited by Python's
// json module, not our writer).
BOOST_AUTO_TEST_CASE(report_diff_summary_and_history) {
  const auto dir = temp_dir("report-diff");
  const auto base = (dir / "base.json").string(), worse = (dir / "worse.json").string();
  BOOST_TEST(run(kBin + " check --quiet --json " + base + " " + kGolden + " 2>&1").status == 1);
  const auto edit = run("/usr/bin/python3 -c \"import json; d=json.load(open('" + base + "')); n=0\n"
                        "for s in d['inputs'][0]['scopes']:\n"
                        "  for r in s['results']:\n"
                        "    if r['verdict']=='PASS' and n<2: r['verdict']=['FAIL','INCONCLUSIVE'][n]; n+=1; print(s['id'], r['case'])\n"
                        "d['inputs'].pop(); json.dump(d, open('" + worse + "','w'))\" 2>&1");
  BOOST_TEST_REQUIRE(edit.status == 0, edit.out);
  const auto d = run(kBin + " report diff " + base + " " + worse + " 2>&1");
  BOOST_TEST(d.status == 1, d.out);
  BOOST_TEST(d.out.find("2 regression(s)") != std::string::npos, d.out);
  // The two items the edit printed are the regressions.
  std::istringstream changed(edit.out);
  for (std::string scope, test_case; changed >> scope >> test_case;)
    BOOST_TEST(d.out.find(" " + scope + " " + test_case + ": PASS -> ") != std::string::npos, scope << " " << test_case << "\n" << d.out);
  BOOST_TEST(d.out.find("gone ") != std::string::npos, d.out);
  const auto back = run(kBin + " report diff " + worse + " " + base + " 2>&1");
  BOOST_TEST(back.status == 0, back.out);
  BOOST_TEST(back.out.find("2 improvement(s)") != std::string::npos, back.out);
  const auto md = run(kBin + " report summary " + worse + " --baseline " + base + " 2>&1");
  BOOST_TEST(md.status == 0, md.out);
  BOOST_TEST(md.out.find("**2 regression(s) against the baseline.**") != std::string::npos, md.out);
  BOOST_TEST(md.out.find("| PASS | ") != std::string::npos, md.out);
  for (int i = 0; i < 2; ++i) {
    const auto h = run(kBin + " report history --dir " + (dir / "hist").string() + " --run-id night" + std::to_string(i) +
                       " --commit abc " + base + " 2>&1");
    BOOST_TEST(h.status == 0, h.out);
  }
  const auto lines = run("wc -l < " + (dir / "hist" / "history.jsonl").string());
  const auto records = run("/usr/bin/python3 -c \"import json; d=json.load(open('" + base + "'));"
                           " print(sum(len(s['results']) for i in d['inputs'] for s in i['scopes']))\"");
  BOOST_TEST(std::stoul(lines.out) == 2 * std::stoul(records.out), lines.out << " lines, " << records.out << " results");
  BOOST_TEST(slurp(dir / "hist" / "history.jsonl").find("\"run\":\"night1\"") != std::string::npos);
  const auto schema = run(kSource + "/tools/validate-schema history-record " + (dir / "hist" / "history.jsonl").string() + " 2>&1");
  BOOST_TEST(schema.status == 0, schema.out);
  // Pruning: by count (the run just appended is kept with the one before), then by age (a run dated 2020 goes).
  const auto runs_in = [&] {
    const auto r = run("/usr/bin/python3 -c \"import json; print(sorted({json.loads(l)['run'] for l in open('" +
                       (dir / "hist" / "history.jsonl").string() + "') if l.strip()}))\"");
    return r.out;
  };
  const auto k = run(kBin + " report history --dir " + (dir / "hist").string() + " --run-id night2 --keep-runs 2 " + base + " 2>&1");
  BOOST_TEST(k.status == 0, k.out);
  BOOST_TEST(k.out.find("1 older run(s) pruned") != std::string::npos, k.out);
  BOOST_TEST(runs_in() == "['night1', 'night2']\n");
  std::ofstream(dir / "hist" / "history.jsonl", std::ios::app)
      << R"({"run":"ancient","date":"2020-01-01T00:00:00Z","tool_version":"0","commit":"","item":"x","verdict":"PASS"})" << "\n";
  const auto a = run(kBin + " report history --dir " + (dir / "hist").string() + " --run-id night3 --keep-days 30 " + base + " 2>&1");
  BOOST_TEST(a.status == 0, a.out);
  BOOST_TEST(runs_in() == "['night1', 'night2', 'night3']\n", a.out);
  std::ofstream(dir / "junk.json") << "{\"inputs\": [";
  const auto bad = run(kBin + " report diff " + (dir / "junk.json").string() + " " + base + " 2>&1");
  BOOST_TEST(bad.status == 2, bad.out);
  BOOST_TEST(bad.out.find("junk.json: not JSON") != std::string::npos, bad.out);
  fs::remove_all(dir);
}

// Reports handed to diff, summary, history and merge from elsewhere (edited
// by hand, another tool's): a field of another type, or a verdict the tool
// never writes, is status 2 naming the file and the field's JSON path, and
// counts as nothing. The published schemas (python3-jsonschema) refuse the
// same documents, so the two readings of the format agree.
BOOST_AUTO_TEST_CASE(report_commands_name_the_bad_field) {
  const auto dir = temp_dir("report-fields");
  const auto good = (dir / "good.json").string();
  BOOST_TEST_REQUIRE(run(kBin + " check --quiet --json " + good + " " + kGolden + "/iwarp-fault-pad.pcap 2>&1").status == 1);
  // The first result's verdict replaced, and the shard of a sharded run given as a string.
  const auto edited = [&](const std::string& name, const std::string& python) {
    const auto file = (dir / name).string();
    const auto e = run("/usr/bin/python3 -c \"import json; d=json.load(open('" + good + "')); " + python + "; json.dump(d, open('" +
                       file + "','w'))\" 2>&1");
    BOOST_TEST_REQUIRE(e.status == 0, e.out);
    return file;
  };
  const auto number = edited("number.json", "d['inputs'][0]['scopes'][0]['results'][0]['verdict']=5");
  const auto maybe = edited("maybe.json", "d['inputs'][0]['scopes'][0]['results'][0]['verdict']='MAYBE'");
  const auto no_case = edited("nocase.json", "d['inputs'][0]['scopes'][0]['results'][0].pop('case')");
  const auto scope = edited("scope.json", "d['inputs'][0]['scopes'][0]=[]");
  const auto result_at = "/inputs/0/scopes/0/results/0";
  const std::vector<std::pair<std::string, std::string>> bad{
      {number, fmt::format("{}/verdict: expected a string, got a number", result_at)},
      {maybe, fmt::format("{}/verdict: expected one of PASS, FAIL, INCONCLUSIVE, NOT_APPLICABLE, got \"MAYBE\"", result_at)},
      {no_case, fmt::format("{}/case: missing", result_at)},
      {scope, "/inputs/0/scopes/0: expected an object, got an array"}};
  for (const auto& [file, says] : bad) {
    for (const std::string& cmd : {"diff " + good + " " + file, "diff " + file + " " + good, "summary " + file,
                                   "summary " + good + " --baseline " + file,
                                   "history --dir " + (dir / "hist").string() + " --run-id r " + file}) {
      const auto r = run(kBin + " report " + cmd + " 2>&1");
      BOOST_TEST(r.status == 2, cmd << ": " << r.out);
      BOOST_TEST(r.out.find(file + ": " + says) != std::string::npos, cmd << ": " << r.out);
    }
    const auto schema = run(kSource + "/tools/validate-schema report " + file + " 2>&1");
    BOOST_TEST(schema.status == 1, file << ": " << schema.out);
  }
  BOOST_TEST(!fs::exists(dir / "hist" / "history.jsonl"));  // nothing appended from a bad report
  // A lab report: a cell's verdict of another kind, and a cell that is no object.
  const auto lab = [&](const std::string& name, const std::string& cells) {
    std::ofstream(dir / name) << R"({"lab": {}, "summary": {"cells": 1}, "cells": [)" << cells << "]}";
    return (dir / name).string();
  };
  const auto blue = lab("blue.json", R"({"id": "siw.a", "verdict": "blue"})");
  const auto five = lab("five.json", "5");
  const auto green = lab("green.json", R"({"id": "siw.a", "verdict": "green"})");
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {blue, "/cells/0/verdict: expected one of green, red, skipped, got \"blue\""}, {five, "/cells/0: expected an object, got a number"}}) {
    const auto r = run(kBin + " report diff " + green + " " + file + " 2>&1");
    BOOST_TEST(r.status == 2, r.out);
    BOOST_TEST(r.out.find(file + ": " + says) != std::string::npos, r.out);
    const auto schema = run(kSource + "/tools/validate-schema lab-report " + file + " 2>&1");
    BOOST_TEST(schema.status == 1, file << ": " << schema.out);
  }
  BOOST_TEST(run(kSource + "/tools/validate-schema lab-report " + green + " 2>&1").status == 0);
  // A shard's index given as a string.
  const auto s0 = (dir / "s0.json").string(), s1 = (dir / "s1.json").string();
  for (int i = 0; i < 2; ++i)
    BOOST_TEST_REQUIRE(run(fmt::format("{} check --quiet --shard {}/2 --json {} {} >/dev/null 2>&1", kBin, i, i ? s1 : s0, kGolden)).status <= 1);
  const auto text_index = edited("s0-text.json", "d=json.load(open('" + s0 + "')); d['shard']['index']='0'");
  const auto m = run(kBin + " report merge -o " + (dir / "m.json").string() + " " + text_index + " " + s1 + " 2>&1");
  BOOST_TEST(m.status == 2, m.out);
  BOOST_TEST(m.out.find(text_index + ": /shard/index: expected a non-negative integer, got a string") != std::string::npos, m.out);
  BOOST_TEST(run(kSource + "/tools/validate-schema report " + text_index + " 2>&1").status == 1);
  fs::remove_all(dir);
}

// An append the disk cannot hold (here: a file size limit, as `ulimit -f`
// sets, which fails the write part way as a full disk does) is cut back off,
// so the history is as it was; and a record cut short some other way (a
// crash, a hand edit) is named and skipped by `report html --history`, not
// fatal for every later page.
BOOST_AUTO_TEST_CASE(history_survives_a_full_disk_and_a_cut_record) {
  const auto dir = temp_dir("history-full");
  const std::string report = (dir / "r.json").string();
  const fs::path hist = dir / "hist", file = hist / "history.jsonl";
  BOOST_TEST_REQUIRE(run(kBin + " check --quiet --json " + report + " " + kGolden + " >/dev/null 2>&1").status == 1);
  const auto first = run(kBin + " report history --dir " + hist.string() + " --run-id night0 " + report + " 2>&1");
  BOOST_TEST_REQUIRE(first.status == 0, first.out);
  const auto size = fs::file_size(file);
  // Room for a few more kilobytes: the second run's records are cut part way.
  const auto blocks = size / 512 + 8;
  const auto full = run(fmt::format("trap '' XFSZ; ulimit -f {}; {} report history --dir {} --run-id night1 {} 2>&1", blocks, kBin,
                                    hist.string(), report));
  BOOST_TEST(full.status == 2, full.out);
  BOOST_TEST(full.out.find("write failed after") != std::string::npos, full.out);
  BOOST_TEST(full.out.find("cut back to what it held before") != std::string::npos, full.out);
  BOOST_TEST(fs::file_size(file) == size);
  // A record cut short, then a good run after it: the page is drawn, and the cut line named.
  std::ofstream(file, std::ios::app) << R"({"run":"night1","date":"2026-01-01T00:00:00Z","item":"x)" << "\n";
  BOOST_TEST_REQUIRE(run(kBin + " report history --dir " + hist.string() + " --run-id night2 " + report + " 2>&1").status == 0);
  const std::size_t cut_line = std::stoul(run("grep -c '' " + file.string()).out) / 2 + 1;
  const auto page = run(kBin + " report html " + report + " --history " + hist.string() + " -o " + (dir / "d.html").string() + " 2>&1");
  BOOST_TEST(page.status == 0, page.out);
  BOOST_TEST(page.out.find(fmt::format("warning: {}:{}: not a history record (skipped)", file.string(), cut_line)) != std::string::npos,
             page.out);
  BOOST_TEST(slurp(dir / "d.html").find("night2") != std::string::npos);
  fs::remove_all(dir);
}

// Three shards of the golden captures, run at once, merge into the verdicts
// of one run; a missing or repeated shard is refused by name. Shard reports
// validate against the schema.
BOOST_AUTO_TEST_CASE(shards_merge_into_one_run) {
  const auto dir = temp_dir("shards");
  const auto whole = (dir / "whole.json").string();
  BOOST_TEST(run(kBin + " check --quiet --json " + whole + " " + kGolden + " 2>&1").status == 1);
  std::string cmd;
  for (int i = 0; i < 3; ++i)
    cmd += fmt::format("{} check --quiet --shard {}/3 --json {}/s{}.json --junit {}/s{}.xml {} & ", kBin, i, dir.string(), i,
                       dir.string(), i, kGolden);
  BOOST_TEST(run(cmd + "wait 2>&1").status == 0);
  validate(dir / "s1.json", dir / "s1.xml");
  const auto merged = (dir / "merged.json").string();
  const auto m = run(kBin + " report merge -o " + merged + " " + (dir / "s2.json").string() + " " + (dir / "s0.json").string() +
                     " " + (dir / "s1.json").string() + " 2>&1");
  // The merge succeeded: 0, whatever the verdicts, so that a pipeline goes on to diff; the faulty goldens' FAILs are
  // said, and --fail-on-fail makes them the exit status.
  BOOST_TEST(m.status == 0, m.out);
  BOOST_TEST(m.out.find("3 shards") != std::string::npos, m.out);
  BOOST_TEST(m.out.find("the merged run holds") != std::string::npos, m.out);
  const auto strict_merge = run(kBin + " report merge --fail-on-fail -o " + merged + " " + (dir / "s2.json").string() + " " +
                                (dir / "s0.json").string() + " " + (dir / "s1.json").string() + " 2>&1");
  BOOST_TEST(strict_merge.status == 1, strict_merge.out);
  const auto d = run(kBin + " report diff " + whole + " " + merged + " 2>&1");
  BOOST_TEST(d.status == 0, d.out);
  BOOST_TEST(d.out.find("0 regression(s), 0 improvement(s), 0 new item(s), 0 gone") != std::string::npos, d.out);
  const auto sums = run("/usr/bin/python3 -c \"import json; a=json.load(open('" + whole + "'))['summary']; b=json.load(open('" +
                        merged + "'))['summary']; print(a==b)\"");
  BOOST_TEST(sums.out.find("True") != std::string::npos, sums.out);
  const auto missing = run(kBin + " report merge -o " + merged + " " + (dir / "s0.json").string() + " " +
                           (dir / "s2.json").string() + " 2>&1");
  BOOST_TEST(missing.status == 2, missing.out);
  BOOST_TEST(missing.out.find("shard(s) 1 of 3 missing") != std::string::npos, missing.out);
  const auto twice = run(kBin + " report merge -o " + merged + " " + (dir / "s0.json").string() + " " +
                         (dir / "s0.json").string() + " 2>&1");
  BOOST_TEST(twice.status == 2, twice.out);
  BOOST_TEST(twice.out.find("shard 0 of 3 appears twice") != std::string::npos, twice.out);
  const auto env = run("TEST_SHARD_INDEX=2 TEST_TOTAL_SHARDS=3 " + kBin + " check --list " + kGolden + " 2>&1");
  const auto flag = run(kBin + " check --list --shard 2/3 " + kGolden + " 2>&1");
  BOOST_TEST(env.out == flag.out);
  // GitLab's parallel jobs count from 1: its job 3 of 3 is shard 2/3; a job 0 does not exist.
  BOOST_TEST(run("CI_NODE_INDEX=3 CI_NODE_TOTAL=3 " + kBin + " check --list " + kGolden + " 2>&1").out == flag.out);
  const auto gitlab0 = run("CI_NODE_INDEX=0 CI_NODE_TOTAL=3 " + kBin + " check --list " + kGolden + " 2>&1");
  BOOST_TEST(gitlab0.status == 2, gitlab0.out);
  BOOST_TEST(gitlab0.out.find("CI_NODE_INDEX/CI_NODE_TOTAL") != std::string::npos, gitlab0.out);
  BOOST_TEST(run(kBin + " check --list --shard 3/3 " + kGolden + " 2>&1").status == 2);
  fs::remove_all(dir);
}

// Lab reports shard and merge by cell, and compare by cell: green to red is
// a regression.
BOOST_AUTO_TEST_CASE(lab_shards_merge_and_compare) {
  const auto dir = temp_dir("lab-shards");
  auto lab = [&](const std::string& name, const std::string& cells, const std::string& shard, int flaky = 0) {
    std::ofstream(dir / name) << R"({"lab": {}, "sweep": false, "summary": {"cells": 2, "green": 1, "red": 1, "skipped": 0, "regressions": 0, )"
                              << R"("flaky": )" << flaky << "}, " << shard << R"("cells": [)" << cells << "]}";
    return (dir / name).string();
  };
  const std::string a = R"({"id": "siw.a", "verdict": "green"}, {"id": "siw.b", "verdict": "red"})",
                    b = R"({"id": "rxe.c", "verdict": "green"}, {"id": "rxe.d", "verdict": "red"})";
  const auto s0 = lab("s0.json", a, R"("shard": {"index": 0, "count": 2, "cells_in_all_shards": 4}, )", 1);
  const auto s1 = lab("s1.json", b, R"("shard": {"index": 1, "count": 2, "cells_in_all_shards": 4}, )", 2);
  const auto whole = lab("whole.json", a + ", " + b, "");
  const auto merged = (dir / "merged.json").string();
  const auto m = run(kBin + " report merge -o " + merged + " " + s1 + " " + s0 + " 2>&1");
  BOOST_TEST(m.status == 0, m.out);
  BOOST_TEST(m.out.find("2 shards, 4 cells") != std::string::npos, m.out);
  BOOST_TEST(run(kBin + " report diff " + whole + " " + merged + " 2>&1").status == 0);
  // The cells red only on a first attempt add up like the other counts.
  const auto summary = nlohmann::json::parse(slurp(merged))["summary"];
  BOOST_TEST(summary.value("flaky", -1) == 3);
  BOOST_TEST(summary.value("cells", -1) == 4);
  const auto worse = lab("worse.json", a + R"(, {"id": "rxe.c", "verdict": "red"}, {"id": "rxe.d", "verdict": "red"})", "");
  const auto d = run(kBin + " report diff " + whole + " " + worse + " 2>&1");
  BOOST_TEST(d.status == 1, d.out);
  BOOST_TEST(d.out.find("REGRESSION rxe.c: green -> red") != std::string::npos, d.out);
  const auto mixed = run(kBin + " report diff " + whole + " " + kGolden + "/../../tests/oracles/ib_crc.py 2>&1");
  BOOST_TEST(mixed.status == 2, mixed.out);
  fs::remove_all(dir);
}

// Requirement coverage against an independent count: Python reads the
// ledger documents, the catalog (`rdmaconf cases --json`) and the golden
// manifests itself.
BOOST_AUTO_TEST_CASE(requirement_coverage_counts) {
  const auto dir = temp_dir("coverage");
  const auto cov = (dir / "cov.json").string();
  const auto r = run(kBin + " report coverage --captures " + kGolden + " --json " + cov + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto schema = run(kSource + "/tools/validate-schema coverage " + cov + " 2>&1");
  BOOST_TEST(schema.status == 0, schema.out);
  const auto check = run(kBin + " cases --json > " + (dir / "cases.json").string() + " && /usr/bin/python3 -c \"\n"
                         "import json, glob\n"
                         "cases = json.load(open('" + (dir / "cases.json").string() + "'))\n"
                         "fails = {}\n"
                         "for m in glob.glob('" + kGolden + "/*.manifest.json'):\n"
                         "  for k, v in json.load(open(m)).get('expected', {}).items():\n"
                         "    fails[k] = fails.get(k, 0) + (v == 'FAIL')\n"
                         "cov = json.load(open('" + cov + "'))\n"
                         "assert cov['totals']['cases'] == len([c for c in cases if 'live' not in c])\n"
                         "# the live suites' own cases, each under the family `rdmaconf cases` names\n"
                         "live = {(c['id'], c['live']) for c in cases if 'live' in c}\n"
                         "assert live and live == {(k['id'], l['family']) for l in cov['live'] for k in l['cases']}, live\n"
                         "assert cov['totals']['live_cases'] == len(live)\n"
                         "# a live scenario that judges a case is named with it\n"
                         "named = {(c['id'], s) for c in cov['cases'] for s in c['live_scenarios']}\n"
                         "assert ('iwarp.mpa.fpdu.crc', 'iwarp terminate-crc') in named, sorted(named)[:5]\n"
                         "got = {c['id']: c['golden_fail'] for c in cov['cases']}\n"
                         "assert all(got[k] == fails.get(k, 0) for k in got), [(k, got[k], fails.get(k)) for k in got if got[k] != fails.get(k, 0)]\n"
                         "assert {c['id'] for c in cov['cases'] if not c['golden_fail']} == set(cov['lacking']['a_fail_capture'])\n"
                         "# statements, counted from the ledger documents themselves\n"
                         "n = {}\n"
                         "for f in glob.glob('" + kSource + "/conformance/*/ledger/*.json'):\n"
                         "  d = json.load(open(f))\n"
                         "  for e in d['entries']:\n"
                         "    k = n.setdefault((d['spec'], e['class']), {'statements': 0, 'judged': 0, 'partly': 0, 'todo': 0})\n"
                         "    k['statements'] += 1\n"
                         "    k['judged'] += bool(e.get('judged'))\n"
                         "    k['partly'] += bool(e.get('partly')) and not e.get('judged')\n"
                         "    may = all(w in ('MAY', 'OPTIONAL') for w in e['kw'])\n"
                         "    k['todo'] += not (e.get('judged') or e.get('partly') or e.get('provoked') or e.get('exception') or may or e['class'] in ('unobservable', 'sctp'))\n"
                         "seen = 0\n"
                         "for s in cov['statements']['by_spec']:\n"
                         "  for cls, c in s['classes'].items():\n"
                         "    want = n.get((s['spec'], cls), {'statements': 0, 'judged': 0, 'partly': 0, 'todo': 0})\n"
                         "    assert all(c[k] == want[k] for k in want), (s['spec'], cls, c, want)\n"
                         "    seen += c['statements']\n"
                         "assert seen == sum(k['statements'] for k in n.values()) == cov['statements']['totals']['statements'] >= 500, seen\n"
                         "print('agree', seen)\n\" 2>&1");
  BOOST_TEST(check.status == 0, check.out);
  BOOST_TEST(check.out.find("agree") != std::string::npos, check.out);
  BOOST_TEST(r.out.find("normative statements in the ledgers") != std::string::npos, r.out);
  fs::remove_all(dir);
}

// docs/spec-references.md is what `rdmaconf ledger markdown` makes of the
// ledger and the lab's cells: its figures are generated, never typed.
// The figures README.md and docs/ give that a command computes (case
// counts, lab cells) are marked and equal to what the commands say now
// (tools/doc-figures); a figure that drifts fails here, and a doctored one
// is caught: the check is run on a copy with one figure changed.
BOOST_AUTO_TEST_CASE(doc_figures_equal_what_the_commands_compute) {
  const auto r = run(kSource + "/tools/doc-figures check " + kBin + " 2>&1");
  BOOST_TEST(r.status == 0, r.out);
  BOOST_TEST(r.out.find(" agree") != std::string::npos, r.out);
  const auto dir = temp_dir("doc-figures");
  fs::create_directories(dir / "tools");
  fs::copy(fs::path(kSource) / "docs", dir / "docs", fs::copy_options::recursive);
  fs::copy_file(fs::path(kSource) / "tools" / "doc-figures", dir / "tools" / "doc-figures");
  auto readme = slurp(fs::path(kSource) / "README.md");
  const auto at = readme.find("<!--fig:ib-cases-->");
  BOOST_TEST_REQUIRE(at != std::string::npos);
  readme.insert(at + std::string("<!--fig:ib-cases-->").size(), "1");  // 42 becomes 142
  std::ofstream(dir / "README.md") << readme;
  const auto bad = run((dir / "tools" / "doc-figures").string() + " check " + kBin + " 2>&1");
  BOOST_TEST(bad.status == 1, bad.out);
  BOOST_TEST(bad.out.find("README.md:") != std::string::npos, bad.out);
  BOOST_TEST(bad.out.find("ib-cases is 1") != std::string::npos, bad.out);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(spec_references_page_is_generated_from_the_ledger) {
  const auto r = run(kBin + " ledger markdown 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  BOOST_TEST((r.out == slurp(fs::path(kSource) / "docs" / "spec-references.md")),
             "docs/spec-references.md is stale: rdmaconf ledger markdown -o docs/spec-references.md");
  // Every ledger statement appears, and `rdmaconf cases --json` names statements for every iWARP case.
  const auto cases = nlohmann::json::parse(run(kBin + " cases --json").out);
  for (const auto& c : cases)
    if (c["family"] == "iwarp") BOOST_TEST(c.contains("statements"), c["id"].get<std::string>());
  const auto list = nlohmann::json::parse(run(kBin + " ledger list --json").out);
  BOOST_TEST(list.size() >= 500u);
  for (const auto& e : list) BOOST_TEST(r.out.find("| " + e["id"].get<std::string>() + " |") != std::string::npos, e["id"]);
}

// A finding becomes an upstream-ready bug report: the requirement's text from
// the catalog, the frames from the cell's check report, the capture, the
// source lines; the dashboard lists it. The cell's check report is a real
// check of the golden capture whose first FPDU carries a non-zero pad octet.
BOOST_AUTO_TEST_CASE(findings_become_bug_reports) {
  const auto dir = temp_dir("findings");
  const auto check = (dir / "check.json").string();
  const auto pcap = kGolden + "/iwarp-fault-pad.pcap";
  BOOST_TEST_REQUIRE(run(kBin + " check --quiet --json " + check + " " + pcap + " 2>&1").status == 1);
  // The frames the check report gives for the pad case, read here independently of report findings.
  std::ifstream cf(check);
  const auto cj = nlohmann::json::parse(cf);
  std::string frames;
  for (const auto& sc : cj["inputs"][0]["scopes"])
    for (const auto& r : sc["results"])
      if (r["case"] == "iwarp.mpa.fpdu.pad") frames = fmt::format("{}", fmt::join(r["evidence"][0]["frames"].get<std::vector<int>>(), ", "));
  BOOST_TEST_REQUIRE(!frames.empty());
  const auto lab = dir / "lab-report.json";
  std::ofstream(lab) << R"({"lab": {"kernel": "6.12.117+deb12-amd64", "manifest": "linux-image-6.12.117+deb12-amd64_6.12.117-1_amd64.deb\nrdma-core_44.0-2_amd64.deb\nzlib1g_1.2.13_amd64.deb\n"},
  "summary": {"cells": 2, "green": 1, "red": 1, "skipped": 0, "regressions": 0},
  "findings": {"siw-unzeroed-pad": {"title": "siw sends the pad octets of short FPDUs unzeroed", "text": "the pad is not cleared </script><b>",
    "cases": ["iwarp.mpa.fpdu.pad"], "source": ["drivers/infiniband/sw/siw/siw_qp_tx.c: the short-FPDU path"], "capture_only": true}},
  "cells": [{"id": "siw.siw-siw.ib_send_bw", "peer": "siw", "our_role": "none", "peer_program": "ib_send_bw", "scenario": "ib_send_bw",
    "configuration": {"label": "crc-off.v2"}, "verdict": "red", "reason": "siw finding", "finding": "siw-unzeroed-pad",
    "capture": ")" << pcap << R"(", "check_report": ")" << check << R"(", "check": {"pass": 1, "fail": 1, "inconclusive": 0, "failed_cases": ["iwarp.mpa.fpdu.pad"]}},
   {"id": "siw.other", "peer": "siw", "verdict": "green", "finding": null}]})";
  const auto r = run(kBin + " report findings " + lab.string() + " -o " + (dir / "out").string() + " --json " + (dir / "f.json").string() + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto md = slurp(dir / "out" / "siw-unzeroed-pad.md");
  for (const std::string& want : std::vector<std::string>{"# siw sends the pad octets of short FPDUs unzeroed", "kernel 6.12.117+deb12-amd64",
                                 "RFC 5044 §4.1 (MUST)", "`iwarp.mpa.fpdu.pad`", "siw_qp_tx.c: the short-FPDU path",
                                 "rdma-core_44.0-2_amd64.deb", "| siw.siw-siw.ib_send_bw | iwarp.mpa.fpdu.pad | " + frames + " |", pcap})
    BOOST_TEST(md.find(want) != std::string::npos, "missing: " << want << "\n" << md);
  BOOST_TEST(md.find("zlib1g") == std::string::npos);  // only the packages a report upstream asks for
  for (const auto& [kind, file] : {std::pair{"lab-report", lab}, std::pair{"findings", dir / "f.json"}}) {
    const auto v = run(kSource + "/tools/validate-schema " + kind + " " + file.string() + " 2>&1");
    BOOST_TEST(v.status == 0, kind << ": " << v.out);
  }
  BOOST_TEST(!fs::exists(dir / "out" / "siw-other.md"));
  // The dashboard lists it; a report that is not JSON gets a clear error.
  const auto h = run(kBin + " report html " + lab.string() + " " + check + " -o " + (dir / "d.html").string() + " 2>&1");
  BOOST_TEST(h.status == 0, h.out);
  BOOST_TEST(h.out.find("2 lab cells, 1 inputs, 0 regression(s), 1 finding(s)") != std::string::npos, h.out);
  const auto page = slurp(dir / "d.html");
  BOOST_TEST(page.find("siw sends the pad octets") != std::string::npos);
  // The data block survives text that would end a script element.
  const std::string open = R"(<script type="application/json" id="data">)";
  const auto at = page.find(open), end = page.find("</script>", at);
  BOOST_TEST_REQUIRE((at != std::string::npos && end != std::string::npos));
  const auto data = nlohmann::json::parse(page.substr(at + open.size(), end - at - open.size()), nullptr, false);
  BOOST_TEST_REQUIRE(!data.is_discarded());
  BOOST_TEST(data["findings"][0]["text"] == "the pad is not cleared </script><b>");
  const auto bad = run(kBin + " report html " + pcap + " -o " + (dir / "x.html").string() + " 2>&1");
  BOOST_TEST(bad.status == 2, bad.out);
  BOOST_TEST(bad.out.find(pcap + ": not a JSON report") != std::string::npos, bad.out);
  // A report with a field of the wrong type (hand-edited, or from elsewhere) is refused by name, not a crash.
  const auto odd = dir / "odd.json";
  std::ofstream(odd) << R"({"lab": {}, "summary": {"cells": 1}, "findings": {"x": {"title": "t", "cases": "not a list"}},
    "cells": [{"id": "siw.a", "verdict": "red", "finding": "x", "check": {"pass": "many"}}]})";
  for (const auto& [sub, says] : std::vector<std::pair<std::string, std::string>>{
           {"html " + odd.string() + " -o " + (dir / "y.html").string(), "/cells/0/check/pass: expected a non-negative integer, got a string"},
           {"findings " + odd.string() + " -o " + (dir / "z").string(), "/cells/0/check/pass: expected a non-negative integer, got a string"}}) {
    const auto o = run(kBin + " report " + sub + " 2>&1");
    BOOST_TEST(o.status == 2, sub << ": " << o.out);
    BOOST_TEST(o.out.find(odd.string() + ": " + says) != std::string::npos, o.out);
  }
  // The schema refuses the same field.
  const auto v = run(kSource + "/tools/validate-schema lab-report " + odd.string() + " 2>&1");
  BOOST_TEST(v.status == 1, v.out);
  BOOST_TEST(v.out.find(odd.string() + ": /cells/0/check/pass: ") != std::string::npos, v.out);
  fs::remove_all(dir);
}

// One lab report per kernel of the lab's matrix: each finding once, with its
// status on every kernel (the cells that reproduced it, or none), the source
// lines of each, and for a security finding the sections a security contact
// reads. The statuses come from the reports' cells as written here.
BOOST_AUTO_TEST_CASE(findings_across_kernels_say_where_each_reproduces) {
  const auto dir = temp_dir("findings-kernels");
  const nlohmann::json finding = {
      {"title", "iw_cm hits BUG()"}, {"text", "the close handler"}, {"cases", nlohmann::json::array()}, {"severity", "security"},
      {"impact", "a remote peer crashes the host"}, {"trigger", "a Terminate LLP/0/7 before the RTR"},
      {"root_cause", "CLOSE in CONN_RECV"}, {"fix", "treat it as a failed establishment"},
      {"source", {{{"file", "drivers/infiniband/core/iwcm.c"}, {"function", "cm_close_handler"}, {"anchor", "BUG();"},
                   {"what", "the default case"}, {"lines", {{"6.12", "955-964"}, {"sid", "957-966"}}}}}}};
  const auto report = [&](const std::string& file, const std::string& kernel, const std::string& verdict, bool regression,
                          nlohmann::json problems) {
    nlohmann::json r = {{"lab", {{"kernel", kernel}, {"kernel_file", file}, {"manifest", "rdma-core_" + file + "\n"}}},
                        {"summary", {{"cells", 1}}},
                        {"findings", {{"siw-crash", finding}}},
                        {"citations", {{"kernel", file}, {"problems", problems}}},
                        {"cells", {{{"id", "siw.p2p"}, {"peer", "siw"}, {"our_role", "initiator"}, {"peer_program", "rping -s"},
                                    {"scenario", "rping"}, {"verdict", verdict}, {"regression", regression}, {"finding", "siw-crash"}}}}};
    const auto path = dir / (file + ".json");
    std::ofstream(path) << r.dump();
    return path.string();
  };
  const auto a = report("6.12", "6.12.118+deb12-amd64", "red", false, nlohmann::json::array());
  const auto b = report("sid", "7.2.13+deb14-amd64", "green", false,
                        {"findings.siw-crash.source[0] (drivers/infiniband/core/iwcm.c:957-966 on kernel sid): the lines do not hold \"BUG();\""});
  const auto c = report("rc", "7.3.0-rc1", "red", true, nlohmann::json::array());
  const auto r = run(kBin + " report findings " + a + " " + b + " " + c + " -o " + (dir / "out").string() + " --json " +
                     (dir / "f.json").string() + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto md = slurp(dir / "out" / "siw-crash.md");
  for (const std::string& want : std::vector<std::string>{
           "# [security] iw_cm hits BUG()", "## Impact\n\na remote peer crashes the host", "## Trigger", "## Affected kernels",
           "| 6.12 | 6.12.118+deb12-amd64 | reproduced | `siw.p2p` | rdma-core_6.12 |",
           "| sid | 7.2.13+deb14-amd64 | not reproduced | `siw.p2p` (green) |", "| rc | 7.3.0-rc1 | unclear | `siw.p2p` (red for another reason) |", "`rdmaconf lab run --kernel 6.12 --cell siw.p2p`", "## Root cause\n\nCLOSE in CONN_RECV",
           "## Fix direction", "the cited code changed there", "the lines do not hold", "  - 6.12 (6.12.118+deb12-amd64): lines 955-964",
           "  - sid (7.2.13+deb14-amd64): lines 957-966", "`cm_close_handler()`"})
    BOOST_TEST(md.find(want) != std::string::npos, "missing: " << want << "\n" << md);
  // Only the reproducing kernel gives a reproducer.
  const auto rep = md.find("## Reproducer"), cause = md.find("## Root cause");
  BOOST_TEST_REQUIRE((rep != std::string::npos && cause > rep));
  BOOST_TEST(md.substr(rep, cause - rep).find("--kernel sid") == std::string::npos, md.substr(rep, cause - rep));
  BOOST_TEST(md.substr(rep, cause - rep).find("--kernel rc") == std::string::npos, md.substr(rep, cause - rep));
  std::ifstream jf(dir / "f.json");
  const auto records = nlohmann::json::parse(jf);
  BOOST_TEST_REQUIRE(records.size() == 1u);
  BOOST_TEST(records[0]["kernels"].size() == 3u);
  BOOST_TEST(records[0]["cells"].size() == 3u);
  // The same kernel twice is refused: each would carry half the story.
  const auto twice = run(kBin + " report findings " + a + " " + a + " -o " + (dir / "o2").string() + " 2>&1");
  BOOST_TEST(twice.status == 2, twice.out);
  BOOST_TEST(twice.out.find("a second report of the same kernel") != std::string::npos, twice.out);
  fs::remove_all(dir);
}

// A lab report's finding keys are the report's to choose, and a report can
// come from anywhere: whatever a key holds, `report findings -o DIR` writes
// one file per finding, each directly in DIR, and none overwrites another.
BOOST_AUTO_TEST_CASE(findings_with_hostile_keys_stay_in_their_folder) {
  const auto dir = temp_dir("findings-keys");
  const std::vector<std::string> keys = {"../../escaped", "/tmp/rdmaconf-abs-finding", "..", ".", "", "a/b", "a_b",
                                         "A_B", ".hidden", "line\nbreak", "x\\y", std::string(300, 'k')};
  nlohmann::json lab = {{"lab", nlohmann::json::object()}, {"summary", {{"cells", 0}}}, {"cells", nlohmann::json::array()}};
  lab["findings"] = nlohmann::json::object();
  for (std::size_t i = 0; i < keys.size(); ++i)
    lab["findings"][keys[i]] = {{"title", fmt::format("finding number {}", i)}, {"cases", nlohmann::json::array()}};
  std::ofstream(dir / "lab.json") << lab.dump();
  fs::remove("/tmp/rdmaconf-abs-finding.md");
  const auto r = run(kBin + " report findings " + (dir / "lab.json").string() + " -o " + (dir / "a" / "out").string() + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  // Nothing outside out/: not beside it, not two folders up, not at the absolute path.
  BOOST_TEST(!fs::exists("/tmp/rdmaconf-abs-finding.md"));
  std::vector<std::string> outside;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().parent_path() != dir / "a" / "out" && e.path() != dir / "lab.json") outside.push_back(e.path().string());
  BOOST_TEST(outside.empty(), "written outside the folder: " << fmt::format("{}", fmt::join(outside, ", ")));
  // One file per finding, each holding its own finding.
  std::set<std::string> titles;
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "a" / "out")) {
    ++files;
    const std::string name = e.path().filename().string();
    BOOST_TEST(name.ends_with(".md"), name);
    BOOST_TEST(name.front() != '.', name);
    BOOST_TEST(name.size() <= 130u, name);
    BOOST_TEST(name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos, name);
    const std::string md = slurp(e.path());
    const auto at = md.find("finding number ");
    BOOST_TEST_REQUIRE(at != std::string::npos, name);
    titles.insert(md.substr(at, md.find('\n', at) - at));
  }
  BOOST_TEST(files == keys.size());
  BOOST_TEST(titles.size() == keys.size());
  // A field of another type is refused by its JSON path (exit status 2), not an abort.
  std::ofstream(dir / "typed.json") << R"({"lab": {}, "summary": {"cells": 0}, "cells": [], "findings": {"odd": {"title": 5}}})";
  const auto t = run(kBin + " report findings " + (dir / "typed.json").string() + " -o " + (dir / "t").string() + " 2>&1");
  BOOST_TEST(t.status == 2, t.out);
  BOOST_TEST(t.out.find((dir / "typed.json").string() + ": /findings/odd/title: expected a string, got a number") != std::string::npos, t.out);
  // Evidence of another form in a cell's check report is the cell's evidence problem, named; the report is still written.
  std::ofstream(dir / "check.json") << R"({"inputs": [{"scopes": [{"label": "c", "results": [
    {"case": "iwarp.mpa.fpdu.pad", "verdict": "FAIL", "failed": 1, "evidence": [{"frames": ["x"]}]}]}]}]})";
  std::ofstream(dir / "ev.json") << R"({"lab": {}, "cells": [{"id": "siw.a", "verdict": "red", "finding": "odd", "check_report": ")" +
                                       (dir / "check.json").string() + R"("}], "findings": {"odd": {"title": "t", "cases": ["iwarp.mpa.fpdu.pad"]}}})";
  const auto e = run(kBin + " report findings " + (dir / "ev.json").string() + " -o " + (dir / "e").string() + " 2>&1");
  BOOST_TEST(e.status == 0, e.out);
  BOOST_TEST(slurp(dir / "e" / "odd.md").find((dir / "check.json").string() +
                                               ": /inputs/0/scopes/0/results/0/evidence/0/frames/0: expected a frame number, got a string") !=
                 std::string::npos,
             slurp(dir / "e" / "odd.md"));
  fs::remove_all(dir);
}

// Names are the reports' to choose: in `report summary`'s Markdown a cell
// named with backticks, a newline and a table row stays one code span in
// its own cell, and the title stays one heading. A verdict carrying markup
// is no verdict at all: refused by its path.
BOOST_AUTO_TEST_CASE(summary_markdown_keeps_names_in_their_cells) {
  const auto dir = temp_dir("summary-names");
  const auto lab = dir / "lab.json";
  nlohmann::json doc = {{"lab", nlohmann::json::object()}, {"summary", {{"cells", 2}}}, {"findings", nlohmann::json::object()}};
  doc["cells"] = {{{"id", "siw.a``b\n# Injected heading\n| injected | row |"}, {"verdict", "red"}},
                  {{"id", "siw.ok"}, {"verdict", "green\n## Also injected"}}};
  std::ofstream(lab) << doc.dump();
  const auto refused = run(kBin + " report summary " + lab.string() + " 2>&1");
  BOOST_TEST(refused.status == 2, refused.out);
  BOOST_TEST(refused.out.find(lab.string() + ": /cells/1/verdict: expected one of green, red, skipped, got \"green\\n## Also injected\"") !=
                 std::string::npos,
             refused.out);
  doc["cells"][1]["verdict"] = "green";
  std::ofstream(lab) << doc.dump();
  const auto r = run(kBin + " report summary " + lab.string() + " --title 'night\n# Injected title [x](javascript:y)' 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  std::istringstream lines(r.out);
  int headings = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) ++headings;
    BOOST_TEST((line.find("Injected") == std::string::npos || line.starts_with("| ```siw.a``b") || line.starts_with("### night")), line);
    BOOST_TEST(line.find("| injected | row |") == std::string::npos, line);
    BOOST_TEST(line.find("[x](") == std::string::npos, line);  // a link, unescaped
  }
  BOOST_TEST(headings == 1, r.out);
  BOOST_TEST(r.out.find("| ```siw.a``b # Injected heading \\| injected \\| row \\|``` |") != std::string::npos, r.out);
  fs::remove_all(dir);
}

// A capture's name is anyone's to choose: printed to the terminal by check
// and report diff, its control characters (an ESC sequence that retitles the
// window, a newline that fakes a line of output) are shown escaped.
BOOST_AUTO_TEST_CASE(terminal_output_escapes_control_characters_in_names) {
  const auto dir = temp_dir("terminal-names");
  const std::string evil = "evil\x1b]0;pwned\x07\nFAIL fake \xc2\x9b" "2J.pcap";
  fs::copy_file(kGolden + "/iwarp-fault-pad.pcap", dir / evil);
  const auto r = run(kBin + " check '" + (dir / evil).string() + "' --json " + (dir / "a.json").string() + " 2>&1");
  BOOST_TEST(r.status == 1, r.out);
  BOOST_TEST(r.out.find('\x1b') == std::string::npos);
  BOOST_TEST(r.out.find('\x07') == std::string::npos);
  BOOST_TEST(r.out.find("\xc2\x9b") == std::string::npos);
  BOOST_TEST(r.out.find("\n" "FAIL fake") == std::string::npos, r.out);
  BOOST_TEST(r.out.find("evil\\x1b]0;pwned\\x07\\x0aFAIL fake \\u009b2J.pcap:") != std::string::npos, r.out);
  // A diff naming the item: one verdict made worse.
  const auto worse = (dir / "b.json").string();
  const auto e = run("/usr/bin/python3 -c \"import json; d=json.load(open('" + (dir / "a.json").string() + "'))\n"
                     "r=[r for s in d['inputs'][0]['scopes'] for r in s['results'] if r['verdict']=='PASS'][0]; r['verdict']='FAIL'\n"
                     "json.dump(d, open('" + worse + "','w'))\" 2>&1");
  BOOST_TEST_REQUIRE(e.status == 0, e.out);
  const auto d = run(kBin + " report diff " + (dir / "a.json").string() + " " + worse + " 2>&1");
  BOOST_TEST(d.status == 1, d.out);
  BOOST_TEST(d.out.find('\x1b') == std::string::npos, d.out);
  BOOST_TEST(d.out.find("REGRESSION evil\\x1b]0;pwned\\x07\\x0aFAIL fake \\u009b2J.pcap ") != std::string::npos, d.out);
  fs::remove_all(dir);
}

// A report nested 100 000 deep (in evidence, a finding, a shard) is
// refused by name before anything walks it: copying, dumping and destroying
// such a value recurse once a level, which crashed html, findings and merge.
BOOST_AUTO_TEST_CASE(deeply_nested_reports_are_refused_not_a_crash) {
  const auto dir = temp_dir("deep");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto check = dir / "check.json", lab = dir / "lab.json", shard = dir / "shard.json";
  std::ofstream(check) << R"({"inputs": [{"path": "x.pcap", "scopes": [{"id": "s", "results": [{"case": "iwarp.mpa.fpdu.pad", "verdict": "FAIL", "evidence": )"
                       << deep << "}]}]}]}";
  std::ofstream(lab) << R"({"lab": {}, "summary": {"cells": 0}, "cells": [], "findings": {"x": {"title": )" << deep << "}}}";
  std::ofstream(shard) << R"({"inputs": [], "shard": {"index": 0, "count": 2, "deep": )" << deep << "}}";
  for (const auto& [sub, file] : {std::pair{"html " + check.string() + " -o " + (dir / "d.html").string(), check},
                                  std::pair{"findings " + lab.string() + " -o " + (dir / "f").string(), lab},
                                  std::pair{"merge " + shard.string() + " " + shard.string() + " -o " + (dir / "m.json").string(), shard}}) {
    const auto r = run(kBin + " report " + sub + " 2>&1");
    BOOST_TEST(r.status == 2, sub << ": " << r.out);
    BOOST_TEST(r.out.find(file.string() + ": nested deeper than 200 levels") != std::string::npos, sub << ": " << r.out);
  }
  fs::remove_all(dir);
}

// A device under test is named wherever a lab run's cells are shown: the
// finding's bug report (device, firmware and kernel as the device reported
// them, whether its profile was tested, how to rerun against it), the
// dashboard's cells and findings, and `report diff` between a run in the
// guest and a run against the device. The reports are written here the way
// `lab run --dut` writes them (interop/lab/lab.cpp).
BOOST_AUTO_TEST_CASE(a_device_under_test_is_named_in_findings_dashboard_and_diff) {
  const auto dir = temp_dir("dut-named");
  const std::string device = R"({"dut": "ssh://root@192.0.2.1", "profile": "mlx5", "profile_file": "/p/mlx5.json",
    "title": "ConnectX", "tested_profile": false, "driver": "mlx5_ib", "device": "mlx5_0", "netdev": "ens1f0",
    "address": "192.0.2.1", "firmware": "22.39.1002", "kernel": "6.1.0-18-amd64", "node_desc": "dut mlx5_0", "host": "dut1"})";
  const auto lab = dir / "dut.json";
  std::ofstream(lab) << R"({"lab": {"kernel": "6.1.0-18-amd64", "topology": "the device under test mlx5 reached by ssh"},
  "device": )" << device << R"(, "summary": {"cells": 2, "green": 1, "red": 1, "skipped": 0, "regressions": 0},
  "findings": {"odd-ack": {"title": "the device acknowledges twice", "text": "t", "cases": []}},
  "cells": [{"id": "rxe.a", "peer": "rxe", "our_role": "initiator", "peer_program": "ib_send_bw", "scenario": "ib_send_bw",
    "configuration": {"label": "mtu1024"}, "device": )" << device << R"(, "verdict": "red", "reason": "r", "finding": "odd-ack",
    "capture": "", "check_report": "", "check": {"pass": 0, "fail": 0, "inconclusive": 0, "failed_cases": []}},
   {"id": "rxe.b", "peer": "rxe", "device": )" << device << R"(, "verdict": "green", "finding": null}]})";
  const std::string label = "mlx5 (driver mlx5_ib, device mlx5_0, firmware 22.39.1002, kernel 6.1.0-18-amd64; ssh://root@192.0.2.1)";
  const auto f = run(kBin + " report findings " + lab.string() + " -o " + (dir / "out").string() + " 2>&1");
  BOOST_TEST_REQUIRE(f.status == 0, f.out);
  const auto md = slurp(dir / "out" / "odd-ack.md");
  for (const std::string& want : {"**Device under test:** " + label + " (a profile the project has not run against this hardware)",
                                  std::string("firmware 22.39.1002, node description dut mlx5_0, host name dut1"),
                                  std::string("RDMA device mlx5_0 on ens1f0 (192.0.2.1)"), std::string("/p/mlx5.json (untested)"),
                                  std::string("the device under test mlx5 reached by ssh"),
                                  std::string("`rdmaconf lab run --dut ssh://root@192.0.2.1 --profile mlx5 --our-iface IF --our-addr ADDR --cell rxe.a`")})
    BOOST_TEST(md.find(want) != std::string::npos, "missing: " << want << "\n" << md);
  BOOST_TEST(md.find("qemu guest") == std::string::npos, md);
  // The dashboard: each cell and each finding carry the device's line.
  const auto h = run(kBin + " report html " + lab.string() + " -o " + (dir / "d.html").string() + " 2>&1");
  BOOST_TEST_REQUIRE(h.status == 0, h.out);
  const auto page = slurp(dir / "d.html");
  const std::string open = R"(<script type="application/json" id="data">)";
  const auto at = page.find(open), end = page.find("</script>", at);
  BOOST_TEST_REQUIRE((at != std::string::npos && end != std::string::npos));
  const auto data = nlohmann::json::parse(page.substr(at + open.size(), end - at - open.size()));
  BOOST_TEST(data["lab"].size() == 2u);
  for (const auto& c : data["lab"]) BOOST_TEST(c["device"] == label);
  BOOST_TEST(data["findings"][0]["device_label"] == label);
  // A run in the guest against the run on the device: the devices first, then the cells.
  const auto guest = dir / "guest.json";
  std::ofstream(guest) << R"({"lab": {"kernel": "6.12.117+deb12-amd64"}, "device": null, "summary": {"cells": 2},
    "cells": [{"id": "rxe.a", "peer": "rxe", "verdict": "green", "device": {"dut": "guest", "profile": null, "driver": "rxe",
    "kernel": "6.12.117+deb12-amd64", "firmware": null}}, {"id": "rxe.b", "peer": "rxe", "verdict": "green"}]})";
  const auto d = run(kBin + " report diff " + guest.string() + " " + lab.string() + " 2>&1");
  BOOST_TEST(d.out.find("devices: the lab's guest (kernel 6.12.117+deb12-amd64) -> " + label + "\n") != std::string::npos, d.out);
  BOOST_TEST(d.out.find("rxe.a") != std::string::npos, d.out);
  BOOST_TEST(d.status == 1, d.out);  // rxe.a: green -> red
  // The guest's own cells carry their kernel peer as the device.
  const auto g = run(kBin + " report html " + guest.string() + " -o " + (dir / "g.html").string() + " 2>&1");
  BOOST_TEST_REQUIRE(g.status == 0, g.out);
  const auto gpage = slurp(dir / "g.html");
  BOOST_TEST(gpage.find("rxe in the lab's guest (kernel 6.12.117+deb12-amd64)") != std::string::npos);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

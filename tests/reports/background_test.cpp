// reports::in_background: a lone summary writer renders each scope on the
// caller's thread and leaves the scope with the caller; what it prints must
// be what the same writer prints when called directly.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/checker.hpp"
#include "conformance/family.hpp"
#include "reports/report.hpp"

using namespace rdmaconf;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(report_background)

BOOST_AUTO_TEST_CASE(rendered_summary_equals_direct) {
  std::vector<conformance::InputResult> inputs;
  const conformance::Checker checker{conformance::CheckOptions{}};
  // Golden captures with FAILs and without, several scopes each.
  for (const char* name : {"iwarp-fault-crc.pcap", "ib-native-fault-icrc.pcap", "ib-native-global.pcap"})
    inputs.push_back(checker.check_file((fs::path(RDMACONF_SOURCE_DIR) / "captures/golden" / name).string()));
  std::size_t scopes = 0;
  for (const auto& in : inputs) scopes += in.scopes.size();
  BOOST_TEST_REQUIRE(scopes >= 3u);

  for (const bool verbose : {false, true}) {
    std::ostringstream direct, behind;
    reports::replay(*reports::summary_writer(direct, verbose), inputs);
    {
      std::vector<std::unique_ptr<reports::ReportWriter>> w;
      w.push_back(reports::summary_writer(behind, verbose));
      const auto bg = reports::in_background(std::move(w), 4);  // a short queue: many hand-overs
      reports::Totals t;
      for (const auto& in : inputs) {
        bg->begin_input(in.path);
        for (const auto& s : in.scopes) {
          conformance::ScopeResult mine = s;
          bg->take(std::move(mine));
          // Rendered here, so the scope was not taken from us.
          BOOST_TEST(mine.id == s.id);
          BOOST_TEST(mine.outcomes.size() == s.outcomes.size());
        }
        conformance::InputResult head = in;
        head.scopes.clear();
        bg->end_input(head);
        t.add(in);
      }
      bg->end(t);
    }
    BOOST_TEST(direct.str().size() > 100u);
    BOOST_TEST((behind.str() == direct.str()), "verbose " << verbose << ":\n" << behind.str() << "\n---\n" << direct.str());
  }
}

BOOST_AUTO_TEST_SUITE_END()

// reports::scope_json and scope_from_json: every scope of golden captures
// (FAILs with evidence, caused_by links, stream offsets, coverage) read back
// from its JSON writes the same JSON; an element that is no scope is refused
// with the field named.
BOOST_AUTO_TEST_SUITE(scope_json)

BOOST_AUTO_TEST_CASE(scopes_read_back_write_the_same) {
  const conformance::Checker checker{conformance::CheckOptions{}};
  const auto catalog = conformance::Registry::get().all_cases();
  std::size_t scopes = 0, evidence = 0, caused = 0;
  for (const auto& e : fs::directory_iterator(fs::path(RDMACONF_SOURCE_DIR) / "captures/golden")) {
    if (e.path().extension() != ".pcap" && e.path().extension() != ".pcapng") continue;
    for (const auto& s : checker.check_file(e.path().string()).scopes) {
      const std::string text = reports::scope_json(s);
      const auto back = reports::scope_from_json(nlohmann::json::parse(text), catalog);
      BOOST_TEST(reports::scope_json(back) == text, e.path().filename().string() << " " << s.id);
      BOOST_TEST(back.family == s.family);
      ++scopes;
      for (const auto& o : s.outcomes)
        for (const auto& ev : o.tally.evidence()) {
          ++evidence;
          caused += ev.caused_by.has_value();
        }
    }
  }
  BOOST_TEST(scopes > 100u);
  BOOST_TEST(evidence > 100u);
  BOOST_TEST(caused > 0u);
}

BOOST_AUTO_TEST_CASE(what_is_no_scope_is_refused_by_name) {
  const auto catalog = conformance::Registry::get().all_cases();
  const auto good = nlohmann::json::parse(R"({"id":"tcp/1","family":"iwarp","label":"x","frames":[1,2],"parameters":{},
      "coverage":[],"results":[{"case":"iwarp.mpa.fpdu.crc","verdict":"PASS","checked":1,"failed":0,"inconclusive":0,"evidence":[]}]})");
  BOOST_TEST(reports::scope_from_json(good, catalog).outcomes.size() == 1u);
  const std::pair<std::string, std::string> bad[] = {
      {R"("frames":[1,2])", R"("frames":[1])"},
      {R"("case":"iwarp.mpa.fpdu.crc")", R"("case":"iwarp.no.such")"},
      {R"("checked":1)", R"("checked":-1)"},
      {R"("family":"iwarp")", R"("family":"nosuch")"},
      {R"("evidence":[])", R"("evidence":[{"frames":["x"]}])"},
  };
  for (const auto& [from, to] : bad) {
    std::string t = good.dump();
    t.replace(t.find(from), from.size(), to);
    try {
      reports::scope_from_json(nlohmann::json::parse(t), catalog);
      BOOST_FAIL("accepted: " + t);
    } catch (const std::exception& e) {
      BOOST_TEST(std::string(e.what()).find("scope tcp/1") != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

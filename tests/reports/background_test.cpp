// reports::in_background: a lone summary writer renders each scope on the
// caller's thread and leaves the scope with the caller; what it prints must
// be what the same writer prints when called directly.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/checker.hpp"
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

// `rdmaconf check --jobs N`: the report hears, call for call and in the same
// order, what one thread tells it, whatever the threads' timing; with no
// room to hold scopes (every scope waits for its input's turn) too; an
// input that cannot be read keeps its place; a writer that throws stops
// every thread and the error comes out.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cli/check_inputs.hpp"

namespace fs = std::filesystem;
namespace c = rdmaconf::conformance;
using rdmaconf::cli::check_inputs;
using rdmaconf::cli::CheckInputsOptions;

namespace {

// Every call as a line.
struct Recorder final : rdmaconf::reports::ReportWriter {
  std::vector<std::string> calls;
  int throw_at = -1;  // the scope call that throws
  void begin_input(const std::string& p) override { calls.push_back("begin " + fs::path(p).filename().string()); }
  void scope(const c::ScopeResult& s) override {
    if (throw_at >= 0 && static_cast<int>(calls.size()) >= throw_at) throw std::runtime_error("the disk is full");
    std::string v;
    for (const auto& o : s.outcomes) v += std::to_string(static_cast<int>(o.tally.verdict()));
    calls.push_back("scope " + s.id + " " + s.label + " " + v);
  }
  void end_input(const c::InputResult& in) override {
    calls.push_back("end " + fs::path(in.path).filename().string() + " " + in.error + " " + std::to_string(in.stats.frames));
  }
  void end(const rdmaconf::reports::Totals&) override {}
};

std::vector<std::string> inputs() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden"))
    if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  v.resize(std::min<std::size_t>(v.size(), 40));
  // One that cannot be read, in the middle.
  const auto bad = fs::temp_directory_path() / "rdmaconf-jobs-not-a-capture.pcap";
  std::ofstream(bad) << "this is not a capture";
  v.insert(v.begin() + 17, bad.string());
  return v;
}

std::pair<std::vector<std::string>, std::string> run(unsigned jobs, std::size_t budget) {
  Recorder r;
  std::ostringstream err;
  CheckInputsOptions how;
  how.jobs = jobs;
  how.hold_budget = budget;
  const auto t = check_inputs(c::CheckOptions{}, inputs(), how, &r, err);
  r.calls.push_back("totals " + std::to_string(t.pass) + " " + std::to_string(t.fail) + " " + std::to_string(t.input_errors));
  return {r.calls, err.str()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(check_inputs_jobs)

BOOST_AUTO_TEST_CASE(several_threads_report_as_one) {
  const auto [one, one_err] = run(1, 32u << 20);
  BOOST_TEST(one.size() > 100u);
  BOOST_TEST(one_err.find("rdmaconf-jobs-not-a-capture.pcap") != std::string::npos, one_err);
  for (const unsigned jobs : {2u, 3u, 8u})
    for (const std::size_t budget : {std::size_t{32} << 20, std::size_t{0}}) {
      const auto [many, many_err] = run(jobs, budget);
      BOOST_TEST(many == one, boost::test_tools::per_element());
      BOOST_TEST(many_err == one_err);
    }
}

BOOST_AUTO_TEST_CASE(a_writer_that_throws_stops_everyone) {
  const auto one = run(1, 32u << 20).first;
  for (const unsigned jobs : {1u, 3u}) {
    Recorder r;
    r.throw_at = 30;
    std::ostringstream err;
    CheckInputsOptions how;
    how.jobs = jobs;
    BOOST_CHECK_THROW(check_inputs(c::CheckOptions{}, inputs(), how, &r, err), std::runtime_error);
    // What came before the throw, as one thread has it, and nothing after.
    BOOST_TEST(r.calls.size() <= 31u);
    BOOST_TEST(r.calls.size() >= 30u);
    BOOST_TEST(std::equal(r.calls.begin(), r.calls.end(), one.begin()));
  }
}

BOOST_AUTO_TEST_SUITE_END()

// The toy family, capture side and live side, built into a program of its
// own from the suite's libraries and this folder: one line in its family
// list (families.def here) and one in the test tree's list of folders are
// all it takes. The program's commands take it up like any family:
// `cases`, `check`, `live toy`; and no file outside this folder names it
// but that one list.
#define BOOST_TEST_MODULE rdmaconf_toy_family
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "captures/io/pcap_writer.hpp"
#include "cli/app.hpp"
#include "tests/family/toy/toy.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;

namespace {

struct Outcome {
  int status = 0;
  std::string out;
};

// The program's command line, run in this process, its standard output kept.
Outcome command(std::vector<std::string> args) {
  args.insert(args.begin(), "rdmaconf");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  const int status = cli::run_main(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old);
  return {status, out.str()};
}

fs::path temp(const std::string& name) { return fs::temp_directory_path() / fmt::format("rdmaconf-toy-{}-{}", ::getpid(), name); }

std::vector<std::byte> bytes(std::initializer_list<int> l) {
  std::vector<std::byte> b;
  for (int x : l) b.push_back(std::byte(x));
  return b;
}

// The family's count in the input's stats.
std::uint64_t j_stats_toy(const fs::path& json) {
  std::ifstream in(json);
  return nlohmann::json::parse(in)["inputs"][0]["stats"].value("toy_messages", std::uint64_t{0});
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_catalog_lists_the_toy_cases) {
  const auto r = command({"cases", "--json"});
  BOOST_TEST_REQUIRE(r.status == 0);
  bool capture = false, live = false, iwarp = false;
  for (const auto& c : nlohmann::json::parse(r.out)) {
    capture |= c["id"] == "toy.length" && c["family"] == "toy" && !c.contains("live");
    live |= c["id"] == "toy.live.echo" && c.value("live", "") == "toy";
    iwarp |= c["family"] == "iwarp";
  }
  BOOST_TEST(capture);
  BOOST_TEST(live);
  BOOST_TEST(iwarp);  // the suite's own families are all still there
}

// How the capture is made says what the checker must find: frames 1 and 3
// are whole toy messages, frame 2 counts 5 octets and carries 2, frame 4
// goes to another port (not the family's).
BOOST_AUTO_TEST_CASE(check_judges_toy_traffic) {
  const fs::path cap = temp("capture.pcap"), json = temp("report.json");
  {
    captures::io::PcapWriter w(cap.string());
    const auto a = captures::io::host_v4(10, 0, 0, 1, 4000), b = captures::io::host_v4(10, 0, 0, 2, toy::kPort);
    auto other = b;
    other.port = 10;
    for (const auto& [to, m] : {std::pair{b, bytes({2, 1, 1})}, std::pair{b, bytes({5, 1, 2})}, std::pair{b, bytes({0})},
                                std::pair{other, bytes({9})}})
      w.ip_packet(a, to, protocols::Bytes(captures::io::ip_udp(a, to, protocols::Bytes(m), false)));
  }
  const auto r = command({"check", cap.string(), "--json", json.string(), "--quiet"});
  BOOST_TEST(r.status == 1);  // a FAIL
  BOOST_TEST(j_stats_toy(json) == 3);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  // The toy's scope, beside those of the families that judge every UDP datagram.
  std::vector<nlohmann::json> toy;
  for (const auto& s : j["inputs"][0]["scopes"])
    if (s["family"] == "toy") toy.push_back(s);
  BOOST_TEST_REQUIRE(toy.size() == 1u);
  BOOST_TEST(toy[0]["frames"] == nlohmann::json::array({1, 3}));
  const auto& res = toy[0]["results"][0];
  BOOST_TEST(res["case"] == "toy.length");
  BOOST_TEST(res["verdict"] == "FAIL");
  BOOST_TEST(res["checked"] == 3);
  BOOST_TEST(res["failed"] == 1);
  BOOST_TEST(res["evidence"][0]["frames"] == nlohmann::json::array({2}));
  fs::remove(cap);
  fs::remove(json);
}

BOOST_AUTO_TEST_CASE(live_runs_the_toy_scenario) {
  const auto list = command({"live", "toy", "--list"});
  BOOST_TEST(list.out.find("echo") != std::string::npos, list.out);
  BOOST_TEST(list.out.find("toy.live.echo") != std::string::npos, list.out);
  const fs::path json = temp("live.json");
  auto r = command({"live", "toy", "--scenario", "echo", "--messages", "10", "--json", json.string(), "--quiet"});
  BOOST_TEST(r.status == 0);
  {
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    BOOST_TEST(j["inputs"][0]["scopes"][0]["results"][0]["verdict"] == "PASS");
    BOOST_TEST(j["inputs"][0]["scopes"][0]["results"][0]["checked"] == 10);
  }
  // The 4th message cut short: the case FAILs there, and the command says so.
  r = command({"live", "toy", "--messages", "10", "--corrupt", "4", "--json", json.string(), "--quiet"});
  BOOST_TEST(r.status == 1);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  BOOST_TEST(j["inputs"][0]["scopes"][0]["results"][0]["failed"] == 1);
  BOOST_TEST(j["inputs"][0]["scopes"][0]["results"][0]["evidence"][0]["frames"] == nlohmann::json::array({4}));
  fs::remove(json);
  BOOST_TEST(command({"live", "toy", "--scenario", "nosuch"}).status == 2);
}

// The count of files the family touches outside its folder: only the test
// tree's list of folders names it (its families.def, here, is its program's
// family list). Sources, CMake lists and scripts are read; documentation
// may name it.
BOOST_AUTO_TEST_CASE(the_toy_touches_one_file_outside_its_folder) {
  const fs::path root(RDMACONF_SOURCE_DIR);
  const std::regex names(R"((family/toy|conformance::toy|interop::toy|RDMACONF_FAMILY\(toy\)|rdmaconf::toy\b))");
  std::vector<std::string> outside;
  std::size_t read = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory()) {
      if (rel.starts_with("build") || rel.starts_with(".") || rel == "out" || rel == "tests/family/toy" || rel == "captures/golden" ||
          rel == "captures/lab")
        it.disable_recursion_pending();
      continue;
    }
    const auto ext = it->path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c" && ext != ".txt" && ext != ".def" && ext != ".py" &&
        ext != ".sh" && it->path().filename() != "quickstart" && it->path().filename() != "run")
      continue;
    std::ifstream in(it->path());
    std::stringstream text;
    text << in.rdbuf();
    ++read;
    if (std::regex_search(text.str(), names)) outside.push_back(rel);
  }
  BOOST_TEST(read > 100u);
  BOOST_TEST(outside == std::vector<std::string>{"tests/CMakeLists.txt"}, fmt::format("{}", fmt::join(outside, ", ")));
}

// Findings' citations of the kernel's source (interop/lab/citations.hpp):
// held against a source tree made here, every way a citation can drift is
// caught and named; and the shipped findings cite every kernel of the lab's
// matrix (the lab holds them against the real source when it runs).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "interop/lab/citations.hpp"
#include "interop/lab/lab.hpp"

namespace lab = rdmaconf::interop::lab;
namespace fs = std::filesystem;

namespace {

// A small tree with one C file: a prototype, two functions, a header.
fs::path tree() {
  const fs::path top = fs::temp_directory_path() / ("rdmaconf-cites-" + std::to_string(::getpid()));
  fs::create_directories(top / "drivers/x");
  std::ofstream(top / "drivers/x/a.c") << "static int helper(int v);\n"   // 1
                                          "\n"                             // 2
                                          "static int check_rev(int v)\n"  // 3
                                          "{\n"                            // 4
                                          "\tif (v > 2)\n"                 // 5
                                          "\t\treturn -1;\n"               // 6
                                          "\treturn 0;\n"                  // 7
                                          "}\n"                            // 8
                                          "\n"                             // 9
                                          "int other(void)\n"              // 10
                                          "{\n"                            // 11
                                          "\treturn helper(3);\n"          // 12
                                          "}\n"                            // 13
                                          "int after;\n";                  // 14
  std::ofstream(top / "drivers/x/a.h") << "#define KEY 0x0800\n";
  return top;
}

lab::Citation cite(std::string file, std::string function, std::string anchor, unsigned first, unsigned last) {
  return lab::parse_citation({{"file", file},
                              {"function", function},
                              {"anchor", anchor},
                              {"what", "w"},
                              {"lines", {{"k1", first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last)}}}});
}

std::string problem_of(const lab::Citation& c, const fs::path& top, const std::string& kernel = "k1") {
  const auto p = lab::check_citations({{"f", {c}}}, kernel, top);
  return p.empty() ? std::string() : p.front().problem;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lab_citations)

BOOST_AUTO_TEST_CASE(a_citation_that_holds_passes_and_each_drift_is_named) {
  const fs::path top = tree();
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "check_rev", "if (v > 2)", 5, 6), top) == "");
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "other", "return helper(3);", 12, 12), top) == "");
  BOOST_TEST(problem_of(cite("drivers/x/a.h", "", "KEY 0x0800", 1, 1), top) == "");
  // The code moved: the lines no longer hold the anchor; where it went is said.
  const auto moved = problem_of(cite("drivers/x/a.c", "check_rev", "if (v > 2)", 6, 7), top);
  BOOST_TEST(moved.find("findings.f.source[0] (drivers/x/a.c:6-7 on kernel k1): the lines do not hold \"if (v > 2)\"; it is at line 5") == 0,
             moved);
  // The code is gone.
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "check_rev", "if (v > 3)", 5, 6), top).find("the file does not hold it at all") !=
             std::string::npos);
  // Another function holds the lines; lines outside any function; beyond the end; no such file.
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "check_rev", "return helper(3);", 12, 12), top).find("the lines are in other(), not in check_rev()") !=
             std::string::npos);
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "other", "int after;", 14, 14), top).find("the lines are in no function, not in other()") !=
             std::string::npos);
  BOOST_TEST(problem_of(cite("drivers/x/a.c", "other", "x", 20, 21), top).find("the file has 14 lines") != std::string::npos);
  BOOST_TEST(problem_of(cite("drivers/x/b.c", "other", "x", 1, 1), top).find("no such file in") != std::string::npos);
  // A kernel the citation gives no lines for is not held (nothing to hold).
  BOOST_TEST(problem_of(cite("drivers/x/b.c", "other", "x", 1, 1), top, "k2") == "");
  fs::remove_all(top);
}

BOOST_AUTO_TEST_CASE(a_malformed_citation_is_refused_by_field) {
  const auto refused = [](const nlohmann::json& j, const std::string& want) {
    try {
      lab::parse_citation(j);
      BOOST_ERROR("accepted: " << j.dump());
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string(e.what()).find(want) != std::string::npos, e.what());
    }
  };
  const nlohmann::json good = {{"file", "a.c"}, {"anchor", "x"}, {"what", "w"}, {"lines", {{"6.12", "3-4"}}}};
  BOOST_TEST(lab::parse_citation(good).where("6.12") == "a.c:3-4");
  BOOST_TEST(lab::parse_citation("a note").note());
  auto j = good;
  j["lines"] = {{"6.12", "4-3"}};
  refused(j, "lines.6.12: expected");
  j["lines"] = {{"6.12", "0"}};
  refused(j, "lines.6.12: expected");
  j["lines"] = nlohmann::json::object();
  refused(j, "lines: expected an object");
  j = good;
  j["file"] = "../etc/passwd";
  refused(j, "file: expected a path inside the kernel's source");
  j = good;
  j["anchor"] = "a\nb";
  refused(j, "anchor: expected a fragment of one line");
  j = good;
  j["line"] = "3";
  refused(j, "unknown field \"line\"");
  j = good;
  j.erase("what");
  refused(j, "what is missing");
  refused(5, "expected a citation object");
}

// Every finding the lab ships cites the source on every kernel of the
// matrix (LAB_DIR/kernels), with lines, a function where the file is C, and
// a security finding carries what its report needs.
BOOST_AUTO_TEST_CASE(the_shipped_findings_cite_every_kernel_of_the_matrix) {
  const fs::path dir = RDMACONF_SOURCE_DIR "/interop/lab";
  const auto table = lab::read_cells(lab::default_cells_file(dir));
  std::vector<std::string> kernels;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    if (e.path().extension() == ".kernel") kernels.push_back(e.path().stem().string());
  BOOST_TEST_REQUIRE(kernels.size() >= 2u);
  BOOST_TEST(std::count(kernels.begin(), kernels.end(), "6.12") == 1);
  BOOST_TEST(std::count(kernels.begin(), kernels.end(), "sid") == 1);
  unsigned security = 0;
  for (const auto& [name, f] : table.findings) {
    BOOST_TEST(!f.source.empty(), name << ": no citation");
    for (const auto& c : f.source) {
      BOOST_TEST(!c.note(), name << ": a citation without file and lines: " << c.what);
      for (const auto& k : kernels) BOOST_TEST(c.lines.count(k) == 1u, name << ": " << c.file << " has no lines for kernel " << k);
      if (c.file.size() > 2 && c.file.substr(c.file.size() - 2) == ".c") BOOST_TEST(!c.function.empty(), name << ": " << c.file);
    }
    if (f.severity == "security") {
      ++security;
      BOOST_TEST((!f.impact.empty() && !f.trigger.empty() && !f.root_cause.empty() && !f.fix.empty()), name);
    }
  }
  BOOST_TEST(security >= 1u);
}

BOOST_AUTO_TEST_SUITE_END()

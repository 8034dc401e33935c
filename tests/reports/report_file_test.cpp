// reports::ReportFile: what goes in comes out, whatever the size of the
// pieces and whether the write-behind ran; failures are reported.
#include "reports/report_file.hpp"

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

using rdmaconf::reports::ReportFile;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const char* name) {
  return fs::temp_directory_path() / (std::string("rdmaconf-report-file-") + std::to_string(::getpid()) + "-" + name);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `total` octets in pieces of random size (1 octet to 3 MiB) through
// `out`, and returns what was written.
std::string write_pieces(std::ostream& out, std::size_t total, unsigned seed) {
  std::mt19937 rng(seed);
  std::string all;
  std::uniform_int_distribution<std::size_t> kind(0, 3), small(1, 200), big(1, 3u << 20);
  while (all.size() < total) {
    const std::size_t n = std::min(total - all.size(), kind(rng) == 0 ? big(rng) : small(rng));
    std::string piece(n, '\0');
    for (auto& c : piece) c = static_cast<char>('a' + rng() % 26);
    if (n == 1) {
      out.put(piece[0]);
    } else {
      out.write(piece.data(), static_cast<std::streamsize>(n));
    }
    all += piece;
  }
  return all;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(report_file)

// Past the write-behind threshold (small here) every window goes to the disk
// and leaves the page cache; the file must still hold exactly what was written.
BOOST_AUTO_TEST_CASE(write_behind_keeps_every_octet) {
  for (const auto& [from, window] : {std::pair<std::uint64_t, std::uint64_t>{1u << 20, 64u << 10}, {0, 4096}, {64u << 20, 1u << 20}}) {
    const auto path = temp_path("behind");
    ReportFile f(from, window);
    f.open(path.string());
    BOOST_TEST_REQUIRE(static_cast<bool>(f));
    const std::string expected = write_pieces(f, 12u << 20, static_cast<unsigned>(from + window));
    f.close();
    BOOST_TEST(static_cast<bool>(f));
    BOOST_TEST(fs::file_size(path) == expected.size());
    BOOST_TEST((slurp(path) == expected));
    fs::remove(path);
  }
}

// The default thresholds, a small report: written as any stream writes it.
BOOST_AUTO_TEST_CASE(small_report_and_reopen) {
  const auto path = temp_path("small");
  {
    std::ofstream(path) << "an older, longer report that the new one replaces";
  }
  ReportFile f;
  f.open(path.string());
  f << "{\"inputs\":[]}" << '\n';
  f.flush();
  BOOST_TEST(static_cast<bool>(f));
  BOOST_TEST(slurp(path) == "{\"inputs\":[]}\n");  // flush() reached the file, which was truncated
  f.close();
  BOOST_TEST(static_cast<bool>(f));
  fs::remove(path);
}

// Not a regular file: no write-behind, the octets go through.
BOOST_AUTO_TEST_CASE(dev_null) {
  ReportFile f(0, 4096);
  f.open("/dev/null");
  BOOST_TEST_REQUIRE(static_cast<bool>(f));
  write_pieces(f, 1u << 20, 7);
  f.close();
  BOOST_TEST(static_cast<bool>(f));
}

// A full disk: the stream goes bad, at the latest when it is closed.
BOOST_AUTO_TEST_CASE(full_device_fails) {
  if (!fs::exists("/dev/full")) return;
  ReportFile f;
  f.open("/dev/full");
  BOOST_TEST_REQUIRE(static_cast<bool>(f));
  f << "a few octets that stay in the buffer";
  BOOST_TEST(static_cast<bool>(f));
  f.close();
  BOOST_TEST(!f);
  ReportFile g;
  g.open("/dev/full");
  write_pieces(g, 4u << 20, 3);  // large pieces go straight to the device
  BOOST_TEST(!g);
}

// A folder that does not exist: open fails.
BOOST_AUTO_TEST_CASE(open_fails) {
  ReportFile f;
  f.open((temp_path("no-such-folder") / "r.json").string());
  BOOST_TEST(!f);
}

BOOST_AUTO_TEST_SUITE_END()

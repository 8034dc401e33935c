// The report commands on hostile files: whatever a check or lab report, a
// shard, a history or a coverage file holds, `rdmaconf report html`,
// `findings`, `summary`, `diff`, `history` and `merge` end with status 0,
// 1 or 2 (2: a message naming the file), never an abort, a crash or an
// exception that escapes (issue 66: a report can come from anywhere).
//
// The first octet picks the command; the rest is the file it reads (diff
// and merge: two files, split at the first NUL; history: an existing
// history.jsonl that `report history` appends to and prunes, then `report
// html --history` reads). Seeds: fuzz/make_seeds.py, real reports of the
// golden captures made by the build's own binary.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/app.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch() {
  static const fs::path dir = [] {
    const auto d = fs::temp_directory_path() / ("rdmaconf-fuzz-reports-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void put(const fs::path& p, std::string_view s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), static_cast<std::streamsize>(s.size()));
}

// The smallest check report the commands take: the other file of html
// --coverage and html --history.
const fs::path& plain_report() {
  static const fs::path p = [] {
    const auto f = scratch() / "plain.json";
    put(f, R"({"inputs": [{"path": "x.pcap", "scopes": [{"id": "s", "results": [{"case": "iwarp.mpa.fpdu.pad", )"
           R"("verdict": "PASS"}]}]}]})");
    return f;
  }();
  return p;
}

void run(std::vector<std::string> args) {
  args.insert(args.begin(), "rdmaconf");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = rdmaconf::cli::run_main(static_cast<int>(args.size()), argv.data());
  if (rc < 0 || rc > 2) std::abort();  // (a status no command documents)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto nul = body.find('\0');
  const std::string_view first = body.substr(0, nul), second = nul == std::string_view::npos ? body : body.substr(nul + 1);
  const fs::path& d = scratch();
  const auto a = (d / "a.json").string(), b = (d / "b.json").string(), out = (d / "out").string();
  const auto hist = d / "history";
  std::error_code ec;
  fs::remove_all(d / "out", ec);
  switch (data[0] % 7) {
    case 0:
      put(a, body);
      run({"report", "html", a, "-o", out + "/page.html"});
      break;
    case 1:
      put(a, body);
      run({"report", "findings", a, "-o", out + "/findings", "--json", out + "/findings.json"});
      break;
    case 2:
      put(a, body);
      run({"report", "summary", a, "-o", out + "/summary.md"});
      break;
    case 3:
      put(a, first);
      put(b, second);
      run({"report", "diff", a, b});
      break;
    case 4:
      fs::remove_all(hist, ec);
      fs::create_directories(hist, ec);
      put(hist / "history.jsonl", body);
      run({"report", "history", "--dir", hist.string(), plain_report().string(), "--keep-runs", "2"});
      run({"report", "html", plain_report().string(), "--history", hist.string(), "-o", out + "/page.html"});
      break;
    case 5:
      put(a, first);
      put(b, second);
      run({"report", "merge", a, b, "-o", out + "/merged.json"});
      break;
    default:
      put(a, body);
      run({"report", "html", plain_report().string(), "--coverage", a, "-o", out + "/page.html"});
      break;
  }
  return 0;
}

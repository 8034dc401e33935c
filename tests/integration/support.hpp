#pragma once
// Helpers for tests that run the built programs and outside oracles.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace rdmaconf::test {

struct Run {
  int status = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes to stdout with 2>&1 in cmd).
inline Run run(const std::string& cmd) {
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("rdmaconf-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline const std::string kSource = RDMACONF_SOURCE_DIR;
inline const std::string kBin = RDMACONF_BIN;
inline const std::string kGen = RDMACONF_GEN;
inline const std::string kGolden = kSource + "/captures/golden";

}  // namespace rdmaconf::test

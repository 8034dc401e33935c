#pragma once
// `rdmaconf nic check --plugin PATH.so`: the Fast UDP NIC plug-in suite
// (interop/fastudp/nic_suite.hpp), reported like `rdmaconf check`.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rdmaconf::cli {

class NicCommands {
 public:
  explicit NicCommands(CLI::App& app);
  bool selected() const;
  int run(const std::vector<std::string>& arguments) const;

 private:
  CLI::App* check_ = nullptr;
  CLI::App* live_ = nullptr;
  std::uint32_t live_count_ = 2000, live_size_ = 1472, live_corrupt_ = 10;
  std::uint32_t live_coalesce_entries_ = 32, live_coalesce_us_ = 50;
  int live_run() const;
  std::string plugin_, plugin_args_, json_out_, junit_out_, pcap_dir_;
  std::vector<std::string> scenarios_, patterns_;
  int timeout_ms_ = 30000;
  unsigned plugin_memory_mib_ = 512;
  bool list_ = false, quiet_ = false, verbose_ = false, in_process_ = false;
};

}  // namespace rdmaconf::cli

#pragma once
// `rdmaconf unet live`: two U-Net nodes, scenarios and fault injection
// (interop/unet/live.hpp), reported like `rdmaconf check`.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rdmaconf::cli {

class UnetCommands {
 public:
  explicit UnetCommands(CLI::App& app);
  bool selected() const;
  int run(const std::vector<std::string>& arguments) const;

 private:
  CLI::App* live_ = nullptr;
  CLI::App* cleanup_ = nullptr;
  std::string path_ = "memory", json_out_, junit_out_, pcap_, fault_;
  std::vector<std::string> scenarios_, patterns_;
  std::uint32_t messages_ = 64;
  int timeout_ms_ = 5000;
  bool list_ = false, quiet_ = false, verbose_ = false;
};

}  // namespace rdmaconf::cli

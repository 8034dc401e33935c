// Device profiles and the DUT driver's target (device.hpp).
#include "interop/lab/device.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/lab/lab.hpp"
#include "interop/lab/peers.hpp"

namespace rdmaconf::interop::lab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kDeviceFormat = "rdmaconf device profile 1";

// Reads one profile's fields, each refusal naming the file and the field.
struct Fields {
  const json& doc;
  std::string_view file;
  [[noreturn]] void fail(std::string_view field, const std::string& what) const {
    throw ProfileError(fmt::format("{}: {}: {}", file, field, what));
  }
  std::string text(const char* key, bool required, std::size_t max = 256) const {
    if (!doc.contains(key)) {
      if (required) fail(key, "missing (a string)");
      return {};
    }
    if (!doc[key].is_string()) fail(key, fmt::format("must be a string, not {}", doc[key].type_name()));
    std::string s = doc[key].get<std::string>();
    if (required && s.empty()) fail(key, "must not be empty");
    if (s.size() > max) fail(key, fmt::format("longer than {} characters", max));
    if (s.find('\n') != std::string::npos && max <= 256) fail(key, "holds a line break");
    return s;
  }
  std::vector<std::string> words(const char* key, bool required) const {
    if (!doc.contains(key)) {
      if (required) fail(key, "missing (a list of strings)");
      return {};
    }
    const auto& v = doc[key];
    if (!v.is_array()) fail(key, fmt::format("must be a list of strings, not {}", v.type_name()));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string() || v[i].get<std::string>().empty())
        fail(fmt::format("{}[{}]", key, i), "must be a non-empty string");
      out.push_back(v[i].get<std::string>());
    }
    if (required && out.empty()) fail(key, "must name at least one");
    return out;
  }
};

// A word the device's shell or ours takes as it is: an RDMA device, a netdev.
bool plain_word(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

bool ipv4(std::string_view s) {
  int parts = 0;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find('.', i);
    if (j == std::string_view::npos) j = s.size();
    const auto part = s.substr(i, j - i);
    if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(part)) > 255)
      return false;
    ++parts;
    i = j + 1;
  }
  return parts == 4;
}

}  // namespace

DeviceProfile parse_profile(std::string_view text, std::string_view file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ProfileError(fmt::format("{}: not JSON: {}", file, e.what()));
  }
  if (!doc.is_object()) throw ProfileError(fmt::format("{}: must be a JSON object", file));
  const Fields f{doc, file};
  static const char* const kKnown[] = {"format", "name",    "title",   "driver",    "tested",    "sources",
                                       "family", "device",  "netdev",  "address",   "gid_index", "programs",
                                       "knobs",  "configure", "kernel_log", "comment"};
  for (const auto& item : doc.items()) {
    const std::string& key = item.key();
    if (std::find_if(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return key == k; }) == std::end(kKnown))
      f.fail(key, fmt::format("not a field of a device profile ({})", fmt::join(kKnown, ", ")));
  }
  if (f.text("format", true) != kDeviceFormat) f.fail("format", fmt::format("must be \"{}\"", kDeviceFormat));
  DeviceProfile p;
  p.file = std::string(file);
  p.name = f.text("name", true, 64);
  if (!plain_word(p.name)) f.fail("name", "letters, digits, '-', '_' and '.' only");
  p.title = f.text("title", true);
  p.driver = f.text("driver", true, 64);
  if (!doc.contains("tested") || !doc["tested"].is_boolean())
    f.fail("tested", "missing or not true/false (false: written from public sources, never run by us)");
  p.tested = doc["tested"].get<bool>();
  p.sources = f.words("sources", !p.tested);
  p.family = f.text("family", true, 32);
  p.peer = find_peer_by_family(p.family);
  if (!p.peer) f.fail("family", fmt::format("\"{}\" is not a family the lab runs cells of ({})", p.family, family_names()));
  p.device = f.text("device", true, 64);
  if (!plain_word(p.device)) f.fail("device", fmt::format("\"{}\" is not an RDMA device name", p.device));
  p.netdev = f.text("netdev", true, 64);
  if (!plain_word(p.netdev)) f.fail("netdev", fmt::format("\"{}\" is not a network interface name", p.netdev));
  p.address = f.text("address", true, 64);
  if (!ipv4(p.address)) f.fail("address", fmt::format("\"{}\" is not an IPv4 address", p.address));
  if (doc.contains("gid_index")) {
    if (!doc["gid_index"].is_number_unsigned() || doc["gid_index"].get<std::uint64_t>() > 255)
      f.fail("gid_index", "must be a number from 0 to 255 (perftest's -x)");
    p.gid_index = doc["gid_index"].get<unsigned>();
  }
  p.programs = f.words("programs", true);
  for (std::size_t i = 0; i < p.programs.size(); ++i)
    if (!plain_word(p.programs[i])) f.fail(fmt::format("programs[{}]", i), fmt::format("\"{}\" is not a program name", p.programs[i]));
  p.configure = f.text("configure", false, 1024);
  p.kernel_log = f.text("kernel_log", false, 1024);
  if (!doc.contains("knobs") || !doc["knobs"].is_object()) f.fail("knobs", "missing or not an object (the family's knobs)");
  p.knobs = doc["knobs"];
  if (auto bad = p.peer->check_knobs(p.knobs, !p.configure.empty()); !bad.empty())
    throw ProfileError(fmt::format("{}: knobs.{}", file, bad));
  return p;
}

fs::path profile_path(const std::string& name_or_file, const fs::path& lab_dir) {
  if (name_or_file.find('/') != std::string::npos || name_or_file.ends_with(".json")) return name_or_file;
  return lab_dir / "profiles" / (name_or_file + ".json");
}

DeviceProfile read_profile(const std::string& name_or_file, const fs::path& lab_dir) {
  const fs::path file = profile_path(name_or_file, lab_dir);
  std::ifstream in(file);
  if (!in) {
    const auto names = profile_names(lab_dir);
    throw ProfileError(fmt::format("{}: cannot read the profile{}", file.string(),
                                   names.empty() ? std::string()
                                                 : fmt::format(" (profiles by name: {})", fmt::join(names, ", "))));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_profile(ss.str(), file.string());
}

std::vector<std::string> profile_names(const fs::path& lab_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(lab_dir / "profiles", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string cannot_run(const DeviceProfile& p, const Cell& c) {
  if (c.peer->family != p.family)
    return fmt::format("a cell of the {} family; the device speaks {}", c.peer->family, p.family);
  if (c.our_role == "none")
    return "a kernel peer against itself: it needs two devices, and a device under test faces our engine";
  const std::string program = c.program.substr(0, c.program.find(' '));
  if (!program.empty() && std::find(p.programs.begin(), p.programs.end(), program) == p.programs.end())
    return fmt::format("the device's host has no {} (profile programs: {})", program, fmt::join(p.programs, ", "));
  return c.peer->device_refuses(c, p.knobs);
}

std::string configure_line(const DeviceProfile& p, const Cell& c) {
  if (p.configure.empty()) return {};
  return "configure " + shell_quote(c.peer->fill_configure(c, p.configure));
}

std::string Dut::text() const {
  switch (kind) {
    case Kind::guest: return "guest";
    case Kind::local: return "local";
    case Kind::ssh: return "ssh://" + destination + (port.empty() ? "" : ":" + port);
  }
  return {};
}

std::optional<Dut> parse_dut(std::string_view text, std::string& error) {
  Dut d;
  if (text == "guest") return d;
  if (text == "local") {
    d.kind = Dut::Kind::local;
    return d;
  }
  if (!text.starts_with("ssh://")) {
    error = fmt::format("--dut: \"{}\" is not guest, local or ssh://[USER@]HOST[:PORT]", text);
    return std::nullopt;
  }
  std::string_view rest = text.substr(6);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const auto at = rest.rfind('@');
  const std::string_view host_port = at == std::string_view::npos ? rest : rest.substr(at + 1);
  std::string_view host = host_port;
  if (const auto colon = host_port.rfind(':'); colon != std::string_view::npos && host_port.find(']') == std::string_view::npos) {
    d.port = std::string(host_port.substr(colon + 1));
    host = host_port.substr(0, colon);
    if (d.port.empty() || d.port.size() > 5 || !std::all_of(d.port.begin(), d.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(d.port) == 0 || std::stoul(d.port) > 65535) {
      error = fmt::format("--dut: \"{}\" is not a port", d.port);
      return std::nullopt;
    }
  }
  const std::string_view user = at == std::string_view::npos ? std::string_view() : rest.substr(0, at);
  const auto bad_char = [](std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
      return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
               c == '_' || c == ':' || c == '[' || c == ']');
    });
  };
  if (host.empty() || bad_char(host) || host.front() == '-' || bad_char(user) || (at != std::string_view::npos && user.empty())) {
    error = fmt::format("--dut: \"{}\" is not ssh://[USER@]HOST[:PORT]", text);
    return std::nullopt;
  }
  d.kind = Dut::Kind::ssh;
  d.destination = user.empty() ? std::string(host) : fmt::format("{}@{}", user, host);
  return d;
}

}  // namespace rdmaconf::interop::lab

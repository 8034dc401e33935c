#include "captures/io/hash_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace rdmaconf::captures::io {

std::optional<FileIdentity> identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  FileIdentity id;
  id.dev = static_cast<std::uint64_t>(st.st_dev);
  id.ino = static_cast<std::uint64_t>(st.st_ino);
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return id;
}

std::filesystem::path HashCache::default_dir() {
  if (const char* e = std::getenv("RDMACONF_HASH_CACHE")) {
    const std::string v = e;
    if (v.empty() || v == "off") return {};
    return v;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::filesystem::path(x) / "rdmaconf" / "sha256";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::filesystem::path(h) / ".cache" / "rdmaconf" / "sha256";
  return {};
}

std::filesystem::path HashCache::entry(const FileIdentity& id) const {
  return dir_ / fmt::format("{:x}-{:x}", id.dev, id.ino);
}

namespace {

std::string line_of(const FileIdentity& id) {
  return fmt::format("{} {} {}", id.size, id.mtime_ns, id.ctime_ns);
}

bool is_hex_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string HashCache::find(const FileIdentity& id) const {
  if (dir_.empty()) return {};
  std::ifstream in(entry(id));
  std::string identity, sha;
  if (!in || !std::getline(in, identity) || !std::getline(in, sha)) return {};
  return identity == line_of(id) && is_hex_sha256(sha) ? sha : std::string();
}

bool HashCache::store(const FileIdentity& id, const std::string& sha256) const {
  if (dir_.empty() || !is_hex_sha256(sha256)) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto final_path = entry(id);
  const auto tmp = std::filesystem::path(final_path.string() + fmt::format(".{}.tmp", ::getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line_of(id) << "\n" << sha256 << "\n";
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

}  // namespace rdmaconf::captures::io

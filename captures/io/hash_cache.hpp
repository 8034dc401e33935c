#pragma once
// Inputs hashed once per content. A capture's SHA-256 (which the JSON report
// carries) costs a second pass over its octets, on a core the check could
// use; a nightly run checks the same unchanged files again and again. The
// cache keeps, per file, the hash with what identifies that content on
// this machine: device, inode, size, modification and status-change times
// (the change time moves on every write and cannot be set back by a user).
// A file whose identity differs in any of them is hashed afresh.
//
// One small file per (device, inode) in the cache directory, replaced by a
// rename: concurrent runs (shards on one machine) never see half an entry;
// the worst a race costs is one more hash.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace rdmaconf::captures::io {

struct FileIdentity {
  std::uint64_t dev = 0, ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of a regular file; nothing for anything else or when it
// cannot be asked.
std::optional<FileIdentity> identify(const std::string& path);

class HashCache {
 public:
  explicit HashCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // The directory a run uses unless told otherwise: $RDMACONF_HASH_CACHE
  // (empty or "off": none), else $XDG_CACHE_HOME/rdmaconf/sha256, else
  // $HOME/.cache/rdmaconf/sha256; empty when there is none.
  static std::filesystem::path default_dir();

  // The hash stored for exactly this identity, or "".
  std::string find(const FileIdentity& id) const;
  // Stores it (creating the directory); false when it could not.
  bool store(const FileIdentity& id, const std::string& sha256) const;

 private:
  std::filesystem::path entry(const FileIdentity& id) const;
  std::filesystem::path dir_;
};

}  // namespace rdmaconf::captures::io

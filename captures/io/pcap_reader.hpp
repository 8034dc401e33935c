#pragma once
// Streams frames out of a pcap or pcapng file through libpcap, one at a time,
// while a second thread computes the file's SHA-256 for the report.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocols/core/bits.hpp"

namespace rdmaconf::captures::io {

struct Frame {
  std::uint64_t number = 0;  // 1-based, as Wireshark counts
  std::int64_t ts_sec = 0;
  std::int64_t ts_usec = 0;
  std::uint32_t orig_len = 0;
  std::uint32_t caplen = 0;  // as the record says (data may hold fewer: the file's snapshot length)
  protocols::Bytes data;     // valid until the next call to next()
  // Non-null: the record holds no packet of the capture's link type (an
  // unwrapped record's, see PcapReader::linktype()), and says why; `data`
  // is then empty.
  const char* problem = nullptr;
};

// The SHA-256 of some octets, as 64 lower-case hex digits.
std::string sha256_hex(protocols::Bytes b);

class PcapReader {
 public:
  // Opens `path`; on failure returns nullptr and sets `error`. With `hash`
  // false, sha256() is empty and no second thread runs.
  static std::unique_ptr<PcapReader> open(const std::string& path, std::string& error, bool hash = true);
  // The same from a buffer in memory (which must outlive the reader);
  // `name` stands for the path in messages.
  static std::unique_ptr<PcapReader> open_memory(const std::string& name, protocols::Bytes data, std::string& error,
                                                 bool hash = true);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  // The frames' link type. A capture of ERF records (LINKTYPE_ERF) is read
  // as the packets inside them: Ethernet (its FCS left out), InfiniBand or
  // raw IP, by the type of the first record; a record of another type is a
  // frame with a `problem`.
  int linktype() const { return linktype_; }
  // Next frame, or nullopt at the end or on error (then error() is non-empty).
  std::optional<Frame> next();
  const std::string& error() const { return error_; }
  std::uint64_t bytes_read() const;
  std::uint64_t file_size() const { return file_size_; }
  // Hex SHA-256 of the whole file (waits for the hashing thread); empty
  // when not asked for, or
  // when the file could not be read to its end.
  std::string sha256();

  struct Impl;

 private:
  PcapReader() = default;
  // Opens over `impl` (its source set; the rest is filled in here).
  static std::unique_ptr<PcapReader> start(const std::string& path, std::uint64_t size, std::unique_ptr<Impl> impl,
                                           const unsigned char* head, std::size_t head_len, std::string& error);
  // The next record as the file holds it.
  std::optional<Frame> next_record();
  // An ERF record's packet (Frame::problem when there is none).
  void unwrap_erf(Frame& f) const;
  std::unique_ptr<Impl> impl_;
  int linktype_ = 0;
  int erf_type_ = -1;  // an ERF capture's record type, whose packets it is read as
  std::optional<Frame> peeked_;  // an ERF capture's first record, read to know erf_type_
  std::uint64_t frame_no_ = 0;
  std::uint64_t file_size_ = 0;
  std::string error_;
  std::string path_;
};

}  // namespace rdmaconf::captures::io

#pragma once
// A report's output file. Large reports (a check of a million connections
// writes gigabytes of JSON) are written behind: past the first
// kWriteBehindFrom octets, every written window is handed to the disk and,
// once it is there, dropped from the page cache. The kernel then copies each
// new window into pages the last windows freed instead of into fresh
// memory, and the report does not crowd the machine's page cache. Measured
// on a 2-core virtual machine (docs/design.md): 4 GiB written in 1.8 s
// against 7.7 s, almost all of it system time spent copying into fresh
// pages. Smaller reports, pipes and character devices are written as by
// any stream.
#include <cstdint>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace rdmaconf::reports {

class ReportFileBuf final : public std::streambuf {
 public:
  static constexpr std::uint64_t kWriteBehindFrom = 256u << 20;
  static constexpr std::uint64_t kWindow = 32u << 20;

  ReportFileBuf() = default;
  // Other thresholds (tests).
  ReportFileBuf(std::uint64_t write_behind_from, std::uint64_t window) : from_(write_behind_from), window_(window) {}
  ~ReportFileBuf() override;
  ReportFileBuf(const ReportFileBuf&) = delete;
  ReportFileBuf& operator=(const ReportFileBuf&) = delete;

  // Opens (creates, truncates) `path`; false with errno set on failure.
  bool open(const std::string& path);
  bool is_open() const { return fd_ >= 0; }
  // Writes what is buffered and closes; false when any write failed.
  bool close();

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool flush_buffer();
  bool write_all(const char* p, std::size_t n);
  void write_behind();

  static constexpr std::size_t kBuffer = 1u << 16;
  std::uint64_t from_ = kWriteBehindFrom, window_ = kWindow;
  int fd_ = -1;
  bool regular_ = false, failed_ = false;
  std::uint64_t written_ = 0;     // octets handed to the kernel
  std::uint64_t started_to_ = 0;  // windows below this offset are on their way to the disk
  std::unique_ptr<char[]> buf_;
};

// An std::ostream over a ReportFileBuf.
class ReportFile final : public std::ostream {
 public:
  ReportFile() : std::ostream(&buf_) {}
  ReportFile(std::uint64_t write_behind_from, std::uint64_t window)
      : std::ostream(&buf_), buf_(write_behind_from, window) {}
  // Opens `path`; sets failbit when it cannot.
  void open(const std::string& path) {
    if (!buf_.open(path)) setstate(std::ios::failbit);
  }
  // Writes everything out and closes; sets badbit when a write failed.
  void close() {
    if (!buf_.close()) setstate(std::ios::badbit);
  }

 private:
  ReportFileBuf buf_;
};

}  // namespace rdmaconf::reports

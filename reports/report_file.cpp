#include "reports/report_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmaconf::reports {

ReportFileBuf::~ReportFileBuf() { close(); }

bool ReportFileBuf::open(const std::string& path) {
  close();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) return false;
  struct stat st {};
  regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  failed_ = false;
  written_ = started_to_ = 0;
  if (!buf_) buf_ = std::make_unique<char[]>(kBuffer);
  setp(buf_.get(), buf_.get() + kBuffer);
  return true;
}

bool ReportFileBuf::close() {
  if (fd_ < 0) return !failed_;
  flush_buffer();
  if (::close(fd_) != 0) failed_ = true;
  fd_ = -1;
  setp(nullptr, nullptr);
  return !failed_;
}

bool ReportFileBuf::write_all(const char* p, std::size_t n) {
  while (n && !failed_) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failed_ = true;
      break;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    written_ += static_cast<std::uint64_t>(w);
  }
  if (regular_ && !failed_) write_behind();
  return !failed_;
}

// Each full window past kWriteBehindFrom starts on its way to the disk; the
// window before it is waited for and dropped from the page cache. Errors
// here lose nothing (the data is written either way), so they are ignored.
void ReportFileBuf::write_behind() {
  if (written_ < from_) return;
  if (started_to_ < from_) started_to_ = from_;
  while (written_ - started_to_ >= window_) {
    const auto at = static_cast<off64_t>(started_to_), len = static_cast<off64_t>(window_);
    ::sync_file_range(fd_, at, len, SYNC_FILE_RANGE_WRITE);
    if (started_to_ >= from_ + window_) {
      ::sync_file_range(fd_, at - len, len, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
      ::posix_fadvise(fd_, at - len, len, POSIX_FADV_DONTNEED);
    }
    started_to_ += window_;
  }
}

bool ReportFileBuf::flush_buffer() {
  const auto n = static_cast<std::size_t>(pptr() - pbase());
  setp(buf_.get(), buf_.get() + kBuffer);
  return n == 0 || write_all(buf_.get(), n);
}

ReportFileBuf::int_type ReportFileBuf::overflow(int_type ch) {
  if (fd_ < 0 || !flush_buffer()) return traits_type::eof();
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

// Large pieces (the JSON writer hands over a megabyte at a time) go straight
// to the file, small ones through the buffer.
std::streamsize ReportFileBuf::xsputn(const char* s, std::streamsize n) {
  if (fd_ < 0) return 0;
  const auto len = static_cast<std::size_t>(n);
  if (len <= static_cast<std::size_t>(epptr() - pptr())) {
    std::memcpy(pptr(), s, len);
    pbump(static_cast<int>(len));
    return n;
  }
  if (!flush_buffer()) return 0;
  if (len < kBuffer) {
    std::memcpy(pptr(), s, len);
    pbump(static_cast<int>(len));
    return n;
  }
  return write_all(s, len) ? n : 0;
}

int ReportFileBuf::sync() { return fd_ >= 0 && flush_buffer() ? 0 : -1; }

}  // namespace rdmaconf::reports

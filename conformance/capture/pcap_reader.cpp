#include "conformance/capture/pcap_reader.hpp"

#include <openssl/evp.h>
#include <pcap/pcap.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace rdmaconf::conformance::capture {

namespace {

// A ring of large chunks passed from one thread to the other: a slot is
// refilled only after the other side has released it.
class ChunkRing {
 public:
  static constexpr std::size_t kSlots = 4;
  static constexpr std::size_t kChunk = 1 << 20;

  // Producer: waits for a free slot (nullptr when stopped).
  char* free_slot(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    if (!cv_.wait(lock, stop, [&] { return produced_ - released_ < kSlots; })) return nullptr;
    auto& slot = slots_[produced_ % kSlots];
    if (!slot) slot = std::make_unique_for_overwrite<char[]>(kChunk);
    return slot.get();
  }
  // Producer: the slot from free_slot() holds n octets; `last`: nothing follows.
  void publish(std::size_t n, bool last) {
    {
      std::lock_guard lock(mu_);
      if (n) lengths_[produced_++ % kSlots] = n;
      ended_ = last;
    }
    cv_.notify_all();
  }
  // Consumer: releases the chunk it held and waits for the next; empty at
  // the end or when stopped.
  protocols::Bytes next(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    if (holding_) {
      ++released_;
      holding_ = false;
      cv_.notify_all();
    }
    if (!cv_.wait(lock, stop, [&] { return taken_ < produced_ || ended_; }) || taken_ == produced_) return {};
    const std::size_t slot = taken_++ % kSlots;
    holding_ = true;
    return protocols::as_bytes(slots_[slot].get(), lengths_[slot]);
  }

 private:
  std::array<std::unique_ptr<char[]>, kSlots> slots_;
  std::array<std::size_t, kSlots> lengths_{};
  std::uint64_t produced_ = 0, taken_ = 0, released_ = 0;
  bool holding_ = false, ended_ = false;
  std::mutex mu_;
  std::condition_variable_any cv_;
};

// Feeds the file to libpcap in large chunks with a second thread doing the
// other job. With hashing, the decoding thread reads and the second thread
// computes the SHA-256 of each chunk (hashing is the longer job; reading on
// the hashing thread measured slower). Without, the second thread reads
// ahead. Either way the file is read from the kernel once, and system calls
// and hashing cost no decoding time when a second core is free.
class ChunkedSource {
 public:
  ChunkedSource(int fd, bool hash)
      : fd_(fd), hash_(hash), worker_([this](std::stop_token st) { hash_ ? hash_chunks(st) : read_ahead(st); }) {}
  ~ChunkedSource() {
    worker_.request_stop();  // wakes any wait through the stop token
    if (worker_.joinable()) worker_.join();
    ::close(fd_);
  }
  ChunkedSource(const ChunkedSource&) = delete;
  ChunkedSource& operator=(const ChunkedSource&) = delete;

  // Copies up to n octets of the file into buf; 0 at the end, -1 on error.
  ssize_t read(char* buf, std::size_t n) {
    if (pos_ == chunk_.size() && !next_chunk()) return failed_ ? -1 : 0;
    const std::size_t got = std::min(n, chunk_.size() - pos_);
    std::memcpy(buf, chunk_.data() + pos_, got);
    pos_ += got;
    consumed_ += got;
    return static_cast<ssize_t>(got);
  }
  std::uint64_t consumed() const { return consumed_; }

  // Reads what the decoder left unread, then waits for the hash; "" when not
  // hashing or when the file could not be read to its end.
  std::string finish() {
    if (!hash_) return {};
    while (next_chunk()) {
    }
    if (worker_.joinable()) worker_.join();
    return failed_ ? std::string() : hex_;
  }

 private:
  // Reads one chunk into a free slot and publishes it; empty at the end.
  protocols::Bytes produce(const std::stop_token& stop) {
    char* slot = ring_.free_slot(stop);
    if (!slot) return {};
    std::size_t got = 0;
    while (got < ChunkRing::kChunk) {
      const ssize_t r = ::read(fd_, slot + got, ChunkRing::kChunk - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) failed_ = true;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    ring_.publish(got, got < ChunkRing::kChunk);
    return protocols::as_bytes(slot, got);
  }

  bool next_chunk() {
    if (hash_) {
      if (at_end_) return false;
      chunk_ = produce({});
      at_end_ = chunk_.size() < ChunkRing::kChunk;
    } else {
      chunk_ = ring_.next({});
    }
    pos_ = 0;
    return !chunk_.empty();
  }

  void read_ahead(const std::stop_token& stop) {
    while (produce(stop).size() == ChunkRing::kChunk) {
    }
  }

  void hash_chunks(const std::stop_token& stop) {
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), nullptr);
    for (protocols::Bytes c; !(c = ring_.next(stop)).empty();) EVP_DigestUpdate(md, c.data(), c.size());
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(md, out, &len);
    EVP_MD_CTX_free(md);
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; ++i) {
      hex_ += kHex[out[i] >> 4];
      hex_ += kHex[out[i] & 15];
    }
  }

  int fd_;
  bool hash_;
  ChunkRing ring_;
  protocols::Bytes chunk_;  // the decoder's current chunk
  std::size_t pos_ = 0;
  std::uint64_t consumed_ = 0;
  bool at_end_ = false;
  std::atomic<bool> failed_ = false;
  std::string hex_;      // written by the hasher, read after join
  std::jthread worker_;  // last: starts after everything it uses exists
};

}  // namespace

// libpcap reads through a cookie stream over the ChunkedSource.
struct PcapReader::Impl {
  std::unique_ptr<ChunkedSource> source;
  std::FILE* cookie = nullptr;
  pcap_t* pcap = nullptr;

  ~Impl() {
    if (pcap) pcap_close(pcap);  // closes `cookie`
    else if (cookie) std::fclose(cookie);
  }

  static ssize_t read(void* c, char* buf, size_t n) {
    return static_cast<Impl*>(c)->source->read(buf, n);
  }
  static int close(void*) { return 0; }
};

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path, std::string& error, bool hash) {
  std::unique_ptr<PcapReader> r(new PcapReader);
  r->path_ = path;
  r->impl_ = std::make_unique<Impl>();
  Impl& im = *r->impl_;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = fmt::format("{}: cannot open: not a readable file", path);
    return nullptr;
  }
  r->file_size_ = static_cast<std::uint64_t>(st.st_size);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return nullptr;
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  im.source = std::make_unique<ChunkedSource>(fd, hash);
  cookie_io_functions_t io{&Impl::read, nullptr, nullptr, &Impl::close};
  im.cookie = fopencookie(&im, "rb", io);
  if (!im.cookie) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return nullptr;
  }
  std::setvbuf(im.cookie, nullptr, _IOFBF, 1 << 16);
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  im.pcap = pcap_fopen_offline(im.cookie, errbuf);
  if (!im.pcap) {
    error = fmt::format("{}: not a pcap or pcapng capture: {}", path, errbuf);
    return nullptr;
  }
  r->linktype_ = pcap_datalink(im.pcap);
  return r;
}

PcapReader::~PcapReader() = default;

std::optional<Frame> PcapReader::next() {
  if (!error_.empty()) return std::nullopt;
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(impl_->pcap, &h, &data);
  if (rc == 1) {
    ++frame_no_;
    Frame f;
    f.number = frame_no_;
    f.ts_sec = h->ts.tv_sec;
    f.ts_usec = h->ts.tv_usec;
    f.orig_len = h->len;
    f.data = protocols::as_bytes(data, h->caplen);
    return f;
  }
  if (rc == PCAP_ERROR) {
    error_ = fmt::format("{}: frame {}: unreadable record at file offset ~{}: {}", path_, frame_no_ + 1,
                         impl_->source->consumed(), pcap_geterr(impl_->pcap));
  }
  return std::nullopt;
}

std::uint64_t PcapReader::bytes_read() const { return impl_->source->consumed(); }

std::string PcapReader::sha256() { return impl_->source->finish(); }

}  // namespace rdmaconf::conformance::capture

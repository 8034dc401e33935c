#include "captures/io/pcap_reader.hpp"

#include <pthread.h>

#include <nettle/sha2.h>
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace rdmaconf::captures::io {

namespace {

// LINKTYPE_ERF, and the ERF record types read (Wireshark wiretap/erf_record.h).
constexpr int kLinktypeErf = 197;
constexpr std::size_t kErfHeader = 16;
constexpr int kErfEth = 2, kErfColorEth = 11, kErfDsmColorEth = 16, kErfColorHashEth = 20, kErfInfiniband = 21,
              kErfIpv4 = 22, kErfIpv6 = 23, kErfInfinibandLink = 25, kErfPad = 48;
int erf_type(protocols::Bytes b) { return static_cast<int>(static_cast<unsigned>(b[8]) & 0x7f); }
// The link type an ERF record type's packets are read as (-1: not read).
int erf_linktype(int type) {
  switch (type) {
    case kErfEth:
    case kErfColorEth:
    case kErfDsmColorEth:
    case kErfColorHashEth:
      return DLT_EN10MB;
    case kErfInfiniband:
    case kErfInfinibandLink:
      return DLT_INFINIBAND;
    case kErfIpv4:
    case kErfIpv6:
      return DLT_RAW;
    default:
      return -1;
  }
}

std::string to_hex(const unsigned char* p, unsigned n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

// A ring of large chunks passed from one thread to the other: a slot is
// refilled only after the other side has released it.
class ChunkRing {
 public:
  static constexpr std::size_t kSlots = 4;
  static constexpr std::size_t kChunk = 1 << 20;

  // The slots live in one region, backed by huge pages where the kernel
  // offers them on request: touching 4 MiB of fresh 4 KiB pages costs a
  // thousand page faults, which on a virtual machine measured several
  // milliseconds of every run.
  ChunkRing() {
    // Map 2 MiB more than needed and keep a 2 MiB-aligned region, so that
    // every huge page of it can be used.
    void* p = ::mmap(nullptr, kRegion + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (at + kHuge - 1) & ~(kHuge - 1);
    if (aligned > at) ::munmap(p, aligned - at);
    if (aligned + kRegion < at + kRegion + kHuge) ::munmap(reinterpret_cast<void*>(aligned + kRegion), at + kHuge - aligned);
    region_ = reinterpret_cast<char*>(aligned);
    ::madvise(region_, kRegion, MADV_HUGEPAGE);
  }
  ~ChunkRing() { ::munmap(region_, kRegion); }
  ChunkRing(const ChunkRing&) = delete;
  ChunkRing& operator=(const ChunkRing&) = delete;

  // Producer: waits for a free slot (nullptr when stopped).
  char* free_slot(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    if (!cv_.wait(lock, stop, [&] { return produced_ - released_ < kSlots; })) return nullptr;
    return slot(produced_ % kSlots);
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
    return protocols::as_bytes(this->slot(slot), lengths_[slot]);
  }

 private:
  static constexpr std::size_t kRegion = kSlots * kChunk;
  static constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  char* slot(std::size_t i) const { return region_ + i * kChunk; }
  char* region_ = nullptr;
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
//
// From memory instead (fuzzing, tests): one chunk, the whole buffer; no
// thread, no ring; the hash, if asked for, is taken at the end. A file of
// `size` octets no larger than one chunk (most captures a test or a lab
// cell writes) is read so, whole, on the calling thread: a second thread
// and its ring cost more than such a file's reading, and each hand-over
// between the threads waits for the scheduler, which on a loaded machine
// (a build beside the tests) made a check of a small file many times
// slower than its work.
class ChunkedSource {
 public:
  ChunkedSource(int fd, bool hash, std::uint64_t size) : fd_(fd), hash_(hash) {
    if (size <= ChunkRing::kChunk) {
      read_whole();
      return;
    }
    ring_ = std::make_unique<ChunkRing>();
    worker_ = std::jthread([this](std::stop_token st) {
      pthread_setname_np(pthread_self(), hash_ ? "rdmaconf-hash" : "rdmaconf-read");  // (for top and perf)
      hash_ ? hash_chunks(st) : read_ahead(st);
    });
  }
  ChunkedSource(protocols::Bytes memory, bool hash) : hash_(hash), memory_(memory), in_memory_(true) {}
  ~ChunkedSource() {
    worker_.request_stop();  // wakes any wait through the stop token
    if (worker_.joinable()) worker_.join();
    if (fd_ >= 0) ::close(fd_);
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
  // What is left of the current chunk, else the next chunk; empty at the
  // end (or when reading failed: failed() says which). Valid until the next
  // call.
  protocols::Bytes take() {
    if (pos_ == chunk_.size() && !next_chunk()) return {};
    const protocols::Bytes b = chunk_.subspan(pos_);
    pos_ = chunk_.size();
    consumed_ += b.size();
    return b;
  }
  bool failed() const { return failed_; }

  // Reads what the decoder left unread, then waits for the hash; "" when not
  // hashing or when the file could not be read to its end.
  std::string finish() {
    if (!hash_) return {};
    if (in_memory_) {
      return sha256_hex(memory_);
    }
    while (next_chunk()) {
    }
    if (worker_.joinable()) worker_.join();
    return failed_ ? std::string() : hex_;
  }

 private:
  // Reads one chunk into a free slot and publishes it; empty at the end.
  protocols::Bytes produce(const std::stop_token& stop) {
    char* slot = ring_->free_slot(stop);
    if (!slot) return {};
    std::size_t got = 0;
    while (got < ChunkRing::kChunk) {
      const ssize_t r = ::read(fd_, slot + got, ChunkRing::kChunk - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) failed_ = true;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    ring_->publish(got, got < ChunkRing::kChunk);
    return protocols::as_bytes(slot, got);
  }

  bool next_chunk() {
    if (in_memory_) {
      chunk_ = memory_done_ ? protocols::Bytes{} : memory_;
      memory_done_ = true;
    } else if (hash_) {
      if (at_end_) return false;
      chunk_ = produce({});
      at_end_ = chunk_.size() < ChunkRing::kChunk;
    } else {
      chunk_ = ring_->next({});
    }
    pos_ = 0;
    return !chunk_.empty();
  }

  // Reads the file to its end into owned_, which then serves as memory
  // (a file that grew since its size was taken is read whole all the same).
  void read_whole() {
    for (;;) {
      const std::size_t at = owned_.size();
      owned_.resize(at + ChunkRing::kChunk / 4);
      const ssize_t r = ::read(fd_, owned_.data() + at, owned_.size() - at);
      owned_.resize(at + static_cast<std::size_t>(std::max<ssize_t>(r, 0)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) failed_ = true;
      if (r <= 0) break;
    }
    memory_ = protocols::as_bytes(owned_.data(), owned_.size());
    in_memory_ = true;
  }

  void read_ahead(const std::stop_token& stop) {
    while (produce(stop).size() == ChunkRing::kChunk) {
    }
  }

  void hash_chunks(const std::stop_token& stop) {
    sha256_ctx md;
    sha256_init(&md);
    for (protocols::Bytes c; !(c = ring_->next(stop)).empty();)
      sha256_update(&md, c.size(), reinterpret_cast<const std::uint8_t*>(c.data()));
    unsigned char out[SHA256_DIGEST_SIZE];
    sha256_digest(&md, sizeof out, out);
    hex_ = to_hex(out, sizeof out);
  }

  int fd_ = -1;
  bool hash_;
  protocols::Bytes memory_;
  bool in_memory_ = false, memory_done_ = false;
  std::vector<char> owned_;  // a small file read whole (memory_ views it)
  std::unique_ptr<ChunkRing> ring_;
  protocols::Bytes chunk_;  // the decoder's current chunk
  std::size_t pos_ = 0;
  std::uint64_t consumed_ = 0;
  bool at_end_ = false;
  std::atomic<bool> failed_ = false;
  std::string hex_;      // written by the hasher, read after join
  std::jthread worker_;  // last: starts after everything it uses exists
};

// Classic pcap files (the format tcpdump and our generator write) of the
// link types the checker reads most are walked record by record straight in
// the reader's chunks: a frame is a view into the chunk, and only a record
// that straddles two chunks is copied. libpcap copies every record twice on
// its way (into stdio's buffer, then into its own). Anything else (pcapng,
// other link types, an unusual header) goes through libpcap. The record
// rules follow libpcap's reading of the format: a record longer than 262144
// octets is an error, one longer than the header's snapshot length is cut to
// it, a timestamp in nanoseconds (magic 0xa1b23c4d) is given in
// microseconds.
class PcapRecords {
 public:
  static constexpr std::uint32_t kMaxRecord = 262144;  // libpcap's limit for these link types
  static constexpr std::size_t kHeader = 24, kRecordHeader = 16;

  // The link type when `head` (the file's first 24 octets) is a classic
  // pcap header this path reads, else nullopt (libpcap takes the file).
  static std::optional<int> eligible(const unsigned char* head, std::size_t n) {
    if (n < kHeader) return std::nullopt;
    const std::uint32_t magic = le32(head);
    if (magic != 0xa1b2c3d4 && magic != 0xa1b23c4d && magic != 0xd4c3b2a1 && magic != 0x4d3cb2a1) return std::nullopt;
    const bool swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
    // Octets 4..7: major and minor version, 16 bits each in the file's order.
    const std::uint32_t v = field(head + 4, swap);
    const std::uint32_t major = swap ? v >> 16 : v & 0xffff, minor = swap ? v & 0xffff : v >> 16;
    const std::uint32_t linktype = field(head + 20, swap);
    if (major != 2 || minor != 4) return std::nullopt;
    if (linktype != 1 && linktype != 113 && linktype != 247 && linktype != 276) return std::nullopt;  // where LINKTYPE and DLT agree
    return static_cast<int>(linktype);
  }

  PcapRecords(ChunkedSource& src, const unsigned char* head) : src_(src) {
    const std::uint32_t magic = le32(head);
    swap_ = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
    nsec_ = magic == 0xa1b23c4d || magic == 0x4d3cb2a1;
    const std::uint32_t snap = field(head + 16, swap_);
    snapshot_ = snap == 0 || snap > kMaxRecord ? kMaxRecord : snap;
  }

  // The next record: true with `f` set; false at the end (error empty) or
  // on a bad or cut record (error says which and where).
  bool next(Frame& f, std::string& error) {
    if (pos_ == 0 && !skip(kHeader)) return read_failed(error, "file header");
    const unsigned char* h = view(kRecordHeader);
    if (!h) {
      if (have_ == 0 && !src_.failed()) return false;  // the end, between records
      if (src_.failed()) return read_failed(error, "record header");
      error = fmt::format("record header at file offset {}: the file ends after {} of its {} octets", pos_, have_,
                          kRecordHeader);
      return false;
    }
    const std::uint32_t sec = field(h, swap_), frac = field(h + 4, swap_);
    const std::uint32_t incl = field(h + 8, swap_), orig = field(h + 12, swap_);
    if (incl > kMaxRecord) {
      error = fmt::format("record at file offset {}: captured length {} exceeds the largest a record may have ({})",
                          pos_, incl, kMaxRecord);
      return false;
    }
    const unsigned char* d = view(kRecordHeader + incl);
    if (!d) {
      if (src_.failed()) return read_failed(error, "record");
      error = fmt::format("record at file offset {}: captured length {}, but the file ends after {} octets of it",
                          pos_, incl, have_ - kRecordHeader);
      return false;
    }
    f.ts_sec = sec;
    f.ts_usec = nsec_ ? frac / 1000 : frac;
    f.orig_len = orig;
    f.caplen = incl;
    f.data = protocols::as_bytes(d + kRecordHeader, std::min(incl, snapshot_));
    consume(kRecordHeader + incl);
    return true;
  }
  std::uint64_t consumed() const { return pos_; }

 private:
  static std::uint32_t le32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  }
  static std::uint32_t field(const unsigned char* p, bool swap) {
    const std::uint32_t v = le32(p);
    return swap ? __builtin_bswap32(v) : v;
  }

  // n octets from the file position on, contiguous: in the current chunk,
  // or gathered into carry_ across chunks; nullptr when the file ends first
  // (have_ then says how many there were).
  const unsigned char* view(std::size_t n) {
    if (carry_.empty() && chunk_.size() - at_ >= n) return reinterpret_cast<const unsigned char*>(chunk_.data() + at_);
    if (carry_.empty()) {
      carry_.assign(chunk_.begin() + static_cast<std::ptrdiff_t>(at_), chunk_.end());
      at_ = chunk_.size();
    }
    while (carry_.size() < n) {
      if (at_ == chunk_.size()) {
        chunk_ = src_.take();
        at_ = 0;
        if (chunk_.empty()) {
          have_ = carry_.size();
          return nullptr;
        }
      }
      const std::size_t k = std::min(n - carry_.size(), chunk_.size() - at_);
      carry_.insert(carry_.end(), chunk_.begin() + static_cast<std::ptrdiff_t>(at_),
                    chunk_.begin() + static_cast<std::ptrdiff_t>(at_ + k));
      at_ += k;
    }
    return reinterpret_cast<const unsigned char*>(carry_.data());
  }
  // The n octets of the last view() are used.
  void consume(std::size_t n) {
    pos_ += n;
    if (carry_.empty()) at_ += n;
    else carry_.clear();  // view(n) gathered exactly n
  }
  bool skip(std::size_t n) {
    if (!view(n)) return false;
    consume(n);
    return true;
  }
  bool read_failed(std::string& error, const char* what) const {
    error = src_.failed() ? fmt::format("{} at file offset {}: the file could not be read", what, pos_)
                          : fmt::format("{}: the file ends after {} octets", what, have_);
    return false;
  }

  ChunkedSource& src_;
  std::uint64_t pos_ = 0;  // file offset of the next record
  protocols::Bytes chunk_;
  std::size_t at_ = 0;     // chunk_ offset just past what view() has handed out or gathered
  std::vector<std::byte> carry_;
  std::size_t have_ = 0;
  bool swap_ = false, nsec_ = false;
  std::uint32_t snapshot_ = kMaxRecord;
};

}  // namespace

// libpcap reads through a cookie stream over the ChunkedSource.
struct PcapReader::Impl {
  std::unique_ptr<ChunkedSource> source;
  std::unique_ptr<PcapRecords> records;  // classic pcap read by us; else libpcap through `cookie`
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
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = fmt::format("{}: cannot open: not a readable file", path);
    return nullptr;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return nullptr;
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  unsigned char head[PcapRecords::kHeader] = {};
  const ssize_t got = ::pread(fd, head, sizeof head, 0);
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<ChunkedSource>(fd, hash, static_cast<std::uint64_t>(st.st_size));
  return start(path, static_cast<std::uint64_t>(st.st_size), std::move(impl), head, got > 0 ? static_cast<std::size_t>(got) : 0,
               error);
}

std::unique_ptr<PcapReader> PcapReader::open_memory(const std::string& name, protocols::Bytes data, std::string& error,
                                                    bool hash) {
  unsigned char head[PcapRecords::kHeader] = {};
  const std::size_t got = std::min(data.size(), sizeof head);
  std::memcpy(head, data.data(), got);
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<ChunkedSource>(data, hash);
  return start(name, data.size(), std::move(impl), head, got, error);
}

std::unique_ptr<PcapReader> PcapReader::start(const std::string& path, std::uint64_t size, std::unique_ptr<Impl> impl,
                                              const unsigned char* head, std::size_t head_len, std::string& error) {
  std::unique_ptr<PcapReader> r(new PcapReader);
  r->path_ = path;
  r->impl_ = std::move(impl);
  Impl& im = *r->impl_;
  r->file_size_ = size;
  if (const auto lt = PcapRecords::eligible(head, head_len)) {
    im.records = std::make_unique<PcapRecords>(*im.source, head);
    r->linktype_ = *lt;
    return r;
  }
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
    // A compressed capture (tcpdump's and dumpcap's users meet gzip and
    // zstd) is named as such, with what would read it.
    const auto starts = [&](std::initializer_list<unsigned char> magic) {
      return head_len >= magic.size() && std::equal(magic.begin(), magic.end(), head);
    };
    const char* packed = starts({0x1f, 0x8b})                     ? "gzip"
                         : starts({0x28, 0xb5, 0x2f, 0xfd})       ? "zstd"
                         : starts({0xfd, '7', 'z', 'X', 'Z', 0x00}) ? "xz"
                         : starts({'B', 'Z', 'h'})                ? "bzip2"
                                                                  : nullptr;
    if (packed)
      error = fmt::format("{}: a {}-compressed file, not a capture: decompress it first ({} -dc FILE > FILE.pcap)", path, packed,
                          packed);
    else
      error = fmt::format("{}: not a pcap or pcapng capture: {}", path, errbuf);
    return nullptr;
  }
  r->linktype_ = pcap_datalink(im.pcap);
  if (r->linktype_ == kLinktypeErf) {
    // The first record's type says what the capture is read as.
    r->peeked_ = r->next_record();
    const int type = r->peeked_ && r->peeked_->data.size() >= kErfHeader ? erf_type(r->peeked_->data) : kErfEth;
    if (const int inner = erf_linktype(type); inner >= 0) {
      r->erf_type_ = type;
      r->linktype_ = inner;
    }
  }
  return r;
}

PcapReader::~PcapReader() = default;

std::optional<Frame> PcapReader::next() {
  std::optional<Frame> f;
  if (peeked_) {
    f = std::exchange(peeked_, std::nullopt);
  } else {
    f = next_record();
  }
  if (f && erf_type_ >= 0) unwrap_erf(*f);
  return f;
}

void PcapReader::unwrap_erf(Frame& f) const {
  // ERF record header (Endace ERF; Wireshark wiretap/erf_record.h): a 64-bit
  // little-endian timestamp, the type (bit 7: extension headers follow), flags,
  // record length, loss counter or colour, wire length (16-bit big-endian
  // each); each 8-octet extension header's first bit says whether another
  // follows. Ethernet records put 2 octets (offset, pad) before the frame.
  const auto fail = [&](const char* why) {
    f.problem = why;
    f.data = {};
  };
  const protocols::Bytes b = f.data;
  if (b.size() < kErfHeader) return fail("an ERF record shorter than its 16-octet header");
  const int type = erf_type(b);
  if (type == kErfPad) return fail("an ERF padding record, which carries no packet");
  if (type != erf_type_ && erf_linktype(type) != linktype_)
    return fail("an ERF record of another type than the capture's first, whose link type the capture is read as");
  std::size_t at = kErfHeader;
  for (bool more = (static_cast<unsigned>(b[8]) & 0x80) != 0; more; at += 8) {
    if (at + 8 > b.size()) return fail("an ERF record cut inside its extension headers");
    more = (static_cast<unsigned>(b[at]) & 0x80) != 0;
  }
  std::uint32_t wlen = (static_cast<std::uint32_t>(b[14]) << 8) | static_cast<std::uint32_t>(b[15]);
  if (linktype_ == DLT_EN10MB) {
    if (at + 2 > b.size()) return fail("an ERF Ethernet record cut before its frame");
    at += 2;
    wlen = wlen >= 4 ? wlen - 4 : 0;  // the wire length counts the FCS, which the frame is read without
  }
  const std::size_t len = std::min<std::size_t>(b.size() - at, wlen);
  f.data = b.subspan(at, len);
  f.caplen = static_cast<std::uint32_t>(len);
  f.orig_len = wlen;
}

std::optional<Frame> PcapReader::next_record() {
  if (!error_.empty()) return std::nullopt;
  if (impl_->records) {
    Frame f;
    std::string err;
    if (impl_->records->next(f, err)) {
      f.number = ++frame_no_;
      return f;
    }
    if (!err.empty()) error_ = fmt::format("{}: frame {}: unreadable {}", path_, frame_no_ + 1, err);
    return std::nullopt;
  }
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
    f.caplen = h->caplen;
    f.data = protocols::as_bytes(data, h->caplen);
    return f;
  }
  if (rc == PCAP_ERROR) {
    error_ = fmt::format("{}: frame {}: unreadable record at file offset ~{}: {}", path_, frame_no_ + 1,
                         impl_->source->consumed(), pcap_geterr(impl_->pcap));
  }
  return std::nullopt;
}

std::uint64_t PcapReader::bytes_read() const {
  return impl_->records ? impl_->records->consumed() : impl_->source->consumed();
}

std::string sha256_hex(protocols::Bytes b) {
  sha256_ctx md;
  sha256_init(&md);
  sha256_update(&md, b.size(), reinterpret_cast<const std::uint8_t*>(b.data()));
  unsigned char out[SHA256_DIGEST_SIZE];
  sha256_digest(&md, sizeof out, out);
  return to_hex(out, sizeof out);
}

std::string PcapReader::sha256() { return impl_->source->finish(); }

}  // namespace rdmaconf::captures::io

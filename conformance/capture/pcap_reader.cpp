#include "conformance/capture/pcap_reader.hpp"

#include <openssl/evp.h>
#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include <fmt/format.h>

namespace rdmaconf::conformance::capture {

// The FILE* handed to libpcap is a cookie stream over the real file that
// feeds every octet read into the hash on its way.
struct PcapReader::Impl {
  std::FILE* raw = nullptr;
  std::FILE* cookie = nullptr;
  pcap_t* pcap = nullptr;
  EVP_MD_CTX* md = nullptr;
  std::uint64_t consumed = 0;

  ~Impl() {
    if (pcap) pcap_close(pcap);  // closes `cookie`
    else if (cookie) std::fclose(cookie);
    if (raw) std::fclose(raw);
    if (md) EVP_MD_CTX_free(md);
  }

  static ssize_t read(void* c, char* buf, size_t n) {
    auto* self = static_cast<Impl*>(c);
    const size_t got = std::fread(buf, 1, n, self->raw);
    if (got) {
      EVP_DigestUpdate(self->md, buf, got);
      self->consumed += got;
    }
    if (got == 0 && std::ferror(self->raw)) return -1;
    return static_cast<ssize_t>(got);
  }
  static int close(void*) { return 0; }
};

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path, std::string& error) {
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
  im.raw = std::fopen(path.c_str(), "rb");
  if (!im.raw) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return nullptr;
  }
  im.md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(im.md, EVP_sha256(), nullptr);
  cookie_io_functions_t io{&Impl::read, nullptr, nullptr, &Impl::close};
  im.cookie = fopencookie(&im, "rb", io);
  if (!im.cookie) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return nullptr;
  }
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
                         impl_->consumed, pcap_geterr(impl_->pcap));
  }
  return std::nullopt;
}

std::uint64_t PcapReader::bytes_read() const { return impl_->consumed; }

std::string PcapReader::sha256() {
  char buf[1 << 16];
  while (Impl::read(impl_.get(), buf, sizeof buf) > 0) {
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(impl_->md, out, &len);
  std::string s;
  for (unsigned i = 0; i < len; ++i) s += fmt::format("{:02x}", out[i]);
  return s;
}

}  // namespace rdmaconf::conformance::capture

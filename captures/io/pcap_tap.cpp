#include "captures/io/pcap_tap.hpp"

#include <netinet/in.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "captures/io/pcap_writer.hpp"

namespace rdmaconf::captures::io {

namespace {

// `with_mac`: a locally administered MAC made from the address and port.
Host host_of(const sockaddr_storage& a, bool with_mac) {
  Host h;
  if (a.ss_family == AF_INET6) {
    const auto& s = reinterpret_cast<const sockaddr_in6&>(a);
    h.ipv6 = true;
    std::memcpy(h.addr.data(), &s.sin6_addr, 16);
    h.port = ntohs(s.sin6_port);
  } else {
    const auto& s = reinterpret_cast<const sockaddr_in&>(a);
    std::memcpy(h.addr.data(), &s.sin_addr, 4);
    h.port = ntohs(s.sin_port);
  }
  if (with_mac)
    h.mac = {0x02, 0x00, h.addr[0], h.addr[1], static_cast<std::uint8_t>(h.port >> 8), static_cast<std::uint8_t>(h.port)};
  return h;
}

void stamp(PcapWriter& w) {
  w.set_time_us(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

class Stream final : public engine::StreamTap {
 public:
  Stream(std::shared_ptr<PcapWriter> w, const Host& a, const Host& b) : w_(std::move(w)), conv_(*w_, a, b) {
    stamp(*w_);
    conv_.handshake(0);
  }
  ~Stream() override { close(); }
  void data(int dir, std::span<const std::byte> octets) override {
    if (closed_ || octets.empty()) return;
    stamp(*w_);
    conv_.send(dir, octets, 32768);
  }
  void close() override {
    if (closed_) return;
    closed_ = true;
    stamp(*w_);
    conv_.close();
  }

 private:
  std::shared_ptr<PcapWriter> w_;  // (shared: the file stays open while a stream records into it)
  TcpConversation conv_;
  bool closed_ = false;
};

class Tap final : public engine::FrameTap {
 public:
  explicit Tap(std::shared_ptr<PcapWriter> w) : w_(std::move(w)) {}
  std::unique_ptr<engine::StreamTap> stream(const sockaddr_storage& opener, const sockaddr_storage& other) override {
    return std::make_unique<Stream>(w_, host_of(opener, true), host_of(other, true));
  }
  void datagram(const sockaddr_storage& from, const sockaddr_storage& to, std::span<const std::byte> payload) override {
    stamp(*w_);
    const Host f = host_of(from, false), t = host_of(to, false);
    w_->ip_packet(f, t, protocols::Bytes(ip_udp(f, t, payload, f.ipv6)));  // IPv6 requires the UDP checksum
  }

 private:
  std::shared_ptr<PcapWriter> w_;
};

}  // namespace

std::shared_ptr<engine::FrameTap> pcap_tap(const std::string& path, std::string& err) {
  try {
    return std::make_shared<Tap>(std::make_shared<PcapWriter>(path));
  } catch (const std::exception& e) {
    err = fmt::format("{}: {}", path, e.what());
    return nullptr;
  }
}

}  // namespace rdmaconf::captures::io

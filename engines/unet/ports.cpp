#include "engines/unet/ports.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "protocols/unet/headers.hpp"

namespace rdmaconf::engine::unet {

namespace {

class PacketPort final : public Port {
 public:
  explicit PacketPort(int fd) : fd_(fd) {}
  ~PacketPort() override { close(fd_); }
  void send(Bytes f) override { (void)::send(fd_, f.data(), f.size(), 0); }
  int fd() const override { return fd_; }
  std::string_view kind() const override { return "af_packet"; }
  std::size_t receive(const std::function<void(Bytes)>& fn, std::size_t max) override {
    std::size_t n = 0;
    while (n < max) {
      sockaddr_ll from{};
      socklen_t fl = sizeof from;
      const ssize_t len = recvfrom(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
      if (len < 0) break;
      if (from.sll_pkttype == PACKET_OUTGOING) continue;  // our own, looped back to the socket
      fn(Bytes(buf_.data(), static_cast<std::size_t>(len)));
      ++n;
    }
    return n;
  }

 private:
  int fd_;
  std::vector<std::byte> buf_ = std::vector<std::byte>(65536);
};

}  // namespace

std::unique_ptr<Port> open_packet_port(const std::string& ifname, std::string& error) {
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    error = fmt::format("no interface named {} in this network namespace", ifname);
    return nullptr;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(protocols::unet::kEthertype));
  if (fd < 0) {
    error = errno == EPERM ? "an AF_PACKET socket needs CAP_NET_RAW (run as root)"
                           : fmt::format("AF_PACKET socket: {}", std::strerror(errno));
    return nullptr;
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(protocols::unet::kEthertype);
  sll.sll_ifindex = static_cast<int>(ifindex);
  int buf = 8 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    error = fmt::format("binding an AF_PACKET socket to {}: {}", ifname, std::strerror(errno));
    close(fd);
    return nullptr;
  }
  return std::make_unique<PacketPort>(fd);
}

#ifndef RDMACONF_HAVE_XDP
bool xdp_built() { return false; }
std::unique_ptr<XdpProgram> load_xdp_program(std::string& error) {
  error = "this build has no AF_XDP support (libxdp-dev, libbpf-dev or clang were missing when it was configured)";
  return nullptr;
}
std::unique_ptr<XdpPort> open_xdp_port(const std::string&, std::string& error) {
  error = "this build has no AF_XDP support (libxdp-dev, libbpf-dev or clang were missing when it was configured)";
  return nullptr;
}
#endif

}  // namespace rdmaconf::engine::unet

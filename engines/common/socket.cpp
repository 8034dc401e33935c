#include "engines/common/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace rdmaconf::engine {

std::string errno_text(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for one event on fd through poll, not an epoll set of its own: waiting must not need a descriptor
// (with none left, an epoll_create1 that fails made every wait return at
// once, and a serve loop spin on its listening socket).
bool wait_fd(int fd, std::uint32_t events, int timeout_ms) {
  pollfd p{fd, static_cast<short>(events), 0};
  int n;
  do n = ::poll(&p, 1, timeout_ms);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

bool parse_endpoint(std::string_view text, sockaddr_storage& out, unsigned& len, std::string& err) {
  const std::string_view original = text;
  if (text.starts_with("tcp://")) text.remove_prefix(6);
  std::string host;
  std::string_view port;
  if (text.starts_with("[")) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      err = fmt::format("{}: expected [IPV6-ADDRESS]:PORT", original);
      return false;
    }
    host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      err = fmt::format("{}: expected ADDRESS:PORT", original);
      return false;
    }
    host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  unsigned p = 0;
  if (port.empty() || port.size() > 5) p = 65536;
  for (char c : port) p = (c >= '0' && c <= '9') ? p * 10 + static_cast<unsigned>(c - '0') : 65536;
  if (p > 65535) {
    err = fmt::format("{}: port must be a number from 0 to 65535", original);
    return false;
  }
  std::memset(&out, 0, sizeof out);
  auto& v4 = reinterpret_cast<sockaddr_in&>(out);
  auto& v6 = reinterpret_cast<sockaddr_in6&>(out);
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<std::uint16_t>(p));
    len = sizeof v4;
    return true;
  }
  if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<std::uint16_t>(p));
    len = sizeof v6;
    return true;
  }
  err = fmt::format("{}: '{}' is not a numeric IPv4 or IPv6 address", original, host);
  return false;
}

std::string endpoint_name(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    const auto& s = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &s.sin6_addr, buf, sizeof buf);
    return fmt::format("[{}]:{}", buf, ntohs(s.sin6_port));
  }
  const auto& s = reinterpret_cast<const sockaddr_in&>(a);
  ::inet_ntop(AF_INET, &s.sin_addr, buf, sizeof buf);
  return fmt::format("{}:{}", buf, ntohs(s.sin_port));
}

std::string remote_endpoint(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {};
  return endpoint_name(a);
}

std::uint64_t random_u64() {
  std::uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
    else if (errno != EINTR) break;  // (cannot happen for 8 octets on Linux >= 3.17)
  }
  return v;
}

Fd tcp_listen(std::string_view endpoint, std::string& err) {
  sockaddr_storage a;
  unsigned len = 0;
  if (!parse_endpoint(endpoint, a, len, err)) return {};
  Fd fd(::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    err = errno_text("socket");
    return {};
  }
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    err = fmt::format("{}: {}", endpoint, std::strerror(errno));
    return {};
  }
  return fd;
}

std::uint16_t local_port(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port)
                                 : ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port);
}

Fd tcp_accept(int listen_fd, int timeout_ms, std::string& err, int* error_number) {
  if (error_number) *error_number = 0;
  if (!wait_fd(listen_fd, POLLIN, timeout_ms)) {
    err = fmt::format("no connection within {} ms", timeout_ms);
    return {};
  }
  Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd) {
    if (error_number) *error_number = errno;
    err = errno_text("accept");
    return {};
  }
  set_nodelay(fd.get());
  return fd;
}

Fd tcp_connect(std::string_view endpoint, int timeout_ms, std::string& err) {
  sockaddr_storage a;
  unsigned len = 0;
  if (!parse_endpoint(endpoint, a, len, err)) return {};
  Fd fd(::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    err = errno_text("socket");
    return {};
  }
  set_nodelay(fd.get());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) {
    if (errno != EINPROGRESS) {
      err = fmt::format("connect to {}: {}", endpoint, std::strerror(errno));
      return {};
    }
    if (!wait_fd(fd.get(), POLLOUT, timeout_ms)) {
      err = fmt::format("connect to {}: no answer within {} ms", endpoint, timeout_ms);
      return {};
    }
    int so = 0;
    socklen_t sl = sizeof so;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so, &sl);
    if (so != 0) {
      err = fmt::format("connect to {}: {}", endpoint, std::strerror(so));
      return {};
    }
  }
  return fd;
}

}  // namespace rdmaconf::engine

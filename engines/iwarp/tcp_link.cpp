#include "engines/iwarp/tcp_link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "captures/gen/pcap_writer.hpp"

namespace rdmaconf::engine::iwarp {

namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Waits for one event on fd (poll-style, through a throwaway epoll set).
bool wait_fd(int fd, std::uint32_t events, int timeout_ms) {
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = events;
  if (!ep || ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  epoll_event out{};
  int n;
  do n = ::epoll_wait(ep.get(), &out, 1, timeout_ms);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

captures::Host host_of(const sockaddr_storage& a) {
  captures::Host h;
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
  h.mac = {0x02, 0x00, h.addr[0], h.addr[1], static_cast<std::uint8_t>(h.port >> 8), static_cast<std::uint8_t>(h.port)};
  return h;
}

}  // namespace

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
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd.get(), 16) != 0) {
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

Fd tcp_accept(int listen_fd, int timeout_ms, std::string& err) {
  if (!wait_fd(listen_fd, EPOLLIN, timeout_ms)) {
    err = fmt::format("no connection within {} ms", timeout_ms);
    return {};
  }
  Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd) {
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
    if (!wait_fd(fd.get(), EPOLLOUT, timeout_ms)) {
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

TcpLink::TcpLink(Fd fd, QueuePair& qp, WaitMode wait)
    : fd_(std::move(fd)), ep_(::epoll_create1(EPOLL_CLOEXEC)), qp_(qp), mode_(wait), rbuf_(256 * 1024),
      t0_(Clock::now()) {
  // Every send and the opportunistic reads pass MSG_DONTWAIT. In block mode
  // the socket itself stays blocking with a short receive timeout, so that
  // waiting for the peer when we have nothing to send is one recv() call, as
  // in a plain TCP program; epoll_wait serves when output is pending.
  if (mode_ == WaitMode::block) {
    ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) & ~O_NONBLOCK);
    timeval tv{0, 50000};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  } else {
    set_nonblocking(fd_.get());
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd_.get(), &ev);
}

TcpLink::~TcpLink() {
  if (conv_) conv_->close();
}

bool TcpLink::record(const std::string& path, std::string& err) {
  sockaddr_storage local{}, peer{};
  socklen_t l1 = sizeof local, l2 = sizeof peer;
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local), &l1);
  ::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &l2);
  try {
    pcap_ = std::make_unique<captures::PcapWriter>(path);
  } catch (const std::exception& e) {
    err = fmt::format("{}: {}", path, e.what());
    return false;
  }
  our_dir_ = qp_.config().initiator ? 0 : 1;
  const captures::Host us = host_of(local), them = host_of(peer);
  conv_ = std::make_unique<captures::TcpConversation>(*pcap_, our_dir_ == 0 ? us : them, our_dir_ == 0 ? them : us);
  pcap_->set_time_us(std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count());
  conv_->handshake(65495);
  return true;
}

void TcpLink::tap(int dir, protocols::Bytes b) {
  if (!conv_ || b.empty()) return;
  pcap_->set_time_us(std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count());
  conv_->send(dir, b, 32768);
}

void TcpLink::finish(std::string why) {
  if (ended_) return;
  ended_ = true;
  if (error_.empty()) error_ = std::move(why);
}

bool TcpLink::flush() {
  while (!ended_) {
    const protocols::Bytes out = qp_.output();
    if (out.empty()) break;
    const ssize_t n = ::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      finish(errno_text("send"));
      return false;
    }
    tap(our_dir_, out.first(static_cast<std::size_t>(n)));
    sent_ += static_cast<std::uint64_t>(n);
    qp_.consume(static_cast<std::size_t>(n));
  }
  const bool pending = !qp_.output().empty();
  if (pending != want_out_) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (pending ? EPOLLOUT : 0u);
    ::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd_.get(), &ev);
    want_out_ = pending;
  }
  // A queue pair that is done (after a Terminate) closes once its output is out.
  if (!pending && qp_.wants_close() && !shut_wr_) {
    ::shutdown(fd_.get(), SHUT_WR);
    shut_wr_ = true;
  }
  return true;
}

bool TcpLink::read_some(bool block) {
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), rbuf_.data(), rbuf_.size(), block ? 0 : MSG_DONTWAIT);
    if (n > 0) {
      const protocols::Bytes in(rbuf_.data(), static_cast<std::size_t>(n));
      tap(1 - our_dir_, in);
      received_ += static_cast<std::uint64_t>(n);
      qp_.receive(in);
      return true;
    }
    if (n == 0) {
      peer_eof_ = true;
      qp_.peer_closed();
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) peer_reset_ = true;
    if (errno != EAGAIN && errno != EWOULDBLOCK) finish(errno_text("recv"));
    return false;
  }
}

void TcpLink::wait(int timeout_ms) {
  epoll_event ev{};
  const int n = ::epoll_wait(ep_.get(), &ev, 1, timeout_ms);
  if (n < 0 && errno != EINTR) finish(errno_text("epoll_wait"));
}

bool TcpLink::run_until(const std::function<bool()>& done, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (done()) return true;
    if (ended_) return false;
    if (!flush()) return done();
    if (done()) return true;  // sending may have completed work (consume() segments more)
    bool progress = false;
    // Nothing to send in block mode: wait for the peer in recv() itself.
    const bool block = mode_ == WaitMode::block && qp_.output().empty() && !shut_wr_;
    if (!peer_eof_) progress = read_some(block);
    const auto now = Clock::now();
    qp_.tick(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - t0_).count()));
    if (progress) continue;
    if (peer_eof_ && qp_.output().empty()) {
      if (!shut_wr_) {
        ::shutdown(fd_.get(), SHUT_WR);
        shut_wr_ = true;
      }
      finish("");
      continue;
    }
    if (now >= deadline) {
      error_ = fmt::format("timed out after {} ms", timeout_ms);
      return done();
    }
    if (mode_ == WaitMode::block && !block) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      wait(static_cast<int>(std::clamp<long long>(left, 1, 100)));
    }
  }
}

void TcpLink::close(int timeout_ms) {
  if (ended_) return;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!ended_ && !qp_.output().empty() && Clock::now() < deadline) {
    flush();
    if (!qp_.output().empty()) wait(10);
  }
  if (!shut_wr_) {
    ::shutdown(fd_.get(), SHUT_WR);
    shut_wr_ = true;
  }
  while (!ended_ && !peer_eof_ && Clock::now() < deadline) {
    if (!read_some(false)) wait(10);
  }
  finish("");
}

}  // namespace rdmaconf::engine::iwarp

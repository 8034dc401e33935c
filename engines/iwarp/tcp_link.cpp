#include "engines/iwarp/tcp_link.hpp"

#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>


namespace rdmaconf::engine::iwarp {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxIov = 1024;  // pieces per sendmsg (IOV_MAX)
// The read buffer, and the room kept free at its end: more than the largest
// FPDU (a 16-bit ULPDU length, its pad, length and CRC fields), so that one
// not yet whole always has room to become whole where it lies.
constexpr std::size_t kReadBuffer = 512 * 1024, kReadRoom = 128 * 1024;


}  // namespace

TcpLink::TcpLink(Fd fd, QueuePair& qp, WaitMode wait)
    : fd_(std::move(fd)), qp_(qp), mode_(wait), rbuf_(kReadBuffer),
      t0_(Clock::now()) {
  // Every send and the opportunistic reads pass MSG_DONTWAIT. In block mode
  // the socket itself stays blocking with a short receive timeout, so that
  // waiting for the peer when we have nothing to send is one recv() call, as
  // in a plain TCP program; poll() serves when output is pending.
  if (mode_ == WaitMode::block) {
    ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) & ~O_NONBLOCK);
    timeval tv{0, 50000};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  } else {
    set_nonblocking(fd_.get());
  }
}

TcpLink::~TcpLink() {
  if (stream_) stream_->close();
}

bool TcpLink::record(const std::shared_ptr<FrameTap>& tap) {
  if (!tap) return false;
  sockaddr_storage local{}, peer{};
  socklen_t l1 = sizeof local, l2 = sizeof peer;
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local), &l1);
  ::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &l2);
  our_dir_ = qp_.config().initiator ? 0 : 1;
  stream_ = our_dir_ == 0 ? tap->stream(local, peer) : tap->stream(peer, local);
  return true;
}

void TcpLink::tap(int dir, protocols::Bytes b) {
  if (stream_ && !b.empty()) stream_->data(dir, b);
}

void TcpLink::finish(std::string why) {
  if (ended_) return;
  ended_ = true;
  if (error_.empty()) error_ = std::move(why);
}

bool TcpLink::flush() {
  // Headers, payload (straight from the registered regions) and trailers in
  // one sendmsg() of the queue's pieces.
  iovec iov[kMaxIov];
  while (!ended_) {
    const TxQueue& out = qp_.output();
    if (out.empty()) break;
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = out.gather(iov);
    if (split_) {  // at most split_ octets, a moment after the last piece
      std::size_t room = split_, k = 0;
      for (; k < m.msg_iovlen && room; ++k) {
        iov[k].iov_len = std::min(iov[k].iov_len, room);
        room -= iov[k].iov_len;
      }
      m.msg_iovlen = k;
      if (sent_) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // One piece (small messages): send(), whose single buffer the kernel
    // takes on a shorter path than an iovec array.
    const ssize_t n = m.msg_iovlen == 1 ? ::send(fd_.get(), iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
                                        : ::sendmsg(fd_.get(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      finish(errno_text("send"));
      return false;
    }
    if (stream_) tap(our_dir_, out.copy_out(static_cast<std::size_t>(n)));  // as written: one segment per call
    sent_ += static_cast<std::uint64_t>(n);
    qp_.consume(static_cast<std::size_t>(n));
  }
  const bool pending = !qp_.output().empty();
  // A queue pair that is done (after a Terminate) closes once its output is out.
  if (!pending && qp_.wants_close() && !shut_wr_) {
    ::shutdown(fd_.get(), SHUT_WR);
    shut_wr_ = true;
  }
  return true;
}

bool TcpLink::read_some(bool block) {
  for (;;) {
    if (rbuf_.size() - rtail_ < kReadRoom) {  // the untaken octets moved to the front (rarely: one FPDU at most)
      std::memmove(rbuf_.data(), rbuf_.data() + rhead_, rtail_ - rhead_);
      rtail_ -= rhead_;
      rhead_ = 0;
    }
    const ssize_t n = ::recv(fd_.get(), rbuf_.data() + rtail_, rbuf_.size() - rtail_, block ? 0 : MSG_DONTWAIT);
    if (n > 0) {
      tap(1 - our_dir_, protocols::Bytes(rbuf_.data() + rtail_, static_cast<std::size_t>(n)));
      received_ += static_cast<std::uint64_t>(n);
      rtail_ += static_cast<std::size_t>(n);
      rhead_ += qp_.receive_whole(protocols::Bytes(rbuf_.data() + rhead_, rtail_ - rhead_));
      if (rhead_ == rtail_) rhead_ = rtail_ = 0;
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
  pollfd p{fd_.get(), static_cast<short>(POLLIN | POLLRDHUP | (qp_.output().empty() ? 0 : POLLOUT)), 0};
  if (::poll(&p, 1, timeout_ms) < 0 && errno != EINTR) finish(errno_text("poll"));
}

bool TcpLink::run_until(const std::function<bool()>& done, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (unsigned busy = 0;;) {
    if (done()) return true;
    if (ended_) return false;
    if (!flush()) return done();
    if (done()) return true;  // sending may have completed work (consume() segments more)
    bool progress = false;
    // Nothing to send in block mode: wait for the peer in recv() itself.
    const bool block = mode_ == WaitMode::block && qp_.output().empty() && !shut_wr_;
    if (!peer_eof_) progress = read_some(block);
    // What came is handled before the clock is read: the clock is read when
    // a turn brought nothing, and every 64th turn that did (so that the
    // setup timeout and the deadline still hold while octets keep coming).
    if (progress && ++busy % 64 != 0) continue;
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

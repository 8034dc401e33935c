#pragma once
// The TCP socket adapter around the sans-I/O queue pair: one non-blocking
// socket and a loop that moves octets between it and the queue pair.
//
//   std::string err;
//   auto fd = tcp_connect("127.0.0.1:4791", 5000, err);   // or tcp_listen + tcp_accept
//   QueuePair qp(pd, scq, rcq, cfg);
//   TcpLink link(std::move(fd), qp);
//   link.record(captures::io::pcap_tap("run.pcap", err));  // optional
//   qp.connect();
//   link.run_until([&] { return qp.state() == QpState::connected; }, 5000);
//
// run_until() writes what the queue pair has to send, hands it whatever the
// peer sent, drives its timer, and waits until the condition holds, the
// connection ends or the time runs out: in recv() when there is nothing to
// send, in poll() when output waits for room (WaitMode::block), or
// spinning on non-blocking calls (WaitMode::spin). No epoll set stays
// registered on the socket: its wakeup callback would run for every segment
// that arrives, in the sender's softirq, whether anyone waits or not. When
// the queue pair wants the connection closed (after a Terminate), the link
// flushes its output, shuts down the write side and waits briefly for the
// peer's FIN.
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engines/common/socket.hpp"
#include "engines/common/tap.hpp"
#include "engines/iwarp/qp.hpp"

namespace rdmaconf::engine::iwarp {

// Sockets: Fd, endpoints, TCP listen/accept/connect (shared with the
// InfiniBand engine's adapters).
using engine::FrameTap, engine::StreamTap;
using engine::Fd, engine::parse_endpoint, engine::endpoint_name, engine::tcp_listen, engine::local_port,
    engine::tcp_accept, engine::tcp_connect;

enum class WaitMode { block, spin };

class TcpLink {
 public:
  TcpLink(Fd fd, QueuePair& qp, WaitMode wait = WaitMode::block);
  ~TcpLink();
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  // Hands every octet sent and received to `tap` as one TCP connection
  // (the initiator as its opener); call before any traffic. False when
  // there is no tap (a recorder that could not be made).
  bool record(const std::shared_ptr<FrameTap>& tap);

  // True when done() held; false on timeout, connection end or socket error
  // (see ended(), error()).
  bool run_until(const std::function<bool()>& done, int timeout_ms);
  // Flushes what the queue pair still has to send, closes our side and waits
  // up to timeout_ms for the peer to close its side.
  void close(int timeout_ms = 2000);

  // Deliberate misalignment for conformance testing (RFC 5044 §5.1 and
  // Appendix A: a receiver must not depend on FPDUs lining up with TCP
  // segments): every write carries at most `octets`, and writes are spaced
  // so that each leaves as a segment of its own (0: off).
  void split_writes(std::size_t octets) { split_ = octets; }

  bool ended() const { return ended_; }     // the connection is over (EOF, reset, closed by us)
  bool peer_eof() const { return peer_eof_; }
  bool peer_reset() const { return peer_reset_; }  // the peer aborted the connection (RST)
  const std::string& error() const { return error_; }
  std::uint64_t octets_sent() const { return sent_; }
  std::uint64_t octets_received() const { return received_; }
  int fd() const { return fd_.get(); }

 private:
  bool flush();      // writes output(); false on a socket error
  bool read_some(bool block);  // one read (block: up to the receive timeout); true when octets arrived
  void wait(int timeout_ms);
  void finish(std::string why);
  void tap(int dir, protocols::Bytes b);

  Fd fd_;
  QueuePair& qp_;
  WaitMode mode_;
  bool ended_ = false, peer_eof_ = false, peer_reset_ = false, shut_wr_ = false;
  std::string error_;
  // Octets received: [rhead_, rtail_) of rbuf_ are those the queue pair
  // has not taken yet (the start of an FPDU not yet whole), handed to it
  // again, in front of what the next recv() appends.
  std::vector<std::byte> rbuf_;
  std::size_t rhead_ = 0, rtail_ = 0;
  std::uint64_t sent_ = 0, received_ = 0;
  std::size_t split_ = 0;
  std::chrono::steady_clock::time_point t0_;
  // recording
  std::unique_ptr<StreamTap> stream_;
  int our_dir_ = 0;
};

}  // namespace rdmaconf::engine::iwarp

#pragma once
// The RoCEv2 adapter around the sans-I/O queue pair: one UDP socket (IPv4,
// bound to a numeric address, RoCEv2 port 4791 by default), batched
// sendmmsg / recvmmsg, and a loop that moves packets between them.
//
//   std::string err;
//   UdpLink link;
//   link.open("127.0.0.1:4791", err);
//   link.set_peer("127.0.0.2:4791", err);
//   link.record(captures::io::pcap_tap("run.pcap", err));  // optional
//   link.run_until(qp, [&] { return done; }, 5000);
//
// The ICRC of every packet sent is computed from the socket's addresses
// (protocols::ib::RoceFlow: the kernel sends an unconnected socket's DF
// datagrams with IPv4 identification 0); received packets are checked the
// same way, and a packet whose ICRC differs reaches the queue pair marked
// bad, which drops it. Datagrams from any other address are ignored; the
// source port may vary (RoCEv2 senders spread flows over source ports).
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engines/common/socket.hpp"
#include "engines/common/tap.hpp"
#include "engines/ib/qp.hpp"

namespace rdmaconf::engine::ib {

// Datagrams handed over to a link by a thread that reads them from a socket
// the link does not own: a server that serves several queue pairs from one
// port (perftest's clients all send to 4791, from source ports only their
// kernel knows) reads the port once and puts each datagram in the mailbox of
// the session its destination QPN names (UdpLink::dispatch). What does not
// fit (more than a socket's receive buffer waiting) is dropped and counted,
// as the kernel drops at a full socket.
class Mailbox {
 public:
  Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  // A UDP payload from `from`, or with ip_header_len > 0 an IPv4 packet as a
  // raw socket read it. False when the mailbox is full.
  bool put(protocols::Bytes datagram, const sockaddr_storage& from, std::size_t ip_header_len);
  // Readable while datagrams wait.
  int fd() const { return event_.get(); }
  std::uint64_t dropped() const { return dropped_.load(); }

 private:
  friend class UdpLink;
  struct Datagram {
    std::vector<std::byte> bytes;
    sockaddr_storage from{};
    std::size_t ip_header_len = 0;
  };
  static constexpr std::size_t kCapacity = 4 << 20;  // octets, as a link's socket buffer
  // Moves what waits into `out` (whose buffers it may reuse).
  void take(std::vector<Datagram>& out);
  void give_back(std::vector<Datagram>& used);

  Fd event_;
  std::mutex mu_;
  std::vector<Datagram> waiting_, spare_;
  std::size_t octets_ = 0;
  std::atomic<std::uint64_t> dropped_{0};
};

class UdpLink {
 public:
  UdpLink();
  ~UdpLink();
  // With share_port, other links may bind the same address and port
  // (SO_REUSEPORT): one link per session, each connect_peer()ed to its
  // client, beside one that takes what no session claims.
  bool open(std::string_view local, std::string& err, bool share_port = false);
  // With exact_port, datagrams count as the peer's only from its port too
  // (a peer that sends from the port it named); else from any port of its
  // address (RoCEv2 senders such as rxe spread flows over source ports).
  bool set_peer(std::string_view peer, std::string& err, bool exact_port = false);
  // Connects the socket to the peer (after set_peer with exact_port): the
  // kernel then hands this link the peer's datagrams ahead of any other link
  // sharing the port, and no one else's.
  // (A connected socket's IPv4 datagrams carry a counting identification,
  // which the ICRC covers and the engine cannot know: send through an
  // unconnected socket bound to the same address and port, send_through.)
  bool connect_peer(std::string& err);
  // Sends through `fd` (an unconnected socket on the same local address and
  // port, which outlives this link) instead of this link's own socket.
  void send_through(int fd) { send_fd_ = fd; }
  std::string peer_name() const;
  // Receives through a raw IPv4 socket as well (root only), so the ICRC is
  // checked against the IP header as it arrived: a peer that numbers its
  // datagrams (rxe sets IPv4 identification) needs it. The UDP socket's own
  // copies are then read and discarded.
  bool raw_receive(std::string& err);
  // Hands every packet sent and received to `tap` as a UDP datagram (false
  // when there is none: a recorder that could not be made).
  bool record(const std::shared_ptr<engine::FrameTap>& tap);
  void stop_recording();
  // Receives from `box` instead of a socket of its own, and sends through
  // `send_fd`, a socket bound to `local` that a dispatcher reads (dispatch).
  bool attach(Mailbox& box, std::string_view local, int send_fd, std::string& err);
  // The dispatcher's side: reads a batch from this link's socket (its raw
  // socket with raw_receive) and offers each RoCEv2 datagram to `route` with
  // its destination QPN, as Mailbox::put takes it; `route` puts it in the
  // mailbox of the session that QPN belongs to and says whether there was
  // one. What belongs to no session is dropped and counted
  // (foreign_datagrams). The count read.
  using Route = std::function<bool(std::uint32_t dest_qpn, protocols::Bytes datagram, const sockaddr_storage& from,
                                   std::size_t ip_header_len)>;
  std::size_t dispatch(const Route& route);
  // Waits up to timeout_ms for something to read.
  void wait(int timeout_ms) const;
  // Closes the sockets (the counts stay readable).
  void close();
  int fd() const { return fd_.get(); }
  std::uint16_t port() const;
  std::string local_name() const;

  // Sends what qp has to send; false on a socket error (error() says which).
  bool flush(QueuePair& qp);
  // Hands qp every datagram waiting (up to a batch) from the peer; the count.
  // Datagrams from elsewhere are dropped and counted (foreign_datagrams).
  std::size_t poll(QueuePair& qp);
  // Drops every datagram waiting, handing none to a QP (a new session must
  // not read what was sent to the one before); the count.
  std::size_t discard_pending();
  // Runs qp until done() holds (true), or the time runs out, the QP goes to
  // error or the socket fails (false).
  bool run_until(QueuePair& qp, const std::function<bool()>& done, int timeout_ms);
  const std::string& error() const { return error_; }
  std::uint64_t datagrams_sent() const { return sent_; }
  std::uint64_t datagrams_received() const { return received_; }
  std::uint64_t icrc_errors() const { return icrc_bad_; }
  std::uint64_t foreign_datagrams() const { return foreign_; }
  // Datagrams the kernel dropped at this link's socket (its receive buffer
  // full, mostly), or its mailbox: what a loaded host lost before the engine
  // could see it.
  std::uint64_t kernel_drops() const;

 private:
  void tap(bool outbound, protocols::Bytes pkt);

  // Up to a batch from the UDP socket into rx_: the count (or -1), each one's source and length.
  int read_batch(sockaddr_storage* from, std::size_t* len);
  // Up to a batch from the raw socket: each RoCEv2 datagram to this link's
  // address and port to `take` (which says whether it took it); the count taken.
  std::size_t read_raw(const std::function<bool(protocols::Bytes l3, std::size_t ihl, const sockaddr_storage& from)>& take);
  std::size_t poll_raw(QueuePair& qp);
  std::size_t poll_mailbox(QueuePair& qp);
  // One datagram to the QP: counted, recorded, its ICRC checked.
  void deliver(QueuePair& qp, protocols::Bytes udp_payload, const sockaddr_storage& from);
  void deliver_raw(QueuePair& qp, protocols::Bytes l3, std::size_t ihl);
  // An IPv4 packet from the raw socket: its header's length, and its source,
  // if it is a RoCEv2 datagram to this link's address and port (else 0).
  std::size_t raw_datagram(protocols::Bytes l3, sockaddr_storage& from) const;
  bool from_peer(const sockaddr_storage& from) const;

  Fd fd_, raw_;
  Mailbox* box_ = nullptr;
  std::vector<Mailbox::Datagram> inbox_;
  int send_fd_ = -1;
  sockaddr_storage local_{}, peer_{};  // IPv4 or IPv6, both of one family
  bool have_peer_ = false, exact_port_ = false;
  protocols::ib::RoceFlow out_flow_, in_flow_;
  std::vector<OutPacket> batch_;
  std::vector<std::vector<std::byte>> rx_;
  std::shared_ptr<engine::FrameTap> tap_;
  std::string error_;
  std::uint64_t sent_ = 0, received_ = 0, icrc_bad_ = 0, foreign_ = 0;
};

// Milliseconds on a monotonic clock (the queue pair's time base).
std::uint64_t now_ms();

}  // namespace rdmaconf::engine::ib

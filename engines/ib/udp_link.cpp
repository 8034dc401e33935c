#include "engines/ib/udp_link.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sock_diag.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

namespace rdmaconf::engine::ib {

namespace pib = protocols::ib;

namespace {

constexpr std::size_t kBatch = 32;
constexpr std::size_t kMaxDatagram = 4096 + 128;

// An endpoint of either family; the unspecified address is refused, since
// the ICRC covers the addresses the datagrams travel with.
bool udp_endpoint(std::string_view text, sockaddr_storage& out, std::string& err) {
  unsigned len = 0;
  if (!parse_endpoint(text, out, len, err)) return false;
  if (out.ss_family != AF_INET && out.ss_family != AF_INET6) {
    err = fmt::format("{}: the RoCEv2 adapter takes IPv4 or IPv6 addresses", text);
    return false;
  }
  return true;
}

bool is_v6(const sockaddr_storage& a) { return a.ss_family == AF_INET6; }
socklen_t size_of(const sockaddr_storage& a) { return is_v6(a) ? sizeof(sockaddr_in6) : sizeof(sockaddr_in); }
// The address octets (4 or 16) and the port.
std::span<const std::byte> addr_of(const sockaddr_storage& a) {
  if (is_v6(a)) return std::as_bytes(std::span(reinterpret_cast<const sockaddr_in6&>(a).sin6_addr.s6_addr));
  const auto& in = reinterpret_cast<const sockaddr_in&>(a).sin_addr;
  return {reinterpret_cast<const std::byte*>(&in), 4};
}
std::uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(is_v6(a) ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}
bool unspecified(const sockaddr_storage& a) {
  const auto b = addr_of(a);
  return std::all_of(b.begin(), b.end(), [](std::byte x) { return x == std::byte{0}; });
}

void set_flow(pib::RoceFlow& f, const sockaddr_storage& src, const sockaddr_storage& dst) {
  f = {};
  f.ipv6 = is_v6(src);
  const auto s = addr_of(src), d = addr_of(dst);
  std::copy(s.begin(), s.end(), f.src.begin());
  std::copy(d.begin(), d.end(), f.dst.begin());
  f.sport = port_of(src);
  f.dport = port_of(dst);
}

}  // namespace

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

Mailbox::Mailbox() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!event_) throw std::runtime_error(errno_text("eventfd"));
}

bool Mailbox::put(protocols::Bytes datagram, const sockaddr_storage& from, std::size_t ip_header_len) {
  {
    std::lock_guard g(mu_);
    if (octets_ + datagram.size() > kCapacity) {
      ++dropped_;
      return false;
    }
    Datagram d;
    if (!spare_.empty()) {
      d = std::move(spare_.back());
      spare_.pop_back();
    }
    d.bytes.assign(datagram.begin(), datagram.end());
    d.from = from;
    d.ip_header_len = ip_header_len;
    octets_ += datagram.size();
    waiting_.push_back(std::move(d));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto w = ::write(event_.get(), &one, sizeof one);
  return true;
}

void Mailbox::take(std::vector<Datagram>& out) {
  std::uint64_t n = 0;
  [[maybe_unused]] const auto r = ::read(event_.get(), &n, sizeof n);  // (before the swap: a put after it signals again)
  std::lock_guard g(mu_);
  out.swap(waiting_);
  octets_ = 0;
}

void Mailbox::give_back(std::vector<Datagram>& used) {
  std::lock_guard g(mu_);
  for (auto& d : used)
    if (spare_.size() < kBatch * 4) spare_.push_back(std::move(d));
  used.clear();
}

UdpLink::UdpLink() : batch_(kBatch), rx_(kBatch, std::vector<std::byte>(kMaxDatagram)) {}
UdpLink::~UdpLink() = default;

bool UdpLink::open(std::string_view local, std::string& err, bool share_port) {
  if (!udp_endpoint(local, local_, err)) return false;
  if (unspecified(local_)) {
    err = fmt::format("{}: bind to one address (the ICRC covers it)", local);
    return false;
  }
  fd_ = Fd(::socket(local_.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_) {
    err = errno_text("socket");
    return false;
  }
  // IPv4: DF on every datagram, so the kernel sends identification 0, which
  // the ICRC covers (protocols/ib/packet.hpp). IPv6 routers never fragment;
  // the sender is kept from doing it too.
  const int big = 4 << 20;
  if (is_v6(local_)) {
    const int pmtu = IPV6_PMTUDISC_DO;
    ::setsockopt(fd_.get(), IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
  } else {
    const int pmtu = IP_PMTUDISC_DO;
    ::setsockopt(fd_.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  }
  // UC and UD have no flow control: a receive buffer beyond the default
  // rmem_max (root may force it) keeps loopback bursts from overflowing.
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0)
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) != 0)
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  const int one = 1;
  if (share_port && ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    err = errno_text("SO_REUSEPORT");
    fd_ = Fd();
    return false;
  }
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&local_), size_of(local_)) != 0) {
    err = errno_text(fmt::format("bind {}", local).c_str());
    fd_ = Fd();
    return false;
  }
  socklen_t l = sizeof local_;
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local_), &l);
  return true;
}

bool UdpLink::set_peer(std::string_view peer, std::string& err, bool exact_port) {
  if (!udp_endpoint(peer, peer_, err)) return false;
  exact_port_ = exact_port;
  if (peer_.ss_family != local_.ss_family) {
    err = fmt::format("{}: not of the local address's family ({})", peer, local_name());
    return false;
  }
  have_peer_ = true;
  set_flow(out_flow_, local_, peer_);
  set_flow(in_flow_, peer_, local_);
  return true;
}

bool UdpLink::connect_peer(std::string& err) {
  if (!have_peer_ || !exact_port_) {
    err = "connect_peer: no exact peer set";
    return false;
  }
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&peer_), size_of(peer_)) != 0) {
    err = errno_text(fmt::format("connect {}", peer_name()).c_str());
    return false;
  }
  return true;
}

bool UdpLink::attach(Mailbox& box, std::string_view local, int send_fd, std::string& err) {
  if (!udp_endpoint(local, local_, err)) return false;
  box_ = &box;
  send_fd_ = send_fd;
  return true;
}

std::string UdpLink::peer_name() const { return have_peer_ ? endpoint_name(peer_) : std::string(); }

bool UdpLink::raw_receive(std::string& err) {
  if (is_v6(local_)) {  // an IPv6 raw socket hands over no IP header: nothing to gain
    err = "raw receive is for IPv4 (identification) only";
    return false;
  }
  raw_ = Fd(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP));
  if (!raw_) {
    err = errno_text("raw socket (needs root)");
    return false;
  }
  const int big = 4 << 20;
  if (::setsockopt(raw_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0)
    ::setsockopt(raw_.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  return true;
}

bool UdpLink::from_peer(const sockaddr_storage& from) const {
  if (!have_peer_ || from.ss_family != peer_.ss_family) return false;
  const auto a = addr_of(from), b = addr_of(peer_);
  return std::equal(a.begin(), a.end(), b.begin(), b.end()) && (!exact_port_ || port_of(from) == port_of(peer_));
}

std::uint16_t UdpLink::port() const { return port_of(local_); }

std::string UdpLink::local_name() const { return endpoint_name(local_); }

bool UdpLink::record(const std::shared_ptr<engine::FrameTap>& tap) {
  tap_ = tap;
  return tap_ != nullptr;
}

void UdpLink::stop_recording() { tap_.reset(); }

void UdpLink::close() {
  fd_ = Fd();
  raw_ = Fd();
  box_ = nullptr;
  have_peer_ = false;
}

void UdpLink::tap(bool outbound, protocols::Bytes pkt) {
  if (tap_) tap_->datagram(outbound ? local_ : peer_, outbound ? peer_ : local_, pkt);
}

bool UdpLink::flush(QueuePair& qp) {
  if (!have_peer_) return true;
  for (;;) {
    std::size_t n = 0;
    while (n < kBatch && qp.next_output(batch_[n])) {
      auto& b = batch_[n].bytes;
      pib::seal_icrc(b, out_flow_);
      if (batch_[n].corrupt_icrc) b[b.size() - 1] ^= std::byte{0x40};
      tap(true, b);
      ++n;
    }
    if (n == 0) return true;
    mmsghdr msgs[kBatch]{};
    iovec iov[kBatch];
    for (std::size_t i = 0; i < n; ++i) {
      iov[i] = {batch_[i].bytes.data(), batch_[i].bytes.size()};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &peer_;
      msgs[i].msg_hdr.msg_namelen = size_of(peer_);
    }
    std::size_t done = 0;
    while (done < n) {
      const int out = send_fd_ >= 0 ? send_fd_ : fd_.get();
      const int r = ::sendmmsg(out, msgs + done, static_cast<unsigned>(n - done), 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
          pollfd p{out, POLLOUT, 0};
          ::poll(&p, 1, 10);
          continue;
        }
        if (errno == ECONNREFUSED) {  // an ICMP error from an earlier datagram: the packet is lost, as on a wire
          ++done;
          continue;
        }
        error_ = errno_text("sendmmsg");
        return false;
      }
      done += static_cast<std::size_t>(r);
    }
    sent_ += n;
  }
}

void UdpLink::deliver(QueuePair& qp, protocols::Bytes pkt, const sockaddr_storage& from) {
  ++received_;
  tap(false, pkt);
  pib::RoceFlow f = in_flow_;
  f.sport = port_of(from);
  const bool ok = pkt.size() >= pib::kBth.size + pib::kIcrcSize && pib::roce_icrc(pkt, f) == pib::read_icrc(pkt);
  if (!ok) ++icrc_bad_;
  qp.receive(pkt, ok);
}

void UdpLink::deliver_raw(QueuePair& qp, protocols::Bytes l3, std::size_t ihl) {
  const protocols::Bytes pkt = l3.subspan(ihl + 8);
  ++received_;
  tap(false, pkt);
  const bool ok = pib::roce_icrc(l3, false, ihl) == pib::read_icrc(pkt);
  if (!ok) ++icrc_bad_;
  qp.receive(pkt, ok);
}

int UdpLink::read_batch(sockaddr_storage* from, std::size_t* len) {
  mmsghdr msgs[kBatch]{};
  iovec iov[kBatch];
  for (std::size_t i = 0; i < kBatch; ++i) {
    iov[i] = {rx_[i].data(), rx_[i].size()};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &from[i];
    msgs[i].msg_hdr.msg_namelen = sizeof from[i];
  }
  const int r = ::recvmmsg(fd_.get(), msgs, kBatch, MSG_DONTWAIT, nullptr);
  for (int i = 0; i < r; ++i) len[i] = msgs[i].msg_len;
  return r;
}

std::size_t UdpLink::poll(QueuePair& qp) {
  if (box_) return poll_mailbox(qp);
  sockaddr_storage from[kBatch];
  std::size_t len[kBatch];
  const int r = read_batch(from, len);
  if (raw_) return poll_raw(qp);  // the raw socket's copies carry the IP header
  if (r <= 0) return 0;
  std::size_t handed = 0;
  for (int i = 0; i < r; ++i) {
    if (!from_peer(from[i])) {
      ++foreign_;
      continue;
    }
    deliver(qp, {rx_[i].data(), len[i]}, from[i]);
    ++handed;
  }
  return handed;
}

std::size_t UdpLink::poll_mailbox(QueuePair& qp) {
  box_->take(inbox_);
  std::size_t handed = 0;
  for (const auto& d : inbox_) {
    if (!from_peer(d.from)) {  // (the dispatcher routes by QPN and address; the port is checked here)
      ++foreign_;
      continue;
    }
    if (d.ip_header_len)
      deliver_raw(qp, d.bytes, d.ip_header_len);
    else
      deliver(qp, d.bytes, d.from);
    ++handed;
  }
  box_->give_back(inbox_);
  return handed;
}

std::size_t UdpLink::dispatch(const Route& route) {
  // The BTH's destination QP, as the protocol table places it.
  const auto& dest_qp = pib::kBth.fields[pib::Bth::destqp];
  const auto hand = [&](protocols::Bytes pkt, protocols::Bytes whole, const sockaddr_storage& from, std::size_t ihl) {
    if (pkt.size() >= pib::kBth.size + pib::kIcrcSize &&
        route(static_cast<std::uint32_t>(protocols::read_bits(pkt, dest_qp.bit_offset, dest_qp.bit_width)), whole, from, ihl))
      ++received_;
    else
      ++foreign_;
  };
  sockaddr_storage from[kBatch];
  std::size_t len[kBatch];
  const int r = read_batch(from, len);
  if (raw_)  // the UDP socket's copies are read and dropped; the raw socket's carry the IP header
    return read_raw([&](protocols::Bytes l3, std::size_t ihl, const sockaddr_storage& src) {
      hand(l3.subspan(ihl + 8), l3, src, ihl);
      return true;
    });
  for (int i = 0; i < r; ++i) {
    const protocols::Bytes pkt{rx_[i].data(), len[i]};
    hand(pkt, pkt, from[i], 0);
  }
  return r > 0 ? static_cast<std::size_t>(r) : 0;
}

void UdpLink::wait(int timeout_ms) const {
  pollfd p[3] = {{fd_ ? fd_.get() : -1, POLLIN, 0}, {raw_ ? raw_.get() : -1, POLLIN, 0}, {box_ ? box_->fd() : -1, POLLIN, 0}};
  ::poll(p, 3, timeout_ms);
}

std::uint64_t UdpLink::kernel_drops() const {
  // The socket's drop counter (SK_MEMINFO_DROPS of SO_MEMINFO); with a raw
  // receive socket its copies are the ones read, so its drops count too.
  std::uint64_t n = box_ ? box_->dropped() : 0;
  for (const Fd* fd : {&fd_, &raw_}) {
    if (!*fd) continue;
    std::uint32_t mem[SK_MEMINFO_VARS]{};
    socklen_t len = sizeof mem;
    if (::getsockopt(fd->get(), SOL_SOCKET, SO_MEMINFO, mem, &len) == 0 && len > SK_MEMINFO_DROPS * sizeof mem[0])
      n += mem[SK_MEMINFO_DROPS];
  }
  return n;
}

std::size_t UdpLink::discard_pending() {
  std::size_t n = 0;
  if (box_) {
    box_->take(inbox_);
    n += inbox_.size();
    box_->give_back(inbox_);
  }
  for (const Fd* fd : {&fd_, &raw_}) {
    if (!*fd) continue;
    while (::recv(fd->get(), rx_[0].data(), rx_[0].size(), MSG_DONTWAIT) >= 0) n += fd == &fd_;
  }
  return n;
}

std::size_t UdpLink::raw_datagram(protocols::Bytes l3, sockaddr_storage& from) const {
  if (l3.size() < 28 || (std::to_integer<unsigned>(l3[0]) >> 4) != 4) return 0;
  const std::size_t ihl = (std::to_integer<unsigned>(l3[0]) & 15u) * 4;
  if (ihl < 20 || l3.size() < ihl + 8 + pib::kBth.size + pib::kIcrcSize) return 0;
  from = {};
  from.ss_family = AF_INET;
  std::memcpy(&reinterpret_cast<sockaddr_in&>(from).sin_addr, l3.data() + 12, 4);
  reinterpret_cast<sockaddr_in&>(from).sin_port = htons(protocols::be16(l3, ihl));
  if (std::memcmp(l3.data() + 16, addr_of(local_).data(), 4) != 0 || protocols::be16(l3, ihl + 2) != port_of(local_))
    return 0;
  return ihl;
}

std::size_t UdpLink::read_raw(const std::function<bool(protocols::Bytes, std::size_t, const sockaddr_storage&)>& take) {
  std::size_t taken = 0;
  for (std::size_t n = 0; n < kBatch; ++n) {
    const ssize_t len = ::recv(raw_.get(), rx_[0].data(), rx_[0].size(), MSG_DONTWAIT);
    if (len <= 0) break;
    const protocols::Bytes l3{rx_[0].data(), static_cast<std::size_t>(len)};
    sockaddr_storage from;
    if (const std::size_t ihl = raw_datagram(l3, from)) taken += take(l3, ihl, from);
  }
  return taken;
}

std::size_t UdpLink::poll_raw(QueuePair& qp) {
  return read_raw([&](protocols::Bytes l3, std::size_t ihl, const sockaddr_storage& from) {
    if (!from_peer(from)) return false;
    deliver_raw(qp, l3, ihl);
    return true;
  });
}

bool UdpLink::run_until(QueuePair& qp, const std::function<bool()>& done, int timeout_ms) {
  const std::uint64_t end = now_ms() + static_cast<std::uint64_t>(timeout_ms);
  for (;;) {
    const std::uint64_t t = now_ms();
    qp.tick(t);
    const bool finished = done();  // may post work: flush after it
    const std::uint64_t before = sent_;
    if (!flush(qp)) return false;
    if (finished) return true;
    if (qp.state() == QpState::error) {
      error_ = fmt::format("queue pair in error: {}", qp.error());
      return false;
    }
    if (t >= end) {
      error_ = fmt::format("timed out after {} ms", timeout_ms);
      return false;
    }
    if (poll(qp) > 0 || sent_ != before) continue;
    // Nothing arrived: sleep until a datagram, the QP's timer or the end.
    std::uint64_t wait = end - t;
    if (auto nt = qp.next_timer(t)) wait = std::min<std::uint64_t>(wait, *nt);
    this->wait(static_cast<int>(std::min<std::uint64_t>(wait, 50)));
  }
}

}  // namespace rdmaconf::engine::ib

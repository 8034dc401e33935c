#include "captures/io/pcap_writer.hpp"

#include <algorithm>
#include <stdexcept>

#include "protocols/core/header.hpp"
#include "protocols/net/checksum.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::captures::io {

using namespace protocols;

Host host_v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port) {
  Host h;
  h.addr[0] = a, h.addr[1] = b, h.addr[2] = c, h.addr[3] = d;
  h.port = port;
  h.mac = {0x02, 0x00, a, b, c, d};
  return h;
}

Host host_v6(std::uint16_t last, std::uint16_t port) {
  Host h;
  h.ipv6 = true;
  h.addr = {0x20, 0x01, 0x0d, 0xb8};  // documentation prefix 2001:db8::/32
  h.addr[14] = static_cast<std::uint8_t>(last >> 8);
  h.addr[15] = static_cast<std::uint8_t>(last);
  h.port = port;
  h.mac = {0x02, 0x00, 0x00, 0x00, static_cast<std::uint8_t>(last >> 8), static_cast<std::uint8_t>(last)};
  return h;
}

PcapWriter::PcapWriter(const std::string& path, int linktype) : linktype_(linktype) {
  dead_ = pcap_open_dead(linktype, 262144);
  dump_ = pcap_dump_open(dead_, path.c_str());
  if (!dump_) {
    // (The destructor does not run for a constructor that throws.)
    const std::string why = path + ": " + pcap_geterr(dead_);
    pcap_close(dead_);
    dead_ = nullptr;
    throw std::runtime_error(why);
  }
}

PcapWriter::~PcapWriter() {
  if (dump_) pcap_dump_close(dump_);
  if (dead_) pcap_close(dead_);
}

void eth_header(const Host& from, const Host& to, std::vector<std::byte>& out) {
  for (auto x : to.mac) out.push_back(std::byte{x});
  for (auto x : from.mac) out.push_back(std::byte{x});
  const std::uint16_t etype = from.ipv6 ? 0x86dd : 0x0800;
  out.push_back(std::byte(etype >> 8));
  out.push_back(std::byte(etype & 0xff));
}

void PcapWriter::ip_packet(const Host& from, const Host& to, Bytes l3) {
  frame_.clear();
  const std::uint16_t etype = from.ipv6 ? 0x86dd : 0x0800;
  if (linktype_ == DLT_EN10MB) {
    eth_header(from, to, frame_);
  } else {  // Linux cooked v2
    std::array<std::byte, 20> h{};
    put_be16(h, 0, etype);
    put_be32(h, 4, 2);     // ifindex
    put_be16(h, 8, 1);     // ARPHRD_ETHER
    h[10] = std::byte{4};  // outgoing
    h[11] = std::byte{6};
    std::copy_n(reinterpret_cast<const std::byte*>(from.mac.data()), 6, h.begin() + 12);
    frame_.insert(frame_.end(), h.begin(), h.end());
  }
  frame_.insert(frame_.end(), l3.begin(), l3.end());
  frame(frame_);
}

void PcapWriter::frame(Bytes f) {
  pcap_pkthdr ph{};
  usec_ += 10;
  ph.ts.tv_sec = usec_ / 1000000;
  ph.ts.tv_usec = usec_ % 1000000;
  ph.caplen = ph.len = static_cast<bpf_u_int32>(f.size());
  pcap_dump(reinterpret_cast<u_char*>(dump_), &ph, reinterpret_cast<const u_char*>(f.data()));
  ++frames_;
}

namespace {

std::vector<std::byte> ip_wrap(const Host& from, const Host& to, std::uint8_t proto, std::vector<std::byte> l4,
                               std::size_t csum_at, bool checksum) {
  if (checksum) {
    const std::size_t alen = from.ipv6 ? 16 : 4;
    std::uint16_t c = net::transport_checksum({reinterpret_cast<const std::byte*>(from.addr.data()), alen},
                                              {reinterpret_cast<const std::byte*>(to.addr.data()), alen}, proto, l4);
    if (proto == 17 && c == 0) c = 0xffff;  // RFC 768: zero means "no checksum"
    put_be16(l4, csum_at, c);
  }
  std::vector<std::byte> out;
  if (from.ipv6) {
    Header h(net::kIpv6);
    h.set(net::Ipv6::version, 6);
    h.set(net::Ipv6::payload_len, l4.size());
    h.set(net::Ipv6::next, proto);
    h.set(net::Ipv6::hlim, 64);
    h.set_field_bytes(net::Ipv6::src, {reinterpret_cast<const std::byte*>(from.addr.data()), 16});
    h.set_field_bytes(net::Ipv6::dst, {reinterpret_cast<const std::byte*>(to.addr.data()), 16});
    out.assign(h.bytes().begin(), h.bytes().end());
  } else {
    Header h(net::kIpv4);
    h.set(net::Ipv4::version, 4);
    h.set(net::Ipv4::ihl, 5);
    h.set(net::Ipv4::total_len, 20 + l4.size());
    h.set(net::Ipv4::df, 1);
    h.set(net::Ipv4::ttl, 64);
    h.set(net::Ipv4::protocol, proto);
    h.set(net::Ipv4::src, be32({reinterpret_cast<const std::byte*>(from.addr.data()), 4}, 0));
    h.set(net::Ipv4::dst, be32({reinterpret_cast<const std::byte*>(to.addr.data()), 4}, 0));
    h.set(net::Ipv4::checksum, net::fold(net::sum16(h.bytes())));
    out.assign(h.bytes().begin(), h.bytes().end());
  }
  out.insert(out.end(), l4.begin(), l4.end());
  return out;
}

}  // namespace

std::vector<std::byte> ip_tcp(const Host& from, const Host& to, std::uint32_t seq, std::uint32_t ack, std::uint8_t flags,
                              Bytes payload, std::uint16_t mss) {
  Header t(net::kTcp);
  t.set(net::Tcp::sport, from.port);
  t.set(net::Tcp::dport, to.port);
  t.set(net::Tcp::seq, seq);
  t.set(net::Tcp::ack, ack);
  t.set(net::Tcp::doff, mss ? 6 : 5);
  t.mutable_bytes()[13] = std::byte{flags};
  t.set(net::Tcp::window, 65535);
  std::vector<std::byte> l4(t.bytes().begin(), t.bytes().end());
  if (mss) {
    const std::byte opt[4] = {std::byte{2}, std::byte{4}, std::byte(mss >> 8), std::byte(mss & 0xff)};
    l4.insert(l4.end(), opt, opt + 4);
  }
  l4.insert(l4.end(), payload.begin(), payload.end());
  return ip_wrap(from, to, 6, std::move(l4), 16, true);
}

std::vector<std::byte> ip_udp(const Host& from, const Host& to, Bytes payload, bool udp_checksum) {
  Header u(net::kUdp);
  u.set(net::Udp::sport, from.port);
  u.set(net::Udp::dport, to.port);
  u.set(net::Udp::length, 8 + payload.size());
  std::vector<std::byte> l4(u.bytes().begin(), u.bytes().end());
  l4.insert(l4.end(), payload.begin(), payload.end());
  return ip_wrap(from, to, 17, std::move(l4), 6, udp_checksum);
}

std::vector<std::byte> eth_udp(const Host& from, const Host& to, Bytes payload, bool udp_checksum) {
  std::vector<std::byte> f;
  eth_header(from, to, f);
  const auto l3 = ip_udp(from, to, payload, udp_checksum);
  f.insert(f.end(), l3.begin(), l3.end());
  return f;
}

void set_udp_checksum(std::vector<std::byte>& l3) {
  const std::size_t at = (static_cast<unsigned>(l3[0]) >> 4) == 6 ? net::kIpv6.size : net::kIpv4.size;
  put_be16(l3, at + 6, 0);
  const Bytes b(l3);
  std::uint16_t c = net::udp_checksum(b, b.subspan(at));
  put_be16(l3, at + 6, c == 0 ? 0xffff : c);
}

TcpConversation::TcpConversation(PcapWriter& w, Host a, Host b, std::uint32_t isn_a, std::uint32_t isn_b)
    : w_(w), h_{a, b}, seq_{isn_a, isn_b} {}

void TcpConversation::handshake(std::uint16_t mss) {
  using namespace tcpflag;
  w_.ip_packet(h_[0], h_[1], ip_tcp(h_[0], h_[1], seq_[0], 0, syn, {}, mss));
  w_.ip_packet(h_[1], h_[0], ip_tcp(h_[1], h_[0], seq_[1], seq_[0] + 1, syn | ack, {}, mss));
  ++seq_[0];
  ++seq_[1];
  w_.ip_packet(h_[0], h_[1], ip_tcp(h_[0], h_[1], seq_[0], seq_[1], ack, {}));
}

void TcpConversation::send(int dir, Bytes data, std::size_t mss) {
  using namespace tcpflag;
  const int o = 1 - dir;
  while (!data.empty()) {
    const std::size_t n = std::min(mss, data.size());
    w_.ip_packet(h_[dir], h_[o], ip_tcp(h_[dir], h_[o], seq_[dir], seq_[o], ack | psh, data.first(n)));
    seq_[dir] += static_cast<std::uint32_t>(n);
    data = data.subspan(n);
  }
}

void TcpConversation::skip(int dir, std::size_t n) { seq_[dir] += static_cast<std::uint32_t>(n); }

void TcpConversation::close() {
  using namespace tcpflag;
  w_.ip_packet(h_[0], h_[1], ip_tcp(h_[0], h_[1], seq_[0], seq_[1], fin | ack, {}));
  ++seq_[0];
  w_.ip_packet(h_[1], h_[0], ip_tcp(h_[1], h_[0], seq_[1], seq_[0], fin | ack, {}));
  ++seq_[1];
  w_.ip_packet(h_[0], h_[1], ip_tcp(h_[0], h_[1], seq_[0], seq_[1], ack, {}));
}

void TcpConversation::reset(int dir) {
  using namespace tcpflag;
  w_.ip_packet(h_[dir], h_[1 - dir], ip_tcp(h_[dir], h_[1 - dir], seq_[dir], seq_[1 - dir], rst | ack, {}));
}

}  // namespace rdmaconf::captures::io

#pragma once
// Synthesises captures: Ethernet/IPv4-or-IPv6 frames carrying TCP
// conversations (handshake, segmented data, FIN) or UDP datagrams, written
// through libpcap. Used by the golden-capture generator, tests and benchmarks.
#include <pcap/pcap.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "protocols/core/bits.hpp"

namespace rdmaconf::captures::io {

struct Host {
  bool ipv6 = false;
  std::array<std::uint8_t, 16> addr{};
  std::uint16_t port = 0;
  std::array<std::uint8_t, 6> mac{};
};
Host host_v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port);
Host host_v6(std::uint16_t last, std::uint16_t port);
// Appends the Ethernet II header of a frame from `from` to `to` (IPv4 or IPv6 by `from`).
void eth_header(const Host& from, const Host& to, std::vector<std::byte>& out);

class PcapWriter {
 public:
  // linktype: DLT_EN10MB or DLT_LINUX_SLL2 for ip_packet; any for frame.
  PcapWriter(const std::string& path, int linktype = DLT_EN10MB);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  // Writes one IP packet (l3 starts at the IP header) with the link header.
  void ip_packet(const Host& from, const Host& to, protocols::Bytes l3);
  // Writes one frame exactly as given (for link types without an IP layer,
  // such as DLT_INFINIBAND, whose frames start with the LRH).
  void frame(protocols::Bytes f);
  std::uint64_t frames() const { return frames_; }
  // Frames are stamped 10 microseconds apart from a fixed start; live
  // recorders move the clock (microseconds since the epoch) before each write.
  void set_time_us(std::int64_t usec) { usec_ = usec; }

 private:
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dump_ = nullptr;
  int linktype_;
  std::uint64_t frames_ = 0;
  std::int64_t usec_ = 1700000000LL * 1000000LL;
  std::vector<std::byte> frame_;
};

// Builds an IP + transport packet with correct IPv4 header and TCP/UDP checksums.
// mss != 0 adds an MSS option (for SYNs).
std::vector<std::byte> ip_tcp(const Host& from, const Host& to, std::uint32_t seq, std::uint32_t ack, std::uint8_t flags,
                              protocols::Bytes payload, std::uint16_t mss = 0);
std::vector<std::byte> ip_udp(const Host& from, const Host& to, protocols::Bytes payload, bool udp_checksum);
// An Ethernet frame carrying ip_udp's packet.
std::vector<std::byte> eth_udp(const Host& from, const Host& to, protocols::Bytes payload, bool udp_checksum);
// Computes and sets the UDP checksum of an IP packet ip_udp made (IPv4 or
// IPv6, by the version nibble), for a payload changed after it was built.
void set_udp_checksum(std::vector<std::byte>& l3);

namespace tcpflag {
constexpr std::uint8_t fin = 0x01, syn = 0x02, rst = 0x04, psh = 0x08, ack = 0x10;
}

// A TCP conversation between a (the initiator) and b.
class TcpConversation {
 public:
  TcpConversation(PcapWriter& w, Host a, Host b, std::uint32_t isn_a = 1000, std::uint32_t isn_b = 50000);
  // SYN and SYN-ACK advertise `mss` (0: no option).
  void handshake(std::uint16_t mss = 1460);
  // Sends `data` from side dir (0 = a) in segments of at most `mss` octets.
  void send(int dir, protocols::Bytes data, std::size_t mss = 1448);
  // Advances the sequence space of dir without writing the octets (a capture gap).
  void skip(int dir, std::size_t n);
  void close();
  // Ends the conversation with a RST (and ACK) from side dir.
  void reset(int dir);

 private:
  PcapWriter& w_;
  Host h_[2];
  std::uint32_t seq_[2];
};

}  // namespace rdmaconf::captures::io

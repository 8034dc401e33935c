#pragma once
// What an engine sends and receives, handed as the wire carries it to
// whoever records it (a capture file, a test). Engines know only this
// interface; captures/io/pcap_tap.hpp writes it to a pcap file.
#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <span>

namespace rdmaconf::engine {

// One TCP connection's octets, both directions.
class StreamTap {
 public:
  virtual ~StreamTap() = default;
  // Octets sent by side `dir` (0: the side that opened the connection).
  virtual void data(int dir, std::span<const std::byte> octets) = 0;
  // The connection is over, or its recording ends.
  virtual void close() = 0;
};

class FrameTap {
 public:
  virtual ~FrameTap() = default;
  // A TCP connection that `opener` opened to `other`, recorded from its
  // handshake on.
  virtual std::unique_ptr<StreamTap> stream(const sockaddr_storage& opener, const sockaddr_storage& other) = 0;
  // One UDP datagram, its payload as sent.
  virtual void datagram(const sockaddr_storage& from, const sockaddr_storage& to, std::span<const std::byte> payload) = 0;
};

}  // namespace rdmaconf::engine

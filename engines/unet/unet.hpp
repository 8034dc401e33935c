#pragma once
// U-Net, sans I/O: endpoints, communication segments, message queues and
// channels, with the protection rules of U-Net (von Eicken et al., SOSP
// 1995) enforced on the trusted side. A Node stands for one host's kernel
// and network interface: its control path (create an endpoint, open and
// close channels, tear an endpoint down) is the only way to change who may
// talk to whom, and its data path moves frames between endpoints' queues and
// a Link. The wire format is protocols/unet/headers.hpp.
//
// Protection, as enforced here:
//  * A message leaves with its endpoint's tag and MAC address, which the
//    node stamps (send), or, for a frame the endpoint composed itself
//    (send_frame, as with AF_XDP's transmit ring), which the node checks:
//    a frame naming another tag, another source MAC or a peer without an
//    open channel is refused and counted, never sent.
//  * A received message goes to the endpoint its destination tag names, and
//    only from a peer (MAC, tag) that endpoint has a channel to; anything
//    else is dropped and counted.
//  * An empty free queue drops the message and counts it; no buffer is
//    ever written that is not on the free queue.
//  * A message longer than its buffer is cut to the buffer and flagged.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmaconf::engine::unet {

using Mac = std::array<std::uint8_t, 6>;
using Bytes = std::span<const std::byte>;

std::string mac_text(const Mac& m);

struct SegmentConfig {
  std::uint32_t buffers = 64;        // buffers in the communication segment
  std::uint32_t buffer_size = 2048;  // octets each
  std::uint32_t queue_depth = 64;    // entries in each message queue
};

// A received message, on the receive queue.
struct RxDesc {
  enum : std::uint16_t { truncated = 1, close = 2 };
  std::uint32_t buffer = 0;   // index into the segment
  std::uint32_t length = 0;   // octets placed in the buffer
  std::uint32_t message = 0;  // octets the message had
  std::uint32_t channel = 0;
  std::uint16_t flags = 0;
};

struct EndpointCounters {
  std::uint64_t rx_delivered = 0, rx_truncated = 0, rx_no_free = 0, rx_no_channel = 0, rx_queue_full = 0;
  std::uint64_t tx_sent = 0, tx_refused = 0, tx_spoofed = 0;
};

struct NodeCounters {
  std::uint64_t rx_frames = 0, rx_not_unet = 0, rx_malformed = 0, rx_unknown_tag = 0;
  std::uint64_t tx_frames = 0;
};

class Node;

// An application's handle into the network. Only data-path operations: the
// channels it may use are opened by its node's control path.
class Endpoint {
 public:
  std::uint16_t tag() const { return tag_; }
  const SegmentConfig& config() const { return cfg_; }
  // A buffer of the communication segment, for the application to fill
  // before a send or read after a receive.
  std::span<std::byte> buffer(std::uint32_t index);

  // The send queue: `length` octets of `buffer` to the channel's peer.
  // False when the queue is full, the channel is not open, the buffer is
  // not one of the segment's or the message is longer than the link allows.
  bool send(std::uint32_t channel, std::uint32_t buffer, std::uint32_t length, bool close = false);
  // A whole frame the application composed in `buffer` (Ethernet and U-Net
  // headers included), as on AF_XDP's transmit ring; the node checks it
  // before it leaves.
  bool send_frame(std::uint32_t buffer, std::uint32_t length);
  // Buffers whose send completed, for the application to reuse.
  std::optional<std::uint32_t> poll_sent();
  // The receive queue.
  std::optional<RxDesc> poll();
  // The free queue: buffers the node may receive into. False when the
  // buffer is not the segment's or the queue is full.
  bool give(std::uint32_t buffer);
  std::size_t free_count() const { return free_.size(); }
  const EndpointCounters& counters() const { return counters_; }
  bool alive() const { return alive_; }

 private:
  friend class Node;
  struct Tx {
    std::uint32_t buffer = 0, length = 0, channel = 0;
    bool close = false, raw = false;
  };
  struct Channel {
    Mac peer{};
    std::uint16_t peer_tag = 0;
    bool open = true, closed_by_peer = false;
  };
  Endpoint(Node& node, std::uint16_t tag, SegmentConfig cfg);
  bool valid_buffer(std::uint32_t b) const { return b < cfg_.buffers; }

  Node& node_;
  std::uint16_t tag_;
  SegmentConfig cfg_;
  std::vector<std::byte> segment_;
  std::deque<Tx> send_q_;
  std::deque<std::uint32_t> sent_q_, free_;
  std::deque<RxDesc> recv_q_;
  std::vector<Channel> channels_;
  EndpointCounters counters_;
  bool alive_ = true;
};

// Where a node's frames go.
class Link {
 public:
  virtual ~Link() = default;
  virtual void send(Bytes frame) = 0;
  // The end of a transmit: frames a link batched go out now.
  virtual void flush() {}
};

// Told of every change the control path makes, so that a demultiplexer in
// front of the node (the XDP program of the AF_XDP path) filters by the
// same endpoints and channels, in the kernel.
class ControlObserver {
 public:
  virtual ~ControlObserver() = default;
  virtual void endpoint_created(std::uint16_t tag) = 0;
  virtual void endpoint_destroyed(std::uint16_t tag) = 0;
  virtual void channel_opened(std::uint16_t tag, const Mac& peer, std::uint16_t peer_tag) = 0;
  virtual void channel_closed(std::uint16_t tag, const Mac& peer, std::uint16_t peer_tag) = 0;
};

// Rules a node can be told to break, so that a suite can show that its
// cases see the break (like the negative NIC plug-ins): never set outside
// `rdmaconf live unet --fault` and the tests.
struct Faults {
  bool forge = false;             // send an endpoint's composed frames unchecked
  bool ignore_channels = false;   // deliver from peers without a channel
  bool overflow = false;          // write a long message past its buffer
};

class Node {
 public:
  Node(Mac mac, std::size_t mtu = 1500);
  void set_faults(Faults f) { faults_ = f; }
  const Mac& mac() const { return mac_; }
  void attach(Link* link) { link_ = link; }
  // Set before the first endpoint is created.
  void observe(ControlObserver* o) { observer_ = o; }

  // ---- The control path (privileged) ----
  // A new endpoint with its own segment; null when the tag is taken or not
  // an endpoint tag (0 and 0xffff name none).
  Endpoint* create_endpoint(std::uint16_t tag, SegmentConfig cfg = {});
  // A channel from `ep` to (peer, peer_tag); returns its number.
  std::optional<std::uint32_t> open_channel(Endpoint& ep, const Mac& peer, std::uint16_t peer_tag);
  void close_channel(Endpoint& ep, std::uint32_t channel);
  // Tears the endpoint down: its queues are emptied, its tag then names
  // nothing, and messages for it are dropped as for an unknown tag.
  void destroy_endpoint(std::uint16_t tag);

  // ---- The data path ----
  // Sends what the endpoints queued, oldest endpoint first.
  void transmit();
  // A frame from the wire. False when it is not a U-Net frame (for the
  // kernel's own stack); true when the node took it, delivered or dropped.
  bool receive(Bytes frame);

  const NodeCounters& counters() const { return counters_; }
  Endpoint* endpoint(std::uint16_t tag);
  std::size_t max_message() const { return max_message_; }
  // Called with every frame the node sends (a recorder).
  std::function<void(Bytes)> on_send;

 private:
  void deliver(Endpoint& ep, std::uint32_t channel, Bytes message, bool close);
  bool check_frame(Endpoint& ep, Bytes frame, std::uint32_t& channel) const;

  Mac mac_;
  Faults faults_;
  std::size_t max_message_;
  Link* link_ = nullptr;
  ControlObserver* observer_ = nullptr;
  std::map<std::uint16_t, std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::unique_ptr<Endpoint>> retired_;  // torn down, still held by their applications
  NodeCounters counters_;
  std::vector<std::byte> frame_;
};

// Two nodes joined by memory: what one sends waits in the other's inbox
// until run() hands it over.
class MemoryLink {
 public:
  MemoryLink(Node& a, Node& b);
  // Moves frames both ways until no node has anything to send; returns the
  // frames carried.
  std::size_t run();
  // Called with every frame the link carries, before it is delivered
  // (it may change it: fault injection).
  std::function<void(std::vector<std::byte>&)> on_wire;

 private:
  struct End final : Link {
    std::deque<std::vector<std::byte>> inbox;  // frames for the other node
    void send(Bytes f) override { inbox.emplace_back(f.begin(), f.end()); }
  };
  Node &a_, &b_;
  End to_b_, to_a_;
};

// Builds a U-Net frame: Ethernet II to `to` from `from`, the header, the
// message and zero padding to the minimum frame.
// The same into `out` (its storage reused: no allocation per message).
void build_frame_into(std::vector<std::byte>& out, const Mac& from, const Mac& to, std::uint16_t src_tag, std::uint16_t dst_tag,
                      Bytes message, bool close = false);
std::vector<std::byte> build_frame(const Mac& from, const Mac& to, std::uint16_t src_tag, std::uint16_t dst_tag,
                                   Bytes message, bool close = false);

}  // namespace rdmaconf::engine::unet

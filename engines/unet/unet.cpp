#include "engines/unet/unet.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "protocols/core/bits.hpp"
#include "protocols/core/header.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::engine::unet {

namespace pu = protocols::unet;
using pu::Unet;

namespace {

constexpr std::size_t kEth = pu::kEthHeader;

Mac mac_at(Bytes f, std::size_t at) {
  Mac m{};
  for (std::size_t i = 0; i < 6; ++i) m[i] = static_cast<std::uint8_t>(f[at + i]);
  return m;
}

bool endpoint_tag(std::uint64_t t) { return t != pu::kPortNone && t != pu::kPortReserved; }

// A U-Net frame's header and message, when it is one and well formed.
struct Parsed {
  Mac dst{}, src{};
  std::uint16_t dst_tag = 0, src_tag = 0;
  bool close = false;
  Bytes message;
};
enum class Parse { ok, not_unet, malformed };

Parse parse(Bytes f, Parsed& p) {
  if (f.size() < kEth || protocols::be16(f, 12) != pu::kEthertype) return Parse::not_unet;
  auto h = protocols::Header::decode(pu::kUnet, f.subspan(kEth));
  if (!h) return Parse::malformed;
  const std::size_t len = h->get(Unet::length);
  if (h->get(Unet::version) != pu::kVersion || h->nonzero_reserved() || !endpoint_tag(h->get(Unet::dst_port)) ||
      !endpoint_tag(h->get(Unet::src_port)) || len > f.size() - kEth - pu::kHeaderSize)
    return Parse::malformed;
  p.dst = mac_at(f, 0);
  p.src = mac_at(f, 6);
  p.dst_tag = static_cast<std::uint16_t>(h->get(Unet::dst_port));
  p.src_tag = static_cast<std::uint16_t>(h->get(Unet::src_port));
  p.close = h->get(Unet::close) != 0;
  p.message = f.subspan(kEth + pu::kHeaderSize, len);
  return Parse::ok;
}

}  // namespace

std::string mac_text(const Mac& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

void build_frame_into(std::vector<std::byte>& f, const Mac& from, const Mac& to, std::uint16_t src_tag, std::uint16_t dst_tag,
                      Bytes message, bool close) {
  f.resize(std::max(kEth + pu::kHeaderSize + message.size(), pu::kMinFrame));
  for (std::size_t i = 0; i < 6; ++i) {
    f[i] = std::byte{to[i]};
    f[6 + i] = std::byte{from[i]};
  }
  protocols::put_be16(f, 12, pu::kEthertype);
  protocols::Header::with(pu::kUnet, {{Unet::version, pu::kVersion},
                                      {Unet::close, close ? 1u : 0u},
                                      {Unet::dst_port, dst_tag},
                                      {Unet::src_port, src_tag},
                                      {Unet::length, message.size()}})
      .encode(protocols::MutBytes(f).subspan(kEth, pu::kHeaderSize));
  if (!message.empty()) std::memcpy(f.data() + kEth + pu::kHeaderSize, message.data(), message.size());
  // Zero padding to the minimum frame.
  std::fill(f.begin() + static_cast<std::ptrdiff_t>(kEth + pu::kHeaderSize + message.size()), f.end(), std::byte{0});
}

std::vector<std::byte> build_frame(const Mac& from, const Mac& to, std::uint16_t src_tag, std::uint16_t dst_tag, Bytes message,
                                   bool close) {
  std::vector<std::byte> f;
  build_frame_into(f, from, to, src_tag, dst_tag, message, close);
  return f;
}

// ---- Endpoint ----

Endpoint::Endpoint(Node& node, std::uint16_t tag, SegmentConfig cfg)
    : node_(node), tag_(tag), cfg_(cfg), segment_(std::size_t{cfg.buffers} * cfg.buffer_size) {}

std::span<std::byte> Endpoint::buffer(std::uint32_t index) {
  if (!valid_buffer(index)) return {};
  return std::span<std::byte>(segment_).subspan(std::size_t{index} * cfg_.buffer_size, cfg_.buffer_size);
}

bool Endpoint::send(std::uint32_t channel, std::uint32_t buffer, std::uint32_t length, bool close) {
  if (!alive_ || send_q_.size() >= cfg_.queue_depth || !valid_buffer(buffer) || channel >= channels_.size() ||
      !channels_[channel].open || length > cfg_.buffer_size || length > node_.max_message()) {
    ++counters_.tx_refused;
    return false;
  }
  if (close) channels_[channel].open = false;  // nothing more from this side
  send_q_.push_back(Tx{buffer, length, channel, close, false});
  return true;
}

bool Endpoint::send_frame(std::uint32_t buffer, std::uint32_t length) {
  if (!alive_ || send_q_.size() >= cfg_.queue_depth || !valid_buffer(buffer) || length > cfg_.buffer_size ||
      length > node_.max_message() + kEth + pu::kHeaderSize) {
    ++counters_.tx_refused;
    return false;
  }
  send_q_.push_back(Tx{buffer, length, 0, false, true});
  return true;
}

std::optional<std::uint32_t> Endpoint::poll_sent() {
  if (sent_q_.empty()) return std::nullopt;
  const auto b = sent_q_.front();
  sent_q_.pop_front();
  return b;
}

std::optional<RxDesc> Endpoint::poll() {
  if (recv_q_.empty()) return std::nullopt;
  const auto d = recv_q_.front();
  recv_q_.pop_front();
  return d;
}

bool Endpoint::give(std::uint32_t buffer) {
  if (!alive_ || !valid_buffer(buffer) || free_.size() >= cfg_.queue_depth) return false;
  free_.push_back(buffer);
  return true;
}

// ---- Node ----

Node::Node(Mac mac, std::size_t mtu) : mac_(mac), max_message_(mtu > pu::kHeaderSize ? mtu - pu::kHeaderSize : 0) {}

Endpoint* Node::create_endpoint(std::uint16_t tag, SegmentConfig cfg) {
  if (!endpoint_tag(tag) || endpoints_.count(tag) || cfg.buffers == 0 || cfg.buffer_size == 0 || cfg.queue_depth == 0)
    return nullptr;
  auto& slot = endpoints_[tag];
  slot.reset(new Endpoint(*this, tag, cfg));
  if (observer_) observer_->endpoint_created(tag);
  return slot.get();
}

Endpoint* Node::endpoint(std::uint16_t tag) {
  auto it = endpoints_.find(tag);
  return it == endpoints_.end() || !it->second->alive_ ? nullptr : it->second.get();
}

std::optional<std::uint32_t> Node::open_channel(Endpoint& ep, const Mac& peer, std::uint16_t peer_tag) {
  if (!ep.alive_ || &ep.node_ != this || !endpoint_tag(peer_tag) || (peer[0] & 1u)) return std::nullopt;
  for (const auto& c : ep.channels_)
    if (c.peer == peer && c.peer_tag == peer_tag && c.open && !c.closed_by_peer) return std::nullopt;  // one channel per peer
  ep.channels_.push_back(Endpoint::Channel{peer, peer_tag, true, false});
  if (observer_) observer_->channel_opened(ep.tag_, peer, peer_tag);
  return static_cast<std::uint32_t>(ep.channels_.size() - 1);
}

void Node::close_channel(Endpoint& ep, std::uint32_t channel) {
  if (channel < ep.channels_.size()) {
    auto& ch = ep.channels_[channel];
    if (observer_ && !std::any_of(ep.channels_.begin(), ep.channels_.end(), [&](const Endpoint::Channel& c) {
          return &c != &ch && c.open && c.peer == ch.peer && c.peer_tag == ch.peer_tag;
        }))
      observer_->channel_closed(ep.tag_, ch.peer, ch.peer_tag);
    ep.channels_[channel].open = false;
    ep.channels_[channel].closed_by_peer = true;  // and nothing more is taken from the peer
  }
}

void Node::destroy_endpoint(std::uint16_t tag) {
  auto it = endpoints_.find(tag);
  if (it == endpoints_.end()) return;
  Endpoint& ep = *it->second;
  ep.alive_ = false;
  ep.send_q_.clear();
  ep.free_.clear();
  ep.recv_q_.clear();
  if (observer_) {
    for (const auto& c : ep.channels_) observer_->channel_closed(tag, c.peer, c.peer_tag);
    observer_->endpoint_destroyed(tag);
  }
  ep.channels_.clear();
  // The object stays (the application may still hold it); the tag is free.
  retired_.push_back(std::move(it->second));
  endpoints_.erase(it);
}

bool Node::check_frame(Endpoint& ep, Bytes frame, std::uint32_t& channel) const {
  Parsed p;
  if (parse(frame, p) != Parse::ok || p.src != mac_ || p.src_tag != ep.tag_) return false;
  for (std::uint32_t c = 0; c < ep.channels_.size(); ++c) {
    const auto& ch = ep.channels_[c];
    if (ch.open && ch.peer == p.dst && ch.peer_tag == p.dst_tag) {
      channel = c;
      return true;
    }
  }
  return false;
}

void Node::transmit() {
  for (auto& [tag, ep] : endpoints_) {
    while (!ep->send_q_.empty()) {
      const Endpoint::Tx tx = ep->send_q_.front();
      ep->send_q_.pop_front();
      const Bytes data = ep->buffer(tx.buffer).first(tx.length);
      bool ok = true;
      if (tx.raw) {
        std::uint32_t channel = 0;
        ok = check_frame(*ep, data, channel) || faults_.forge;
        if (ok) {
          frame_.assign(data.begin(), data.end());
          Parsed p;
          if (parse(data, p) == Parse::ok && p.close && channel < ep->channels_.size()) ep->channels_[channel].open = false;
        } else {
          ++ep->counters_.tx_spoofed;
        }
      } else {
        const auto& ch = ep->channels_[tx.channel];
        build_frame_into(frame_, mac_, ch.peer, ep->tag_, ch.peer_tag, data, tx.close);  // no allocation per message
      }
      if (ok) {
        ++ep->counters_.tx_sent;
        ++counters_.tx_frames;
        if (on_send) on_send(frame_);
        if (link_) link_->send(frame_);
      }
      ep->sent_q_.push_back(tx.buffer);
    }
  }
  if (link_) link_->flush();
}

bool Node::receive(Bytes frame) {
  Parsed p;
  switch (parse(frame, p)) {
    case Parse::not_unet:
      ++counters_.rx_not_unet;
      return false;
    case Parse::malformed:
      ++counters_.rx_frames;
      ++counters_.rx_malformed;
      return true;
    case Parse::ok:
      break;
  }
  ++counters_.rx_frames;
  Endpoint* ep = p.dst == mac_ ? endpoint(p.dst_tag) : nullptr;
  if (!ep) {
    ++counters_.rx_unknown_tag;
    return true;
  }
  for (std::uint32_t c = 0; c < ep->channels_.size(); ++c) {
    auto& ch = ep->channels_[c];
    if (ch.peer != p.src || ch.peer_tag != p.src_tag || ch.closed_by_peer) continue;
    if (p.close) ch.closed_by_peer = true;
    deliver(*ep, c, p.message, p.close);
    return true;
  }
  if (faults_.ignore_channels && !ep->channels_.empty()) {
    deliver(*ep, 0, p.message, p.close);
    return true;
  }
  ++ep->counters_.rx_no_channel;
  return true;
}

void Node::deliver(Endpoint& ep, std::uint32_t channel, Bytes message, bool close) {
  if (ep.recv_q_.size() >= ep.cfg_.queue_depth) {
    ++ep.counters_.rx_queue_full;
    return;
  }
  if (ep.free_.empty()) {
    ++ep.counters_.rx_no_free;
    return;
  }
  const std::uint32_t b = ep.free_.front();
  ep.free_.pop_front();
  const auto buf = ep.buffer(b);
  RxDesc d;
  d.buffer = b;
  d.message = static_cast<std::uint32_t>(message.size());
  d.length = static_cast<std::uint32_t>(std::min(message.size(), buf.size()));
  d.channel = channel;
  if (d.length < d.message) {
    d.flags |= RxDesc::truncated;
    ++ep.counters_.rx_truncated;
  }
  if (close) d.flags |= RxDesc::close;
  if (faults_.overflow) {
    // Broken on purpose: the whole message, past the buffer (within the segment).
    const std::size_t at = static_cast<std::size_t>(buf.data() - ep.segment_.data());
    std::memcpy(buf.data(), message.data(), std::min(message.size(), ep.segment_.size() - at));
  }
  if (d.length) std::memcpy(buf.data(), message.data(), d.length);
  ep.recv_q_.push_back(d);
  ++ep.counters_.rx_delivered;
}

// ---- MemoryLink ----

MemoryLink::MemoryLink(Node& a, Node& b) : a_(a), b_(b) {
  a_.attach(&to_b_);
  b_.attach(&to_a_);
}

std::size_t MemoryLink::run() {
  std::size_t n = 0;
  for (;;) {
    a_.transmit();
    b_.transmit();
    if (to_a_.inbox.empty() && to_b_.inbox.empty()) return n;
    for (auto* q : {&to_b_, &to_a_}) {
      Node& dst = q == &to_b_ ? b_ : a_;
      while (!q->inbox.empty()) {
        auto f = std::move(q->inbox.front());
        q->inbox.pop_front();
        if (on_wire) on_wire(f);
        dst.receive(f);
        ++n;
      }
    }
  }
}

}  // namespace rdmaconf::engine::unet

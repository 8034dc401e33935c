#include "engines/iwarp/qp.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "protocols/crc/crc32c.hpp"
#include "protocols/iwarp/codec.hpp"
#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::engine::iwarp {

namespace pi = protocols::iwarp;
using pi::kTermLayerRdma, pi::kTermLayerDdp, pi::kTermLayerLlp;  // Terminate layers and error types
using pi::kTermRdmaProtection, pi::kTermRdmaOperation, pi::kTermDdpTagged, pi::kTermDdpUntagged;
using protocols::Header;
using protocols::MutBytes;

namespace {

constexpr std::size_t kHighWater = 512 * 1024;  // transmit backlog before pump() stops segmenting

Bytes B(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

using pi::ddp_control;

}  // namespace

std::string_view qp_state_name(QpState s) {
  switch (s) {
    case QpState::idle: return "idle";
    case QpState::connecting: return "connecting";
    case QpState::connected: return "connected";
    case QpState::terminated: return "terminated";
    case QpState::closed: return "closed";
    case QpState::error: return "error";
  }
  return "?";
}

QueuePair::QueuePair(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq, QpConfig cfg)
    : pd_(pd), scq_(send_cq), rcq_(recv_cq), cfg_(std::move(cfg)) {
  cfg_.mulpdu = std::clamp<std::size_t>(cfg_.mulpdu, 64, 0xffff);
  if (cfg_.revision != 2) cfg_.enhanced = false;
  if (!cfg_.enhanced) cfg_.p2p = false;
  stage_.reserve(pi::kMpaRr.size + pi::kMpaMaxPrivateData);
}

// ------------------------------------------------------------------ setup

void QueuePair::connect() {
  if (state_ != QpState::idle) return;
  state_ = QpState::connecting;
  started_ms_ = now_ms_;
  if (!cfg_.initiator) return;
  tx_.made(B(mpa_request(cfg_)));
}

void QueuePair::settle(const Negotiated& n) {
  crc_ = n.crc;
  tx_markers_ = n.tx_markers;
  rx_markers_ = n.rx_markers;
  ord_eff_ = n.ord_eff;
  ird_eff_ = n.ird_eff;
  p2p_ = n.p2p;
  if (n.p2p) rtr_ = n.rtr;
  framer_.reset(rx_markers_, crc_);
  rx_ = Rx::fpdu;
}

void QueuePair::on_rr(Bytes frame) {
  auto f = pi::decode_mpa_rr(frame);
  if (!f) return fail("undecodable MPA frame");
  const Header& h = f->hdr;
  const unsigned rev = static_cast<unsigned>(h.get(pi::MpaRr::rev));
  peer_pd_.assign(f->private_data.begin(), f->private_data.end());
  const bool enhanced = rev == 2 && h.get(pi::MpaRr::enhanced) && f->v2;
  if (enhanced) peer_pd_.erase(peer_pd_.begin(), peer_pd_.begin() + pi::kMpaV2.size);
  if (cfg_.initiator) {
    const ReplyReading r = read_reply(*f, cfg_);
    switch (r.outcome) {
      case ReplyReading::Outcome::failed:
        return fail(r.why);
      case ReplyReading::Outcome::rejected:
        error_ = "the responder rejected the connection";
        state_ = QpState::closed;
        rx_ = Rx::dead;
        flush_queues();
        return;
      case ReplyReading::Outcome::terminate:
        settle(r.settled);
        established();
        return terminate(kTermLayerLlp, 0, r.llp_code, r.why);
      case ReplyReading::Outcome::established:
        settle(r.settled);
        established();
        return;
    }
    return;
  }
  // Responder.
  if (cfg_.faults.reply == Faults::Frame::withheld) {  // no Reply at all: the initiator's startup timeout is the test
    state_ = QpState::idle;
    rx_ = Rx::dead;
    return;
  }
  ReplyPlan plan = plan_reply(*f, cfg_);
  if (!plan.problem.empty()) return fail(plan.problem);
  std::vector<std::byte> reply;
  if (cfg_.reject) {
    ord_eff_ = plan.ord_eff;
    ird_eff_ = cfg_.ird;
    p2p_ = plan.p2p;
    rtr_ = plan.p2p ? plan.rtr : rtr_;
    plan.params.reject = true;
    reply = encode_frame(plan.params, cfg_.faults.reply);
    tx_.made(B(reply));
    state_ = QpState::closed;
    error_ = "rejected the Request (configured to)";
    close_after_flush_ = true;
    rx_ = Rx::dead;
    return;
  }
  reply = encode_frame(plan.params, cfg_.faults.reply);
  tx_.made(B(reply));
  settle(responder_settles(*f, plan, cfg_));
  established();
}

void QueuePair::established() {
  state_ = QpState::connected;
  if (cfg_.initiator) {
    may_send_ = true;
    if (p2p_) {  // the RTR goes first (RFC 6581 §9.2)
      if (rtr_ == Rtr::send) {
        send_untagged(pi::kOpSend, next_msn_[0]++, {}, {}, 0, 0);
      } else if (rtr_ == Rtr::write) {
        send_tagged(pi::kOpWrite, 0, 0, {});
      } else if (rtr_ == Rtr::read) {
        Header rr(pi::kReadRequest);
        send_untagged(pi::kOpReadRequest, next_msn_[1]++, rr.bytes(), {}, 0, 0);
        reads_.push_back({~0ull, 0, 0, 0, 0, false, WcOpcode::rdma_read, 0, true});
      }
    }
  } else {
    // RFC 5044 §7.1.2: the responder waits for the initiator's first FPDU
    // (in peer-to-peer mode that is the RTR).
    may_send_ = false;
    awaiting_rtr_ = p2p_;
  }
  pump();
}

void QueuePair::tick(std::uint64_t now_ms) {
  now_ms_ = now_ms;
  if (state_ == QpState::connecting && now_ms_ - started_ms_ > cfg_.setup_timeout_ms)
    fail(fmt::format("MPA setup did not complete within {} ms", cfg_.setup_timeout_ms));
}

void QueuePair::peer_closed() {
  if (state_ == QpState::connected || state_ == QpState::connecting) {
    error_ = "the peer closed the connection";
    state_ = QpState::closed;
  }
  rx_ = Rx::dead;
  flush_queues();
}

// --------------------------------------------------------------- transmit

void QueuePair::consume(std::size_t n) {
  tx_.consume(n);
  while (!release_marks_.empty() && release_marks_.front() <= tx_.consumed()) {
    release_marks_.pop_front();
    if (inbound_reads_) --inbound_reads_;
  }
  release_completions();
  pump();
}

void QueuePair::complete(const Completion& c) {
  due_.push_back({tx_.appended(), c});
  release_completions();
}

void QueuePair::release_completions() {
  while (!due_.empty() && due_.front().at <= tx_.consumed()) {
    scq_.push(due_.front().c);
    due_.pop_front();
  }
}

void QueuePair::send_fpdu(Bytes head, Bytes payload) {
  ++fpdus_sent_;
  std::byte edited[pi::kDdpUntagged.size + 64];
  if (cfg_.faults.segment != Faults::Segment::none && cfg_.faults.segment_fpdu == fpdus_sent_ &&
      head.size() <= sizeof edited && head.size() >= pi::kDdpTagged.size) {
    const bool tagged = ddp_control(head, pi::DdpTagged::t);
    auto h = Header::decode(tagged ? pi::kDdpTagged : pi::kDdpUntagged, head);
    if (h) {
      switch (cfg_.faults.segment) {
        case Faults::Segment::ddp_version: h->set(pi::DdpTagged::dv, 2); break;
        case Faults::Segment::rdmap_version: h->set(pi::DdpTagged::rv, 2); break;
        case Faults::Segment::opcode: h->set(pi::DdpTagged::opcode, 0xf); break;
        case Faults::Segment::qn:
          if (!tagged) h->set(pi::DdpUntagged::qn, 5);
          break;
        case Faults::Segment::atomic_opcode:
        case Faults::Segment::short_body:
        case Faults::Segment::none: break;
      }
      std::memcpy(edited, head.data(), head.size());
      std::memcpy(edited, h->bytes().data(), h->def().size);
      std::size_t size = head.size();
      const std::size_t body_at = h->def().size;
      if (cfg_.faults.segment == Faults::Segment::atomic_opcode && !tagged && size >= body_at + pi::kAtomicRequest.size) {
        auto a = Header::decode(pi::kAtomicRequest, Bytes(edited + body_at, pi::kAtomicRequest.size));
        a->set(pi::AtomicRequest::op, 1);
        std::memcpy(edited + body_at, a->bytes().data(), pi::kAtomicRequest.size);
      }
      if (cfg_.faults.segment == Faults::Segment::short_body && size >= body_at + 4) size -= 4;
      head = Bytes(edited, size);
    }
  }
  last_sent_.head_size = std::min(head.size(), last_sent_.head.size());
  std::memcpy(last_sent_.head.data(), head.data(), last_sent_.head_size);
  last_sent_.ulpdu_size = head.size() + payload.size();
  pi::FpduFaults f;
  if (cfg_.faults.oversize_length_fpdu == fpdus_sent_) f.length_excess = 64;  // the CRC covers the true length
  if (cfg_.faults.corrupt_crc_fpdu == fpdus_sent_ || cfg_.faults.corrupt_every_crc) f.crc_xor = 0x5a5a5a5a;
  if (tx_markers_) {
    ms_.fault_index = cfg_.faults.wrong_marker ? static_cast<std::int64_t>(cfg_.faults.wrong_marker - 1) : -1;
    ms_.fault_ptr_xor = 0x0101;
    ms_.ptr_or = cfg_.faults.marker_reserved_bits ? 0x3 : 0;
    ms_.rsvd_or = cfg_.faults.marker_reserved_bits ? 0xffff : 0;
    // Markers every 512 octets leave pieces too short to send as views
    // (TxQueue): the FPDU is laid down in the queue directly, markers in
    // place, and its CRC taken in one pass.
    const protocols::MutBytes to = tx_.grow(pi::marked_fpdu_size(head.size() + payload.size(), ms_.pos));
    return pi::write_fpdu_marked(to, head, payload, crc_, ms_, f);
  }
  // The header is copied into the queue; the payload stays in its region,
  // unless the queue would copy it anyway: then the whole FPDU is laid down
  // in place and its CRC taken in one pass.
  if (payload.size() < TxQueue::kMinView)
    return pi::write_fpdu(tx_.grow(pi::fpdu_size(head.size() + payload.size())), head, payload, crc_, f);
  pi::emit_fpdu(tx_, head, payload, crc_, nullptr, f);
}

void QueuePair::send_untagged(std::uint8_t opcode, std::uint32_t msn, Bytes body, Bytes payload, std::uint32_t rsvd_ulp,
                              std::size_t mo, bool last) {
  Header h = pi::ddp_header(false, opcode, last);
  h.set(pi::DdpUntagged::rsvd_ulp, rsvd_ulp);
  h.set(pi::DdpUntagged::qn, pi::rdmap_op(opcode).queue);  // RDMAP's table names each opcode's queue
  h.set(pi::DdpUntagged::msn, msn);
  h.set(pi::DdpUntagged::mo, mo);
  std::byte head[pi::kDdpUntagged.size + 64];
  std::memcpy(head, h.bytes().data(), pi::kDdpUntagged.size);
  if (!body.empty()) std::memcpy(head + pi::kDdpUntagged.size, body.data(), body.size());
  send_fpdu(Bytes(head, pi::kDdpUntagged.size + body.size()), payload);
}

void QueuePair::send_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, Bytes payload, bool last) {
  Header h = pi::ddp_header(true, opcode, last);
  h.set(pi::DdpTagged::stag, stag);
  h.set(pi::DdpTagged::to, to);
  send_fpdu(h.bytes(), payload);
}

bool QueuePair::post_send(const SendWr& wr) {
  if (wr.op == WrOpcode::send_imm || wr.op == WrOpcode::write_imm) return false;  // InfiniBand only
  if (state_ != QpState::connected && state_ != QpState::connecting && state_ != QpState::idle) {
    complete({wr.wr_id, WcOpcode::send, WcStatus::flushed});
    return false;
  }
  sq_.push_back({wr, 0});
  pump();
  return true;
}

bool QueuePair::post_recv(const RecvWr& wr) {
  if (state_ == QpState::terminated || state_ == QpState::closed || state_ == QpState::error) {
    rcq_.push({wr.wr_id, WcOpcode::recv, WcStatus::flushed});
    return false;
  }
  rq_.push_back(wr);
  return true;
}


// Segments (part of) the head work request; false when it has to wait.
bool QueuePair::start_wr(const SendWr& wr) {
  PendingWr& p = sq_.front();
  const bool needs_local = wr.op != WrOpcode::immediate && (wr.local.length > 0 || wr.op == WrOpcode::read ||
                                                            wr.op == WrOpcode::atomic_fetch_add ||
                                                            wr.op == WrOpcode::atomic_compare_swap);
  MemoryRegion* mr = needs_local ? pd_.find(wr.local.stag) : nullptr;
  const std::uint32_t local_len = (wr.op == WrOpcode::atomic_fetch_add || wr.op == WrOpcode::atomic_compare_swap)
                                      ? 8u : wr.local.length;
  if (needs_local && (!mr || !mr->valid || wr.local.offset + local_len > mr->buf.size() ||
                      ((wr.op == WrOpcode::read || local_len == 8) && wr.op != WrOpcode::send &&
                       wr.op != WrOpcode::write && !(mr->access & kLocalWrite)))) {
    complete({wr.wr_id, wc_opcode(wr.op), WcStatus::local_protection_error});
    sq_.pop_front();
    return true;
  }
  const Bytes src = mr ? Bytes(mr->buf).subspan(wr.local.offset, local_len) : Bytes{};
  switch (wr.op) {
    case WrOpcode::send:
    case WrOpcode::send_invalidate:
    case WrOpcode::immediate: {
      std::uint8_t op;
      std::byte imm[8];
      Bytes data = src;
      if (wr.op == WrOpcode::immediate) {
        op = wr.solicited ? pi::kOpImmediateSe : pi::kOpImmediate;
        for (int i = 0; i < 8; ++i) imm[i] = std::byte((wr.imm >> (56 - 8 * i)) & 0xff);
        data = Bytes(imm, 8);
      } else if (wr.op == WrOpcode::send_invalidate) {
        op = wr.solicited ? pi::kOpSendSeInvalidate : pi::kOpSendInvalidate;
      } else {
        op = wr.solicited ? pi::kOpSendSe : pi::kOpSend;
      }
      if (p.sent == 0) {
        ++send_messages_;
        if (cfg_.faults.skip_msn_message == send_messages_) ++next_msn_[0];
        if (cfg_.faults.repeat_msn_message == send_messages_ && next_msn_[0] > 1) --next_msn_[0];
      }
      const std::size_t room = cfg_.mulpdu - pi::kDdpUntagged.size;
      const std::size_t n = std::min<std::size_t>(room, data.size() - p.sent);
      const bool last = p.sent + n == data.size();
      // Immediate Data is the RDMAP header's part, copied; payload stays in its region.
      const bool inline_data = wr.op == WrOpcode::immediate;
      send_untagged(op, next_msn_[0], inline_data ? data : Bytes{}, inline_data ? Bytes{} : data.subspan(p.sent, n),
                    wr.op == WrOpcode::send_invalidate ? wr.invalidate_stag : 0, p.sent, last);
      p.sent += n;
      if (!last) return true;
      ++next_msn_[0];
      complete({wr.wr_id, wc_opcode(wr.op), WcStatus::success, static_cast<std::uint32_t>(data.size())});
      sq_.pop_front();
      return true;
    }
    case WrOpcode::write: {
      const std::size_t room = cfg_.mulpdu - pi::kDdpTagged.size;
      const std::size_t n = std::min<std::size_t>(room, src.size() - p.sent);
      const bool last = p.sent + n == src.size();
      send_tagged(pi::kOpWrite, wr.remote_stag, wr.remote_to + p.sent, src.subspan(p.sent, n), last);
      p.sent += n;
      if (!last) return true;
      complete({wr.wr_id, WcOpcode::rdma_write, WcStatus::success, static_cast<std::uint32_t>(src.size())});
      sq_.pop_front();
      return true;
    }
    case WrOpcode::read:
    case WrOpcode::atomic_fetch_add:
    case WrOpcode::atomic_compare_swap: {
      if (reads_.size() >= ord_eff_ && !cfg_.faults.ignore_ord) return false;  // ORD reached: wait
      const bool atomic = wr.op != WrOpcode::read;
      if (!atomic) {
        Header rr(pi::kReadRequest);
        rr.set(pi::ReadRequest::sink_stag, wr.local.stag);
        rr.set(pi::ReadRequest::sink_to, mr->base_to + wr.local.offset);
        rr.set(pi::ReadRequest::size, wr.local.length);
        rr.set(pi::ReadRequest::src_stag, wr.remote_stag);
        rr.set(pi::ReadRequest::src_to, wr.remote_to);
        if (cfg_.faults.skip_read_msn && cfg_.faults.skip_read_msn == ++read_requests_) ++next_msn_[1];
        send_untagged(pi::kOpReadRequest, next_msn_[1]++, rr.bytes(), {}, 0, 0);
        reads_.push_back({wr.wr_id, wr.local.stag, mr->base_to + wr.local.offset, wr.local.length, 0, false,
                          WcOpcode::rdma_read, 0, false});
      } else {
        const std::uint32_t id = next_atomic_id_++;
        Header a(pi::kAtomicRequest);
        // RFC 7306 §5.2.1: a FetchAdd with Add Mask 0 is one 64-bit addition,
        // and sends Compare Data 0 and Compare Mask all ones; a CmpSwap with
        // both masks all ones compares and swaps all 64 bits. Atomic Requests
        // share queue 1 and its MSNs with Read Requests (§5.2).
        const bool fetch_add = wr.op == WrOpcode::atomic_fetch_add;
        a.set(pi::AtomicRequest::op, fetch_add ? pi::kAtomicFetchAdd : pi::kAtomicCmpSwap);
        a.set(pi::AtomicRequest::req_id, id);
        a.set(pi::AtomicRequest::stag, wr.remote_stag);
        a.set(pi::AtomicRequest::to, wr.remote_to);
        a.set(pi::AtomicRequest::add_swap, wr.add_swap);
        a.set(pi::AtomicRequest::add_swap_mask, fetch_add ? 0ull : ~0ull);
        a.set(pi::AtomicRequest::compare, fetch_add ? 0ull : wr.compare);
        a.set(pi::AtomicRequest::compare_mask, ~0ull);
        send_untagged(pi::kOpAtomicRequest, next_msn_[pi::rdmap_op(pi::kOpAtomicRequest).queue]++, a.bytes(), {}, 0, 0);
        reads_.push_back({wr.wr_id, wr.local.stag, mr->base_to + wr.local.offset, 8, 0, true, wc_opcode(wr.op), id, false});
      }
      sq_.pop_front();
      return true;
    }
    case WrOpcode::send_imm:
    case WrOpcode::write_imm: break;  // refused by post_send
  }
  return false;
}

void QueuePair::pump() {
  if (state_ != QpState::connected || !may_send_) return;
  while (tx_.size() < kHighWater && state_ == QpState::connected) {
    if (!owed_.empty()) {
      OwedResponse& o = owed_.front();
      if (o.atomic) {
        Header a(pi::kAtomicResponse);
        a.set(pi::AtomicResponse::req_id, o.req_id);
        a.set(pi::AtomicResponse::orig, o.original);
        send_untagged(pi::kOpAtomicResponse, next_msn_[pi::rdmap_op(pi::kOpAtomicResponse).queue]++, a.bytes(), {}, 0, 0);
        owed_.pop_front();
        release_marks_.push_back(tx_.appended());
        continue;
      }
      const std::size_t room = cfg_.mulpdu - pi::kDdpTagged.size;
      const std::uint32_t n = static_cast<std::uint32_t>(std::min<std::size_t>(room, o.length - o.sent));
      Bytes data;
      if (n) {
        MemoryRegion* mr = pd_.find(o.src_stag);
        if (!mr || !mr->valid) {  // invalidated since the request was accepted
          return terminate(kTermLayerRdma, kTermRdmaProtection, 0x00, "source STag invalidated before the Read Response");
        }
        data = Bytes(mr->buf).subspan(o.src_to - mr->base_to + o.sent, n);
      }
      const bool last = o.sent + n == o.length;
      send_tagged(pi::kOpReadResponse, o.sink_stag, o.sink_to + o.sent, data, last);
      o.sent += n;
      if (last) {
        owed_.pop_front();
        // The Read Request's IRD slot frees once the last Response octet has gone out.
        release_marks_.push_back(tx_.appended());
      }
      continue;
    }
    if (sq_.empty()) break;
    if (!start_wr(sq_.front().wr)) break;
  }
}

// ---------------------------------------------------------------- receive

void QueuePair::receive(Bytes in) {
  if (rx_ == Rx::dead && term_received_) octets_after_terminate_ += in.size();
  if (rx_ == Rx::dead || in.empty()) return;
  if (state_ == QpState::idle) connect();
  rx_bytes(in);
  pump();
}

std::size_t QueuePair::receive_whole(Bytes in) {
  const std::size_t all = in.size();
  if (rx_ != Rx::fpdu || rx_markers_ || framer_.partial()) {
    rx_crc_done_ = 0;
    receive(in);
    return all;
  }
  // The CRC register over octets [rx_crc_done_, upto) of the FPDU at the front, from where it stood.
  auto crc_to = [&](std::size_t upto) {
    return protocols::crc::crc32c_update(rx_crc_done_ ? rx_crc_ : protocols::crc::kCrc32cInit,
                                         in.subspan(rx_crc_done_, upto - rx_crc_done_));
  };
  while (rx_ == Rx::fpdu && in.size() >= 2) {
    const std::size_t total = pi::fpdu_size(protocols::be16(in, 0));
    const std::size_t covered = total - pi::kMpaCrcSize;  // the CRC covers all but its own field (RFC 5044 §4.4)
    if (in.size() < total) {
      // Not whole yet: its CRC begun over what came, while those octets
      // are still in the cache and the rest is on its way.
      if (crc_) {
        const std::size_t upto = std::min(in.size(), covered);
        rx_crc_ = crc_to(upto);
        rx_crc_done_ = upto;
      }
      break;
    }
    const Bytes f = in.first(total);
    const std::uint32_t c = crc_ ? protocols::crc::crc32c_final(crc_to(covered)) : 0;
    rx_crc_done_ = 0;
    in = in.subspan(total);
    framer_.skip(total);
    on_fpdu(f, c);
  }
  if (rx_ != Rx::fpdu && !in.empty()) {  // dead after a Terminate: the rest is counted, not read
    rx_bytes(in);
    in = {};
  }
  pump();
  return all - in.size();
}

void QueuePair::rx_bytes(Bytes in) {
  while (!in.empty()) {
    switch (rx_) {
      case Rx::dead:
        if (term_received_) octets_after_terminate_ += in.size();
        return;
      case Rx::rr_header:
      case Rx::rr_private: {
        const std::size_t n = std::min(need_ - stage_.size(), in.size());
        stage_.insert(stage_.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
        in = in.subspan(n);
        if (stage_.size() < need_) break;
        if (rx_ == Rx::rr_header) {
          const auto want = cfg_.initiator ? pi::MpaFrameKind::reply : pi::MpaFrameKind::request;
          if (!pi::looks_like_mpa_key(B(stage_), want))
            return fail(cfg_.initiator ? "the peer's first octets are not an MPA Reply key"
                                       : "the peer's first octets are not an MPA Request key");
          const std::size_t pd = protocols::be16(B(stage_), 18);
          if (pd > pi::kMpaMaxPrivateData)
            return fail(fmt::format("MPA private data length {} exceeds 512 (RFC 5044 §7.1.1)", pd));
          need_ = pi::kMpaRr.size + pd;
          rx_ = Rx::rr_private;
          if (stage_.size() < need_) break;
        }
        rr_.swap(stage_);
        stage_.clear();
        on_rr(B(rr_));
        // Anything after a Request that we answered in this same call was sent before the
        // initiator could have seen our Reply: close without reading it as FPDUs.
        if (!cfg_.initiator && !in.empty() && rx_ == Rx::fpdu)
          return fail("the initiator sent FPDU octets before it could have received our MPA Reply (RFC 5044 §7.1.2)");
        break;
      }
      case Rx::fpdu: {
        const auto f = framer_.next(in);
        if (!f) break;
        for (const auto& m : f->markers)
          // RFC 5044 §4.2 and §4.3: the reserved field is ignored on
          // receipt, and the pointer's two low bits are taken as zero.
          if ((m.fpduptr & ~0x3u) != m.expected_ptr)
            return terminate(kTermLayerLlp, 0, 0x03,
                             fmt::format("marker at stream offset {} points {} back; the FPDU started {} back", m.pos,
                                         m.fpduptr, m.expected_ptr));
        on_fpdu(f->octets, f->crc);
        break;
      }
    }
  }
}

void QueuePair::on_fpdu(Bytes f, std::uint32_t crc) {
  ++fpdus_received_;
  const std::size_t len = protocols::be16(f, 0);
  const std::uint32_t wire = protocols::le32(f, f.size() - pi::kMpaCrcSize);
  if (crc_ && wire != crc) {
    return terminate(kTermLayerLlp, 0, 0x02,
                     fmt::format("FPDU {} CRC 0x{:08x}, computed 0x{:08x}", fpdus_received_, wire, crc));
  }
  // In place of the RTR an initiator that can send none of the types we
  // named sends a Terminate (RFC 6581 §9.2): that is handled as any Terminate.
  if (awaiting_rtr_ && !is_rtr(f.subspan(2, len)) && !is_terminate(f.subspan(2, len)))
    return terminate(kTermLayerLlp, 0, pi::kTermLlpNoMatchingRtr, "the first FPDU is not the negotiated peer-to-peer RTR", f.subspan(2, len));
  if (!may_send_ && !cfg_.initiator && !awaiting_rtr_) may_send_ = true;
  on_ulpdu(f.subspan(2, len));
  if (state_ == QpState::connected && !awaiting_rtr_) may_send_ = true;
}

// Is this ULPDU the RTR negotiated (RFC 6581 §9.2): a zero-length Send
// (MSN 1), a zero-length RDMA Write, or a zero-length RDMA Read Request?
bool QueuePair::is_rtr(Bytes u) const {
  if (u.size() < 2) return false;
  const bool tagged = ddp_control(u, pi::DdpTagged::t);
  const unsigned op = ddp_control(u, pi::DdpTagged::opcode);
  if (rtr_ == Rtr::write) return tagged && op == pi::kOpWrite && u.size() == pi::kDdpTagged.size;
  if (tagged || u.size() < pi::kDdpUntagged.size) return false;
  if (rtr_ == Rtr::send) return op == pi::kOpSend && u.size() == pi::kDdpUntagged.size;
  return op == pi::kOpReadRequest && u.size() == pi::kDdpUntagged.size + pi::kReadRequest.size &&
         protocols::be32(u, pi::kDdpUntagged.size + 12) == 0;
}

bool QueuePair::is_terminate(Bytes u) const {
  return u.size() >= pi::kDdpUntagged.size && !ddp_control(u, pi::DdpTagged::t) &&
         ddp_control(u, pi::DdpTagged::opcode) == pi::kOpTerminate;
}

void QueuePair::on_ulpdu(Bytes u) {
  if (u.size() < 2) return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "ULPDU shorter than a DDP control field", u);
  const bool tagged = ddp_control(u, pi::DdpTagged::t);
  const unsigned dv = ddp_control(u, pi::DdpTagged::dv), rv = ddp_control(u, pi::DdpTagged::rv);
  if (dv != 1)
    return terminate(kTermLayerDdp, tagged ? kTermDdpTagged : kTermDdpUntagged, tagged ? 0x04 : 0x06,
                     fmt::format("DDP version {}", dv), u);
  if (rv != 1) return terminate(kTermLayerRdma, kTermRdmaOperation, 0x05, fmt::format("RDMAP version {}", rv), u);
  const auto& def = tagged ? pi::kDdpTagged : pi::kDdpUntagged;
  auto h = Header::decode(def, u);
  if (!h) return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "DDP segment shorter than its header", u);
  const Bytes rest = u.subspan(def.size);
  if (tagged) on_tagged(*h, u, rest);
  else on_untagged(*h, u, rest);
}

void QueuePair::on_tagged(const Header& h, Bytes u, Bytes payload) {
  const auto op = static_cast<std::uint8_t>(h.get(pi::DdpTagged::opcode));
  const auto stag = static_cast<std::uint32_t>(h.get(pi::DdpTagged::stag));
  const std::uint64_t to = h.get(pi::DdpTagged::to);
  const bool last = h.get(pi::DdpTagged::l);
  if (!pi::rdmap_op(op).valid || !pi::rdmap_op(op).tagged)
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0x06, fmt::format("opcode 0x{:x} in a tagged segment", op), u);
  OutstandingRead* rd = nullptr;
  if (op == pi::kOpReadResponse) {
    if (reads_.empty() || reads_.front().atomic)
      return terminate(kTermLayerRdma, kTermRdmaOperation, 0x06, "RDMA Read Response without an outstanding Read Request", u);
    rd = &reads_.front();
  }
  if (awaiting_rtr_ && rtr_ == Rtr::write) {  // the zero-length Write RTR (checked in on_fpdu)
    awaiting_rtr_ = false;
    may_send_ = true;
    pump();
    return;
  }
  if (!payload.empty()) {
    MemoryRegion* mr = pd_.find(stag);
    if (!mr || !mr->valid) return terminate(kTermLayerDdp, kTermDdpTagged, 0x00, fmt::format("STag 0x{:x} is not valid", stag), u);
    if (op == pi::kOpWrite && !(mr->access & kRemoteWrite))
      return terminate(kTermLayerRdma, kTermRdmaProtection, 0x02, fmt::format("STag 0x{:x} does not allow remote write", stag), u);
    if (op == pi::kOpReadResponse && (stag != rd->sink_stag || to != rd->sink_to + rd->received))
      return terminate(kTermLayerDdp, kTermDdpTagged, 0x01, "Read Response does not continue the requested sink buffer", u);
    if (to + payload.size() < to) return terminate(kTermLayerDdp, kTermDdpTagged, 0x03, "tagged offset wraps", u);
    if (to < mr->base_to || to - mr->base_to + payload.size() > mr->buf.size())
      return terminate(kTermLayerDdp, kTermDdpTagged, 0x01,
                       fmt::format("TO 0x{:x} + {} outside STag 0x{:x} (base 0x{:x}, {} octets)", to, payload.size(),
                                   stag, mr->base_to, mr->buf.size()),
                       u);
    std::memcpy(mr->buf.data() + (to - mr->base_to), payload.data(), payload.size());
  }
  if (rd) {
    rd->received += static_cast<std::uint32_t>(payload.size());
    if (rd->received > rd->length)
      return terminate(kTermLayerDdp, kTermDdpTagged, 0x01, "Read Response longer than requested", u);
    if (last) {
      if (rd->received != rd->length)
        return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff,
                         fmt::format("Read Response of {} octets for a Read Request of {}", rd->received, rd->length), u);
      if (!rd->internal) complete({rd->wr_id, WcOpcode::rdma_read, WcStatus::success, rd->length});
      reads_.pop_front();
      pump();
    }
  }
}

void QueuePair::on_untagged(const Header& h, Bytes u, Bytes rest) {
  const auto op = static_cast<std::uint8_t>(h.get(pi::DdpUntagged::opcode));
  const auto qn = h.get(pi::DdpUntagged::qn);
  const auto msn = static_cast<std::uint32_t>(h.get(pi::DdpUntagged::msn));
  const auto mo = static_cast<std::uint32_t>(h.get(pi::DdpUntagged::mo));
  const bool last = h.get(pi::DdpUntagged::l);
  const auto& info = pi::rdmap_op(op);
  const int want_q = info.valid && !info.tagged ? info.queue : -1;
  if (want_q < 0) return terminate(kTermLayerRdma, kTermRdmaOperation, 0x06, fmt::format("opcode 0x{:x} untagged", op), u);
  // A Terminate for a Read Request carries its RDMAP header (R) whatever the error.
  const bool read_request = info.kind == pi::RdmapKind::read_request;
  if (qn != static_cast<std::uint64_t>(want_q))
    return terminate(kTermLayerDdp, kTermDdpUntagged, 0x01, fmt::format("QN {} for opcode 0x{:x}", qn, op), u, read_request);
  if (info.kind == pi::RdmapKind::terminate) return on_terminate(rest);
  if (msn != expect_msn_[qn])
    return terminate(kTermLayerDdp, kTermDdpUntagged, 0x03, fmt::format("MSN {} on queue {}, expected {}", msn, qn, expect_msn_[qn]),
                     u, read_request);
  if (info.kind == pi::RdmapKind::read_request) return on_read_request(h, u, rest);
  if (info.kind == pi::RdmapKind::atomic_request) return on_atomic_request(h, u, rest);
  if (info.kind == pi::RdmapKind::atomic_response) {
    auto r = Header::decode(pi::kAtomicResponse, rest);
    if (!r || !last || mo != 0) return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "malformed Atomic Response", u);
    if (reads_.empty() || !reads_.front().atomic || reads_.front().req_id != r->get(pi::AtomicResponse::req_id))
      return terminate(kTermLayerRdma, kTermRdmaOperation, 0x06, "Atomic Response that answers no outstanding request", u);
    ++expect_msn_[qn];
    const OutstandingRead rd = reads_.front();
    reads_.pop_front();
    const std::uint64_t orig = r->get(pi::AtomicResponse::orig);
    MemoryRegion* mr = pd_.find(rd.sink_stag);
    if (mr && mr->valid && rd.sink_to >= mr->base_to && rd.sink_to - mr->base_to + 8 <= mr->buf.size())
      std::memcpy(mr->buf.data() + (rd.sink_to - mr->base_to), &orig, 8);
    Completion c{rd.wr_id, rd.op, WcStatus::success, 8};
    c.atomic_original = orig;
    complete(c);
    pump();
    return;
  }
  // Queue 0: Send family and Immediate Data.
  if (!in_send_.open) {
    if (mo != 0) return terminate(kTermLayerDdp, kTermDdpUntagged, 0x04, fmt::format("first segment with MO {}", mo), u);
    if (awaiting_rtr_ && rtr_ == Rtr::send && op == pi::kOpSend && rest.empty() && last && msn == 1) {
      awaiting_rtr_ = false;  // the peer-to-peer RTR: consumed here, no completion
      ++expect_msn_[0];
      may_send_ = true;
      pump();
      return;
    }
    if (rq_.empty())
      return terminate(kTermLayerDdp, kTermDdpUntagged, 0x02, fmt::format("no receive buffer posted for MSN {}", msn), u);
    in_send_ = {true, rq_.front(), msn, 0};
    rq_.pop_front();
  } else if (mo != in_send_.got) {
    return terminate(kTermLayerDdp, kTermDdpUntagged, 0x04, fmt::format("MO {}, expected {}", mo, in_send_.got), u);
  }
  const bool imm = info.kind == pi::RdmapKind::immediate;
  if (imm && (!last || mo != 0 || rest.size() != info.header->size))
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "Immediate Data must be one segment of 8 octets", u);
  const Sge& sge = in_send_.wr.sge;
  if (!imm) {
    if (in_send_.got + rest.size() > sge.length)
      return terminate(kTermLayerDdp, kTermDdpUntagged, 0x05,
                       fmt::format("message exceeds the {}-octet receive buffer", sge.length), u);
    if (!rest.empty()) {
      MemoryRegion* mr = pd_.find(sge.stag);
      if (!mr || !mr->valid || !(mr->access & kLocalWrite) || sge.offset + sge.length > mr->buf.size()) {
        rcq_.push({in_send_.wr.wr_id, WcOpcode::recv, WcStatus::local_protection_error});
        return terminate(kTermLayerRdma, kTermRdmaOperation, 0x07, "our posted receive buffer is not usable", u);
      }
      std::memcpy(mr->buf.data() + sge.offset + in_send_.got, rest.data(), rest.size());
    }
  }
  in_send_.got += static_cast<std::uint32_t>(rest.size());
  if (!last) return;
  ++expect_msn_[0];
  in_send_.open = false;
  Completion c{in_send_.wr.wr_id, imm ? WcOpcode::recv_immediate : WcOpcode::recv, WcStatus::success,
               imm ? 0u : in_send_.got};
  c.solicited = op == pi::kOpSendSe || op == pi::kOpSendSeInvalidate || op == pi::kOpImmediateSe;
  if (imm) c.imm = protocols::be64(rest, 0);
  if (op == pi::kOpSendInvalidate || op == pi::kOpSendSeInvalidate) {
    const auto inv = static_cast<std::uint32_t>(h.get(pi::DdpUntagged::rsvd_ulp));
    if (!pd_.invalidate(inv)) {
      rcq_.push(c);
      return terminate(kTermLayerRdma, kTermRdmaOperation, 0x09, fmt::format("STag 0x{:x} cannot be invalidated", inv), u);
    }
    c.invalidated = inv;
  }
  rcq_.push(c);
}

void QueuePair::on_read_request(const Header& h, Bytes u, Bytes body) {
  auto rr = Header::decode(pi::kReadRequest, body);
  if (!rr || body.size() != pi::kReadRequest.size || !h.get(pi::DdpUntagged::l) || h.get(pi::DdpUntagged::mo) != 0)
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "malformed RDMA Read Request", u, true);
  if (inbound_reads_ >= ird_eff_ && !(awaiting_rtr_ && rtr_ == Rtr::read))
    return terminate(kTermLayerDdp, kTermDdpUntagged, 0x02,
                     fmt::format("Read Request beyond our IRD {} (no Read Request buffer)", ird_eff_), u, true);
  ++expect_msn_[1];
  OwedResponse o;
  o.sink_stag = static_cast<std::uint32_t>(rr->get(pi::ReadRequest::sink_stag));
  o.sink_to = rr->get(pi::ReadRequest::sink_to);
  o.length = static_cast<std::uint32_t>(rr->get(pi::ReadRequest::size));
  o.src_stag = static_cast<std::uint32_t>(rr->get(pi::ReadRequest::src_stag));
  o.src_to = rr->get(pi::ReadRequest::src_to);
  if (awaiting_rtr_ && rtr_ == Rtr::read && o.length == 0) {
    awaiting_rtr_ = false;
    may_send_ = true;
  }
  if (o.length) {
    MemoryRegion* mr = pd_.find(o.src_stag);
    if (!mr || !mr->valid)
      return terminate(kTermLayerRdma, kTermRdmaProtection, 0x00, fmt::format("source STag 0x{:x} is not valid", o.src_stag), u, true);
    if (!(mr->access & kRemoteRead))
      return terminate(kTermLayerRdma, kTermRdmaProtection, 0x02, fmt::format("source STag 0x{:x} does not allow remote read", o.src_stag), u, true);
    if (o.src_to + o.length < o.src_to) return terminate(kTermLayerRdma, kTermRdmaProtection, 0x04, "source tagged offset wraps", u, true);
    if (o.src_to < mr->base_to || o.src_to - mr->base_to + o.length > mr->buf.size())
      return terminate(kTermLayerRdma, kTermRdmaProtection, 0x01,
                       fmt::format("Read of {} at TO 0x{:x} outside STag 0x{:x}", o.length, o.src_to, o.src_stag), u, true);
  }
  ++inbound_reads_;
  owed_.push_back(o);
  pump();
}

void QueuePair::on_atomic_request(const Header& h, Bytes u, Bytes body) {
  auto a = Header::decode(pi::kAtomicRequest, body);
  if (!a || body.size() != pi::kAtomicRequest.size || !h.get(pi::DdpUntagged::l))
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, "malformed Atomic Request", u);
  if (inbound_reads_ >= ird_eff_)
    return terminate(kTermLayerDdp, kTermDdpUntagged, 0x02, fmt::format("Atomic Request beyond our IRD {}", ird_eff_), u);
  ++expect_msn_[h.get(pi::DdpUntagged::qn)];
  const auto stag = static_cast<std::uint32_t>(a->get(pi::AtomicRequest::stag));
  const std::uint64_t to = a->get(pi::AtomicRequest::to);
  MemoryRegion* mr = pd_.find(stag);
  if (!mr || !mr->valid) return terminate(kTermLayerRdma, kTermRdmaProtection, 0x00, fmt::format("STag 0x{:x} is not valid", stag), u);
  if (!(mr->access & kRemoteAtomic))
    return terminate(kTermLayerRdma, kTermRdmaProtection, 0x02, fmt::format("STag 0x{:x} does not allow atomics", stag), u);
  // RFC 7306 §8.2: a misaligned target is a Remote Operation Error, "Catastrophic error, localized to RDMAP
  // Stream" (0x07, RFC 5040 §4.8 Figure 9); one outside the buffer is a base or bounds violation (RFC 5040 §4.8).
  if (to % 8 != 0)
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0x07, fmt::format("atomic target TO 0x{:x} is not 64-bit aligned", to), u);
  if (to < mr->base_to || to - mr->base_to + 8 > mr->buf.size())
    return terminate(kTermLayerRdma, kTermRdmaProtection, 0x01, fmt::format("atomic target TO 0x{:x} outside STag 0x{:x}", to, stag), u);
  // RFC 7306 §5.2.1 item 4: an Atomic Operation Code we do not implement
  // (anything but FetchAdd and CmpSwap) is an error, surfaced as a Terminate.
  const auto aop = a->get(pi::AtomicRequest::op);
  if (aop != pi::kAtomicFetchAdd && aop != pi::kAtomicCmpSwap)
    return terminate(kTermLayerRdma, kTermRdmaOperation, 0xff, fmt::format("atomic operation code {}", aop), u);
  const bool cmp_swap = aop == pi::kAtomicCmpSwap;
  const std::uint64_t mask = a->get(pi::AtomicRequest::add_swap_mask);
  const std::uint64_t cur =
      atomic_apply(mr->buf.data() + (to - mr->base_to), cmp_swap, a->get(pi::AtomicRequest::add_swap),
                   a->get(pi::AtomicRequest::compare), cmp_swap ? mask : ~0ull, a->get(pi::AtomicRequest::compare_mask),
                   cmp_swap ? 0ull : mask);
  OwedResponse o;
  o.atomic = true;
  o.req_id = static_cast<std::uint32_t>(a->get(pi::AtomicRequest::req_id));
  o.original = cur;
  owed_.push_back(o);
  pump();
}

void QueuePair::on_terminate(Bytes body) {
  auto t = Header::decode(pi::kTerminate, body);
  TerminateInfo info;
  if (t) {
    info.layer = static_cast<unsigned>(t->get(pi::Terminate::layer));
    info.etype = static_cast<unsigned>(t->get(pi::Terminate::etype));
    info.code = static_cast<unsigned>(t->get(pi::Terminate::ecode));
    info.ddp_copied = t->get(pi::Terminate::d);
    info.rdmap_copied = t->get(pi::Terminate::r);
    info.seglen_valid = t->get(pi::Terminate::m);
    Bytes rest = body.subspan(pi::kTerminate.size);
    auto take = [&](std::size_t n, std::string_view what) -> std::optional<Bytes> {
      if (rest.size() < n) {
        info.missing = fmt::format("{} ({} octets; {} follow)", what, n, rest.size());
        return std::nullopt;
      }
      const Bytes b = rest.first(n);
      rest = rest.subspan(n);
      return b;
    };
    bool whole = true;
    if (info.seglen_valid || info.ddp_copied) {
      if (const auto b = take(2, "the DDP Segment Length")) info.seglen = protocols::be16(*b, 0);
      else whole = false;
    }
    if (whole && info.ddp_copied) {
      const bool tagged = !rest.empty() && ddp_control(rest, pi::DdpTagged::t);
      if (const auto b = take(tagged ? pi::kDdpTagged.size : pi::kDdpUntagged.size, "the terminated DDP header"))
        info.ddp_header.assign(b->begin(), b->end());
      else whole = false;
    }
    if (whole && info.rdmap_copied) {
      if (const auto b = take(pi::kReadRequest.size, "the terminated RDMA header")) info.rdmap_header.assign(b->begin(), b->end());
    }
  }
  info.reason = "received from the peer";
  term_received_ = info;
  state_ = QpState::terminated;
  error_ = fmt::format("the peer sent Terminate layer {} type {} code 0x{:02x}", info.layer, info.etype, info.code);
  rx_ = Rx::dead;
  flush_queues();
}

// ----------------------------------------------------------------- errors

void QueuePair::terminate(unsigned layer, unsigned etype, unsigned code, std::string reason, Bytes offending,
                          bool copy_rdmap) {
  if (state_ != QpState::connected) return fail(reason);
  // Only combinations the RFCs define (the table the checker's case uses too).
  if (!pi::terminate_code_defined(layer, etype, code))
    return fail(fmt::format("internal: Terminate {}/{}/0x{:02x} is not a defined code ({})", layer, etype, code, reason));
  Header t(pi::kTerminate);
  t.set(pi::Terminate::layer, layer);
  t.set(pi::Terminate::etype, etype);
  t.set(pi::Terminate::ecode, code);
  std::vector<std::byte> body;
  std::size_t ddp_len = 0;
  if (offending.size() >= 2) {
    const bool tagged = ddp_control(offending, pi::DdpTagged::t);
    ddp_len = tagged ? pi::kDdpTagged.size : pi::kDdpUntagged.size;
    if (offending.size() < ddp_len) ddp_len = 0;
  }
  if (cfg_.faults.terminate == Faults::Terminate::no_headers) ddp_len = 0;
  const bool with_rdmap = copy_rdmap && ddp_len && offending.size() >= ddp_len + pi::kReadRequest.size;
  t.set(pi::Terminate::m, ddp_len != 0);
  t.set(pi::Terminate::d, ddp_len != 0);
  t.set(pi::Terminate::r, with_rdmap);
  pi::append(body, t);
  if (ddp_len) {
    std::byte seglen[2];
    protocols::put_be16(MutBytes(seglen, 2), 0, static_cast<std::uint16_t>(offending.size()));
    pi::append(body, Bytes(seglen, 2));
    pi::append(body, offending.first(ddp_len));
    if (cfg_.faults.terminate == Faults::Terminate::wrong_ddp_header) body.back() ^= std::byte{0x01};  // MO or TO
    if (with_rdmap) pi::append(body, offending.subspan(ddp_len, pi::kReadRequest.size));
  }
  send_untagged(pi::kOpTerminate, next_msn_[2]++, B(body), {}, 0, 0);
  TerminateInfo sent;
  sent.layer = layer;
  sent.etype = etype;
  sent.code = code;
  sent.reason = reason;
  sent.ddp_copied = sent.seglen_valid = ddp_len != 0;
  sent.rdmap_copied = with_rdmap;
  if (ddp_len) {
    sent.seglen = static_cast<std::uint16_t>(offending.size());
    sent.ddp_header.assign(offending.begin(), offending.begin() + static_cast<std::ptrdiff_t>(ddp_len));
  }
  if (with_rdmap) {
    const Bytes r = offending.subspan(ddp_len, pi::kReadRequest.size);
    sent.rdmap_header.assign(r.begin(), r.end());
  }
  term_sent_ = std::move(sent);
  error_ = fmt::format("sent Terminate layer {} type {} code 0x{:02x}: {}", layer, etype, code, reason);
  state_ = QpState::terminated;
  rx_ = Rx::dead;
  flush_queues();
}

void QueuePair::fail(std::string why) {
  error_ = std::move(why);
  state_ = QpState::error;
  rx_ = Rx::dead;
  flush_queues();
}

void QueuePair::flush_queues() {
  // Work whose octets were all queued completes as it would have once sent;
  // the queue copies what it still shows of the regions, which their owners
  // may reuse from now on.
  tx_.detach();
  for (auto& d : due_) scq_.push(d.c);
  due_.clear();
  for (auto& p : sq_) scq_.push({p.wr.wr_id, wc_opcode(p.wr.op), WcStatus::flushed});
  sq_.clear();
  for (auto& r : reads_)
    if (!r.internal) scq_.push({r.wr_id, r.op, WcStatus::flushed});
  reads_.clear();
  if (in_send_.open) rcq_.push({in_send_.wr.wr_id, WcOpcode::recv, WcStatus::flushed});
  in_send_.open = false;
  for (auto& r : rq_) rcq_.push({r.wr_id, WcOpcode::recv, WcStatus::flushed});
  rq_.clear();
  owed_.clear();
}

// --------------------------------------------------------------- verbs

}  // namespace rdmaconf::engine::iwarp

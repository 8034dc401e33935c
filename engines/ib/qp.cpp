#include "engines/ib/qp.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace rdmaconf::engine::ib {

namespace pib = protocols::ib;
using protocols::Header;

namespace {

using namespace protocols::ib;  // opcodes (kSendFirst, ...), PSN arithmetic
constexpr std::uint8_t kUc = kTransportUc, kUd = kTransportUd;

bool is_read_or_atomic(WrOpcode op) {
  return op == WrOpcode::read || op == WrOpcode::atomic_fetch_add || op == WrOpcode::atomic_compare_swap;
}
bool is_atomic(WrOpcode op) { return op == WrOpcode::atomic_fetch_add || op == WrOpcode::atomic_compare_swap; }
bool is_write(WrOpcode op) { return op == WrOpcode::write || op == WrOpcode::write_imm; }

Header one(const protocols::HeaderDef& d, std::size_t field, std::uint64_t v) { return Header::with(d, {{field, v}}); }
Header reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) { return make_reth(va, rkey, len); }

// A BTH field of a packet already built, read or rewritten through the
// header's table (the faults change a packet after build()).
std::uint64_t bth_field(const std::vector<std::byte>& b, std::size_t field) {
  const auto& f = pib::kBth.fields[field];
  return protocols::read_bits(Bytes{b.data(), pib::kBth.size}, f.bit_offset, f.bit_width);
}
void set_bth_field(std::vector<std::byte>& b, std::size_t field, std::uint64_t v) {
  const auto& f = pib::kBth.fields[field];
  protocols::write_bits(protocols::MutBytes{b.data(), pib::kBth.size}, f.bit_offset, f.bit_width, v);
}
constexpr std::uint16_t kForeignPkey = 0x8001;  // a full member of partition 1, not the default (0x7fff)
Header aeth(std::uint32_t syndrome, std::uint32_t msn) { return make_aeth(syndrome, msn); }

constexpr std::uint32_t kRnrUsec[32] = {655360, 10,    20,    30,    40,     60,     80,     120,    160,    240,   320,
                                        480,    640,   960,   1280,  1920,   2560,   3840,   5120,   7680,   10240, 15360,
                                        20480,  30720, 40960, 61440, 81920,  122880, 163840, 245760, 327680, 491520};

std::string_view check_name(ProtectionDomain::Check c) {
  switch (c) {
    case ProtectionDomain::Check::ok: return "ok";
    case ProtectionDomain::Check::invalid_key: return "no valid region has this R_Key";
    case ProtectionDomain::Check::not_permitted: return "the region does not permit this access";
    case ProtectionDomain::Check::out_of_bounds: return "the range lies outside the region";
  }
  return "?";
}

}  // namespace

std::uint32_t rnr_timer_usec(unsigned code) { return kRnrUsec[code & 31]; }

std::string_view qp_type_name(QpType t) {
  switch (t) {
    case QpType::rc: return "RC";
    case QpType::uc: return "UC";
    case QpType::ud: return "UD";
  }
  return "?";
}

std::string validate(const QpConfig& c) {
  if (c.pmtu != 256 && c.pmtu != 512 && c.pmtu != 1024 && c.pmtu != 2048 && c.pmtu != 4096)
    return fmt::format("path MTU {} (256, 512, 1024, 2048 or 4096)", c.pmtu);
  if (c.qpn > kPsnMask || c.dest_qpn > kPsnMask || c.qpn < 2) return "QPNs are 24 bits and QP0/QP1 are reserved";
  if (c.sq_psn > kPsnMask || c.rq_psn > kPsnMask) return "PSNs are 24 bits";
  if (c.max_rd_atomic == 0 || c.max_dest_rd_atomic == 0) return "Read/Atomic depths must be at least 1";
  if (c.retry_cnt > 7 || c.rnr_retry > 7) return "retry counts are 3-bit values (0..7)";
  if (c.min_rnr_timer > 31) return "the RNR timer code is 5 bits";
  if (c.max_inflight < 1 || c.max_inflight > (1u << 23)) return "max_inflight must be 1 .. 2^23 (half the PSN space)";
  if (c.ack_every == 0) return "ack_every must be at least 1";
  return {};
}

QueuePair::QueuePair(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq, QpConfig cfg)
    : pd_(pd), scq_(send_cq), rcq_(recv_cq), cfg_(std::move(cfg)) {
  next_psn_ = cfg_.sq_psn & kPsnMask;
  acked_psn_ = psn_add(next_psn_, -1);
  epsn_ = cfg_.rq_psn & kPsnMask;
  retries_left_ = cfg_.retry_cnt;
  rnr_left_ = cfg_.rnr_retry;
}

bool QueuePair::idle() const {
  return sq_.empty() && wq_.empty() && replies_.empty() && !ack_due_ && !nak_due_ && staged_.empty();
}

// ---------------------------------------------------------------- posting

bool QueuePair::post_send(const SendWr& wr) {
  const bool ok_op = cfg_.type == QpType::rc ? wr.op != WrOpcode::immediate
                     : cfg_.type == QpType::uc
                         ? (wr.op == WrOpcode::send || wr.op == WrOpcode::send_imm || is_write(wr.op))
                         : (wr.op == WrOpcode::send || wr.op == WrOpcode::send_imm);
  if (state_ == QpState::error || !ok_op) {
    scq_.push({wr.wr_id, wc_opcode(wr.op), state_ == QpState::error ? WcStatus::flushed : WcStatus::local_protection_error});
    return false;
  }
  sq_.push_back(wr);
  return true;
}

bool QueuePair::post_recv(const RecvWr& wr) {
  if (state_ == QpState::error) {
    rcq_.push({wr.wr_id, WcOpcode::recv, WcStatus::flushed});
    return false;
  }
  rq_.push_back(wr);
  return true;
}

// ---------------------------------------------------------------- output

void QueuePair::build(std::uint8_t opcode, std::uint32_t dest_qp, std::uint32_t psn, bool se, bool ackreq,
                      std::initializer_list<Header> exts, Bytes payload, OutPacket& p) {
  Header bth(pib::kBth);
  bth.set(pib::Bth::opcode, opcode);
  bth.set(pib::Bth::se, se);
  bth.set(pib::Bth::pkey, cfg_.pkey);
  bth.set(pib::Bth::destqp, dest_qp);
  bth.set(pib::Bth::ackreq, ackreq);
  bth.set(pib::Bth::psn, psn & kPsnMask);
  const std::size_t pad = (4 - payload.size() % 4) % 4;
  bth.set(pib::Bth::padcnt, pad);
  // Sized once, then each part copied in.
  std::size_t total = bth.size() + payload.size() + pad + pib::kIcrcSize;
  for (const auto& h : exts) total += h.size();
  auto& b = p.bytes;
  b.resize(total);
  std::byte* at = b.data();
  auto put = [&](Bytes part) {
    if (!part.empty()) std::memcpy(at, part.data(), part.size());
    at += part.size();
  };
  put(bth.bytes());
  for (const auto& h : exts) put(h.bytes());
  put(payload);
  std::memset(at, 0, pad + pib::kIcrcSize);
  p.corrupt_icrc = false;
  ++ctr_.packets_sent;
}

bool QueuePair::next_output(OutPacket& out) {
  if (staged_.empty()) generate();
  if (staged_.empty()) return false;
  std::swap(out, staged_.front());
  // The caller's old buffer is kept for a later packet: no allocation per packet.
  if (spare_.size() < 64) spare_.push_back(std::move(staged_.front().bytes));
  staged_.pop_front();
  return true;
}

OutPacket& QueuePair::stage() {
  OutPacket& p = staged_.emplace_back();
  if (!spare_.empty()) {
    p.bytes = std::move(spare_.back());
    spare_.pop_back();
  }
  return p;
}

void QueuePair::generate() {
  // Responder first: it answers packets already received, in PSN order.
  if (nak_due_) {
    emit_ack(nak_due_->first, nak_due_->second, stage());
    nak_due_.reset();
  }
  while (!replies_.empty() && staged_.size() < 32) {
    Reply& r = replies_.front();
    emit_reply(r, stage());
    const std::uint32_t total = r.atomic ? 1 : std::max(1u, (r.length + cfg_.pmtu - 1) / cfg_.pmtu);
    if (r.sent == total) replies_.pop_front();
  }
  if (ack_due_ && replies_.empty()) {
    emit_ack(pib::syndrome(pib::AckKind::ack, 31), psn_add(epsn_, -1), stage());
    ack_due_ = false;
    since_ack_ = 0;
  }
  if (state_ == QpState::rts) pump_requester();
}

void QueuePair::emit_ack(std::uint32_t syndrome, std::uint32_t psn, OutPacket& p) {
  const auto kind = pib::ack_kind(syndrome);
  if (kind == pib::AckKind::ack) ++ctr_.acks_sent;
  else if (kind == pib::AckKind::rnr_nak) ++ctr_.rnr_naks_sent;
  else ++ctr_.naks_sent;
  build(kAck, cfg_.dest_qpn, psn, false, false, {aeth(syndrome, msn_)}, {}, p);
}

void QueuePair::emit_reply(Reply& r, OutPacket& p) {
  const std::uint32_t ack = pib::syndrome(pib::AckKind::ack, 31);
  if (r.atomic) {
    build(kAtomicAck, cfg_.dest_qpn, r.psn, false, false, {aeth(ack, r.msn), one(pib::kAtomicAckEth, 0, r.orig)}, {}, p);
    r.sent = 1;
    return;
  }
  const std::uint32_t total = std::max(1u, (r.length + cfg_.pmtu - 1) / cfg_.pmtu);
  const std::uint32_t k = r.sent++;
  const std::uint32_t off = k * cfg_.pmtu, len = std::min(cfg_.pmtu, r.length - std::min(r.length, off));
  std::byte* src = nullptr;
  // The region was checked when the Read was accepted; it may have gone
  // since (deregistered or invalidated): then the response carries zeros
  // would be wrong, so the run ends with a Remote Operational Error NAK.
  if (len > 0 && pd_.check(r.rkey, r.va + off, len, kRemoteRead, &src) != ProtectionDomain::Check::ok) {
    r.sent = total;
    build(kAck, cfg_.dest_qpn, psn_add(r.psn, k), false, false,
          {aeth(pib::syndrome(pib::AckKind::nak, pib::kNakRemoteOperational), r.msn)}, {}, p);
    ++ctr_.naks_sent;
    return;
  }
  const Bytes data{src, len};
  const std::uint8_t op = total == 1 ? kReadRespOnly : k == 0 ? kReadRespFirst : k + 1 == total ? kReadRespLast : kReadRespMiddle;
  if (op == kReadRespMiddle)
    build(op, cfg_.dest_qpn, psn_add(r.psn, k), false, false, {}, data, p);
  else
    build(op, cfg_.dest_qpn, psn_add(r.psn, k), false, false, {aeth(ack, r.msn)}, data, p);
}

// ---------------------------------------------------------------- requester

void QueuePair::pump_requester() {
  if (rnr_wait_) return;
  while (staged_.size() < 32) {
    if (emit_idx_ < wq_.size()) {
      Wqe& w = wq_[emit_idx_];
      const std::uint32_t k = emit_pkt_;
      const std::uint32_t packets = is_read_or_atomic(w.wr.op) ? 1 : w.npsn;
      OutPacket& p = stage();
      emit_request(w, k, p);
      ++req_packets_;
      const auto& f = cfg_.faults;
      if (f.skip_packet == req_packets_) {
        staged_.pop_back();
        --ctr_.packets_sent;
      } else if (f.corrupt_icrc == req_packets_) {
        p.corrupt_icrc = true;
      } else if (f.foreign_pkey == req_packets_) {
        set_bth_field(p.bytes, pib::Bth::pkey, kForeignPkey);
      } else if (f.duplicate_packet == req_packets_) {
        OutPacket& copy = stage();  // a deque: p stays valid
        copy.bytes = p.bytes;
        copy.corrupt_icrc = false;
        ++ctr_.packets_sent;
      }
      if (++emit_pkt_ == packets) {
        emit_pkt_ = 0;
        ++emit_idx_;
        if (cfg_.type != QpType::rc) {  // UC and UD complete once sent
          w.done = true;
          retire();
        }
      }
      continue;
    }
    if (sq_.empty()) return;
    SendWr& wr = sq_.front();
    const bool rd = is_read_or_atomic(wr.op);
    const std::uint32_t len = is_atomic(wr.op) ? 8u : wr.local.length;
    const std::uint32_t npsn = is_atomic(wr.op) ? 1u : std::max(1u, (len + cfg_.pmtu - 1) / cfg_.pmtu);
    if (cfg_.type == QpType::rc) {
      if (!wq_.empty() && static_cast<std::uint32_t>(psn_diff(next_psn_, wq_.front().first_psn)) + npsn > cfg_.max_inflight)
        return;
      if (rd && outstanding_rd_ >= cfg_.max_rd_atomic) return;
    }
    // The local buffer: readable for Sends and Writes, writable for Read
    // and Atomic results.
    if (len > 0) {
      const MemoryRegion* mr = pd_.find(wr.local.stag);
      if (!mr || !mr->valid || wr.local.offset > mr->buf.size() || len > mr->buf.size() - wr.local.offset ||
          (rd && !(mr->access & kLocalWrite))) {
        scq_.push({wr.wr_id, wc_opcode(wr.op), WcStatus::local_protection_error});
        sq_.pop_front();
        continue;
      }
    }
    if (cfg_.type == QpType::ud && len > cfg_.pmtu) {
      scq_.push({wr.wr_id, wc_opcode(wr.op), WcStatus::local_length_error});
      sq_.pop_front();
      continue;
    }
    Wqe w;
    w.wr = wr;
    w.first_psn = next_psn_;
    w.npsn = npsn;
    w.length = len;
    sq_.pop_front();
    next_psn_ = psn_add(next_psn_, npsn);
    if (wq_.empty()) progress_ms_ = now_ms_;
    if (rd) ++outstanding_rd_;
    wq_.push_back(std::move(w));
  }
}

void QueuePair::emit_request(Wqe& w, std::uint32_t k, OutPacket& p) {
  const SendWr& wr = w.wr;
  const std::uint8_t base = cfg_.type == QpType::rc ? 0 : cfg_.type == QpType::uc ? kUc : kUd;
  const std::uint32_t dest = cfg_.type == QpType::ud ? wr.remote_qpn : cfg_.dest_qpn;
  const std::uint32_t psn = psn_add(w.first_psn, k);
  MemoryRegion* mr = w.length ? pd_.find(wr.local.stag) : nullptr;
  if (is_read_or_atomic(wr.op)) {
    if (wr.op == WrOpcode::read) {
      build(kReadRequest, dest, psn, false, false, {reth(wr.remote_to, wr.remote_stag, w.length)}, {}, p);
    } else {
      Header a(pib::kAtomicEth);
      a.set(pib::AtomicEth::va, wr.remote_to);
      a.set(pib::AtomicEth::rkey, wr.remote_stag);
      a.set(pib::AtomicEth::swapadd, wr.add_swap);
      a.set(pib::AtomicEth::compare, wr.compare);
      build(wr.op == WrOpcode::atomic_compare_swap ? kCompareSwap : kFetchAdd, dest, psn, false, false, {a}, {}, p);
    }
    return;
  }
  const std::uint32_t off = k * cfg_.pmtu;
  std::uint32_t len = std::min(cfg_.pmtu, w.length - std::min(w.length, off));
  const bool first = k == 0, last = k + 1 == w.npsn;
  const auto& f = cfg_.faults;
  const bool oversize = f.oversize_packet == req_packets_ + 1;
  std::vector<std::byte> big;
  Bytes data = mr ? Bytes{mr->buf.data() + wr.local.offset + off, len} : Bytes{};
  if (oversize) {  // the same data followed by 64 octets past the path MTU
    big.assign(data.begin(), data.end());
    big.resize(std::max<std::size_t>(cfg_.pmtu, big.size()) + 64, std::byte{0x5a});
    data = Bytes{big};
  }
  // AckReq on the last packet of a message when nothing is queued behind
  // it, and at least every ack_every packets (IBTA Vol.1 §9.7.6.1.3 lets the
  // requester choose; the responder must answer each one).
  bool ackreq = false;
  if (cfg_.type == QpType::rc && last) {
    ++since_ackreq_;
    if (since_ackreq_ >= cfg_.ack_every || (emit_idx_ + 1 >= wq_.size() && sq_.empty())) {
      ackreq = true;
      since_ackreq_ = 0;
    }
  } else if (cfg_.type == QpType::rc && ++since_ackreq_ >= cfg_.ack_every) {
    ackreq = true;
    since_ackreq_ = 0;
  }
  std::uint8_t op;
  const bool imm = wr.op == WrOpcode::send_imm || wr.op == WrOpcode::write_imm;
  const Header immdt = one(pib::kImmDt, 0, wr.imm & 0xffffffffu);
  if (cfg_.type == QpType::ud) {
    Header deth(pib::kDeth);
    deth.set(pib::Deth::qkey, wr.remote_qkey);
    deth.set(pib::Deth::srcqp, cfg_.qpn);
    if (imm)
      build(base | kSendOnlyImm, dest, psn, wr.solicited, false, {deth, immdt}, data, p);
    else
      build(base | kSendOnly, dest, psn, wr.solicited, false, {deth}, data, p);
  } else if (is_write(wr.op)) {
    op = first && last ? (imm ? kWriteOnlyImm : kWriteOnly)
         : first       ? kWriteFirst
         : last        ? (imm ? kWriteLastImm : kWriteLast)
                       : kWriteMiddle;
    std::vector<Header> ex;
    if (first) ex.push_back(reth(wr.remote_to, wr.remote_stag, w.length));
    if (last && imm) ex.push_back(immdt);
    if (ex.size() == 2) build(base | op, dest, psn, last && wr.solicited, ackreq, {ex[0], ex[1]}, data, p);
    else if (ex.size() == 1) build(base | op, dest, psn, last && wr.solicited, ackreq, {ex[0]}, data, p);
    else build(base | op, dest, psn, false, ackreq, {}, data, p);
  } else {
    const bool inv = wr.op == WrOpcode::send_invalidate;
    op = first && last ? (inv ? kSendOnlyInv : imm ? kSendOnlyImm : kSendOnly)
         : first       ? kSendFirst
         : last        ? (inv ? kSendLastInv : imm ? kSendLastImm : kSendLast)
                       : kSendMiddle;
    if (last && imm) build(base | op, dest, psn, wr.solicited, ackreq, {immdt}, data, p);
    else if (last && inv) build(base | op, dest, psn, wr.solicited, ackreq, {one(pib::kIeth, 0, wr.invalidate_stag)}, data, p);
    else build(base | op, dest, psn, last && wr.solicited, ackreq, {}, data, p);
  }
  if (f.wrong_pad == req_packets_ + 1)  // the pad count says one octet more than the pad holds
    set_bth_field(p.bytes, pib::Bth::padcnt, (bth_field(p.bytes, pib::Bth::padcnt) + 1) & 3);
  if (cfg_.type != QpType::ud && (f.foreign_transport == req_packets_ + 1 || f.out_of_sequence == req_packets_ + 1)) {
    if (f.foreign_transport == req_packets_ + 1) {  // same headers, another transport service
      set_bth_field(p.bytes, pib::Bth::opcode, (bth_field(p.bytes, pib::Bth::opcode) & kOperationMask) | kUc);
    } else {
      // A Middle packet where a First or Only belongs: the RETH of a First
      // or Only WRITE is left out, so the layout stays that of a Middle.
      if (is_write(wr.op) && first) p.bytes.erase(p.bytes.begin() + pib::kBth.size, p.bytes.begin() + pib::kBth.size + pib::kReth.size);
      set_bth_field(p.bytes, pib::Bth::opcode, base | (is_write(wr.op) ? kWriteMiddle : kSendMiddle));
    }
  }
}

void QueuePair::retire() {
  while (!wq_.empty() && wq_.front().done) {
    Wqe& w = wq_.front();
    Completion c{w.wr.wr_id, wc_opcode(w.wr.op), WcStatus::success, w.length};
    if (is_atomic(w.wr.op)) c.atomic_original = w.orig;
    if (is_read_or_atomic(w.wr.op)) --outstanding_rd_;
    scq_.push(std::move(c));
    wq_.pop_front();
    if (emit_idx_ > 0) --emit_idx_;
    else emit_pkt_ = 0;
  }
}

// Every request up to and including `psn` is acknowledged. A Read or an
// Atomic whose response has not arrived cannot be: its response was lost,
// so it is sent again (IBTA Vol.1 §9.7.5.1.2, implied NAK).
void QueuePair::ack_up_to(std::uint32_t psn) {
  bool progress = false;
  if (!wq_.empty() && psn_diff(psn, acked_psn_) > 0 && psn_diff(psn, wq_.front().first_psn) >= 0) {
    acked_psn_ = psn;  // progress inside a long message counts too
    progress = true;
  }
  for (std::size_t i = 0; i < wq_.size() && i < emit_idx_ + 1; ++i) {
    Wqe& w = wq_[i];
    if (psn_diff(psn, psn_add(w.first_psn, w.npsn - 1)) < 0) break;
    if (w.done) continue;
    if (is_read_or_atomic(w.wr.op)) {
      rewind(w.first_psn);
      break;
    }
    w.done = true;
    progress = true;
  }
  if (progress) {
    progress_ms_ = now_ms_;
    retries_left_ = cfg_.retry_cnt;
    rnr_left_ = cfg_.rnr_retry;
  }
  retire();
}

// Go back N: send again from the packet carrying `psn`.
void QueuePair::rewind(std::uint32_t psn) {
  for (std::size_t i = 0; i < wq_.size(); ++i) {
    Wqe& w = wq_[i];
    const auto d = psn_diff(psn, w.first_psn);
    if (d < 0 || d >= static_cast<std::int32_t>(w.npsn)) continue;
    if (i > emit_idx_ || (i == emit_idx_ && static_cast<std::uint32_t>(d) >= emit_pkt_)) return;  // not sent yet
    emit_idx_ = i;
    emit_pkt_ = is_read_or_atomic(w.wr.op) ? 0 : static_cast<std::uint32_t>(d);
    for (std::size_t j = i; j < wq_.size(); ++j) {
      if (wq_[j].wr.op == WrOpcode::read) wq_[j].got = 0;
      if (is_read_or_atomic(wq_[j].wr.op) && j > i) wq_[j].done = false;
    }
    ++ctr_.retransmitted;
    return;
  }
}

void QueuePair::fail_wqe(std::uint32_t psn, WcStatus st, std::string why) {
  for (auto& w : wq_) {
    const auto d = psn_diff(psn, w.first_psn);
    if (d < 0 || d >= static_cast<std::int32_t>(w.npsn) || w.done) continue;
    // Everything before it completes normally; it carries the error.
    retire();
    scq_.push({w.wr.wr_id, wc_opcode(w.wr.op), st});
    break;
  }
  if (!wq_.empty() && !wq_.front().done) {
    const auto d = psn_diff(psn, wq_.front().first_psn);
    if (d >= 0 && d < static_cast<std::int32_t>(wq_.front().npsn)) {
      if (is_read_or_atomic(wq_.front().wr.op)) --outstanding_rd_;
      wq_.pop_front();
    }
  }
  to_error(std::move(why));
}

void QueuePair::on_response(const pib::IbPacket& pk) {
  const auto psn = static_cast<std::uint32_t>(pk.bth.get(pib::Bth::psn));
  const std::uint8_t code = static_cast<std::uint8_t>(pk.bth.get(pib::Bth::opcode));
  // Responses must answer a PSN we sent and that is not yet complete.
  if (wq_.empty() || psn_diff(psn, wq_.front().first_psn) < 0 || psn_diff(psn, next_psn_) >= 0) {
    ++ctr_.duplicates;
    if (code == kAtomicAck) note_atomic_replay(psn, pk);
    return;
  }
  const auto& ae = pk.get(pib::kExtAeth);
  if (code == kAck) {
    const auto syn = static_cast<std::uint32_t>(ae->get(pib::Aeth::syndrome));
    switch (pib::ack_kind(syn)) {
      case pib::AckKind::ack:
        ack_up_to(psn);
        return;
      case pib::AckKind::rnr_nak:
        ++ctr_.rnr_naks_received;
        ack_up_to(psn_add(psn, -1));
        if (cfg_.rnr_retry != 7 && rnr_left_-- == 0)
          return fail_wqe(psn, WcStatus::rnr_retry_exceeded, "the responder stayed not ready past the RNR retry count");
        rewind(psn);
        rnr_wait_ = true;
        rnr_until_ms_ = now_ms_ + (rnr_timer_usec(syn & 31) + 999) / 1000;
        return;
      case pib::AckKind::nak: {
        ++ctr_.naks_received;
        const std::uint32_t nak = syn & 31;
        ack_up_to(psn_add(psn, -1));
        if (nak == pib::kNakPsnSequence) {
          if (retries_left_-- == 0)
            return fail_wqe(psn, WcStatus::retry_exceeded, "sequence error NAKs past the retry count");
          rewind(psn);
          return;
        }
        const WcStatus st = nak == pib::kNakInvalidRequest ? WcStatus::remote_invalid_request
                            : nak == pib::kNakRemoteAccess ? WcStatus::remote_access_error
                                                           : WcStatus::remote_operation_error;
        return fail_wqe(psn, st, fmt::format("the responder answered PSN {} with NAK code {}", psn, nak));
      }
      case pib::AckKind::reserved:
        ++ctr_.dropped_header;
        return;
    }
    return;
  }
  // Read Response or ATOMIC Acknowledge: find the request it answers.
  for (std::size_t i = 0; i < wq_.size() && i < emit_idx_ + 1; ++i) {
    Wqe& w = wq_[i];
    const auto d = psn_diff(psn, w.first_psn);
    if (d < 0) break;
    if (d >= static_cast<std::int32_t>(w.npsn)) continue;
    if (w.done) {
      ++ctr_.duplicates;
      if (code == kAtomicAck) note_atomic_replay(psn, pk);
      return;
    }
    ack_up_to(psn_add(w.first_psn, -1));  // implies everything before it
    if (code == kAtomicAck) {
      if (!is_atomic(w.wr.op)) return refuse("drop", "ATOMIC Acknowledge for a request that is no Atomic", psn);
      const std::uint64_t orig = pk.get(pib::kExtAtomicAckEth)->get(0);
      std::byte* dst = nullptr;
      if (pd_.check(w.wr.local.stag, pd_.find(w.wr.local.stag)->base_to + w.wr.local.offset, 8, kLocalWrite, &dst) ==
          ProtectionDomain::Check::ok)
        std::memcpy(dst, &orig, 8);
      w.done = true;
      w.orig = orig;
      atomics_done_.emplace_back(psn, orig);
      if (atomics_done_.size() > 64) atomics_done_.pop_front();
      retire();
      progress_ms_ = now_ms_;
      return;
    }
    if (w.wr.op != WrOpcode::read) return refuse("drop", "Read Response for a request that is no Read", psn);
    const std::uint32_t expect_k = w.got / cfg_.pmtu;
    if (static_cast<std::uint32_t>(d) != expect_k) {  // a response packet went missing: ask again
      if (static_cast<std::uint32_t>(d) > expect_k) {
        rewind(w.first_psn);
        ++ctr_.dropped_sequence;
      }
      return;
    }
    const std::uint32_t total = w.npsn;
    const bool last = code == kReadRespLast || code == kReadRespOnly;
    const bool ok_seq = total == 1 ? code == kReadRespOnly
                        : d == 0   ? code == kReadRespFirst
                        : static_cast<std::uint32_t>(d) + 1 == total ? code == kReadRespLast
                                                                     : code == kReadRespMiddle;
    const std::size_t want = std::min<std::size_t>(cfg_.pmtu, w.length - w.got);
    if (!ok_seq || pk.payload.size() != want)
      return fail_wqe(w.first_psn, WcStatus::remote_operation_error,
                      fmt::format("Read Response PSN {}: opcode 0x{:02x} with {} octets, expected {} octets", psn, code,
                                  pk.payload.size(), want));
    MemoryRegion* mr = pd_.find(w.wr.local.stag);
    if (mr && !pk.payload.empty())
      std::memcpy(mr->buf.data() + w.wr.local.offset + w.got, pk.payload.data(), pk.payload.size());
    w.got += static_cast<std::uint32_t>(pk.payload.size());
    progress_ms_ = now_ms_;
    if (last) {
      w.done = true;
      retries_left_ = cfg_.retry_cnt;
      retire();
    }
    return;
  }
  ++ctr_.duplicates;
}

// An ATOMIC Acknowledge for an Atomic already answered: the responder's
// answer to a duplicate request, which must repeat the saved original value
// rather than execute the Atomic again.
void QueuePair::note_atomic_replay(std::uint32_t psn, const pib::IbPacket& pk) {
  const auto& eth = pk.get(pib::kExtAtomicAckEth);
  if (!eth) return;
  for (const auto& [done_psn, orig] : atomics_done_) {
    if (done_psn != psn) continue;
    ++ctr_.atomic_replays;
    if (eth->get(0) != orig) ++ctr_.atomic_replays_differing;
    return;
  }
}

// ---------------------------------------------------------------- responder

void QueuePair::refuse(std::string what, std::string why, std::uint32_t psn) {
  if (refusals_.size() < 1000) refusals_.push_back({std::move(what), std::move(why), psn});
}

void QueuePair::nak(std::uint32_t code, std::uint32_t psn, std::string why, bool fatal) {
  static constexpr std::string_view kNames[] = {"NAK PSN Sequence Error", "NAK Invalid Request",
                                                "NAK Remote Access Error", "NAK Remote Operational Error",
                                                "NAK Invalid RD Request"};
  refuse(std::string(kNames[std::min<std::uint32_t>(code, 4)]), std::move(why), psn);
  nak_due_ = {pib::syndrome(pib::AckKind::nak, code), psn};
  ack_due_ = false;
  // A fatal NAK still goes out (generate() sends it first); then the QP is
  // in error (IBTA Vol.1 §9.9.3, responder error classes).
  if (fatal) to_error(refusals_.empty() ? std::string("fatal NAK") : refusals_.back().why);
}

void QueuePair::to_error(std::string why) {
  if (state_ == QpState::error) return;
  state_ = QpState::error;
  error_ = std::move(why);
  for (auto& w : wq_) scq_.push({w.wr.wr_id, wc_opcode(w.wr.op), WcStatus::flushed});
  for (auto& wr : sq_) scq_.push({wr.wr_id, wc_opcode(wr.op), WcStatus::flushed});
  if (in_.wqe) rcq_.push({in_.wqe->wr_id, WcOpcode::recv, WcStatus::flushed});
  for (auto& r : rq_) rcq_.push({r.wr_id, WcOpcode::recv, WcStatus::flushed});
  wq_.clear();
  sq_.clear();
  rq_.clear();
  // Requests generated but not yet handed to the link stay unsent: after a
  // fatal NAK the requester sends nothing more (IBTA Vol.1 ch. 9; the
  // capture's ib.nak.fatal). A NAK owed is in nak_due_, not here.
  while (!staged_.empty()) {
    if (spare_.size() < 64) spare_.push_back(std::move(staged_.back().bytes));
    staged_.pop_back();
  }
  in_ = {};
  replies_.clear();
  ack_due_ = false;
  emit_idx_ = emit_pkt_ = 0;
  outstanding_rd_ = 0;
}

void QueuePair::receive(Bytes packet, bool icrc_ok) {
  ++ctr_.packets_received;
  if (!icrc_ok) {  // IBTA Vol.1 §9.6.1: a packet with a bad ICRC is dropped silently
    ++ctr_.dropped_icrc;
    return;
  }
  auto pk = pib::decode_transport(packet);
  if (!pk || !pk->op->valid) {
    ++ctr_.dropped_header;
    return;
  }
  // Header checks of IBTA Vol.1 §9.6: version, destination QP, partition.
  const auto tver = pk->bth.get(pib::Bth::tver);
  const auto dqp = static_cast<std::uint32_t>(pk->bth.get(pib::Bth::destqp));
  const auto pkey = static_cast<std::uint16_t>(pk->bth.get(pib::Bth::pkey));
  const bool pkey_ok = (pkey & 0x7fff) == (cfg_.pkey & 0x7fff) && (pkey & 0x8000 || cfg_.pkey & 0x8000) && (pkey & 0x7fff);
  const pib::Transport want = cfg_.type == QpType::rc ? pib::Transport::rc : cfg_.type == QpType::uc ? pib::Transport::uc
                                                                                                      : pib::Transport::ud;
  if (tver != 0 || dqp != cfg_.qpn || !pkey_ok || pk->op->transport != want) {
    ++ctr_.dropped_header;
    refuse("silent drop", fmt::format("header check: version {}, destination QP 0x{:x}, P_Key 0x{:04x}, {}", tver, dqp,
                                      pkey, pk->op->transport_name),
           static_cast<std::uint32_t>(pk->bth.get(pib::Bth::psn)));
    return;
  }
  if (state_ == QpState::error) return;
  const auto kind = pk->op->kind;
  if (kind == pib::OpKind::ack || kind == pib::OpKind::atomic_ack || kind == pib::OpKind::read_response) {
    if (cfg_.type == QpType::rc) on_response(*pk);
    return;
  }
  if (cfg_.type == QpType::rc) on_request(*pk);
  else on_request_uc_ud(*pk);
}

// Copies a Send packet's payload into the receive it fills; false when the
// message outgrows the receive or the receive's buffer is not usable.
bool QueuePair::place_send(const pib::IbPacket& pk, bool first, bool last) {
  (void)first;
  (void)last;
  const Sge& sge = in_.wqe->sge;
  if (in_.got + pk.payload.size() > sge.length) return false;
  if (!pk.payload.empty()) {
    std::byte* dst = nullptr;
    MemoryRegion* mr = pd_.find(sge.stag);
    if (!mr || pd_.check(sge.stag, mr->base_to + sge.offset + in_.got, pk.payload.size(), kLocalWrite, &dst) !=
                   ProtectionDomain::Check::ok)
      return false;
    std::memcpy(dst, pk.payload.data(), pk.payload.size());
  }
  in_.got += static_cast<std::uint32_t>(pk.payload.size());
  return true;
}

void QueuePair::on_duplicate(const pib::IbPacket& pk, std::uint32_t psn) {
  ++ctr_.duplicates;
  const auto kind = pk.op->kind;
  if (kind == pib::OpKind::read_request || kind == pib::OpKind::atomic) {
    // A repeated Read is served again from memory; a repeated Atomic gets
    // the saved result and is not executed twice (IBTA Vol.1 §9.7.5.1.x,
    // duplicate requests).
    for (const Reply& h : history_) {
      if (h.psn != psn) continue;
      Reply r = h;
      r.sent = 0;
      // The answer reports the MSN as it is now: the MSN never goes back
      // (IBTA Vol.1 §9.7.5.1.6); rxe answers duplicates the same way.
      r.msn = msn_;
      if (kind == pib::OpKind::read_request) {
        const auto& re = pk.get(pib::kExtReth);
        r.va = re->get(pib::Reth::va);
        r.length = static_cast<std::uint32_t>(re->get(pib::Reth::dmalen));
      }
      replies_.push_back(r);
      return;
    }
    refuse("silent drop", fmt::format("repeated Read/Atomic PSN {} is older than what we remember", psn), psn);
    return;
  }
  ack_due_ = true;  // a repeated Send or Write is acknowledged again, not executed
}

void QueuePair::on_request(const pib::IbPacket& pk) {
  const auto psn = static_cast<std::uint32_t>(pk.bth.get(pib::Bth::psn));
  const auto d = psn_diff(psn, epsn_);
  if (d < 0) return on_duplicate(pk, psn);
  if (d > 0) {
    // A gap: one sequence-error NAK carrying the PSN we expect, then
    // silence until the requester resends it (IBTA Vol.1 §9.7.5.1.2).
    ++ctr_.dropped_sequence;
    if (!seq_nak_sent_) {
      seq_nak_sent_ = true;
      nak(pib::kNakPsnSequence, epsn_, fmt::format("PSN {} arrived, {} expected", psn, epsn_), false);
    }
    return;
  }
  seq_nak_sent_ = false;
  const auto kind = pk.op->kind;
  const auto seq = pk.op->seq;
  const bool first = seq == pib::Seq::first || seq == pib::Seq::only || seq == pib::Seq::none;
  const bool last = seq == pib::Seq::last || seq == pib::Seq::only || seq == pib::Seq::none;
  const std::size_t plen = pk.payload.size();
  auto inv = [&](std::string why) { nak(pib::kNakInvalidRequest, psn, std::move(why), true); };

  // Opcode sequence (IBTA Vol.1 §9.7.4.1.x): a message in progress takes
  // only Middle or Last of its own kind; otherwise only First or Only.
  if (in_.open && (first || (kind == pib::OpKind::write) != in_.write))
    return inv(fmt::format("{} while a {} message is in progress", pk.op->op_name, in_.write ? "WRITE" : "SEND"));
  if (!in_.open && !first) return inv(fmt::format("{} without a First packet", pk.op->op_name));
  // Payload against the path MTU (IBTA Vol.1 §9.7.4.1.x / C9-?): First and
  // Middle exactly one PMTU, Last and Only at most one.
  if ((seq == pib::Seq::first || seq == pib::Seq::middle) ? plen != cfg_.pmtu : plen > cfg_.pmtu)
    return inv(fmt::format("{} carries {} octets with a path MTU of {}", pk.op->op_name, plen, cfg_.pmtu));

  switch (kind) {
    case pib::OpKind::send: {
      const bool imm = pk.get(pib::kExtImmDt).has_value();
      if (first) {
        if (rq_.empty()) {
          // Receiver Not Ready: the requester retries after the timer.
          refuse("RNR NAK", "no receive posted", psn);
          nak_due_ = {pib::syndrome(pib::AckKind::rnr_nak, cfg_.min_rnr_timer), psn};
          ack_due_ = false;
          seq_nak_sent_ = true;  // what follows it is dropped without another NAK
          return;
        }
        in_ = {};
        in_.open = true;
        in_.wqe = rq_.front();
        rq_.pop_front();
      }
      if (!place_send(pk, first, last)) {
        rcq_.push({in_.wqe->wr_id, WcOpcode::recv, WcStatus::local_length_error});
        in_.wqe.reset();
        return inv(fmt::format("SEND of more than the {}-octet receive buffer, or an unusable one", in_.wqe ? in_.wqe->sge.length : 0));
      }
      if (last) {
        Completion c{in_.wqe->wr_id, imm ? WcOpcode::recv_immediate : WcOpcode::recv, WcStatus::success, in_.got};
        if (imm) c.imm = pk.get(pib::kExtImmDt)->get(0);
        c.solicited = pk.bth.get(pib::Bth::se) != 0;
        if (const auto& ie = pk.get(pib::kExtIeth)) {
          const auto key = static_cast<std::uint32_t>(ie->get(0));
          if (!pd_.invalidate(key)) {
            rcq_.push({in_.wqe->wr_id, WcOpcode::recv, WcStatus::remote_operation_error});
            in_.wqe.reset();
            return inv(fmt::format("SEND with Invalidate names R_Key 0x{:x}, which is not valid here", key));
          }
          c.invalidated = key;
        }
        rcq_.push(std::move(c));
        in_ = {};
        msn_ = psn_add(msn_, 1);
      }
      break;
    }
    case pib::OpKind::write: {
      if (first) {
        const auto& re = pk.get(pib::kExtReth);
        const std::uint64_t va = re->get(pib::Reth::va);
        const auto rkey = static_cast<std::uint32_t>(re->get(pib::Reth::rkey));
        const auto len = static_cast<std::uint32_t>(re->get(pib::Reth::dmalen));
        const auto c = len ? pd_.check(rkey, va, len, kRemoteWrite, nullptr) : ProtectionDomain::Check::ok;
        if (c != ProtectionDomain::Check::ok)
          return nak(pib::kNakRemoteAccess, psn,
                     fmt::format("RDMA WRITE to R_Key 0x{:x} VA 0x{:x} length {}: {}", rkey, va, len, check_name(c)), true);
        in_ = {};
        in_.open = true;
        in_.write = true;
        in_.va = va;
        in_.rkey = rkey;
        in_.dmalen = len;
      }
      if (in_.got + plen > in_.dmalen)
        return inv(fmt::format("RDMA WRITE data exceeds its DMA length {}", in_.dmalen));
      if (plen) {
        std::byte* dst = nullptr;
        pd_.check(in_.rkey, in_.va + in_.got, plen, kRemoteWrite, &dst);
        if (dst) std::memcpy(dst, pk.payload.data(), plen);
      }
      in_.got += static_cast<std::uint32_t>(plen);
      if (last) {
        if (in_.got != in_.dmalen)
          return inv(fmt::format("RDMA WRITE carried {} octets, its RETH says {}", in_.got, in_.dmalen));
        if (const auto& im = pk.get(pib::kExtImmDt)) {  // WRITE with Immediate consumes a receive
          if (rq_.empty()) {
            refuse("RNR NAK", "no receive posted for RDMA WRITE with Immediate", psn);
            nak_due_ = {pib::syndrome(pib::AckKind::rnr_nak, cfg_.min_rnr_timer), psn};
            seq_nak_sent_ = true;
            in_.got -= static_cast<std::uint32_t>(plen);
            return;
          }
          Completion c{rq_.front().wr_id, WcOpcode::recv_rdma_with_imm, WcStatus::success, in_.got};
          c.imm = im->get(0);
          rq_.pop_front();
          rcq_.push(std::move(c));
        }
        in_ = {};
        msn_ = psn_add(msn_, 1);
      }
      break;
    }
    case pib::OpKind::read_request:
    case pib::OpKind::atomic: {
      const bool atomic = kind == pib::OpKind::atomic;
      if (replies_.size() >= cfg_.max_dest_rd_atomic)
        return inv(fmt::format("more than {} Read/Atomic requests outstanding", cfg_.max_dest_rd_atomic));
      Reply r;
      r.psn = psn;
      r.atomic = atomic;
      if (atomic) {
        const auto& a = pk.get(pib::kExtAtomicEth);
        r.va = a->get(pib::AtomicEth::va);
        r.rkey = static_cast<std::uint32_t>(a->get(pib::AtomicEth::rkey));
        if (r.va % 8) return inv(fmt::format("Atomic VA 0x{:x} is not 8-octet aligned", r.va));
        std::byte* where = nullptr;
        const auto c = pd_.check(r.rkey, r.va, 8, kRemoteAtomic, &where);
        if (c != ProtectionDomain::Check::ok)
          return nak(pib::kNakRemoteAccess, psn, fmt::format("Atomic on R_Key 0x{:x} VA 0x{:x}: {}", r.rkey, r.va, check_name(c)), true);
        r.orig = atomic_apply(where, pk.op->code == kCompareSwap, pk.get(pib::kExtAtomicEth)->get(pib::AtomicEth::swapadd),
                              pk.get(pib::kExtAtomicEth)->get(pib::AtomicEth::compare));
        r.length = 8;
      } else {
        const auto& re = pk.get(pib::kExtReth);
        r.va = re->get(pib::Reth::va);
        r.rkey = static_cast<std::uint32_t>(re->get(pib::Reth::rkey));
        r.length = static_cast<std::uint32_t>(re->get(pib::Reth::dmalen));
        const auto c = r.length ? pd_.check(r.rkey, r.va, r.length, kRemoteRead, nullptr) : ProtectionDomain::Check::ok;
        if (c != ProtectionDomain::Check::ok)
          return nak(pib::kNakRemoteAccess, psn,
                     fmt::format("RDMA READ of R_Key 0x{:x} VA 0x{:x} length {}: {}", r.rkey, r.va, r.length, check_name(c)), true);
        if (r.length > (1u << 31)) return inv("RDMA READ longer than 2^31 octets");
      }
      msn_ = psn_add(msn_, 1);
      r.msn = msn_;
      replies_.push_back(r);
      history_.push_back(r);
      while (history_.size() > 2 * cfg_.max_dest_rd_atomic) history_.pop_front();
      epsn_ = psn_add(epsn_, atomic ? 1 : std::max(1u, (r.length + cfg_.pmtu - 1) / cfg_.pmtu));
      return;  // the response is the acknowledgement
    }
    default:
      return inv(fmt::format("{} is not a request this responder serves", pk.op->op_name));
  }
  epsn_ = psn_add(epsn_, 1);
  if (pk.bth.get(pib::Bth::ackreq) || ++since_ack_ >= cfg_.ack_every) ack_due_ = true;
}

// UC and UD: no acknowledgements and no NAKs; what cannot be delivered is
// dropped (IBTA Vol.1 §9.7.7 for UC, §9.8 for UD).
void QueuePair::on_request_uc_ud(const pib::IbPacket& pk) {
  const auto psn = static_cast<std::uint32_t>(pk.bth.get(pib::Bth::psn));
  const auto seq = pk.op->seq;
  const auto kind = pk.op->kind;
  const std::size_t plen = pk.payload.size();
  auto drop = [&](std::string why) {
    ++ctr_.dropped_uc_ud;
    refuse("silent drop", std::move(why), psn);
    if (in_.open && in_.wqe) rq_.push_front(*in_.wqe);  // the receive is used again
    in_ = {};
  };
  if (cfg_.type == QpType::ud) {
    const auto qkey = static_cast<std::uint32_t>(pk.get(pib::kExtDeth)->get(pib::Deth::qkey));
    if (qkey != cfg_.qkey) return drop(fmt::format("Q_Key 0x{:x}, ours is 0x{:x}", qkey, cfg_.qkey));
    if (plen > cfg_.pmtu) return drop(fmt::format("UD SEND of {} octets with a path MTU of {}", plen, cfg_.pmtu));
    if (rq_.empty()) return drop("no receive posted");
    in_ = {};
    in_.open = true;
    in_.wqe = rq_.front();
    rq_.pop_front();
    if (!place_send(pk, true, true)) {
      rcq_.push({in_.wqe->wr_id, WcOpcode::recv, WcStatus::local_length_error});
      in_ = {};
      return;
    }
    Completion c{in_.wqe->wr_id, pk.get(pib::kExtImmDt) ? WcOpcode::recv_immediate : WcOpcode::recv, WcStatus::success, in_.got};
    if (const auto& im = pk.get(pib::kExtImmDt)) c.imm = im->get(0);
    c.src_qp = static_cast<std::uint32_t>(pk.get(pib::kExtDeth)->get(pib::Deth::srcqp));
    c.solicited = pk.bth.get(pib::Bth::se) != 0;
    rcq_.push(std::move(c));
    in_ = {};
    return;
  }
  // UC: a PSN gap loses the message in progress; delivery resumes at the
  // next First or Only packet.
  const bool first = seq == pib::Seq::first || seq == pib::Seq::only;
  const bool last = seq == pib::Seq::last || seq == pib::Seq::only;
  if (psn != epsn_) {
    ++ctr_.dropped_sequence;
    if (in_.open) drop(fmt::format("PSN {} arrived, {} expected: the message in progress is lost", psn, epsn_));
  }
  epsn_ = psn_add(psn, 1);
  if (!in_.open && !first) return drop(fmt::format("{} without its First packet", pk.op->op_name));
  if (in_.open && (first || (kind == pib::OpKind::write) != in_.write)) {
    drop(fmt::format("{} while a message is in progress", pk.op->op_name));
    if (!first) return;
  }
  if ((seq == pib::Seq::first || seq == pib::Seq::middle) ? plen != cfg_.pmtu : plen > cfg_.pmtu)
    return drop(fmt::format("{} carries {} octets with a path MTU of {}", pk.op->op_name, plen, cfg_.pmtu));
  if (kind == pib::OpKind::send) {
    if (first) {
      if (rq_.empty()) return drop("no receive posted");
      in_ = {};
      in_.open = true;
      in_.wqe = rq_.front();
      rq_.pop_front();
    }
    if (!place_send(pk, first, last)) return drop("SEND larger than the receive buffer");
    if (last) {
      Completion c{in_.wqe->wr_id, pk.get(pib::kExtImmDt) ? WcOpcode::recv_immediate : WcOpcode::recv, WcStatus::success, in_.got};
      if (const auto& im = pk.get(pib::kExtImmDt)) c.imm = im->get(0);
      rcq_.push(std::move(c));
      in_ = {};
    }
    return;
  }
  if (first) {
    const auto& re = pk.get(pib::kExtReth);
    in_ = {};
    in_.open = true;
    in_.write = true;
    in_.va = re->get(pib::Reth::va);
    in_.rkey = static_cast<std::uint32_t>(re->get(pib::Reth::rkey));
    in_.dmalen = static_cast<std::uint32_t>(re->get(pib::Reth::dmalen));
    const auto c = in_.dmalen ? pd_.check(in_.rkey, in_.va, in_.dmalen, kRemoteWrite, nullptr) : ProtectionDomain::Check::ok;
    if (c != ProtectionDomain::Check::ok)
      return drop(fmt::format("RDMA WRITE to R_Key 0x{:x}: {}", in_.rkey, check_name(c)));
  }
  if (in_.got + plen > in_.dmalen) return drop("RDMA WRITE data exceeds its DMA length");
  std::byte* dst = nullptr;
  if (plen && pd_.check(in_.rkey, in_.va + in_.got, plen, kRemoteWrite, &dst) == ProtectionDomain::Check::ok)
    std::memcpy(dst, pk.payload.data(), plen);
  in_.got += static_cast<std::uint32_t>(plen);
  if (last) {
    if (in_.got != in_.dmalen) return drop("RDMA WRITE shorter than its DMA length");
    if (const auto& im = pk.get(pib::kExtImmDt)) {
      if (rq_.empty()) return drop("no receive posted for RDMA WRITE with Immediate");
      Completion c{rq_.front().wr_id, WcOpcode::recv_rdma_with_imm, WcStatus::success, in_.got};
      c.imm = im->get(0);
      rq_.pop_front();
      rcq_.push(std::move(c));
    }
    in_ = {};
  }
}

// ---------------------------------------------------------------- time

void QueuePair::tick(std::uint64_t now_ms) {
  now_ms_ = now_ms;
  if (state_ != QpState::rts || cfg_.type != QpType::rc) return;
  if (rnr_wait_ && now_ms >= rnr_until_ms_) {
    rnr_wait_ = false;
    progress_ms_ = now_ms;
  }
  if (rnr_wait_ || wq_.empty() || (emit_idx_ == 0 && emit_pkt_ == 0)) return;  // nothing sent and unanswered
  if (now_ms - progress_ms_ < cfg_.timeout_ms) return;
  // Local ACK timeout (IBTA Vol.1 §9.7.6.1.3): send again from the oldest
  // request not yet complete, at most retry_cnt times without progress.
  ++ctr_.timeouts;
  progress_ms_ = now_ms;
  if (retries_left_ == 0)
    return fail_wqe(wq_.front().first_psn, WcStatus::retry_exceeded, "no answer after the transport retry count");
  --retries_left_;
  for (auto& w : wq_)
    if (!w.done) {
      rewind(w.first_psn);
      break;
    }
}

std::optional<std::uint64_t> QueuePair::next_timer(std::uint64_t now_ms) const {
  if (state_ != QpState::rts || cfg_.type != QpType::rc) return std::nullopt;
  if (rnr_wait_) return rnr_until_ms_ > now_ms ? rnr_until_ms_ - now_ms : 0;
  if (wq_.empty()) return std::nullopt;
  const std::uint64_t due = progress_ms_ + cfg_.timeout_ms;
  return due > now_ms ? due - now_ms : 0;
}

}  // namespace rdmaconf::engine::ib

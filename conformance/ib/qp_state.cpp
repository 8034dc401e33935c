#include "conformance/ib/qp_state.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace rdmaconf::conformance::ib {

namespace pib = protocols::ib;
using pib::OpKind;
using pib::Seq;

std::uint32_t read_packets(std::uint64_t len, std::uint32_t pmtu) {
  if (len <= 256) return 1;
  if (pmtu == 0) return 0;
  return static_cast<std::uint32_t>((len + pmtu - 1) / pmtu);
}

bool valid_mtu(std::uint64_t n) { return n == 256 || n == 512 || n == 1024 || n == 2048 || n == 4096; }

namespace {

constexpr std::size_t kMaxGap = 4096;  // PSNs of one gap tracked one by one

bool is_request(OpKind k) {
  return k == OpKind::send || k == OpKind::write || k == OpKind::read_request || k == OpKind::atomic ||
         k == OpKind::resync || k == OpKind::flush || k == OpKind::atomic_write;
}
bool single(Seq s) { return s == Seq::only || s == Seq::none; }
std::string_view kind_name(OpKind k) {
  switch (k) {
    case OpKind::send: return "SEND";
    case OpKind::write: return "RDMA WRITE";
    case OpKind::read_response: return "RDMA READ Response";
    default: return "message";
  }
}
std::uint64_t reth_length(const pib::IbPacket& p) {
  const auto& r = p.get(pib::kExtReth);
  return r ? r->get(pib::Reth::dmalen) : 0;
}

// The opcode-sequence rule (IBTA Vol.1 §9.5): after First or Middle only a
// Middle or Last of the same operation; First or Only only between messages.
template <class MsgT>
std::optional<std::string> order(MsgT& msg, OpKind& open_kind, OpKind kind, Seq seq) {
  std::optional<std::string> err;
  if (msg == MsgT::open) {
    if (seq == Seq::first || single(seq))
      err = fmt::format("a Middle or Last of the open {} message", kind_name(open_kind));
    else if (kind != open_kind)
      err = fmt::format("a Middle or Last of the open {} message, not of {}", kind_name(open_kind), kind_name(kind));
  } else if (msg == MsgT::none && (seq == Seq::middle || seq == Seq::last)) {
    err = "a First or Only packet (no message is open)";
  }
  if (seq == Seq::first || (seq == Seq::middle && msg != MsgT::open)) {
    msg = MsgT::open;
    open_kind = kind;
  } else if (seq == Seq::last || single(seq)) {
    msg = MsgT::none;
  }
  return err;
}

}  // namespace

const Facts& Conversation::packet(int dir, const pib::IbPacket& p, std::uint64_t frame, bool icrc_bad) {
  facts_ = Facts{};
  facts_.ib = &p;
  facts_.pmtu = pmtu_;
  facts_.pmtu_from_option = pmtu_option_;
  if (!p.op->valid) return facts_;
  if (is_request(p.op->kind))
    request(dir, p, frame, icrc_bad);
  else if (p.op->kind == OpKind::read_response || p.op->kind == OpKind::ack || p.op->kind == OpKind::atomic_ack)
    response(dir, p, frame);
  // The path MTU shows in the first First or Middle packet.
  if (!pmtu_ && (p.op->seq == Seq::first || p.op->seq == Seq::middle)) pmtu_ = static_cast<std::uint32_t>(p.payload.size());
  return facts_;
}

void Conversation::request(int dir, const pib::IbPacket& p, std::uint64_t frame, bool icrc_bad) {
  auto& slot = req_[{dir, static_cast<std::uint32_t>(p.bth.get(pib::Bth::destqp))}];
  const bool fresh = !slot;
  if (fresh) {
    slot = std::make_unique<ReqFlow>();
    slot->dir = dir;
    slot->dqp = static_cast<std::uint32_t>(p.bth.get(pib::Bth::destqp));
    slot->transport = p.op->transport;
    slot->first_frame = frame;
  }
  ReqFlow& f = *slot;
  facts_.req = &f;
  ++f.packets;
  f.last_frame = frame;
  const auto pkey = static_cast<std::uint16_t>(p.bth.get(pib::Bth::pkey));
  if (f.pkey && *f.pkey != pkey) facts_.pkey_before = f.pkey;
  if (!f.pkey) f.pkey = pkey;
  if (p.op->transport != f.transport) {
    facts_.transport_before = f.transport;
    return;  // not this flow's traffic: nothing more to learn from it
  }
  if (f.transport == pib::Transport::ud) return;  // UD: single-packet messages, PSNs not checked by the receiver

  if (f.fatal_nak) {
    facts_.after_fatal = f.fatal_nak;
    f.sent_after_fatal = true;
  }
  const auto psn = static_cast<std::uint32_t>(p.bth.get(pib::Bth::psn));
  if (icrc_bad) {
    constexpr std::size_t kKeep = 64;
    if (f.bad_icrc.size() == kKeep) f.bad_icrc.erase(f.bad_icrc.begin());
    f.bad_icrc.push_back(psn);
  }
  const OpKind kind = p.op->kind;
  const std::uint32_t n = kind == OpKind::read_request ? read_packets(reth_length(p), pmtu_) : 1;
  // requester PSNs (IBTA Vol.1 §9.7.1: one PSN per packet; a Read Request
  // takes one per response packet)
  if (fresh) {
    facts_.psn = Facts::PsnClass::first;
    f.first_psn = psn;
  } else if (!f.next_known) {
    facts_.psn = Facts::PsnClass::unknown;
  } else {
    facts_.expected_psn = f.next_psn;
    const auto d = psn_diff(psn, f.next_psn);
    if (d == 0) {
      facts_.psn = Facts::PsnClass::next;
    } else if (d < 0) {
      facts_.psn = Facts::PsnClass::resend;
    } else {
      facts_.psn = Facts::PsnClass::gap;
      f.msg_dmalen.reset();  // the Write in progress lost packets: its resend is judged, not this copy
      f.gaps.push_back({f.next_psn, std::vector<bool>(std::min<std::size_t>(static_cast<std::size_t>(d), kMaxGap)), frame, false});
    }
  }
  if (facts_.psn == Facts::PsnClass::resend) {
    for (auto& g : f.gaps) {
      const auto at = psn_diff(psn, g.from);
      if (at >= 0 && static_cast<std::size_t>(at) < g.seen.size()) g.seen[static_cast<std::size_t>(at)] = true;
    }
  } else {
    f.next_known = n != 0;
    f.next_psn = psn_add(psn, n);
    f.max_psn = n ? psn_add(psn, n - 1) : psn;
  }

  // pending NAKs: the requester must resend from the NAK's PSN
  for (auto it = f.naks.begin(); it != f.naks.end();) {
    if (psn == it->psn) {
      ++facts_.naks_followed;
      it = f.naks.erase(it);
    } else {
      ++it->requests_after;
      ++it;
    }
  }

  // opcode sequence; a resend restarts at a PSN whose message state is not kept
  if (facts_.psn == Facts::PsnClass::resend) {
    f.msg = ReqFlow::Msg::unknown;
    f.msg_dmalen.reset();
    if (p.op->seq == Seq::first || single(p.op->seq)) f.msg = single(p.op->seq) ? ReqFlow::Msg::none : ReqFlow::Msg::open;
    if (p.op->seq == Seq::first) f.msg_kind = kind;
  } else {
    facts_.order_error = order(f.msg, f.msg_kind, kind, p.op->seq);
  }

  // RDMA Write length against its RETH
  if (kind == OpKind::write) {
    if (p.op->seq == Seq::first || p.op->seq == Seq::only) {
      f.msg_dmalen = reth_length(p);
      f.msg_bytes = 0;
    }
    f.msg_bytes += p.payload.size();
    if ((p.op->seq == Seq::last || p.op->seq == Seq::only) && f.msg_dmalen) {
      facts_.write_done = Facts::Done{*f.msg_dmalen, f.msg_bytes, 0, 0, psn};
      f.msg_dmalen.reset();
    }
  }

  if (f.transport != pib::Transport::rc && f.transport != pib::Transport::xrc) return;
  // outstanding Reads and Atomics, answered in order by the responder
  if (kind == OpKind::read_request || kind == OpKind::atomic) {
    // a repeated request is served again (IBTA Vol.1 §9.7.5.2.4), so each copy waits for an answer
    f.outstanding.push_back({psn, n, kind == OpKind::atomic ? 8 : reth_length(p), kind, frame});
  }
  if (p.bth.get(pib::Bth::ackreq)) {
    f.ack_wanted.push_back({psn, frame});
    ++f.ackreq_total;
  }
  responder_view(f, psn, n, frame);
}

// What a conforming responder expects next (IBTA Vol.1 §9.7.5.1): the
// expected PSN advances with each in-order request; one ahead of it opens a
// sequence error, answered by one NAK until the requester resends it.
void Conversation::responder_view(ReqFlow& f, std::uint32_t psn, std::uint32_t n, std::uint64_t frame) {
  if (!f.epsn_known) {
    f.epsn_known = n != 0;
    f.epsn = psn_add(psn, n);
    return;
  }
  const auto d = psn_diff(psn, f.epsn);
  if (d == 0) {
    if (f.in_gap) facts_.gap_closed = Facts::GapClosed{f.gap_naks, f.gap_frame};
    f.in_gap = false;
    f.epsn_known = n != 0;
    f.epsn = psn_add(psn, n);
  } else if (d > 0 && !f.in_gap) {
    f.in_gap = true;
    f.gap_naks = 0;
    f.gap_frame = frame;
  }
}

RespFlow& Conversation::pair(RespFlow& r, std::uint32_t psn) {
  if (r.req) return r;
  // The request flow in the other direction whose PSNs this answer fits
  // (nearest at or below its highest PSN sent), among those not yet paired.
  ReqFlow* best = nullptr;
  std::int32_t best_d = 0;
  for (auto& [key, f] : req_) {
    if (key.first == r.dir || f->resp || (f->transport != pib::Transport::rc && f->transport != pib::Transport::xrc)) continue;
    const auto d = psn_diff(f->max_psn, psn);
    if (d < -1) continue;
    if (!best || d < best_d) best = f.get(), best_d = d;
  }
  if (best) {
    r.req = best;
    best->resp = &r;
  }
  return r;
}

void Conversation::acknowledge(RespFlow& r, std::uint32_t upto, std::uint32_t answered) {
  if (!r.acked_any || psn_diff(upto, r.max_acked) > 0) r.max_acked = upto;
  r.acked_any = true;
  ReqFlow* f = r.req;
  if (!f) return;
  std::erase_if(f->ack_wanted, [&](const ReqFlow::Wanted& w) { return psn_diff(w.psn, answered) <= 0; });
  for (auto& g : f->gaps)
    if (psn_diff(upto, psn_add(g.from, static_cast<std::int64_t>(g.seen.size()) - 1)) >= 0 &&
        !std::all_of(g.seen.begin(), g.seen.end(), [](bool b) { return b; }))
      g.capture_loss = true;
}

void Conversation::response(int dir, const pib::IbPacket& p, std::uint64_t frame) {
  const auto dqp = static_cast<std::uint32_t>(p.bth.get(pib::Bth::destqp));
  auto& slot = resp_[{dir, dqp}];
  if (!slot) {
    slot = std::make_unique<RespFlow>();
    slot->dir = dir;
    slot->dqp = dqp;
    slot->first_frame = frame;
  }
  const auto psn = static_cast<std::uint32_t>(p.bth.get(pib::Bth::psn));
  RespFlow& r = pair(*slot, psn);
  facts_.resp = &r;
  facts_.req = r.req;
  ++r.packets;
  r.last_frame = frame;
  const auto pkey = static_cast<std::uint16_t>(p.bth.get(pib::Bth::pkey));
  if (r.pkey && *r.pkey != pkey) facts_.pkey_before = r.pkey;
  if (!r.pkey) r.pkey = pkey;
  ReqFlow* f = r.req;

  if (const auto& a = p.get(pib::kExtAeth)) {
    const auto msn = static_cast<std::uint32_t>(a->get(pib::Aeth::msn));
    facts_.msn_before = r.msn;
    r.msn = msn;
  }
  const OpKind kind = p.op->kind;
  const Seq seq = p.op->seq;

  if (kind == OpKind::ack) {
    const auto syn = static_cast<std::uint32_t>(p.get(pib::kExtAeth)->get(pib::Aeth::syndrome));
    const AckKind k = ack_kind(syn);
    if (f && f->packets) facts_.max_sent = f->max_psn;
    if (k == AckKind::ack) {
      acknowledge(r, psn, psn);
      if (f && f->in_gap && psn_diff(psn, f->epsn) >= 0) {
        // the responder had the PSNs the capture misses
        facts_.gap_lost = true;
        f->in_gap = false;
        f->epsn = psn_add(psn, 1);
      }
      if (f && !f->epsn_known) f->epsn = psn_add(psn, 1), f->epsn_known = true;
    } else if (k == AckKind::rnr_nak || k == AckKind::nak) {
      acknowledge(r, psn_add(psn, -1), psn);  // a NAK answers its PSN and acknowledges those before
      // an RNR NAK refuses its PSN: the responder expects it again
      if (f && k == AckKind::rnr_nak) f->epsn = psn, f->epsn_known = true;
      const bool seq_err = k == AckKind::nak && (syn & 0x1f) == kNakPsnSequence;
      const auto code = syn & 0x1f;
      if (f && k == AckKind::nak && (code == kNakInvalidRequest || code == kNakRemoteAccess || code == kNakRemoteOperational) &&
          !f->fatal_nak)
        f->fatal_nak = frame;
      if (f && (k == AckKind::rnr_nak || seq_err)) f->naks.push_back({psn, frame, k == AckKind::rnr_nak, 0});
      if (seq_err && f && !f->in_gap && std::count(f->bad_icrc.begin(), f->bad_icrc.end(), psn)) {
        // The request with this PSN had a wrong ICRC: the responder dropped
        // it, as it must (IBTA Vol.1 §9.6.1), and the hole it left is the
        // sequence error this NAK reports.
        f->in_gap = true;
        f->gap_naks = 0;
        f->gap_frame = frame;
        f->epsn = psn;
        f->epsn_known = true;
      }
      if (seq_err && f) {
        if (f->in_gap) {
          facts_.nak_expected = f->epsn;
          facts_.nak_count = ++f->gap_naks;
        } else if (f->epsn_known) {
          facts_.nak_no_gap = true;
          facts_.nak_expected = f->epsn;
        }
      }
    }
    return;
  }

  if (kind == OpKind::atomic_ack || seq == Seq::first || seq == Seq::only) {
    // answers the outstanding request with this PSN
    if (f) {
      auto it = std::find_if(f->outstanding.begin(), f->outstanding.end(), [&](const Request& q) {
        return q.psn == psn && (q.kind == OpKind::atomic) == (kind == OpKind::atomic_ack);
      });
      if (it != f->outstanding.end()) {
        facts_.match = Facts::Match::matched;
        r.reading = *it;
        f->outstanding.erase(it);
      } else if (f->packets && psn_diff(psn, f->first_psn) >= 0) {
        facts_.match = Facts::Match::unmatched;
        r.reading = Request{psn, 0, 0, kind == OpKind::atomic_ack ? OpKind::atomic : OpKind::read_request, 0};
      } else {
        r.reading = Request{psn, 0, 0, OpKind::read_request, 0};  // request before the capture began
      }
    }
    if (kind == OpKind::atomic_ack) {
      acknowledge(r, psn, psn);
      return;
    }
  }
  // Read Response sequence (IBTA Vol.1 §9.7.5.1.4 / §9.4.4)
  OpKind open = OpKind::read_response;
  const bool was_open = r.msg == RespFlow::Msg::open;
  facts_.order_error = order(r.msg, open, kind, seq);
  if (seq == Seq::first || seq == Seq::only) {
    r.next_psn = psn;
    r.got_packets = 0;
    r.got_bytes = 0;
  } else if (was_open) {
    facts_.resp_psn_expected = r.next_psn;
  }
  r.next_psn = psn_add(psn, 1);
  ++r.got_packets;
  r.got_bytes += p.payload.size();
  if ((seq == Seq::last || seq == Seq::only) && (was_open || seq == Seq::only) && r.reading.frame) {
    facts_.read_done = Facts::Done{r.reading.length, r.got_bytes, read_packets(r.reading.length, pmtu_), r.got_packets,
                                   r.reading.psn};
  }
  if (seq == Seq::last || seq == Seq::only) {
    r.reading = Request{};
    acknowledge(r, psn, psn);
  }
}

std::vector<const ReqFlow*> Conversation::request_flows() const {
  std::vector<const ReqFlow*> v;
  for (const auto& [k, f] : req_) v.push_back(f.get());
  return v;
}

Closing Conversation::close() const {
  using State = Closing::Item::State;
  Closing c;
  for (const auto& [key, fp] : req_) {
    const ReqFlow& f = *fp;
    const RespFlow* r = f.resp;
    const bool reliable = f.transport == pib::Transport::rc || f.transport == pib::Transport::xrc;
    for (const auto& g : f.gaps) {
      std::size_t missing = 0;
      std::uint32_t first_missing = 0;
      for (std::size_t i = 0; i < g.seen.size(); ++i)
        if (!g.seen[i] && missing++ == 0) first_missing = psn_add(g.from, static_cast<std::int64_t>(i));
      if (!missing) {
        c.gaps.push_back({&f, g.from, g.frame, State::pass, {}});
      } else if (g.capture_loss || !reliable) {
        c.gaps.push_back({&f, first_missing, g.frame, State::inconclusive,
                          g.capture_loss ? "the responder acknowledged past them: the capture lost them"
                                         : "unreliable service: lost on the link or skipped by the requester"});
      } else {
        c.gaps.push_back({&f, first_missing, g.frame, State::fail,
                          fmt::format("{} PSN(s) from {} were never sent", missing, first_missing)});
      }
    }
    c.answered += f.ackreq_total - f.ack_wanted.size();
    if (f.fatal_nak && !f.sent_after_fatal) ++c.fatal_respected;
    for (const auto& w : f.ack_wanted) {
      const bool spoke_after = r && r->last_frame > w.frame;
      c.unanswered.push_back({&f, w.psn, w.frame, spoke_after ? State::fail : State::inconclusive,
                              spoke_after ? "the responder answered later packets but never this one"
                                          : "the capture ends before the responder answered"});
    }
    for (const auto& n : f.naks)
      if (n.requests_after)
        c.not_resent.push_back({&f, n.psn, n.frame, State::fail,
                                fmt::format("{} request packet(s) followed the {} and none resent PSN {}",
                                            n.requests_after, n.rnr ? "RNR NAK" : "sequence-error NAK", n.psn)});
    if (f.in_gap && f.gap_naks == 0) {
      const bool spoke_after = r && r->last_frame > f.gap_frame;
      c.open_gaps.push_back({&f, f.epsn, f.gap_frame, spoke_after ? State::fail : State::inconclusive,
                             spoke_after ? "the responder answered after the out-of-sequence request but sent no sequence-error NAK"
                                         : "the capture ends before the responder answered"});
    }
  }
  return c;
}

}  // namespace rdmaconf::conformance::ib

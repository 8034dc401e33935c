#include "conformance/ib/qp_state.hpp"

#include <algorithm>
#include <string_view>
#include <tuple>

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
constexpr std::size_t kKeepSent = 256;  // new request packets remembered by PSN

// What makes a packet that one: its opcode, its extension headers (a READ
// Request's RETH names the data it asks for, and carries no payload) and
// its data. A resend repeats them all (IBTA Vol.1 §9.7.5.1.3); only a
// response's AETH is left out, whose MSN and credits may have moved on
// when a response is sent again.
std::size_t content_of(const pib::IbPacket& p) {
  const auto hash = [](Bytes b) { return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(b.data()), b.size())); };
  std::size_t h = hash(p.payload);
  const auto mix = [&h](std::size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<std::size_t>(p.op->code));
  for (std::size_t i = 0; i < p.ext.size(); ++i)
    if (p.ext[i] && (1u << i) != pib::kExtAeth) mix(hash(p.ext[i]->bytes()));
  return h;
}

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
  else if (icrc_bad)
    return facts_;  // a damaged answer tells nothing the responder meant
  else if (p.op->kind == OpKind::read_response || p.op->kind == OpKind::ack || p.op->kind == OpKind::atomic_ack)
    response(dir, p, frame);
  if (icrc_bad) return facts_;
  // The path MTU shows in the first First or Middle packet.
  // (First and Middle carry exactly the path MTU: a size that is no MTU is that packet's fault, not the MTU.)
  if (!pmtu_ && (p.op->seq == Seq::first || p.op->seq == Seq::middle) && valid_mtu(p.payload.size()))
    pmtu_ = static_cast<std::uint32_t>(p.payload.size());
  return facts_;
}

bool ReqFlow::sent_psn(std::uint32_t q) const {
  return std::any_of(sent.begin(), sent.end(), [&](const Sent& x) { return psn_diff(q, x.psn) >= 0 && psn_diff(q, psn_add(x.psn, x.n)) < 0; });
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

  const auto psn = static_cast<std::uint32_t>(p.bth.get(pib::Bth::psn));
  if (icrc_bad) {
    // The responder drops it (IBTA Vol.1 §9.6.1), and its fields may be the
    // link's damage: remembered only to explain the NAK its hole may bring.
    constexpr std::size_t kKeep = 64;
    if (f.bad_icrc.size() == kKeep) f.bad_icrc.erase(f.bad_icrc.begin());
    f.bad_icrc.push_back(psn);
    return;
  }
  if (f.resp && f.resp->answered_psn == psn) f.resp->request_since = true;
  if (f.fatal_nak) {
    facts_.after_fatal = f.fatal_nak;
    f.sent_after_fatal = true;
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
      f.gaps.push_back({f.next_psn, std::vector<bool>(std::min<std::size_t>(static_cast<std::size_t>(d), kMaxGap)), frame, false});
    }
  }
  if (facts_.psn == Facts::PsnClass::next || facts_.psn == Facts::PsnClass::gap) settle_claims(f, psn, n, frame);
  // A packet that does not follow the one before it (after a hole, or after
  // a resend that stopped short) may have lost packets of its message: the
  // message's opcode sequence and length are not known from here.
  if (facts_.psn == Facts::PsnClass::gap || (facts_.psn == Facts::PsnClass::next && psn != f.last_end)) {
    f.msg = ReqFlow::Msg::unknown;
    f.msg_dmalen.reset();
  }
  if (facts_.psn == Facts::PsnClass::resend && psn_diff(psn, f.first_psn) < 0) facts_.resend_fills_gap = true;  // before the first PSN the capture holds
  // The PSN of a request already sent, with other content, is a new packet
  // under a used PSN: no resend repeats it so. This holds where the next PSN
  // is not known too (READ Requests sent before the path MTU showed, whose
  // PSN counts are unknown until then).
  if (facts_.psn == Facts::PsnClass::resend || (facts_.psn == Facts::PsnClass::unknown && !fresh)) {
    const std::size_t content = content_of(p);
    const auto was = std::find_if(f.sent.rbegin(), f.sent.rend(), [&](const ReqFlow::Sent& s) { return s.psn == psn; });
    if (was != f.sent.rend() && was->content != content) {
      facts_.psn_reused = was->frame;
      facts_.psn = Facts::PsnClass::unknown;  // a new packet: the flow goes on from it
    }
  }
  if (facts_.psn == Facts::PsnClass::resend) {
    for (auto& g : f.gaps) {
      const auto at = psn_diff(psn, g.from);
      if (at >= 0 && static_cast<std::size_t>(at) < g.seen.size() && !g.seen[static_cast<std::size_t>(at)]) {
        g.seen[static_cast<std::size_t>(at)] = true;
        facts_.resend_fills_gap = true;
      }
    }
  } else {
    f.next_known = n != 0;
    f.next_psn = psn_add(psn, n);
    f.max_psn = n ? psn_add(psn, n - 1) : psn;
    if (f.sent.size() == kKeepSent) f.sent.pop_front();
    f.sent.push_back({psn, content_of(p), frame, kind, std::max<std::uint32_t>(n, 1)});
  }

  // pending NAKs: the requester must resend from the NAK's PSN
  const bool naks_pending = !f.naks.empty();
  for (auto it = f.naks.begin(); it != f.naks.end();) {
    if (psn == it->psn) {
      ++facts_.naks_followed;
      it = f.naks.erase(it);
    } else {
      ++it->requests_after;
      if (facts_.psn == Facts::PsnClass::resend && !it->resent_from && psn_diff(psn, it->psn) > 0) it->resent_from = psn;
      ++it;
    }
  }
  const bool resend = facts_.psn == Facts::PsnClass::resend;
  // A resend after a NAK may go back further than the NAK's PSN: what counts is that a NAK asked for one.
  facts_.resend_explained = resend && (facts_.naks_followed > 0 || naks_pending || (f.resending && psn == f.last_end));
  f.resending = facts_.resend_explained;
  f.last_end = psn_add(psn, std::max<std::uint32_t>(n, 1));

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
  bool waiting = false;  // a resend of a packet still waiting for its answer
  if (facts_.psn == Facts::PsnClass::resend)
    for (auto& w : f.ack_wanted)
      if (w.psn == psn) {
        w.resent = waiting = true;
        if (f.resp && f.resp->acked_any) w.acked_then = f.resp->max_acked;
      }
  if (p.bth.get(pib::Bth::ackreq) && !waiting) {
    f.ack_wanted.push_back({psn, frame, false, std::nullopt, std::nullopt});
    ++f.ackreq_total;
  }
  responder_view(f, psn, n, frame);
}

void Conversation::settle_claims(ReqFlow& f, std::uint32_t psn, std::uint32_t n, std::uint64_t frame) {
  using S = ReqFlow::Claim::State;
  const bool gap = facts_.psn == Facts::PsnClass::gap;
  for (auto& c : f.claims) {
    const auto at = psn_diff(c.psn, psn);
    if (c.kind == ReqFlow::Claim::Kind::ack_ahead && !c.reached) {
      // The acknowledged PSN in the hole before this request: the responder had it, the capture lost it.
      if (gap && psn_diff(c.psn, facts_.expected_psn) >= 0 && at < 0) {
        facts_.gap_acked = c.frame;
        c.reached = true;
      } else if (at >= 0 && at < static_cast<std::int32_t>(std::max<std::uint32_t>(n, 1))) {
        facts_.acked_before_sent = c.frame;  // the request it acknowledged comes after it in the file
        c.reached = true;
      }
    }
    if (c.state != S::open) continue;
    if (gap) {
      c.state = S::explained;
      c.why = fmt::format("the requester's next request, frame {}, follows PSNs the capture lacks, which it may concern", frame);
    } else {
      c.state = S::proved;
    }
  }
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
    f.gap_psn = psn;
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
  for (auto& w : f->ack_wanted)
    if (w.resent && w.acked_then && !w.answered_below && psn_diff(upto, *w.acked_then) <= 0) w.answered_below = r.last_frame;
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

  std::pair<std::optional<std::uint32_t>, std::uint32_t> msn_prev{r.msn, r.msn_psn};
  if (const auto& a = p.get(pib::kExtAeth)) {
    const auto msn = static_cast<std::uint32_t>(a->get(pib::Aeth::msn));
    facts_.msn_before = r.msn;
    facts_.msn_psn_back = r.msn && psn_diff(psn, r.msn_psn) <= 0;
    msn_prev = {r.msn, r.msn_psn};
    r.msn = msn;
    r.msn_psn = psn;
  }
  const OpKind kind = p.op->kind;
  const Seq seq = p.op->seq;

  if (kind == OpKind::ack) {
    const auto syn = static_cast<std::uint32_t>(p.get(pib::kExtAeth)->get(pib::Aeth::syndrome));
    const AckKind k = ack_kind(syn);
    if (f && f->packets) {
      facts_.max_sent = f->max_psn;
      if (psn_diff(psn, f->max_psn) > 0) {
        facts_.ack_ahead = true;
        add_claim(*f, {ReqFlow::Claim::Kind::ack_ahead, psn, frame, f->max_psn, ReqFlow::Claim::State::open, {}, false});
      }
    }
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
      // An RNR NAK refuses a request of its PSN it has just received; after
      // an earlier answer to that PSN, with no such request since, it is
      // an answer written out of order.
      if (k == AckKind::rnr_nak && r.answered_psn == psn && !r.request_since) facts_.answer_repeated = true;
      acknowledge(r, psn_add(psn, -1), psn);  // a NAK answers its PSN and acknowledges those before
      // an RNR NAK refuses its PSN: the responder expects it again
      if (f && k == AckKind::rnr_nak) f->epsn = psn, f->epsn_known = true;
      const bool seq_err = k == AckKind::nak && (syn & 0x1f) == kNakPsnSequence;
      const auto code = syn & 0x1f;
      if (f && k == AckKind::nak && (code == kNakInvalidRequest || code == kNakRemoteAccess || code == kNakRemoteOperational) &&
          !f->fatal_nak)
        f->fatal_nak = frame;
      if (f && (k == AckKind::rnr_nak || seq_err)) f->naks.push_back({psn, frame, k == AckKind::rnr_nak, 0, std::nullopt});
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
          // Inside the capture's hole: the responder had the PSNs before it,
          // which the capture lacks. Or past the hole, at a later hole: the
          // responder had the whole first hole (the capture's loss) and the
          // PSNs up to the later one, which it reports.
          const bool later_hole = psn_diff(psn, f->gap_psn) > 0 && !f->sent_psn(psn) && f->sent_psn(psn_add(psn, -1));
          facts_.nak_in_hole = psn_diff(psn, f->epsn) > 0 && (psn_diff(psn, f->gap_psn) < 0 || later_hole);
        } else if (f->epsn_known) {
          facts_.nak_no_gap = true;
          facts_.nak_expected = f->epsn;
          ReqFlow::Claim c{ReqFlow::Claim::Kind::nak_unprovoked, psn, frame, f->max_psn, ReqFlow::Claim::State::open, {}, false};
          if (psn_diff(psn, f->first_psn) <= 0) {
            c.state = ReqFlow::Claim::State::explained;
            c.why = "the hole it reports may lie before the capture's first request";
          }
          add_claim(*f, std::move(c));
        }
      }
    }
    r.answered_psn = psn;  // for the next answer to compare with
    r.request_since = false;
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
        std::tie(r.msn, r.msn_psn) = msn_prev;  // an answer to no request: its MSN is no baseline for the next
        // Proved when the capture shows the PSN was another kind of request
        // (a repeated Read or Atomic the capture lost would also be answered again).
        facts_.match_proved = std::any_of(f->sent.begin(), f->sent.end(), [&](const ReqFlow::Sent& s) {
          return s.psn == psn && s.kind != OpKind::read_request && s.kind != OpKind::atomic;
        });
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
  // Off the PSN the flow would take next, a packet of the open message (its
  // Last) or of this one (its First) may be lost: the sequence is not known.
  if (psn != r.next_psn && ((was_open && (seq == Seq::first || seq == Seq::only)) ||
                            (r.msg == RespFlow::Msg::none && (seq == Seq::middle || seq == Seq::last))))
    r.msg = RespFlow::Msg::unknown;
  facts_.order_error = order(r.msg, open, kind, seq);
  const std::size_t content = content_of(p);
  if (seq == Seq::first || seq == Seq::only) {
    r.next_psn = psn;
    r.got_packets = 0;
    r.got_bytes = 0;
    r.msg_sent.clear();
  } else if (was_open) {
    facts_.resp_psn_expected = r.next_psn;
    if (psn_diff(psn, r.next_psn) < 0) {
      const auto was = std::find_if(r.msg_sent.rbegin(), r.msg_sent.rend(), [&](const RespFlow::Sent& s) { return s.psn == psn; });
      if (was != r.msg_sent.rend() && was->content != content) facts_.resp_psn_reused = was->frame;
    }
  }
  constexpr std::size_t kKeepMsgSent = 1024;  // a longer response is checked for reuse in its first packets only
  if (r.msg_sent.size() < kKeepMsgSent) r.msg_sent.push_back({psn, content, frame});
  // A packet that took a PSN already given holds the place of the one it should have carried.
  r.next_psn = facts_.resp_psn_reused ? psn_add(r.next_psn, 1) : psn_add(psn, 1);
  ++r.got_packets;
  r.got_bytes += p.payload.size();
  // Every octet asked for came, and the PSN is no other Read's (whose
  // packet, reordered, could have made up the count): none the capture
  // shows, and none it lacks. A Last past this Read's own PSNs could close
  // a Read the capture lost whose First lies between them, unless the
  // capture's requests cover each of those PSNs.
  const auto past_own = f ? psn_diff(psn, psn_add(r.reading.psn, read_packets(r.reading.length, pmtu_))) : 0;
  bool requests_cover = past_own <= 64;
  for (std::int32_t k = 1; f && requests_cover && k <= past_own; ++k) requests_cover = f->sent_psn(psn_add(psn, -k));
  facts_.resp_psn_proved = facts_.resp_psn_expected && seq == Seq::last && r.reading.frame && r.got_bytes == r.reading.length && f &&
                           requests_cover &&
                           std::none_of(f->sent.begin(), f->sent.end(), [&](const ReqFlow::Sent& s) {
                             return s.kind == OpKind::read_request && s.psn != r.reading.psn && psn_diff(psn, s.psn) >= 0 &&
                                    psn_diff(psn, s.psn) < static_cast<std::int32_t>(s.n);
                           });
  if ((seq == Seq::last || seq == Seq::only) && (was_open || seq == Seq::only) && r.reading.frame) {
    facts_.read_done = Facts::Done{r.reading.length, r.got_bytes, read_packets(r.reading.length, pmtu_), r.got_packets,
                                   r.reading.psn};
  }
  if (seq == Seq::last || seq == Seq::only) {
    r.reading = Request{};
    acknowledge(r, psn, psn);
  }
}

void Conversation::add_claim(ReqFlow& f, ReqFlow::Claim c) {
  constexpr std::size_t kKeepClaims = 256;  // beyond these, the oldest explained one goes
  if (f.claims.size() >= kKeepClaims) {
    auto it = std::find_if(f.claims.begin(), f.claims.end(), [](const ReqFlow::Claim& x) { return x.state == ReqFlow::Claim::State::explained; });
    f.claims.erase(it == f.claims.end() ? f.claims.begin() : it);
  }
  f.claims.push_back(std::move(c));
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
        // Skipped by the requester, or lost on the way (the link's or the
        // capture's) with the resend after the capture ends: the packets
        // cannot tell. A PSN given to two packets is the proof (psn_reused).
        c.gaps.push_back({&f, first_missing, g.frame, State::inconclusive,
                          fmt::format("{} PSN(s) from {} not in the capture and never resent in it", missing, first_missing)});
      }
    }
    c.answered += f.ackreq_total - f.ack_wanted.size();
    if (f.fatal_nak && !f.sent_after_fatal) ++c.fatal_respected;
    for (const auto& w : f.ack_wanted) {
      // An answer to any later PSN would have covered this one, so the
      // responder's later answers all concern earlier PSNs: the capture
      // may end before it answered this one, or have lost the answer.
      const bool spoke_after = r && r->last_frame > w.frame;
      if (w.answered_below)
        c.unanswered.push_back({&f, w.psn, w.frame, State::fail,
                                fmt::format("the requester resent it and the responder answered, frame {}, by repeating an acknowledge of earlier PSNs",
                                            *w.answered_below)});
      else
        c.unanswered.push_back({&f, w.psn, w.frame, State::inconclusive,
                                spoke_after ? "no answer in the capture; the responder's later answers cover only earlier PSNs"
                                            : "the capture ends before the responder answered"});
    }
    for (const auto& n : f.naks) {
      const std::string_view what = n.rnr ? "RNR NAK" : "sequence-error NAK";
      if (n.resent_from)
        c.not_resent.push_back({&f, n.psn, n.frame, State::fail,
                                fmt::format("after the {} the requester went back to PSN {}, past the NAK's", what, *n.resent_from)});
      else if (n.requests_after)
        // New requests after the NAK may have left before it arrived, and
        // the resend may come after the capture ends: no proof either way.
        c.not_resent.push_back({&f, n.psn, n.frame, State::inconclusive,
                                fmt::format("{} new request packet(s) followed the {} in the capture and none resent PSN {}; "
                                            "they may have been in flight, and the resend after the capture's end",
                                            n.requests_after, what, n.psn)});
    }
    for (const auto& cl : f.claims) {
      const bool ack = cl.kind == ReqFlow::Claim::Kind::ack_ahead;
      auto& list = ack ? c.acked_ahead : c.nak_unprovoked;
      const std::string what = ack ? fmt::format("an acknowledge of PSN {} when the latest request was PSN {}", cl.psn, cl.max_sent)
                                   : fmt::format("a sequence-error NAK of PSN {} with every request in sequence", cl.psn);
      if (cl.state == ReqFlow::Claim::State::proved)
        list.push_back({&f, cl.psn, cl.frame, State::fail,
                        fmt::format("{}; the requester's next request went on in sequence, so none was unseen", what), true});
      else
        list.push_back({&f, cl.psn, cl.frame, State::inconclusive,
                        fmt::format("{}; {}", what, cl.state == ReqFlow::Claim::State::open ? "no later request shows whether one went unseen" : cl.why),
                        true});
    }
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

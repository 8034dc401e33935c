// InfiniBand transport across packets, from the per-QP state
// (conformance/ib/qp_state): message sequencing and sizes (IBTA Vol.1
// §9.4, §9.5), PSNs, acknowledgements and NAKs of the reliable service
// (§9.7), and Read/Atomic responses matched to their requests.
#include <fmt/format.h>

#include "conformance/ib/case.hpp"

namespace rdmaconf::conformance {

using namespace protocols::ib;
using ib::Facts;

namespace {

// A check on every packet the per-QP state saw.
template <class F>
BuiltRoceCase::Packet with_facts(F f) {
  return [f](CaseCtx& ctx, const RocePacketEvent& e) {
    if (e.facts && e.facts->ib) f(ctx, e, *e.facts, *e.facts->ib);
  };
}
std::uint32_t psn_of(const IbPacket& p) { return static_cast<std::uint32_t>(p.bth.get(Bth::psn)); }
bool carries_data(const IbPacket& p) { return p.op->payload == PayloadRule::any; }

// Settles every item of one list of the closing state.
BuiltRoceCase::Close settle_all(std::vector<ib::Closing::Item> ib::Closing::*list, std::string expected) {
  return [list, expected](CaseCtx& ctx, const ib::Closing& c) {
    for (const auto& item : c.*list) settle(ctx, item, expected);
  };
}

}  // namespace

void settle(CaseCtx& ctx, const ib::Closing::Item& item, std::string expected) {
  using State = ib::Closing::Item::State;
  if (item.state == State::pass) return ctx.tally.pass();
  Evidence ev;
  ev.frames = {item.frame};
  ev.side = ctx.side(item.from_responder ? 1 - item.flow->dir : item.flow->dir);
  ev.expected = std::move(expected);
  ev.actual = item.detail;
  ev.detail = fmt::format("QP 0x{:06x} PSN {}", item.flow->dqp, item.psn);
  if (item.state == State::fail)
    ctx.tally.doubtful(std::move(ev));  // what the capture lacks could explain it
  else
    ctx.tally.inconclusive(std::move(ev));
}

void add_ib_reliable_cases(IbCases& k) {
  add_roce(k, {"ib.qp.pkey", "IBTA Vol.1", "ch. 10", Level::must,
               "A QP belongs to one partition: every packet a flow sends to one destination QP carries the same P_Key."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (!f.req && !f.resp) return;
             RDMACONF_ROCE_JUDGE(ctx, e, !f.pkey_before, fmt::format("P_Key 0x{:04x}", f.pkey_before.value_or(0)),
                                 fmt::format("0x{:04x}", p.bth.get(Bth::pkey)));
           }));

  add_roce(k, {"ib.qp.transport", "IBTA Vol.1", "ch. 9", Level::must,
               "A QP has one transport service: the requests sent to one destination QP all use the opcodes of one "
               "service (RC, UC, UD, XRC)."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (!f.req || f.resp) return;
             RDMACONF_ROCE_JUDGE(ctx, e, !f.transport_before,
                                 fmt::format("{} opcodes", transport_name(f.transport_before.value_or(Transport::rc))),
                                 std::string(transport_name(p.op->transport)));
           }));

  add_roce(k, {"ib.payload.pmtu", "IBTA Vol.1", "ch. 9", Level::must,
               "No packet carries more payload than the path MTU (given with --roce-mtu, else the size of the "
               "conversation's first First or Middle packet)."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (!f.pmtu || !carries_data(p)) return;
             // Without --roce-mtu the MTU is the first First or Middle packet's size the capture holds.
             RDMACONF_ROCE_CHECK(ctx, e, p.payload.size() <= f.pmtu, f.pmtu_from_option, fmt::format("at most {} octets", f.pmtu),
                                 fmt::format("{} octets", p.payload.size()),
                                 f.pmtu_from_option ? "" : "path MTU inferred from the capture");
           }));

  add_roce(k, {"ib.payload.first_middle", "IBTA Vol.1", "ch. 9", Level::must,
               "First and Middle packets of a message carry exactly one path MTU of payload, and the path MTU is "
               "256, 512, 1024, 2048 or 4096 octets."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (p.op->seq != Seq::first && p.op->seq != Seq::middle) return;
             const auto n = p.payload.size();
             if (f.pmtu)
               RDMACONF_ROCE_JUDGE(ctx, e, n == f.pmtu, fmt::format("{} octets (the path MTU)", f.pmtu), fmt::format("{} octets", n));
             else
               RDMACONF_ROCE_JUDGE(ctx, e, ib::valid_mtu(n), "256, 512, 1024, 2048 or 4096 octets", fmt::format("{} octets", n));
           }));

  add_roce(k, {"ib.payload.last", "IBTA Vol.1", "ch. 9", Level::must,
               "The Last packet of a multi-packet message carries between one octet and one path MTU of payload."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (p.op->seq != Seq::last) return;
             const auto n = p.payload.size();
             RDMACONF_ROCE_JUDGE(ctx, e, n >= 1 && (!f.pmtu || n <= f.pmtu),
                                 f.pmtu ? fmt::format("1 to {} octets", f.pmtu) : "at least 1 octet", fmt::format("{} octets", n));
           }));

  add_roce(k, {"ib.opseq", "IBTA Vol.1", "ch. 9", Level::must,
               "A multi-packet message is First, Middle..., Last of one operation, with no other message "
               "interleaved on the QP; First and Only packets come only between messages. The same holds for the "
               "packets of a Read Response."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (p.op->seq == Seq::none || (!f.req && !f.resp) || f.transport_before) return;
             if (f.req && f.req->transport == Transport::ud) return;
             RDMACONF_ROCE_DOUBT(ctx, e, !f.order_error, f.order_error.value_or(""), std::string(p.op->op_name));
           }));

  add_roce(k, {"ib.psn.sequential", "IBTA Vol.1", "ch. 9", Level::must,
               "A requester gives each new request packet the next PSN (a READ Request takes one PSN per response "
               "packet); a PSN it skips must be a packet lost on the way, which the reliable service resends."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (f.psn == Facts::PsnClass::next) ctx.tally.pass();
             // Different content under a PSN already used is a new packet, neither a resend nor a copy.
             if (f.psn_reused)
               roce_fail(ctx, e, "a new PSN for a new request packet",
                         fmt::format("PSN {} again with another opcode or payload than frame {}", psn_of(p), *f.psn_reused));
           }),
           settle_all(&ib::Closing::gaps, "every skipped PSN sent later"));

  add_roce(k, {"ib.psn.resend_after_nak", "IBTA Vol.1", "ch. 9", Level::must,
               "After a sequence-error NAK or an RNR NAK, the requester resends starting at the NAK's PSN."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent&, const Facts& f, const IbPacket&) {
             for (int i = 0; i < f.naks_followed; ++i) ctx.tally.pass();
           }),
           settle_all(&ib::Closing::not_resent, "the NAK's PSN resent"));

  add_roce(k, {"ib.nak.sequence", "IBTA Vol.1", "ch. 9", Level::must,
               "A reliable responder that receives a request PSN ahead of the one it expects sends exactly one "
               "PSN-sequence-error NAK, then drops out-of-sequence requests silently until the expected PSN arrives."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket&) {
             if (f.nak_count > 1)
               roce_doubt(ctx, e, "one sequence-error NAK per gap", fmt::format("NAK number {} for the same gap", f.nak_count));
             if (f.gap_closed)
               RDMACONF_ROCE_DOUBT(ctx, e, f.gap_closed->naks >= 1, "a sequence-error NAK before the requester resent",
                                   "none", fmt::format("the out-of-sequence request was frame {}", f.gap_closed->frame));
             if (f.gap_lost) {
               Evidence ev = packet_evidence(ctx, e);
               ev.detail += "; the responder acknowledged PSNs missing from the capture";
               ctx.tally.inconclusive(std::move(ev));
             }
           }),
           settle_all(&ib::Closing::open_gaps, "a sequence-error NAK"));

  add_roce(k, {"ib.nak.psn", "IBTA Vol.1", "ch. 9", Level::must,
               "A sequence-error NAK is sent only for a request PSN ahead of the expected one, and carries the "
               "expected PSN (the first one missing)."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (!f.nak_expected) return;
             if (f.nak_no_gap) return;  // settled by the requester's next request (Closing::nak_unprovoked)
             RDMACONF_ROCE_DOUBT(ctx, e, psn_of(p) == *f.nak_expected, fmt::format("PSN {}", *f.nak_expected),
                                 fmt::format("PSN {}", psn_of(p)));
           }),
           settle_all(&ib::Closing::nak_unprovoked, "no NAK: every request arrived in sequence"));

  add_roce(k, {"ib.nak.fatal", "IBTA Vol.1", "ch. 9; ch. 10", Level::must,
               "A NAK for an invalid request, a remote access error or a remote operational error is fatal: the "
               "requester's QP goes to the error state and sends no further request."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket&) {
             if (!f.after_fatal) return;
             // Only a file out of order could explain a new request after the NAK; an old PSN may be a late copy.
             roce_doubt(ctx, e, "no request after the fatal NAK",
                        f.psn == Facts::PsnClass::next || f.psn == Facts::PsnClass::gap ? "a new request" : "a request",
                        fmt::format("the NAK was frame {}", *f.after_fatal));
           }),
           [](CaseCtx& ctx, const ib::Closing& c) {
             for (std::uint64_t i = 0; i < c.fatal_respected; ++i) ctx.tally.pass();
           });

  add_roce(k, {"ib.ack.psn", "IBTA Vol.1", "ch. 9", Level::must,
               "An Acknowledge (ACK or NAK) names a PSN the requester has sent: never one beyond its latest request."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent&, const Facts& f, const IbPacket&) {
             // One beyond is settled by the requester's next request (Closing::acked_ahead).
             if (f.max_sent && !f.ack_ahead) ctx.tally.pass();
           }),
           settle_all(&ib::Closing::acked_ahead, "a PSN the requester had sent"));

  add_roce(k, {"ib.aeth.msn", "IBTA Vol.1", "ch. 9", Level::must,
               "The MSN a responder returns in its AETHs counts completed messages: it never goes backwards."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (!f.msn_before) return;
             const auto msn = static_cast<std::uint32_t>(p.get(kExtAeth)->get(Aeth::msn));
             // An answer to a newer PSN with an older MSN is no older answer written late (the family
             // records that artefact only when the PSN went back too).
             RDMACONF_ROCE_DOUBT(ctx, e, ib::psn_diff(msn, *f.msn_before) >= 0, fmt::format("MSN {} or more", *f.msn_before),
                                 fmt::format("MSN {}", msn));
           }));

  add_roce(k, {"ib.ackreq.answered", "IBTA Vol.1", "ch. 9", Level::must,
               "A reliable responder answers every request packet whose AckReq bit is set, with an ACK, NAK, Read "
               "Response or ATOMIC Acknowledge covering its PSN (coalescing allowed)."},
           {},
           [](CaseCtx& ctx, const ib::Closing& c) {
             for (std::uint64_t i = 0; i < c.answered; ++i) ctx.tally.pass();
             for (const auto& item : c.unanswered) settle(ctx, item, "an acknowledgement covering this PSN");
           });

  add_roce(k, {"ib.response.match", "IBTA Vol.1", "ch. 9", Level::must,
               "A Read Response (First or Only) and an ATOMIC Acknowledge carry the PSN of an outstanding RDMA READ "
               "or Atomic request of their QP."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             if (f.match == Facts::Match::none) return;
             // Where the capture shows the PSN was another kind of request, no lost request explains the answer.
             RDMACONF_ROCE_CHECK(ctx, e, f.match == Facts::Match::matched, f.match_proved,
                                 p.op->kind == OpKind::atomic_ack ? "an outstanding Atomic request with this PSN"
                                                                  : "an outstanding RDMA READ Request with this PSN",
                                 "none");
           }));

  add_roce(k, {"ib.read.response_psn", "IBTA Vol.1", "ch. 9", Level::must,
               "The Read Response to a READ Request at PSN p for L octets takes PSNs p, p+1, ... in order: one "
               "packet per path MTU of L (one for L = 0)."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket& p) {
             // A jump in the response's PSNs is a lost packet unless the response turned out whole (then the
             // jump itself is no artefact, but others, a reordering, may still explain it).
             if (f.resp_psn_reused)
               roce_fail(ctx, e, fmt::format("PSN {}", *f.resp_psn_expected),
                         fmt::format("PSN {} again, with other content than frame {}", psn_of(p), *f.resp_psn_reused));
             else if (f.resp_psn_expected)
               RDMACONF_ROCE_DOUBT(ctx, e, psn_of(p) == *f.resp_psn_expected, fmt::format("PSN {}", *f.resp_psn_expected),
                                   fmt::format("PSN {}", psn_of(p)),
                                   f.resp_psn_proved ? "the response carried every octet asked for" : "");
             if (f.read_done && f.read_done->want_packets)
               RDMACONF_ROCE_DOUBT(ctx, e, f.read_done->got_packets == f.read_done->want_packets,
                                   fmt::format("{} response packet(s) from PSN {}", f.read_done->want_packets, f.read_done->first_psn),
                                   fmt::format("{}", f.read_done->got_packets));
           }));

  add_roce(k, {"ib.read.response_length", "IBTA Vol.1", "ch. 9", Level::must,
               "A Read Response returns exactly the DMA length its READ Request asked for."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket&) {
             if (!f.read_done) return;
             RDMACONF_ROCE_DOUBT(ctx, e, f.read_done->got_len == f.read_done->want_len,
                                 fmt::format("{} octets (request at PSN {})", f.read_done->want_len, f.read_done->first_psn),
                                 fmt::format("{} octets", f.read_done->got_len));
           }));

  add_roce(k, {"ib.reth.dma_length", "IBTA Vol.1", "ch. 9", Level::must,
               "An RDMA WRITE message carries exactly the DMA length its RETH announces."},
           with_facts([](CaseCtx& ctx, const RocePacketEvent& e, const Facts& f, const IbPacket&) {
             if (!f.write_done) return;
             RDMACONF_ROCE_DOUBT(ctx, e, f.write_done->got_len == f.write_done->want_len,
                                 fmt::format("{} octets (RETH of PSN {})", f.write_done->want_len, f.write_done->first_psn),
                                 fmt::format("{} octets", f.write_done->got_len));
           }));
}

}  // namespace rdmaconf::conformance

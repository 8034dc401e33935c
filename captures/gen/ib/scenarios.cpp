// The InfiniBand family's golden captures: RoCEv2 over IPv4 and IPv6, RoCEv1
// and native InfiniBand (LINKTYPE_INFINIBAND), clean and with one fault each.
#include "captures/gen/ib/traffic.hpp"
#include "captures/gen/scenarios.hpp"

namespace rdmaconf::captures::gen {

namespace {

void add_ib_scenarios(std::vector<Scenario>& v) {
  const std::string F = "FAIL", NA = "NOT_APPLICABLE", INC = "INCONCLUSIVE";

  // ---- RoCEv2. Every case of the RoCE catalog, and what a clean capture of
  // each traffic kind exercises; the rest is NOT_APPLICABLE there.
  const std::vector<std::string> roce_cases = {
      "roce.packet.headers", "roce.icrc", "ib.bth.tver", "ib.bth.opcode", "ib.bth.reserved", "ib.eth.reserved",
      "ib.bth.padcnt", "ib.bth.pkey", "ib.payload.rule", "ib.cnp.format", "roce.qp0", "ib.ud.gsi_qkey", "ib.gsi.transport",
      "ib.atomic.alignment", "ib.reth.length", "ib.aeth.syndrome", "ib.qp.pkey", "ib.qp.transport", "ib.payload.pmtu",
      "ib.payload.first_middle", "ib.payload.last", "ib.opseq", "ib.psn.sequential", "ib.psn.resend_after_nak",
      "ib.nak.sequence", "ib.nak.psn", "ib.ack.psn", "ib.aeth.msn", "ib.ackreq.answered", "ib.response.match",
      "ib.read.response_psn", "ib.read.response_length", "ib.reth.dma_length", "roce.deth.srcqp", "ib.bth.se",
      "ib.nak.fatal"};
  // Native InfiniBand link cases: not applicable to RoCEv2, which has no LRH, GRH or VCRC.
  const std::vector<std::string> ib_link_cases = {"ib.lrh.lver", "ib.lrh.reserved", "ib.lrh.pktlen", "ib.vcrc",
                                                  "ib.grh.header", "ib.lrh.vl15"};
  auto roce_expect = [&](std::initializer_list<const char*> not_applicable, Expect changes = {}) {
    Expect e;
    for (const auto& id : roce_cases) e[id] = "PASS";
    for (const auto& id : ib_link_cases) e[id] = NA;
    for (const char* id : not_applicable) e[id] = NA;
    for (auto& [id, verdict] : changes) e[id] = verdict;
    return e;
  };
  auto roce = [&v](std::string name, std::string desc, RoceTraffic t, Expect e) {
    if (!t.fault.empty()) desc += "; fault: " + t.fault;
    v.push_back({std::move(name), std::move(desc), [t](const std::string& p) { return roce_capture(p, t); }, std::move(e)});
  };
  const auto all_na = {"ib.psn.resend_after_nak", "ib.nak.sequence", "ib.nak.psn", "ib.nak.fatal"};
  const Expect all_ok = roce_expect(all_na);
  // A fault on the all-opcodes traffic: its expectations are the clean ones
  // with the verdicts the fault changes.
  // A packet whose ICRC fails feeds no case but roce.icrc: its PSN becomes a
  // hole in the capture, which the responder's ACK shows it had
  // (docs/design.md, "Verdicts on imperfect captures").
  const Expect damaged_send = {{"roce.icrc", F}, {"ib.psn.sequential", INC}, {"ib.nak.sequence", INC}};
  auto roce_fault = [&](std::string name, std::string fault, std::function<void(RoceTraffic&)> change, Expect changes) {
    RoceTraffic t{false, roce_all_opcodes(), std::move(fault), std::move(change)};
    Expect e = all_ok;
    for (auto& [id, verdict] : changes) e[id] = verdict;
    roce(std::move(name), "as roce-v4", std::move(t), std::move(e));
  };
  auto recovery_fault = [&](std::string name, std::string fault, std::function<void(RoceTraffic&)> change, Expect e) {
    roce(std::move(name), "as roce-rc-recovery", RoceTraffic{false, roce_recovery(), std::move(fault), std::move(change)}, std::move(e));
  };
  // The recovery traffic has no multi-packet message, no Atomic, no CNP and no datagram.
  const auto recovery_na = {"ib.payload.pmtu", "ib.payload.first_middle", "ib.payload.last", "ib.reth.dma_length",
                            "ib.atomic.alignment", "ib.cnp.format", "ib.ud.gsi_qkey", "ib.gsi.transport", "roce.deth.srcqp"};

  roce("roce-v4", "RoCEv2 over IPv4, path MTU 1024: every RC operation (WRITE First/Middle/Last, with Immediate, zero-length; SEND "
       "Only/First/Middle/Last, with Immediate, with Invalidate; READ of 1500, 0 and 200 octets; CmpSwap; FetchAdd) with its "
       "ACKs, Read Responses and ATOMIC Acknowledges; UC WRITE and SEND; UD SEND with and without Immediate; a datagram to QP1; a CNP",
       RoceTraffic{false, roce_all_opcodes(), {}, {}}, all_ok);
  roce("roce-v6", "the traffic of roce-v4 over IPv6 (UDP checksum set)", RoceTraffic{true, roce_all_opcodes(), {}, {}}, all_ok);
  roce("roce-rc-recovery", "RC error recovery as a conforming pair does it: PSN 202 lost on the link, one sequence-error NAK, the "
       "out-of-sequence 204 dropped, a resend from 202; an RNR NAK and a resend; a READ Request repeated after a timeout and served twice",
       RoceTraffic{false, roce_recovery(), {}, {}}, roce_expect(recovery_na));
  roce("roce-icrc-recovery", "as roce-rc-recovery, but PSN 202 reaches the capture with a wrong ICRC: the responder drops it, "
       "as it must, and its sequence-error NAK names 202",
       RoceTraffic{false, roce_recovery(), {},
                   [](RoceTraffic& t) {
                     auto lost = send_only(202, 64);
                     lost.corrupt_icrc = true;
                     t.pkts.insert(t.pkts.begin() + 2, lost);
                   }},
       [&] {
         Expect e = roce_expect(recovery_na);
         e["roce.icrc"] = F;
         return e;
       }());
  roce("roce-capture-loss", "the capture misses PSN 301, which the responder acknowledges: what the missing packet touches is "
       "inconclusive, not a violation",
       RoceTraffic{false, {send_only(300, 64), send_only(302, 64, true), ack(302, 3)}, {}, {}},
       roce_expect({"ib.payload.pmtu", "ib.payload.first_middle", "ib.payload.last", "ib.reth.dma_length", "ib.read.response_psn",
                    "ib.read.response_length", "ib.response.match", "ib.atomic.alignment", "ib.cnp.format", "ib.ud.gsi_qkey", "ib.gsi.transport",
                    "ib.reth.length", "ib.psn.resend_after_nak", "ib.nak.psn", "ib.aeth.msn", "roce.deth.srcqp", "ib.nak.fatal"},
                   {{"ib.psn.sequential", INC}, {"ib.nak.sequence", INC}}));

  // packet by packet
  roce_fault("roce-fault-icrc", "the ICRC of the fifth packet is altered", [](RoceTraffic& t) { t.pkts[4].corrupt_icrc = true; },
             damaged_send);
  roce_fault("roce-fault-tver", "the second packet has transport version 1",
             [](RoceTraffic& t) { t.pkts[1].mangle = [](Buf& b) { b[1] |= std::byte{0x01}; }; }, {{"ib.bth.tver", F}});
  roce_fault("roce-fault-opcode", "the fourth packet (an ACK) has the undefined opcode 0x1F",
             [](RoceTraffic& t) { t.pkts[3].mangle = [](Buf& b) { b[0] = std::byte{0x1f}; }; }, {{"ib.bth.opcode", F}});
  roce_fault("roce-fault-reserved", "the third packet sets a reserved BTH bit",
             [](RoceTraffic& t) { t.pkts[2].mangle = [](Buf& b) { b[8] |= std::byte{0x10}; }; }, {{"ib.bth.reserved", F}});
  roce_fault("roce-fault-truncated-aeth", "the first ATOMIC Acknowledge carries only half of its AtomicAckETH",
             [](RoceTraffic& t) { t.pkts[11].mangle = [](Buf& b) { b.erase(b.begin() + 16, b.begin() + 20); }; },
             {{"roce.packet.headers", F}});
  roce_fault("roce-fault-padcnt", "the fifth packet (33-octet SEND Only, pad count 3) carries only two pad octets",
             [](RoceTraffic& t) { t.pkts[4].mangle = [](Buf& b) { b.erase(b.end() - 5); }; }, {{"ib.bth.padcnt", F}});
  roce_fault("roce-fault-eth-reserved", "the UD SEND's DETH sets its reserved octet",
             [](RoceTraffic& t) { t.pkts[31].exts[0].second.set(ib::Deth::rsvd, 0x40); }, {{"ib.eth.reserved", F}});
  roce_fault("roce-fault-pkey", "the CNP carries P_Key 0x8000, an invalid partition",
             [](RoceTraffic& t) { t.pkts[34].pkey = 0x8000; }, {{"ib.bth.pkey", F}});
  roce_fault("roce-fault-payload-rule", "the 200-octet READ Request carries 4 octets of payload",
             [](RoceTraffic& t) { t.pkts[26].payload = Buf(4); }, {{"ib.payload.rule", F}});
  roce_fault("roce-fault-cnp", "the CNP sets a bit in its reserved octets",
             [](RoceTraffic& t) { t.pkts[34].payload[3] = std::byte{0x01}; }, {{"ib.cnp.format", F}});
  roce_fault("roce-fault-qp0", "the UD SEND with Immediate is addressed to QP 0",
             [](RoceTraffic& t) { t.pkts[32].qp = 0; }, {{"roce.qp0", F}});
  roce_fault("roce-fault-gsi-qkey", "the datagram to QP1 carries Q_Key 0x11111111",
             [](RoceTraffic& t) { t.pkts[33].exts[0].second.set(ib::Deth::qkey, 0x11111111); }, {{"ib.ud.gsi_qkey", F}});
  roce_fault("roce-fault-resp-psn-reused", "the Read Response Last of the 1500-octet READ carries PSN 105, its First's",
             [](RoceTraffic& t) { t.pkts[9].psn = 105; }, {{"ib.read.response_psn", F}});
  roce_fault("roce-fault-gsi-transport", "the capture ends with an RC SEND Only from A addressed to QP1 (A sends no datagram to QP1)",
             [](RoceTraffic& t) { t.pkts.push_back(RocePkt{true, 0x04, 1, 600, pattern(8, 32), {}, false, 0xffff, {}, false, 0, {}, false}); },
             {{"ib.gsi.transport", F}});
  roce_fault("roce-fault-atomic-alignment", "the CmpSwap names address 0x44",
             [](RoceTraffic& t) { t.pkts[10].exts[0].second.set(ib::AtomicEth::va, 0x44); }, {{"ib.atomic.alignment", F}});
  roce_fault("roce-fault-reth-length", "the capture ends with a UC RDMA WRITE First announcing 2^31+1 octets",
             [](RoceTraffic& t) {
               t.pkts.push_back(RocePkt{true, 0x26, 0x31, 503, pattern(1024, 30), {{ib::kExtReth, reth(0x6000, 0x55, 0x80000001ull)}}, false, 0xffff, {}, false, 0, {}, false});
             },
             {{"ib.reth.length", F}});
  roce_fault("roce-fault-aeth-syndrome", "the ACK of PSN 109 carries syndrome 0x40 (a reserved kind)",
             [](RoceTraffic& t) { t.pkts[15].exts[0].second.set(ib::Aeth::syndrome, ib::syndrome(ib::AckKind::reserved, 0)); }, {{"ib.aeth.syndrome", F}});

  // across packets
  roce_fault("roce-fault-qp-pkey", "the SEND Only of PSN 103 carries P_Key 0x8001, another partition than the QP's",
             [](RoceTraffic& t) { t.pkts[4].pkey = 0x8001; }, {{"ib.qp.pkey", F}});
  roce_fault("roce-fault-qp-transport", "the capture ends with a UC SEND Only addressed to the RC QP",
             [](RoceTraffic& t) { t.pkts.push_back(RocePkt{true, 0x24, kQb, 117, pattern(8, 31), {}, false, 0xffff, {}, false, 0, {}, false}); },
             {{"ib.qp.transport", F}});
  roce_fault("roce-fault-payload-pmtu", "the UD SEND carries 1100 octets on a path MTU of 1024",
             [](RoceTraffic& t) { t.pkts[31].payload = pattern(1100, 9); }, {{"ib.payload.pmtu", F}});
  roce_fault("roce-fault-first-middle", "the WRITE Middle carries 1000 octets (the Last 24 more, so the length still adds up)",
             [](RoceTraffic& t) {
               t.pkts[1].payload.resize(1000);
               t.pkts[2].payload = pattern(476, 3);
             },
             {{"ib.payload.first_middle", F}});
  roce_fault("roce-fault-last", "the SEND Last with Immediate carries no payload",
             [](RoceTraffic& t) { t.pkts[18].payload.clear(); }, {{"ib.payload.last", F}});
  roce_fault("roce-fault-opseq", "the SEND First is followed by an RDMA WRITE Middle",
             [](RoceTraffic& t) { t.pkts[17].opcode = 0x07; }, {{"ib.opseq", F}});
  // A skipped PSN reads the same as one lost on the link whose resend comes
  // after the capture ends: INCONCLUSIVE (docs/design.md, "Verdicts on
  // imperfect captures"). A PSN given to two different packets is the proof.
  roce_fault("roce-fault-psn-skip", "the requester skips PSN 117 for good: the responder NAKs it once and no RC request follows",
             [](RoceTraffic& t) { t.pkts.insert(t.pkts.begin() + 28, {send_only(118, 16), ack(117, 12, kNakSeq)}); },
             {{"ib.psn.sequential", INC}, {"ib.nak.psn", "PASS"}});
  roce_fault("roce-fault-psn-reuse", "the requester gives PSN 117 to two different SEND Only packets, the responder ACKs both",
             [](RoceTraffic& t) { t.pkts.insert(t.pkts.begin() + 28, {send_only(117, 16), ack(117, 12), send_only(117, 40, true), ack(117, 13)}); },
             {{"ib.psn.sequential", F}});
  // (An ACK of PSN 106 followed by requests 105 and 106 would read the same
  // as those requests written to the file after their answer.)
  roce_fault("roce-fault-ack-psn", "the responder acknowledges PSN 160 when the requester has sent up to 104 and never goes past 116",
             [](RoceTraffic& t) { t.pkts[6].psn = 160; }, {{"ib.ack.psn", F}});
  roce_fault("roce-fault-msn", "the ACK of PSN 109 carries MSN 2, below the MSN 6 before it",
             [](RoceTraffic& t) { t.pkts[15].exts[0].second.set(ib::Aeth::msn, 2); }, {{"ib.aeth.msn", F}});
  // The answer may come after the capture's end, or be one the capture lost.
  roce_fault("roce-fault-unanswered", "a SEND Only with AckReq at PSN 117 is followed by an ACK of 116 only",
             [](RoceTraffic& t) { t.pkts.insert(t.pkts.begin() + 28, {send_only(117, 16, true), ack(116, 12)}); },
             {{"ib.ackreq.answered", INC}});
  // The requester's resend shows no answer reached it, and the answer to the resend names only 116.
  roce_fault("roce-fault-unanswered-resend", "a SEND Only with AckReq at PSN 117 is answered by an ACK of 116; the requester resends it "
             "on its timer and the responder again ACKs 116",
             [](RoceTraffic& t) { t.pkts.insert(t.pkts.begin() + 28, {send_only(117, 16, true), ack(116, 12), send_only(117, 16, true), ack(116, 12)}); },
             {{"ib.ackreq.answered", F}});
  // (PSN 103 is a SEND the capture holds, between requests with no PSN
  // missing: no lost request can explain the answer. One beyond the latest
  // request could be the answer to a request the capture lost.)
  roce_fault("roce-fault-response-match", "the second ATOMIC Acknowledge carries PSN 103, which was a SEND Only",
             [](RoceTraffic& t) { t.pkts[13].psn = 103; }, {{"ib.response.match", F}});
  roce_fault("roce-fault-read-response-psn", "the READ Response Last carries PSN 107 instead of 106",
             [](RoceTraffic& t) { t.pkts[9].psn = 107; }, {{"ib.read.response_psn", F}});
  roce_fault("roce-fault-read-response-length", "the READ Response Last is 6 octets short of the 1500 requested",
             [](RoceTraffic& t) { t.pkts[9].payload.resize(470); }, {{"ib.read.response_length", F}});
  roce_fault("roce-fault-write-length", "the RDMA WRITE carries 4 octets less than its RETH's 2500",
             [](RoceTraffic& t) { t.pkts[2].payload.resize(448); }, {{"ib.reth.dma_length", F}});
  // Without the NAK nothing shows that 202 missed the responder rather than
  // the capture (then the responder had every PSN in order and owed no NAK).
  recovery_fault("roce-fault-no-nak", "the responder sends no sequence-error NAK; the requester resends from 202 after its timeout",
                 [](RoceTraffic& t) { t.pkts.erase(t.pkts.begin() + 3); }, roce_expect(recovery_na, {{"ib.nak.sequence", INC}, {"ib.nak.psn", NA}}));
  recovery_fault("roce-fault-double-nak", "the responder NAKs the same gap twice (after 203 and after 204)",
                 [](RoceTraffic& t) { t.pkts.insert(t.pkts.begin() + 5, ack(202, 2, kNakSeq)); }, roce_expect(recovery_na, {{"ib.nak.sequence", F}}));
  recovery_fault("roce-fault-nak-psn", "the sequence-error NAK names PSN 203 instead of the missing 202",
                 [](RoceTraffic& t) { t.pkts[3].psn = 203; }, roce_expect(recovery_na, {{"ib.nak.psn", F}}));
  recovery_fault("roce-fault-no-resend", "after the RNR NAK of 205 the requester goes on with 206 and never resends 205; the "
                 "responder NAKs 206 as out of sequence and the capture ends",
                 [](RoceTraffic& t) {
                   t.pkts.resize(11);
                   t.pkts.push_back(send_only(206, 64));
                   t.pkts.push_back(ack(205, 5, kNakSeq));
                 },
                 // 206 may have left before the RNR NAK arrived, and the resend come after the capture ends.
                 roce_expect({"ib.payload.pmtu", "ib.payload.first_middle", "ib.payload.last", "ib.reth.dma_length", "ib.read.response_psn",
                              "ib.read.response_length", "ib.response.match", "ib.atomic.alignment", "ib.cnp.format", "ib.ud.gsi_qkey", "ib.gsi.transport",
                              "ib.reth.length", "roce.deth.srcqp", "ib.nak.fatal"},
                             {{"ib.psn.resend_after_nak", INC}}));
  recovery_fault("roce-fault-resend-psn", "after the sequence-error NAK of 202 the requester resends from 203, never 202; the capture ends",
                 [](RoceTraffic& t) {
                   t.pkts.erase(t.pkts.begin() + 5);
                   t.pkts.resize(7);
                 },
                 roce_expect({"ib.payload.pmtu", "ib.payload.first_middle", "ib.payload.last", "ib.reth.dma_length", "ib.read.response_psn",
                              "ib.read.response_length", "ib.response.match", "ib.atomic.alignment", "ib.cnp.format", "ib.ud.gsi_qkey", "ib.gsi.transport",
                              "ib.reth.length", "roce.deth.srcqp", "ib.nak.fatal"},
                             {{"ib.psn.resend_after_nak", F}, {"ib.psn.sequential", INC}, {"ib.ackreq.answered", INC}, {"ib.aeth.msn", NA},
                              {"ib.nak.sequence", NA}}));
  recovery_fault("roce-fault-after-fatal", "the requester sends a SEND after the remote access error NAK",
                 [](RoceTraffic& t) { t.pkts.push_back(send_only(209, 8)); }, roce_expect(recovery_na, {{"ib.nak.fatal", F}}));
  roce_fault("roce-fault-se", "the SEND First carries the Solicited Event bit",
             [](RoceTraffic& t) { t.pkts[16].mangle = [](Buf& b) { b[1] |= std::byte{0x80}; }; }, {{"ib.bth.se", F}});
  roce_fault("roce-fault-deth-srcqp", "the UD SEND names source QP 0",
             [](RoceTraffic& t) { t.pkts[31].exts[0].second.set(ib::Deth::srcqp, 0); }, {{"roce.deth.srcqp", F}});

  // ---- Native InfiniBand (LINKTYPE_INFINIBAND): the traffic of roce-v4 behind
  // an LRH (and a GRH), on virtual lanes 0-3, plus a subnet management packet
  // (a UD SEND from QP0 to QP0 on VL15, 256 octets as a MAD is). QP0 is
  // legitimate here, so the RoCE-only QP0 cases do not apply.
  auto ib_traffic = [](Link link) {
    RoceTraffic t{false, roce_all_opcodes(), {}, {}, link};
    for (std::size_t i = 0; i < t.pkts.size(); ++i) t.pkts[i].vl = static_cast<std::uint8_t>(i % 4);
    RocePkt smp{true, 0x64, 0, 0, pattern(256, 40), {{ib::kExtDeth, deth(0, 0)}}, false, 0xffff, {}, false, 0, {}, false};
    smp.vl = 15;
    t.pkts.push_back(smp);
    return t;
  };
  auto ib_expect = [&](Link link, Expect changes = {}) {
    Expect e = roce_expect(all_na, {{"roce.qp0", NA}, {"roce.deth.srcqp", NA}});
    for (const auto& id : ib_link_cases) e[id] = "PASS";
    if (link != Link::ib_global) e["ib.grh.header"] = NA;
    for (auto& [id, verdict] : changes) e[id] = verdict;
    return e;
  };
  roce("ib-native-local", "native InfiniBand, LRH only (LIDs 0x0001 and 0x0002): the traffic of roce-v4 on virtual lanes "
       "0-3, and a subnet management packet to QP0 on VL15", ib_traffic(Link::ib_local), ib_expect(Link::ib_local));
  roce("ib-native-global", "as ib-native-local with a GRH on every packet, whose traffic class, flow label and hop limit "
       "vary from packet to packet (the ICRC does not cover them)", ib_traffic(Link::ib_global), ib_expect(Link::ib_global));
  auto ib_fault = [&](std::string name, Link link, std::string fault, std::function<void(RoceTraffic&)> change, Expect changes) {
    RoceTraffic t = ib_traffic(link);
    t.fault = std::move(fault);
    t.edit = std::move(change);
    roce(std::move(name), link == Link::ib_global ? "as ib-native-global" : "as ib-native-local", std::move(t),
         ib_expect(link, std::move(changes)));
  };
  ib_fault("ib-native-fault-vcrc", Link::ib_local, "the VCRC of the fifth packet is altered",
           [](RoceTraffic& t) { t.pkts[4].corrupt_vcrc = true; }, {{"ib.vcrc", F}});
  ib_fault("ib-native-fault-icrc", Link::ib_local, "the ICRC of the fifth packet is altered (its VCRC covers the altered ICRC)",
           [](RoceTraffic& t) { t.pkts[4].corrupt_icrc = true; }, damaged_send);
  // (The sixth packet is the SEND the coalesced ACK of PSN 104 covers: without it, that ACK runs ahead of the capture.)
  ib_fault("ib-native-fault-icrc-global", Link::ib_global, "the ICRC of the sixth packet is altered",
           [](RoceTraffic& t) { t.pkts[5].corrupt_icrc = true; },
           [&] {
             Expect e = damaged_send;
             e["ib.ack.psn"] = INC;
             return e;
           }());
  ib_fault("ib-native-fault-lver", Link::ib_local, "the second packet has link version 1",
           [](RoceTraffic& t) { t.pkts[1].link_edit = [](Buf& f) { f[0] |= std::byte{0x01}; }; }, {{"ib.lrh.lver", F}});
  ib_fault("ib-native-fault-lrh-reserved", Link::ib_local, "the third packet sets the LRH reserved bits after the service level",
           [](RoceTraffic& t) { t.pkts[2].link_edit = [](Buf& f) { f[1] |= std::byte{0x04}; }; }, {{"ib.lrh.reserved", F}});
  ib_fault("ib-native-fault-pktlen", Link::ib_local, "the fourth packet's LRH packet length counts one word more than it has",
           [](RoceTraffic& t) {
             t.pkts[3].link_edit = [](Buf& f) { put_be16(f, 4, static_cast<std::uint16_t>(be16(B(f), 4) + 1)); };
           },
           {{"ib.lrh.pktlen", F}});
  ib_fault("ib-native-fault-vl15", Link::ib_local, "the RDMA WRITE First to QP 0x12 travels on VL15",
           [](RoceTraffic& t) { t.pkts[0].vl = 15; }, {{"ib.lrh.vl15", F}});
  ib_fault("ib-native-fault-smp-vl", Link::ib_local, "the subnet management packet to QP0 travels on VL0",
           [](RoceTraffic& t) { t.pkts.back().vl = 0; }, {{"ib.lrh.vl15", F}});
  // RoCEv1: the roce-v4 traffic (no SMP: RoCE has no subnet manager), GRH over Ethernet.
  {
    RoceTraffic t{false, roce_all_opcodes(), {}, {}, Link::roce_v1};
    Expect e = roce_expect(all_na);
    e["ib.grh.header"] = "PASS";
    roce("roce-v1", "RoCEv1 (Ethernet type 0x8915, a GRH whose traffic class, flow label and hop limit vary): the "
         "traffic of roce-v4", t, e);
    RoceTraffic icrc = t;
    icrc.fault = "the ICRC of the fifth packet is altered";
    icrc.pkts[4].corrupt_icrc = true;
    Expect ei = e;
    for (const auto& [id, want] : damaged_send) ei[id] = want;
    roce("roce-v1-fault-icrc", "as roce-v1", icrc, ei);
    RoceTraffic grh = t;
    grh.fault = "the first packet's GRH payload length counts 4 octets fewer than follow it";
    grh.pkts[0].link_edit = [](Buf& f) { put_be16(f, 14 + 4, static_cast<std::uint16_t>(be16(B(f), 14 + 4) - 4)); };
    Expect eg = e;
    eg["ib.grh.header"] = F;
    roce("roce-v1-fault-grh", "as roce-v1", grh, eg);
  }
  ib_fault("ib-native-fault-grh", Link::ib_global, "the sixth packet's GRH payload length counts 4 octets more than follow it",
           [](RoceTraffic& t) {
             t.pkts[5].link_edit = [](Buf& f) { put_be16(f, 12, static_cast<std::uint16_t>(be16(B(f), 12) + 4)); };
           },
           {{"ib.grh.header", F}});
}

}  // namespace

const RegisterScenarios registered_ib{"ib", &add_ib_scenarios};

}  // namespace rdmaconf::captures::gen

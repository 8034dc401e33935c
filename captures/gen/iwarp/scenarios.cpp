// The iWARP family's golden captures: MPA revisions 1 and 2, CRC and
// markers in each combination, mid-stream starts, and one fault per rule.
#include "captures/gen/iwarp/traffic.hpp"
#include "captures/gen/scenarios.hpp"

namespace rdmaconf::captures::gen {

namespace {

// What a conversation built from `c` without a fault must get, case by case,
// from how it is built: which features it uses decides what is applicable.
Expect iwarp_expect(const IwarpConfig& c) {
  const bool crc = c.req_crc || c.rep_crc, enh = c.revision == 2 && c.enhanced, markers = c.req_markers || c.rep_markers;
  const bool mid = c.midstream_skip > 0;
  auto v = [](bool applies) { return std::string(applies ? "PASS" : "NOT_APPLICABLE"); };
  Expect e;
  for (const char* id : {"iwarp.mpa.req.key", "iwarp.mpa.rep.key", "iwarp.mpa.rr.reserved", "iwarp.mpa.rr.revision",
                         "iwarp.mpa.rr.pd_length", "iwarp.mpa.rr.reject_flag", "iwarp.mpa.v2.reply_enhanced",
                         "iwarp.mpa.fpdu.before_exchange", "iwarp.mpa.responder.first_fpdu", "iwarp.mpa.fpdu.ulpdu_max",
                         "iwarp.mpa.fpdu.alignment"})
    e[id] = v(!mid);  // (the MSS comes from the SYNs, which a mid-stream capture lacks)
  e["iwarp.mpa.reject.close"] = "NOT_APPLICABLE";
  e["iwarp.mpa.v2.enhanced"] = v(enh && !mid);
  e["iwarp.mpa.v2.ird_ord"] = v(enh && !mid);
  e["iwarp.mpa.v2.p2p_echo"] = v(enh && !mid && !c.reject);  // (judged on an accepting Reply)
  e["iwarp.mpa.v2.rtr_flags"] = v(enh && !c.p2p && !mid);  // (peer-to-peer frames set A: nothing to judge)
  e["iwarp.mpa.v2.ird_ord_auto"] = "NOT_APPLICABLE";         // no frame names 0x3FFF unless a scenario says so
  for (const char* id : {"iwarp.mpa.v2.rtr_type", "iwarp.mpa.v2.rtr_first"}) e[id] = v(c.p2p && enh);
  e["iwarp.mpa.fpdu.crc"] = v(crc);
  e["iwarp.mpa.crc.used"] = v(crc);
  e["iwarp.mpa.fpdu.pad"] = "PASS";
  e["iwarp.mpa.fpdu.ulpdu_limit"] = "PASS";
  e["iwarp.mpa.fpdu.whole"] = "PASS";  // every conversation closes with FINs after whole FPDUs
  e["iwarp.mpa.marker.fpduptr"] = v(markers);
  e["iwarp.mpa.marker.reserved"] = v(markers);
  // Judged in a direction without markers, from its first FPDU after the exchange, once 1028 octets came.
  // (Not where no FPDUs follow an exchange: a rejection, no exchange, a broken key.)
  const bool exchanged = !mid && !c.reject && !c.no_mpa_exchange && c.reply_key.empty() && c.request_key.empty();
  e["iwarp.mpa.marker.unrequested"] = v(exchanged && !(c.req_markers && c.rep_markers));
  for (const char* id : {"iwarp.ddp.segment.header", "iwarp.ddp.version", "iwarp.ddp.reserved", "iwarp.ddp.qn", "iwarp.ddp.msn",
                         "iwarp.ddp.mo", "iwarp.ddp.segment_order", "iwarp.ddp.segment_size", "iwarp.ddp.rsvdulp", "iwarp.ddp.last", "iwarp.ddp.tagged.stag",
                         "iwarp.ddp.tagged.to", "iwarp.rdmap.answered", "iwarp.rdmap.terminate.flags", "iwarp.rdmap.terminate.graceful",
                         "iwarp.rdmap.version", "iwarp.rdmap.reserved", "iwarp.rdmap.opcode", "iwarp.rdmap.buffer_model",
                         "iwarp.rdmap.queue", "iwarp.rdmap.read_request.format", "iwarp.rdmap.read_response.match",
                         "iwarp.rdmap.inv_stag", "iwarp.rdmap.terminate.code", "iwarp.rdmap.terminate.headers",
                         "iwarp.rdmap.terminate.last", "iwarp.rdmap.immediate.format", "iwarp.rdmap.atomic.format",
                         "iwarp.rdmap.atomic.alignment", "iwarp.rdmap.atomic.response_match"})
    e[id] = "PASS";
  e["iwarp.rdmap.ird_ord"] = v(enh && !mid);
  return e;
}
std::function<nlohmann::json(const std::string&)> iw(IwarpConfig c) {
  return [c](const std::string& p) {
    auto j = config_json(c);
    const IwarpBuilt built = iwarp_conversation(p, c);
    if (!built.marker_landings.empty()) j["marker_landings"] = built.marker_landings;
    j["fpdus_split_between_segments"] = built.split_fpdus;
    return j;
  };
}

void add_iwarp_scenarios(std::vector<Scenario>& v) {
  // One iWARP scenario: its expectations are those of its configuration, with
  // the verdicts its fault changes stated next to it.
  auto iwarp = [&v](std::string name, std::string desc, IwarpConfig c, Expect changes = {}) {
    Expect e = iwarp_expect(c);
    for (auto& [id, verdict] : changes) e[id] = verdict;
    if (!c.fault.empty()) desc += "; fault: " + c.fault;
    v.push_back({std::move(name), std::move(desc), iw(c), e});
  };
  auto faulty = [](std::string fault, std::function<void(IwarpConfig&)> set = {}) {
    IwarpConfig c;
    c.fault = std::move(fault);
    if (set) set(c);
    return c;
  };
  auto edit = [&faulty](std::string fault, std::function<void(Traffic&)> f) {
    return faulty(std::move(fault), [f](IwarpConfig& c) { c.edit = f; });
  };
  const std::string F = "FAIL", NA = "NOT_APPLICABLE", INC = "INCONCLUSIVE";

  // ---- positive traffic
  iwarp("iwarp-rev2-crc", "MPA revision 2 (RFC 6581 IRD/ORD), CRC asked by the initiator, every RDMAP opcode, whole FPDUs packed into segments of up to 1448 octets", {});
  IwarpConfig rev1;
  rev1.revision = 1;
  rev1.enhanced = false;
  rev1.req_crc = false;
  rev1.mss = 100;
  iwarp("iwarp-rev1-nocrc-split", "MPA revision 1 without CRC, 100-octet segments: FPDUs larger than that split across segments", rev1);
  IwarpConfig rep_crc6;
  rep_crc6.req_crc = false;
  rep_crc6.rep_crc = true;
  rep_crc6.ipv6 = true;
  rep_crc6.mss = 333;
  iwarp("iwarp-ipv6-reply-crc", "IPv6; only the responder asks for CRC, so both directions use it; 333-octet segments", rep_crc6);
  IwarpConfig mk;
  mk.req_markers = mk.rep_markers = true;
  mk.mss = 700;
  // A 205-octet first Send shifts the initiator's FPDUs so that its markers land in every part of an FPDU.
  mk.edit = [](Traffic& t) { t.init[0] = ddp_untagged(iwarp::kOpSend, 0, 1, 0, true, B(pattern(205, 3))); };
  iwarp("iwarp-markers-crc", "markers in both directions with CRC; markers fall at FPDU starts, in DDP headers, in payloads and right before CRC fields (see marker_landings); segments of up to 700 octets", mk);
  IwarpConfig mk1;
  mk1.revision = 1;
  mk1.enhanced = false;
  mk1.req_crc = false;
  mk1.rep_markers = true;
  mk1.mss = 97;
  iwarp("iwarp-markers-initiator-nocrc", "MPA revision 1, no CRC, markers from the initiator only (the responder asked), 97-octet segments, so most FPDUs and their markers are split across segments", mk1);
  IwarpConfig p2p;
  p2p.p2p = true;
  iwarp("iwarp-p2p-send-rtr", "RFC 6581 peer-to-peer mode: the initiator offers Send and Write RTR, the responder selects Send, the initiator's first FPDU is a zero-length Send", p2p);
  IwarpConfig mid;
  mid.midstream_skip = 50;
  iwarp("iwarp-midstream", "the capture starts after the MPA exchange and 50 octets into the initiator's first FPDU: framing and CRC use are inferred", mid);
  // Faults in the first FPDUs a mid-stream capture holds whole: found, not
  // skipped while framing is looked for. With CRCs the right CRC vouches for
  // the first FPDU, whatever its header says; without, the chain starts at
  // one that looks right and a bad header after it is reported.
  {
    IwarpConfig m = mid;
    m.fault = "the first whole FPDU in the capture (the initiator's second Send) carries DDP version 2";
    m.edit = [](Traffic& t) { set_ddp(t.init[1], iwarp::DdpUntagged::dv, 2); };
    iwarp("iwarp-midstream-fault-ddp-version", "as iwarp-midstream", m, {{"iwarp.ddp.version", F}});
    IwarpConfig n = mid;
    n.revision = 1;
    n.enhanced = false;
    n.req_crc = false;
    n.fault = "the second whole FPDU in the capture (the initiator's third Send) carries RDMAP version 2";
    n.edit = [](Traffic& t) { set_ddp(t.init[2], iwarp::DdpUntagged::rv, 2); };
    iwarp("iwarp-midstream-nocrc-fault-rdmap-version", "as iwarp-midstream, MPA revision 1 without CRC", n, {{"iwarp.rdmap.version", F}});
    IwarpConfig c = mid;
    c.fault = "every CRC the initiator sends is wrong";
    c.corrupt_crc_at = -2;
    // The initiator's FPDUs then feed only the CRC cases: its Read and Atomic Requests are unknown, so the
    // answers to them are INCONCLUSIVE, and the cases only its messages exercise have nothing to judge. (The
    // responder's queue 3 carries two Atomic Responses: a mid-stream capture does not judge a queue's first
    // message, but judges the second; the responder's Read Responses give iwarp.ddp.rsvdulp tagged segments.)
    Expect e = {{"iwarp.mpa.fpdu.crc", F}, {"iwarp.rdmap.read_response.match", INC}, {"iwarp.rdmap.atomic.response_match", INC}};
    for (const char* id : {"iwarp.mpa.fpdu.pad", "iwarp.rdmap.read_request.format", "iwarp.rdmap.answered",
                           "iwarp.rdmap.immediate.format", "iwarp.rdmap.atomic.alignment"})
      e[id] = NA;
    iwarp("iwarp-midstream-fault-crc-all", "as iwarp-midstream", c, e);
  }
  {
    IwarpConfig c;
    c.fault = "after the TCP handshake both sides send their FPDUs with no MPA Request or Reply";
    c.no_mpa_exchange = true;
    // The FPDUs are judged from the first; the cases of the exchange see the FPDUs' octets where the keys belong.
    // With no MPA frame there is nothing for the frame and exchange-order cases, nor negotiated IRD/ORD.
    Expect e = {{"iwarp.mpa.req.key", F}, {"iwarp.mpa.rep.key", F}};
    for (const char* id : {"iwarp.mpa.rr.reserved", "iwarp.mpa.rr.revision", "iwarp.mpa.rr.pd_length", "iwarp.mpa.rr.reject_flag",
                           "iwarp.mpa.v2.enhanced", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.v2.reply_enhanced", "iwarp.mpa.fpdu.before_exchange",
                           "iwarp.mpa.responder.first_fpdu", "iwarp.rdmap.ird_ord", "iwarp.mpa.v2.p2p_echo", "iwarp.mpa.v2.rtr_flags"})
      e[id] = NA;
    iwarp("iwarp-fault-no-mpa-exchange", "as iwarp-rev2-crc", c, e);
  }
  {
    // Another stack's FPDUs from the first octet, the first with a DDP header this catalog cannot read as one: its CRC
    // proves the framing, and the FPDUs are judged.
    IwarpConfig c;
    c.fault = "after the TCP handshake both sides send their FPDUs with no MPA Request or Reply, and the initiator's first Send "
              "carries DDP version 2";
    c.no_mpa_exchange = true;
    c.edit = [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::dv, 2); };
    Expect e = {{"iwarp.mpa.req.key", F}, {"iwarp.mpa.rep.key", F}, {"iwarp.ddp.version", F}};
    for (const char* id : {"iwarp.mpa.rr.reserved", "iwarp.mpa.rr.revision", "iwarp.mpa.rr.pd_length", "iwarp.mpa.rr.reject_flag",
                           "iwarp.mpa.v2.enhanced", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.v2.reply_enhanced", "iwarp.mpa.fpdu.before_exchange",
                           "iwarp.mpa.responder.first_fpdu", "iwarp.rdmap.ird_ord", "iwarp.mpa.v2.p2p_echo", "iwarp.mpa.v2.rtr_flags"})
      e[id] = NA;
    iwarp("iwarp-fault-no-mpa-exchange-ddp-version", "as iwarp-rev2-crc", c, e);
  }
  {
    // RFC 5044 §4.3: markers sit every 512 octets from where a direction's
    // FPDUs begin. With no MPA frames, that is the stream's first octet: the
    // first marker comes before the first FPDU, and the markers place the
    // FPDUs from there.
    IwarpConfig c;
    c.fault = "after the TCP handshake both sides send their FPDUs, with markers from the first octet of each stream, "
              "and no MPA Request or Reply";
    c.no_mpa_exchange = true;
    c.req_markers = c.rep_markers = true;
    c.mss = 700;
    Expect e = {{"iwarp.mpa.req.key", F}, {"iwarp.mpa.rep.key", F}};
    for (const char* id : {"iwarp.mpa.rr.reserved", "iwarp.mpa.rr.revision", "iwarp.mpa.rr.pd_length", "iwarp.mpa.rr.reject_flag",
                           "iwarp.mpa.v2.enhanced", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.v2.reply_enhanced", "iwarp.mpa.fpdu.before_exchange",
                           "iwarp.mpa.responder.first_fpdu", "iwarp.rdmap.ird_ord", "iwarp.mpa.v2.p2p_echo", "iwarp.mpa.v2.rtr_flags"})
      e[id] = NA;
    iwarp("iwarp-fault-no-mpa-exchange-markers", "as iwarp-markers-crc", c, e);
  }
  IwarpConfig rej;
  rej.reject = true;
  {
    Expect e = {{"iwarp.mpa.reject.close", "PASS"}};
    for (const char* id : {"iwarp.mpa.fpdu.before_exchange", "iwarp.mpa.responder.first_fpdu", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.fpdu.crc",
                           "iwarp.mpa.crc.used", "iwarp.mpa.fpdu.pad", "iwarp.mpa.fpdu.ulpdu_max", "iwarp.mpa.fpdu.alignment", "iwarp.mpa.fpdu.whole",
                           "iwarp.mpa.fpdu.ulpdu_limit"})
      e[id] = NA;
    for (const auto& [id, want] : iwarp_expect({}))
      if (id.rfind("iwarp.ddp.", 0) == 0 || id.rfind("iwarp.rdmap.", 0) == 0) e[id] = NA;  // no FPDU at all
    iwarp("iwarp-reject", "the responder rejects the connection (R set) and both sides close", rej, e);
    // RFC 5044 §7.1.2: both sides leave MPA and the connection stays open for streaming data.
    IwarpConfig stream = rej;
    stream.streaming_after_reject = "GET /resource HTTP/1.1\r\nHost: ulp.example\r\n\r\n";
    iwarp("iwarp-reject-then-streaming", "the responder rejects the connection (R set); the initiator, out of MPA, sends its ULP's "
          "streaming-mode data on the open TCP connection, then both close", stream, e);
  }

  // ---- MPA faults
  // (The damaged FPDU comes right before the only untagged message of several segments, whose first segment
  // then starts no judged message; iwarp.ddp.rsvdulp still judges the RDMA Write's tagged segments.)
  iwarp("iwarp-fault-crc", "as iwarp-rev2-crc", faulty("the CRC of the initiator's fourth FPDU is altered", [](auto& c) { c.corrupt_crc_at = 3; }),
        {{"iwarp.mpa.fpdu.crc", F}});
  iwarp("iwarp-fault-rr-reserved", "as iwarp-rev2-crc", faulty("the MPA Request sets a reserved flag bit", [](auto& c) { c.req_reserved = 0x4; }),
        {{"iwarp.mpa.rr.reserved", F}});
  // RFC 6581 §6 asks for revision "two or higher" to use enhanced setup: a revision 3 frame breaks no
  // rule the suite knows, and is inconclusive.
  iwarp("iwarp-rr-revision-3", "as iwarp-rev2-crc, but the MPA Request carries revision 3 with the enhanced bit (the Reply answers 2)",
        [] { IwarpConfig c; c.req_revision_override = 3; return c; }(),
        // (The suite reads the IRD/ORD word of revision 2 frames only: the enhanced cases have nothing to judge.)
        {{"iwarp.mpa.rr.revision", INC}, {"iwarp.mpa.v2.ird_ord", NA}, {"iwarp.rdmap.ird_ord", NA}, {"iwarp.mpa.v2.p2p_echo", NA},
         {"iwarp.mpa.v2.reply_enhanced", NA}});
  iwarp("iwarp-fault-rr-revision", "as iwarp-rev2-crc, both frames without enhanced setup",
        edit("the MPA Request carries revision 0", [](Traffic& t) {
          t.req.revision = 0;
          t.req.enhanced = false;
          t.rep.enhanced = false;
        }),
        {{"iwarp.mpa.rr.revision", F}, {"iwarp.mpa.v2.ird_ord", NA}, {"iwarp.rdmap.ird_ord", NA}, {"iwarp.mpa.v2.p2p_echo", NA},
         {"iwarp.mpa.v2.rtr_flags", NA}, {"iwarp.mpa.v2.enhanced", NA}});
  iwarp("iwarp-fault-rr-pd-length", "as iwarp-rev2-crc", faulty("the MPA Request carries 604 octets of private data", [](auto& c) { c.req_extra_pd = 600; }),
        {{"iwarp.mpa.rr.pd_length", F}});
  iwarp("iwarp-fault-rr-reject-flag", "as iwarp-rev2-crc", edit("the MPA Request sets R, which only a Reply may", [](Traffic& t) { t.req.reject = true; }),
        {{"iwarp.mpa.rr.reject_flag", F}});
  {
    Expect e;
    e["iwarp.mpa.rep.key"] = F;
    for (const char* id : {"iwarp.mpa.fpdu.before_exchange", "iwarp.mpa.responder.first_fpdu", "iwarp.mpa.v2.reply_enhanced", "iwarp.mpa.v2.ird_ord",
                           "iwarp.mpa.fpdu.ulpdu_max", "iwarp.mpa.fpdu.alignment", "iwarp.mpa.fpdu.whole", "iwarp.mpa.v2.p2p_echo"})
      e[id] = NA;
    for (const auto& [id, want] : iwarp_expect({}))
      if (want == "PASS" && id.rfind("iwarp.ddp.", 0) == 0) e[id] = INC;
    for (const auto& [id, want] : iwarp_expect({}))
      if (want == "PASS" && id.rfind("iwarp.rdmap.", 0) == 0) e[id] = INC;  // the negotiation is unknown: ird_ord too
    for (const char* id : {"iwarp.mpa.fpdu.crc", "iwarp.mpa.crc.used", "iwarp.mpa.fpdu.pad"}) e[id] = INC;
    // No FPDU is framed, so neither the ULPDU length nor a Terminate is seen.
    for (const char* id : {"iwarp.mpa.fpdu.ulpdu_limit", "iwarp.rdmap.terminate.graceful"}) e[id] = NA;
    // The misspelt Reply is not an MPA frame, so the frame cases see only the Request.
    iwarp("iwarp-fault-rep-key", "the responder's framing is not followed after it", faulty("the MPA Reply's key is misspelt", [](auto& c) { c.reply_key = "MPA ID Rep Frxme"; }), e);
  }
  {
    // Only the Reply is an MPA frame; the responder's FPDUs wait for a negotiation that never completes.
    Expect e = {{"iwarp.mpa.req.key", F}};
    for (const char* id : {"iwarp.mpa.rr.reject_flag", "iwarp.mpa.v2.reply_enhanced", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.v2.p2p_echo", "iwarp.mpa.fpdu.before_exchange",
                           "iwarp.mpa.responder.first_fpdu", "iwarp.mpa.fpdu.ulpdu_max", "iwarp.mpa.fpdu.alignment", "iwarp.mpa.fpdu.crc", "iwarp.mpa.crc.used",
                           "iwarp.mpa.fpdu.whole"})
      e[id] = NA;
    for (const auto& [id, want] : iwarp_expect({}))
      if (id.rfind("iwarp.ddp.", 0) == 0 || id.rfind("iwarp.rdmap.", 0) == 0) e[id] = INC;
    e["iwarp.mpa.fpdu.pad"] = INC;
    for (const char* id : {"iwarp.mpa.fpdu.ulpdu_limit", "iwarp.rdmap.terminate.graceful"}) e[id] = NA;
    iwarp("iwarp-fault-req-key", "the initiator's framing is not followed", faulty("the MPA Request's key is misspelt", [](auto& c) { c.request_key = "MPA ID Req Frxme"; }), e);
  }
  {
    Expect e = {{"iwarp.mpa.reject.close", F}};
    for (const char* id : {"iwarp.mpa.fpdu.before_exchange", "iwarp.mpa.responder.first_fpdu", "iwarp.mpa.v2.ird_ord", "iwarp.mpa.fpdu.crc",
                           "iwarp.mpa.crc.used", "iwarp.mpa.fpdu.pad", "iwarp.mpa.fpdu.ulpdu_max", "iwarp.mpa.fpdu.alignment", "iwarp.mpa.fpdu.whole",
                           "iwarp.mpa.fpdu.ulpdu_limit"})
      e[id] = NA;
    for (const auto& [id, want] : iwarp_expect({}))
      if (id.rfind("iwarp.ddp.", 0) == 0 || id.rfind("iwarp.rdmap.", 0) == 0) e[id] = NA;
    iwarp("iwarp-fault-data-after-reject", "as iwarp-reject", faulty("the initiator sends its FPDUs after the rejecting Reply", [](auto& c) { c.reject = c.data_after_reject = true; }), e);
  }
  iwarp("iwarp-fault-early-fpdu", "as iwarp-rev2-crc", faulty("the initiator sends its FPDUs before the Reply arrives", [](auto& c) { c.early_fpdu = true; }),
        {{"iwarp.mpa.fpdu.before_exchange", F}});
  iwarp("iwarp-fault-responder-first", "as iwarp-rev2-crc", faulty("the responder sends a Send before the initiator's first FPDU", [](auto& c) { c.responder_first = true; }),
        {{"iwarp.mpa.responder.first_fpdu", F}});
  iwarp("iwarp-fault-zero-crc", "as iwarp-rev2-crc", faulty("the responder leaves the CRC field zero although the initiator asked for CRCs", [](auto& c) { c.zero_crc_from_responder = true; }),
        {{"iwarp.mpa.crc.used", F}});
  iwarp("iwarp-fault-pad", "as iwarp-rev2-crc", faulty("the first FPDU's pad has a non-zero octet (its CRC covers it)", [](auto& c) { c.pad_fault_at = 0; }),
        {{"iwarp.mpa.fpdu.pad", F}});
  // One root cause, one FAIL: a length field that misframes all that follows
  // is iwarp.mpa.fpdu.crc's FAIL at that FPDU; what the misframing hides is
  // its consequence, never a FAIL of its own (whether it is INCONCLUSIVE or
  // not applicable is not up to the generator).
  {
    IwarpConfig lf = faulty("the initiator's first FPDU says 8 octets more in its length field than it carries (its CRC computed over the octets as sent)",
                            [](auto& c) { c.length_fault_at = 0; });
    Expect x;
    for (const auto& [id, verdict] : iwarp_expect(lf))
      if (verdict == "PASS" && !id.starts_with("iwarp.mpa.rr.") && !id.starts_with("iwarp.mpa.v2.") && id != "iwarp.mpa.req.key" &&
          id != "iwarp.mpa.rep.key")
        x[id] = "NOT_FAIL";
    x["iwarp.mpa.fpdu.crc"] = F;
    iwarp("iwarp-fault-fpdu-length", "as iwarp-rev2-crc", lf, x);
  }
  iwarp("iwarp-fault-ulpdu-max", "as iwarp-rev2-crc", faulty("both SYNs advertise an MSS of 536 while FPDUs of up to 1020 octets are sent", [](auto& c) { c.advertised_mss = 536; }),
        {{"iwarp.mpa.fpdu.ulpdu_max", F}});
  iwarp("iwarp-fault-fpdu-alignment", "as iwarp-rev2-crc",
        faulty("both sides cut their streams every 1448 octets whatever the FPDU boundaries, splitting FPDUs that fit in one segment "
               "(see fpdus_split_between_segments)",
               [](auto& c) { c.unaligned = true; }),
        {{"iwarp.mpa.fpdu.alignment", F}});
  {
    IwarpConfig big;
    big.unaligned = true;
    big.mss = 4000;
    iwarp("iwarp-offloaded-segments",
          "as iwarp-fault-fpdu-alignment, but in 4000-octet segments, larger than the 1460-octet MSS either side advertised: "
          "as a capture taken above segmentation offload shows them, so the wire's segment size is unknown and the split "
          "FPDUs prove nothing",
          big, {{"iwarp.mpa.fpdu.alignment", INC}});
  }
  iwarp("iwarp-fault-marker-ptr", "as iwarp-markers-crc", faulty("the initiator's third marker points 8 octets off", [&mk](auto& c) {
          c = IwarpConfig{mk};
          c.fault = "the initiator's third marker points 8 octets off";
          c.marker_fault = 2;
          c.marker_ptr_xor = 8;
        }),
        {{"iwarp.mpa.marker.fpduptr", F}, {"iwarp.mpa.marker.reserved", "PASS"}, {"iwarp.mpa.fpdu.crc", "PASS"}});
  // RFC 5044 §7.1.1: with M = 0 from the peer, no markers. Read without
  // them, the initiator's stream breaks at its first marker: every later
  // FPDU is misread, so the CRC, DDP and RDMAP cases fail too.
  {
    IwarpConfig um = faulty("the initiator adds markers though the Reply's M = 0");
    um.unrequested_markers = true;
    um.mss = 700;
    // What a reader without markers makes of the FPDUs from the first marker
    // on is not something the generator decides: any verdict ("ANY").
    auto misframed = [](const IwarpConfig& c) {
      Expect x;
      for (const auto& [id, verdict] : iwarp_expect(c))
        if (verdict == "PASS" && !id.starts_with("iwarp.mpa.rr.") && !id.starts_with("iwarp.mpa.v2.") && id != "iwarp.mpa.req.key" &&
            id != "iwarp.mpa.rep.key" && id != "iwarp.mpa.fpdu.before_exchange")
          x[id] = "ANY";
      x["iwarp.mpa.marker.unrequested"] = "FAIL";
      return x;
    };
    iwarp("iwarp-fault-marker-unrequested", "as iwarp-rev2-crc, segments of up to 700 octets", um, misframed(um));
    um.revision = 1;
    um.enhanced = false;
    um.req_crc = false;
    iwarp("iwarp-fault-marker-unrequested-nocrc", "MPA revision 1, no CRC, segments of up to 700 octets", um, misframed(um));
  }
  // RFC 5044 §4.3, §7.1.1: a peer that asked for markers (M = 1) gets them.
  // A responder that ignores the initiator's M and sends none breaks the
  // marker rule where its first marker belongs (the first octets of its
  // first FPDU read as pointer and reserved bits); its FPDUs are otherwise
  // right, so every other case keeps its verdict.
  for (const bool crc : {true, false}) {
    IwarpConfig om = crc ? mk : mk1;
    om.req_markers = true;
    om.rep_markers = false;
    om.fault = "the responder sends no markers though the initiator's Request set M";
    om.omitted_markers = true;
    Expect x = iwarp_expect(om);
    x["iwarp.mpa.marker.fpduptr"] = F;
    x["iwarp.mpa.marker.reserved"] = F;
    iwarp(crc ? "iwarp-fault-markers-omitted" : "iwarp-fault-markers-omitted-nocrc",
          crc ? "as iwarp-markers-crc, markers asked of the responder only" : "as iwarp-markers-initiator-nocrc, markers asked of the responder only", om, x);
  }
  iwarp("iwarp-fault-marker-reserved", "as iwarp-markers-crc", faulty("the initiator's second marker sets reserved bits", [&mk](auto& c) {
          c = IwarpConfig{mk};
          c.fault = "the initiator's second marker sets reserved bits";
          c.marker_fault = 1;
          c.marker_rsvd = 0x8000;
        }),
        {{"iwarp.mpa.marker.reserved", F}});
  iwarp("iwarp-fault-v2-enhanced", "as iwarp-rev2-crc, but the Reply is revision 2 without enhanced setup",
        edit("the Request sets the enhanced bit without the IRD/ORD word", [](Traffic& t) {
          t.req.omit_v2 = true;
          t.rep.enhanced = false;
        }),
        {{"iwarp.mpa.v2.enhanced", F}, {"iwarp.mpa.v2.ird_ord", NA}, {"iwarp.rdmap.ird_ord", NA}, {"iwarp.mpa.v2.p2p_echo", NA},
         {"iwarp.mpa.v2.rtr_flags", NA}, {"iwarp.mpa.v2.reply_enhanced", NA}});
  iwarp("iwarp-fault-v2-reply-enhanced", "as iwarp-rev2-crc, with a revision 1 Request",
        edit("the responder answers a revision 1 Request with an enhanced revision 2 Reply", [](Traffic& t) {
          t.req.revision = 1;
          t.req.enhanced = false;
        }),
        {{"iwarp.mpa.v2.reply_enhanced", F}, {"iwarp.mpa.v2.ird_ord", NA}, {"iwarp.rdmap.ird_ord", NA}, {"iwarp.mpa.v2.p2p_echo", NA}});
  iwarp("iwarp-fault-v2-ird-ord", "as iwarp-rev2-crc", edit("the Reply's ORD (32) exceeds the Request's IRD (16)", [](Traffic& t) { t.rep.ord = 32; }),
        {{"iwarp.mpa.v2.ird_ord", F}});
  {
    IwarpConfig c = p2p;
    c.fault = "the Reply does not echo the initiator's peer-to-peer flag";
    c.edit = [](Traffic& t) { t.rep.p2p = false; t.rep.send_rtr = false; };
    // (the Reply's A = 0 with no RTR flag is itself a well-formed client-server word)
    iwarp("iwarp-fault-v2-p2p-echo", "as iwarp-p2p-send-rtr", c,
          {{"iwarp.mpa.v2.p2p_echo", F}, {"iwarp.mpa.v2.rtr_flags", "PASS"}, {"iwarp.mpa.v2.rtr_type", NA}, {"iwarp.mpa.v2.rtr_first", NA}});
    c = p2p;
    c.edit = [](Traffic& t) { t.rep.write_rtr = true; };
    iwarp("iwarp-p2p-two-rtr-types", "as iwarp-p2p-send-rtr, but the Reply names both offered RTR types (Send and Write), as RFC 6581 §9.2 "
          "asks of a responder that supports both; the initiator sends the zero-length Send", c);
    c = p2p;
    c.fault = "the initiator's first FPDU is a Send with data instead of the zero-length Send RTR";
    c.omit_rtr = true;
    iwarp("iwarp-fault-v2-rtr-first", "as iwarp-p2p-send-rtr", c, {{"iwarp.mpa.v2.rtr_first", F}});
  }
  {
    // RFC 6581 §9.2: a responder that supports none of the offered RTR types
    // names one it supports; the initiator sends that RTR if it can, or else
    // Terminates with LLP error type 0, code 7, and sends nothing more.
    IwarpConfig only_send = p2p;
    auto reply_write = [](Traffic& t) {
      t.req.write_rtr = false;  // the initiator offers the zero-length Send only
      t.rep.send_rtr = false;
      t.rep.write_rtr = true;   // the responder names the Write RTR, not offered
    };
    IwarpConfig c = only_send;
    c.write_rtr = true;  // the zero-length Write RTR the Reply names
    c.edit = reply_write;
    iwarp("iwarp-p2p-unoffered-rtr-used", "peer-to-peer: the initiator offers the Send RTR only, the responder names the Write RTR "
          "(supporting none of the offered types, RFC 6581 §9.2), and the initiator sends the zero-length Write RTR first", c);
    // The initiator that cannot send what the Reply names: its Terminate is all
    // it sends, and the responder then sends nothing either. What judges FPDUs
    // beyond the first has nothing to judge.
    auto only_terminate = [](unsigned code) {
      return [code](Traffic& t) {
        t.init = {terminate(2, 0, code, false, false)};
        t.resp.clear();
      };
    };
    Expect quiet;
    for (const auto& [id, want] : iwarp_expect(p2p))
      if (want == "PASS" && (id.rfind("iwarp.ddp.", 0) == 0 || id.rfind("iwarp.rdmap.", 0) == 0)) quiet[id] = NA;
    // Its one FPDU needs no pad, and the responder sends no FPDU at all.
    quiet["iwarp.mpa.fpdu.pad"] = NA;
    quiet["iwarp.mpa.responder.first_fpdu"] = NA;
    quiet["iwarp.mpa.marker.unrequested"] = NA;  // (one 28-octet FPDU: too few octets to look for markers)
    // The one Terminate is a whole untagged message with a defined code, last on its stream (an LLP error's:
    // iwarp.rdmap.terminate.flags judges DDP-layer ones only).
    for (const char* id : {"iwarp.ddp.segment.header", "iwarp.ddp.version", "iwarp.ddp.reserved", "iwarp.ddp.qn", "iwarp.ddp.msn",
                           "iwarp.ddp.mo", "iwarp.ddp.last", "iwarp.rdmap.version", "iwarp.rdmap.reserved", "iwarp.rdmap.opcode",
                           "iwarp.rdmap.buffer_model", "iwarp.rdmap.queue", "iwarp.rdmap.inv_stag", "iwarp.rdmap.terminate.code",
                           "iwarp.rdmap.terminate.headers", "iwarp.rdmap.terminate.last", "iwarp.ddp.segment_order",
                           "iwarp.rdmap.terminate.graceful"})
      quiet[id] = "PASS";
    c = only_send;
    c.edit = [reply_write, only_terminate](Traffic& t) {
      reply_write(t);
      only_terminate(0x07)(t);
    };
    iwarp("iwarp-p2p-unoffered-rtr-terminate", "peer-to-peer: the initiator offers the Send RTR only, the responder names the Write RTR, "
          "and the initiator, which cannot send it, Terminates with LLP/0/0x07 (no matching RTR option) and closes", c, quiet);
    c.fault = "the initiator answers a Reply naming only an RTR type it cannot send with Terminate LLP/0/0x06 (insufficient IRD) "
              "instead of 0x07 (no matching RTR option)";
    c.edit = [reply_write, only_terminate](Traffic& t) {
      reply_write(t);
      only_terminate(0x06)(t);
    };
    Expect wrong_code = quiet;
    wrong_code["iwarp.mpa.v2.rtr_first"] = F;
    iwarp("iwarp-fault-v2-rtr-terminate-code", "as iwarp-p2p-unoffered-rtr-terminate", c, wrong_code);
    // A Reply naming no RTR type proves a broken MUST only where the Request offered none (§9.2).
    c.fault = "the Request offers no RTR type and the peer-to-peer Reply names none either (the initiator Terminates with "
              "LLP/0/0x07)";
    c.edit = [only_terminate](Traffic& t) {
      t.req.send_rtr = t.req.write_rtr = false;
      t.rep.send_rtr = t.rep.write_rtr = false;
      only_terminate(0x07)(t);
    };
    Expect none = quiet;
    none["iwarp.mpa.v2.rtr_type"] = F;
    iwarp("iwarp-fault-v2-rtr-type", "as iwarp-p2p-unoffered-rtr-terminate", c, none);
    IwarpConfig named_none = only_send;
    named_none.edit = [only_terminate](Traffic& t) {
      t.rep.send_rtr = t.rep.write_rtr = false;
      only_terminate(0x07)(t);
    };
    Expect unproven = quiet;
    unproven["iwarp.mpa.v2.rtr_type"] = INC;
    iwarp("iwarp-v2-rtr-type-none-named", "peer-to-peer: the initiator offers Send and Write, the Reply names no RTR type and the "
          "initiator Terminates with LLP/0/0x07; unless the responder supports exactly one of the offered types the Reply "
          "breaks a MUST, and the capture cannot tell",
          named_none, unproven);
  }
  iwarp("iwarp-fault-v2-rtr-flags", "as iwarp-rev2-crc",
        edit("the client-server Request (A = 0) sets B, the Send RTR flag", [](Traffic& t) { t.req.send_rtr = true; }),
        {{"iwarp.mpa.v2.rtr_flags", F}});
  {
    auto no_auto = [](std::uint16_t reply_ord) {
      return [reply_ord](Traffic& t) {
        t.req.ird = t.req.ord = 0x3FFF;
        t.rep.ird = 0x3FFF;
        t.rep.ord = reply_ord;
      };
    };
    IwarpConfig c;
    c.edit = no_auto(0x3FFF);
    iwarp("iwarp-rev2-no-auto-ird-ord", "as iwarp-rev2-crc, but the initiator's IRD and ORD are 0x3FFF (no automatic negotiation, "
          "RFC 6581 §9.1) and the Reply answers IRD and ORD 0x3FFF", c, {{"iwarp.mpa.v2.ird_ord_auto", "PASS"}});
    c.fault = "the Reply answers an initiator IRD of 0x3FFF with ORD 8";
    c.edit = no_auto(8);
    iwarp("iwarp-fault-v2-ird-ord-auto", "as iwarp-rev2-no-auto-ird-ord", c, {{"iwarp.mpa.v2.ird_ord_auto", F}});
  }

  // ---- DDP faults (initiator message numbers: 0-3 the four Sends, 4-5 a two-segment Send,
  // 6-7 Immediate Data, 8-10 a three-segment Write, 11 Read Request, 12 Atomic Request)
  iwarp("iwarp-fault-ddp-short", "as iwarp-rev2-crc", faulty("the initiator's third FPDU carries a 10-octet ULPDU, too short for a DDP header", [](auto& c) { c.short_ulpdu_at = 2; }),
        {{"iwarp.ddp.segment.header", F}});
  iwarp("iwarp-fault-ddp-version", "as iwarp-rev2-crc", edit("the first Send carries DDP version 2", [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::dv, 2); }),
        {{"iwarp.ddp.version", F}});
  iwarp("iwarp-fault-ddp-reserved", "as iwarp-rev2-crc", edit("the first Send sets a DDP reserved bit", [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::rsvd, 0x2); }),
        {{"iwarp.ddp.reserved", F}});
  iwarp("iwarp-fault-ddp-qn", "as iwarp-rev2-crc", edit("the Immediate Data with SE goes to queue 5", [](Traffic& t) { set_ddp(t.init[7], iwarp::DdpUntagged::qn, 5); }),
        {{"iwarp.ddp.qn", F}, {"iwarp.rdmap.queue", F}});
  iwarp("iwarp-fault-ddp-msn", "as iwarp-rev2-crc", edit("the Immediate Data with SE skips an MSN (8 instead of 7)", [](Traffic& t) { set_ddp(t.init[7], iwarp::DdpUntagged::msn, 8); }),
        {{"iwarp.ddp.msn", F}});
  iwarp("iwarp-fault-ddp-mo", "as iwarp-rev2-crc", edit("the second segment of the two-segment Send has MO 604 instead of 600", [](Traffic& t) { set_ddp(t.init[5], iwarp::DdpUntagged::mo, 604); }),
        {{"iwarp.ddp.mo", F}});
  iwarp("iwarp-fault-ddp-last", "as iwarp-rev2-crc", edit("the two-segment Send never sets L; the next message starts anyway", [](Traffic& t) { set_ddp(t.init[5], iwarp::DdpUntagged::l, 0); }),
        {{"iwarp.ddp.last", F}});
  iwarp("iwarp-fault-ddp-stag", "as iwarp-rev2-crc", edit("the third segment of the RDMA Write changes STag", [](Traffic& t) { set_ddp(t.init[10], iwarp::DdpTagged::stag, 0xabcd02); }),
        {{"iwarp.ddp.tagged.stag", F}});
  iwarp("iwarp-fault-ddp-to", "as iwarp-rev2-crc", edit("the third segment of the RDMA Write skips 8 octets of tagged offset", [](Traffic& t) { set_ddp(t.init[10], iwarp::DdpTagged::to, 0x10000 + 2008); }),
        {{"iwarp.ddp.tagged.to", F}});

  iwarp("iwarp-fault-ddp-rsvdulp", "as iwarp-rev2-crc", edit("the second segment of the two-segment Send carries opcode Send with SE", [](Traffic& t) {
          set_ddp(t.init[5], iwarp::DdpUntagged::opcode, iwarp::kOpSendSe);
        }),
        {{"iwarp.ddp.rsvdulp", F}});
  // RFC 5041 §4.2: the segments of a tagged message share RsvdULP (RDMAP's
  // control octet). Setting a reserved bit of it in one segment breaks that
  // and RFC 5040 §4.1's reserved-bits rule at once.
  iwarp("iwarp-fault-ddp-tagged-rsvdulp", "as iwarp-rev2-crc",
        edit("the third segment of the RDMA Write sets an RDMAP reserved bit its other segments leave clear",
             [](Traffic& t) { set_ddp(t.init[10], iwarp::DdpTagged::rdmap_rsvd, 1); }),
        {{"iwarp.ddp.rsvdulp", F}, {"iwarp.rdmap.reserved", F}});
  // The two-segment Send (initiator messages 4 and 5) cut again: its segments
  // as (MO, octets) in the order they are sent; the one ending the message has L.
  auto resegment_send = [](std::vector<std::pair<std::uint32_t, std::size_t>> cuts) {
    return [cuts](Traffic& t) {
      const auto msn = static_cast<std::uint32_t>(Header::decode(iwarp::kDdpUntagged, B(t.init[4]))->get(iwarp::DdpUntagged::msn));
      std::size_t total = 0;
      for (const auto& [mo, n] : cuts) total = std::max<std::size_t>(total, mo + n);
      std::vector<Buf> segs;
      for (const auto& [mo, n] : cuts)
        segs.push_back(ddp_untagged(iwarp::kOpSend, 0, msn, mo, mo + n == total, B(pattern(n, static_cast<unsigned>(14 + segs.size())))));
      t.init.erase(t.init.begin() + 4, t.init.begin() + 6);
      t.init.insert(t.init.begin() + 4, segs.begin(), segs.end());
    };
  };
  iwarp("iwarp-fault-ddp-segment-order", "as iwarp-rev2-crc",
        edit("the two-segment Send becomes three segments of 300 octets sent as MO 300, MO 0, MO 600 (the last, with L): "
             "their offsets still cover the message",
             resegment_send({{300, 300}, {0, 300}, {600, 300}})),
        {{"iwarp.ddp.segment_order", F}});
  // RFC 5041 §5.2: a ULP message is shorter than 2^32 octets; an untagged
  // segment whose MO plus payload passes that is part of a longer one.
  iwarp("iwarp-fault-ddp-message-length", "as iwarp-rev2-crc",
        edit("the two-segment Send's second segment (with L) has MO 0xFFFFFF00 and 300 octets, so the message would end past "
             "octet 2^32",
             resegment_send({{0, 600}, {0xFFFFFF00u, 300}})),
        {{"iwarp.ddp.mo", F}});
  iwarp("iwarp-fault-ddp-segment-size", "as iwarp-rev2-crc",
        edit("the two-segment Send becomes three segments, the middle one carrying 50 octets (MO 0: 300, MO 300: 50, MO 350: "
             "250 with L)",
             resegment_send({{0, 300}, {300, 50}, {350, 250}})),
        {{"iwarp.ddp.segment_size", F}});
  {
    IwarpConfig c = faulty("a 64751-octet Send (a ULPDU of 64769 octets, one more than any MULPDU may be), in one segment; "
                           "the SYNs advertise an MSS of 65535");
    c.advertised_mss = 65535;
    c.mss = 65535;
    c.edit = [](Traffic& t) {
      // After the last message of queue 0 (Immediate Data with SE), the next MSN there.
      const auto msn = static_cast<std::uint32_t>(Header::decode(iwarp::kDdpUntagged, B(t.init[7]))->get(iwarp::DdpUntagged::msn));
      t.init.push_back(ddp_untagged(iwarp::kOpSend, 0, msn + 1, 0, true, B(pattern(64769 - 18, 17))));
    };
    iwarp("iwarp-fault-ulpdu-limit", "as iwarp-rev2-crc", c, {{"iwarp.mpa.fpdu.ulpdu_limit", F}});
  }

  // ---- RDMAP faults
  iwarp("iwarp-fault-rdmap-version", "as iwarp-rev2-crc", edit("the first Send carries RDMAP version 2", [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::rv, 2); }),
        {{"iwarp.rdmap.version", F}});
  iwarp("iwarp-fault-rdmap-reserved", "as iwarp-rev2-crc", edit("the first Send sets an RDMAP reserved bit", [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::rdmap_rsvd, 1); }),
        {{"iwarp.rdmap.reserved", F}});
  iwarp("iwarp-fault-rdmap-opcode", "as iwarp-rev2-crc", edit("the Send with SE carries the undefined opcode 0xC", [](Traffic& t) { set_ddp(t.init[2], iwarp::DdpUntagged::opcode, 0xC); }),
        {{"iwarp.rdmap.opcode", F}});
  iwarp("iwarp-fault-rdmap-buffer-model", "as iwarp-rev2-crc", edit("the initiator ends with a Send sent as a tagged segment", [](Traffic& t) {
          t.init.push_back(ddp_tagged(iwarp::kOpSend, 0x4444, 0, true, B(pattern(16, 40))));
        }),
        {{"iwarp.rdmap.buffer_model", F}});
  iwarp("iwarp-fault-fin-mid-fpdu", "as iwarp-rev2-crc",
        faulty("the initiator ends with a Send of 100 octets and closes its half of the connection 10 octets before that FPDU's end",
               [](auto& c) {
                 c.fin_cut = 10;
                 c.edit = [](Traffic& t) { t.init.push_back(ddp_untagged(iwarp::kOpSend, 0, 8, 0, true, B(pattern(100, 31)))); };
               }),
        {{"iwarp.mpa.fpdu.whole", F}});
  // (Queue 3 is a DDP queue RDMAP uses, so iwarp.ddp.qn passes it; queue 0 then goes on with MSN 5 after 3,
  // and queue 3's first message carries MSN 4.)
  iwarp("iwarp-fault-rdmap-queue-send", "as iwarp-rev2-crc",
        edit("the Send with SE and Invalidate goes to queue 3 (RFC 7306's Atomic Response queue)",
             [](Traffic& t) { set_ddp(t.init[3], iwarp::DdpUntagged::qn, 3); }),
        {{"iwarp.rdmap.queue", F}, {"iwarp.ddp.msn", F}});
  iwarp("iwarp-fault-rdmap-queue", "as iwarp-rev2-crc", edit("the responder's Terminate goes to queue 1 (Read Request) instead of 2", [](Traffic& t) { set_ddp(t.resp[RespAt::term], iwarp::DdpUntagged::qn, 1); }),
        {{"iwarp.rdmap.queue", F}});
  iwarp("iwarp-fault-read-request-format", "as iwarp-rev2-crc", edit("the Read Request carries 4 octets after its header", [](Traffic& t) {
          t.init[11].resize(t.init[11].size() + 4);
        }),
        {{"iwarp.rdmap.read_request.format", F}});
  iwarp("iwarp-fault-read-response", "as iwarp-rev2-crc", edit("the Read Response ends 4 octets short of the 2500 requested", [](Traffic& t) {
          t.resp[2].resize(t.resp[2].size() - 4);
        }),
        {{"iwarp.rdmap.read_response.match", F}});
  iwarp("iwarp-fault-ird", "as iwarp-rev2-crc", edit("the responder announces IRD 1 and the initiator has two Read Requests outstanding", [](Traffic& t) {
          t.rep.ird = 1;
          t.init.push_back(read_request(4, 0));  // queue 1's MSNs 2 and 3 are the Atomic Requests
        }),
        {{"iwarp.rdmap.ird_ord", F}});
  iwarp("iwarp-fault-inv-stag", "as iwarp-rev2-crc", edit("the first Send (no Invalidate) carries 0x1234 in the Invalidate STag field",
                                                          [](Traffic& t) { set_ddp(t.init[0], iwarp::DdpUntagged::rsvd_ulp, 0x1234); }),
        {{"iwarp.rdmap.inv_stag", F}});
  iwarp("iwarp-fault-terminate-code", "as iwarp-rev2-crc", edit("the Terminate names DDP tagged-buffer error code 0x07, which is not defined", [](Traffic& t) {
          t.resp[RespAt::term] = terminate(1, 1, 7, true);
        }),
        {{"iwarp.rdmap.terminate.code", F}});
  iwarp("iwarp-fault-terminate-headers", "as iwarp-rev2-crc", edit("the Terminate sets M and D but carries no copied header", [](Traffic& t) {
          t.resp[RespAt::term] = terminate(1, 1, 0, false, true);
        }),
        {{"iwarp.rdmap.terminate.headers", F}});
  iwarp("iwarp-fault-terminate-flags", "as iwarp-rev2-crc", edit("the DDP-layer Terminate sets neither M nor D and copies nothing", [](Traffic& t) {
          t.resp[RespAt::term] = terminate(1, 1, 0, false, false);
        }),
        {{"iwarp.rdmap.terminate.flags", F}});
  iwarp("iwarp-fault-terminate-reset", "as iwarp-rev2-crc", faulty("the responder resets the connection right after its Terminate",
                                                                     [](auto& c) { c.reset_at_end = true; }),
        {{"iwarp.rdmap.terminate.graceful", F}, {"iwarp.mpa.fpdu.whole", NA}});  // (no FIN either way)
  {
    // The responder never answers the Read Request and sends no Terminate.
    Expect e = {{"iwarp.rdmap.answered", F}};
    for (const char* id : {"iwarp.rdmap.read_response.match", "iwarp.rdmap.terminate.code", "iwarp.rdmap.terminate.headers",
                           "iwarp.rdmap.terminate.last", "iwarp.rdmap.terminate.flags", "iwarp.rdmap.terminate.graceful"})
      e[id] = NA;
    iwarp("iwarp-fault-read-unanswered", "as iwarp-rev2-crc", edit("the responder sends no Read Response and no Terminate, and closes", [](Traffic& t) {
            t.resp.erase(t.resp.begin() + RespAt::term);
            t.resp.erase(t.resp.begin(), t.resp.begin() + 3);
          }),
          e);
  }
  iwarp("iwarp-fault-terminate-last", "as iwarp-rev2-crc", edit("the responder sends a Send after its Terminate", [](Traffic& t) {
          t.resp.push_back(ddp_untagged(iwarp::kOpSend, 0, 2, 0, true, B(pattern(20, 41))));
        }),
        {{"iwarp.rdmap.terminate.last", F}});
  iwarp("iwarp-fault-immediate", "as iwarp-rev2-crc", edit("the Immediate Data message carries 12 octets", [](Traffic& t) { t.init[6].resize(t.init[6].size() + 4); }),
        {{"iwarp.rdmap.immediate.format", F}});
  iwarp("iwarp-fault-atomic-format", "as iwarp-rev2-crc",
        edit("the CmpSwap names operation code 1, which RFC 7306 §10.1 reserves (the code an earlier reading gave CmpSwap)",
             [](Traffic& t) { set_body(t.init[InitAt::cmp_swap], iwarp::kAtomicRequest, iwarp::AtomicRequest::op, 1); }),
        {{"iwarp.rdmap.atomic.format", F}});
  // Atomic Requests on queue 3 and Atomic Responses on queue 4, as a reading
  // of RFC 7306 from memory had them (§5.2 puts them on 1 and 3). Each queue
  // then numbers its messages from 1.
  iwarp("iwarp-fault-atomic-queues", "as iwarp-rev2-crc",
        edit("both Atomic Requests go to queue 3 (MSN 1 and 2) and both Atomic Responses to queue 4 (MSN 1 and 2)",
             [](Traffic& t) {
               for (std::uint32_t i = 0; i < 2; ++i) {
                 set_ddp(t.init[InitAt::fetch_add + i], iwarp::DdpUntagged::qn, 3);
                 set_ddp(t.init[InitAt::fetch_add + i], iwarp::DdpUntagged::msn, 1 + i);
                 set_ddp(t.resp[RespAt::fetch_add + i], iwarp::DdpUntagged::qn, 4);
               }
             }),
        {{"iwarp.ddp.qn", F}, {"iwarp.rdmap.queue", F}});
  iwarp("iwarp-fault-atomic-order", "as iwarp-rev2-crc",
        edit("the responder answers the CmpSwap before the FetchAdd (the Atomic Responses swap places, MSNs kept in order)",
             [](Traffic& t) {
               std::swap(t.resp[RespAt::fetch_add], t.resp[RespAt::cmp_swap]);
               set_ddp(t.resp[RespAt::fetch_add], iwarp::DdpUntagged::msn, 1);
               set_ddp(t.resp[RespAt::cmp_swap], iwarp::DdpUntagged::msn, 2);
             }),
        {{"iwarp.rdmap.atomic.response_match", F}});
  iwarp("iwarp-fault-atomic-alignment", "as iwarp-rev2-crc", edit("the FetchAdd's tagged offset is 0x44", [](Traffic& t) {
          set_body(t.init[InitAt::fetch_add], iwarp::kAtomicRequest, iwarp::AtomicRequest::to, 0x44);
        }),
        {{"iwarp.rdmap.atomic.alignment", F}});
  iwarp("iwarp-fault-atomic-response", "as iwarp-rev2-crc", edit("the Atomic Response names request 9, which was never sent", [](Traffic& t) {
          set_body(t.resp[RespAt::fetch_add], iwarp::kAtomicResponse, iwarp::AtomicResponse::req_id, 9);
        }),
        {{"iwarp.rdmap.atomic.response_match", F}});

  {
    IwarpConfig gap;
    gap.gap_in_initiator = true;
    gap.mss = 300;
    Expect e;
    for (const auto& [id, want] : iwarp_expect(gap))
      if (want == "PASS" && (id.rfind("iwarp.ddp.", 0) == 0 || id.rfind("iwarp.rdmap.", 0) == 0 || id == "iwarp.mpa.fpdu.crc" ||
                             id == "iwarp.mpa.crc.used" || id == "iwarp.mpa.fpdu.pad"))
        e[id] = INC;
    e["iwarp.rdmap.terminate.graceful"] = "PASS";  // (the responder's Terminate is read, and both sides close with FINs)
    iwarp("iwarp-gap", "300 octets of the initiator's FPDU stream are missing from the capture: what follows is inconclusive, not a violation", gap, e);
  }
}

}  // namespace

const RegisterScenarios registered_iwarp{"iwarp", &add_iwarp_scenarios};

}  // namespace rdmaconf::captures::gen

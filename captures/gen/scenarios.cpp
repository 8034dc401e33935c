// The golden-capture scenarios (see scenarios.hpp).
#include "captures/gen/scenarios.hpp"

#include "captures/gen/iwarp.hpp"
#include "captures/gen/roce.hpp"

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

}  // namespace

std::vector<Scenario> scenarios() {
  std::vector<Scenario> v;
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
  add_udp_scenarios(v);
  add_unet_scenarios(v);
  return v;
}


}  // namespace rdmaconf::captures::gen

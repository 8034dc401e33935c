// The iWARP scenarios: data exchanges and the faults a conforming responder must answer with a given Terminate.
#include "interop/iwarp/session.hpp"

namespace rdmaconf::interop::iwarp {

using namespace detail;

namespace {

std::vector<ScenarioInfo> make_catalog() {
  std::vector<ScenarioInfo> v;
  auto data = [&](std::string_view n, Code c, std::string_view s, std::uint32_t size, std::uint64_t it) {
    v.push_back({n, c, s, size, it, std::nullopt, false, {}, {}, false, false, false});
  };
  data("rping", kRping, "rping's exchange: Send of a buffer, RDMA Read of it, RDMA Write back, compared", 64, 100);
  data("write-bw", kWriteBw, "RDMA Write throughput, the responder verifies every slot of its buffer", 65536, 2000);
  data("read-bw", kReadBw, "RDMA Read throughput, every response verified", 65536, 2000);
  data("send-lat", kSendLat, "Send ping-pong, every message verified on both sides", 4, 1000);
  data("write-lat", kWriteLat, "RDMA Write ping-pong polled on the last octet, every message verified", 4, 1000);
  // RFC 5044 §7.1.1 (C): with C = 0 in both frames CRCs are not checked, and
  // the CRC field passes FPDU checking whatever it holds.
  data("crc-ignored", kCrcIgnored, "rping's exchange without CRC, every FPDU's CRC field 0x5a5a5a5a instead of zero; the "
       "responder must accept them all", 64, 20);
  v.back().rule = "RFC 5044 §7.1.1 (C): without CRCs in use the CRC field is valid whatever it holds";
  // RFC 5040 §5.2.1 and RFC 5041 §5.2: a zero-length RDMA Write or Read
  // carries an STag and offset that must not be checked.
  data("zero-length", kZeroLength, "an RDMA Write and an RDMA Read Request of zero octets naming an STag that does not "
       "exist; the responder must answer the Read (a zero-length Read Response) and send no Terminate", 64, 1);
  v.back().rule = "RFC 5040 §5.2.1 and RFC 5041 §5.2: for a zero-length Write or Read the STag and offset are not validated";
  // RFC 5044 §5.1, §6 and Appendix A.4: a receiver finds FPDUs from their
  // length fields wherever TCP cut the stream.
  // (37-octet segments are then the sender's segment size, which its FPDUs
  // exceed: iwarp.mpa.fpdu.alignment finds nothing to blame, and FPDUs of a
  // 128-octet MULPDU meet iwarp.ddp.segment_size.)
  data("fpdu-split", kFpduSplit, "rping's exchange with a MULPDU of 128 octets (a 300-octet Read Response is three "
       "FPDUs), written 37 octets at a time, each write a TCP segment of its own: FPDUs split across segments, segments "
       "holding the end of one FPDU and the start of the next", 300, 20);
  v.back().rule = "RFC 5044 §5.1, §6 and Appendix A.4: a receiver works whether or not FPDUs line up with TCP segments, "
                  "finding each from its ULPDU length";
  // RFC 6581 §9.2: with A = 0 in the Request, B, C and D are ignored.
  data("mpa-rtr-bits", kRtrBits, "rping's exchange after an enhanced Request with the peer-to-peer bit A = 0 but the "
       "RTR bits B, C and D set; the responder must ignore them (expect no RTR, answer A = 0)", 64, 5);
  v.back().rule = "RFC 6581 §9.2: on reception, with A = 0 the RTR flags B, C and D are ignored";
  v.back().failing_cases = {"iwarp.mpa.v2.rtr_flags"};  // (the initiator's own MUST, broken on purpose)
  // RFC 5044 §4.2 and §4.3: a marker's reserved field is ignored on
  // receipt, and its pointer's two low bits are taken as zero.
  data("marker-reserved-bits", kMarkerReservedBits, "rping's exchange with markers towards the responder, every marker "
       "with its reserved field all ones and its FPDU pointer's two low bits set; the responder must ignore the one and "
       "compute with the other as zero", 1000, 10);
  v.back().rule = "RFC 5044 §4.2 (RESERVED: ignored on receive) and §4.3 (the FPDUPTR's two low bits are treated as "
                  "zero at the receiver)";
  v.back().needs_markers = true;
  v.back().failing_cases = {"iwarp.mpa.marker.fpduptr", "iwarp.mpa.marker.reserved"};  // (the sender's own MUSTs, broken on purpose)
  // RFC 7306 §5.1 and §5.2: FetchAdd and CmpSwap, with the original values
  // returned and the memory left as the text says (kAtomicSteps).
  data("atomic", kAtomic, "FetchAdd twice, a CmpSwap whose compare fails, one whose compare matches and a FetchAdd of "
       "zero on one word of the responder's buffer: every original value returned and the word's end value checked", 64, 1);
  v.back().rule = "RFC 7306 §5.1.1, §5.1.2, §5.2.1: a responder with atomics implements FetchAdd and CmpSwap as specified";
  v.back().needs_rfc7306 = true;
  data("immediate", kImmediate, "Immediate Data messages (with and without SE), each value and their order checked at "
       "the responder", 64, 12);
  v.back().rule = "RFC 7306 §6.3: Immediate Data consume one untagged buffer each and are delivered in order";
  v.back().needs_rfc7306 = true;
  auto term = [&](std::string_view n, Code c, std::string_view s, ExpectedTerminate e, std::string_view rule,
                  std::vector<std::string_view> cases, bool crc = false, bool markers = false) {
    v.push_back({n, c, s, 64, 1, e, false, rule, std::move(cases), false, crc, markers});
  };
  term("terminate-crc", kTermCrc, "an FPDU with a corrupted CRC", {kTermLayerLlp, 0, 0x02},
       "RFC 5044 §4.4 and §8: the receiver checks every FPDU's CRC and reports a mismatch as LLP 0x02",
       {"iwarp.mpa.fpdu.crc"}, true);
  term("terminate-marker", kTermMarker, "a marker whose FPDU pointer is wrong", {kTermLayerLlp, 0, 0x03},
       "RFC 5044 §4.3 and §8: a marker points back to the start of its FPDU; a wrong one is LLP 0x03",
       {"iwarp.mpa.marker.fpduptr"},
       false, true);
  term("terminate-msn-skip", kTermMsnSkip, "a Send whose MSN skips one", {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5041 §4.3 and §7.2: MSN advances by one per message on each untagged queue; a wrong one is DDP untagged 0x03",
       {"iwarp.ddp.msn"});
  term("terminate-msn-repeat", kTermMsnRepeat, "a Send that repeats the previous MSN", {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5041 §4.3 and §7.2: MSN advances by one per message on each untagged queue; a wrong one is DDP untagged 0x03",
       {"iwarp.ddp.msn"});
  term("terminate-oversize", kTermOversize, "an FPDU whose ULPDU length claims 64 octets more than it carries",
       {kTermLayerLlp, 0, 0x02}, "RFC 5044 §4.4 and §8: the ULPDU length frames the FPDU, so a wrong one makes the CRC fail (LLP 0x02)",
       {"iwarp.mpa.fpdu.crc"}, true);
  v.back().framing_lost = true;
  term("terminate-no-buffer", kTermNoBuffer, "a Send when the responder posted no receive buffer",
       {kTermLayerDdp, kTermDdpUntagged, 0x02}, "RFC 5041 §7.1 and §7.2: an untagged message lands in a posted buffer; none is DDP untagged 0x02", {});
  term("terminate-too-long", kTermTooLong, "a Send longer than the responder's receive buffer",
       {kTermLayerDdp, kTermDdpUntagged, 0x05}, "RFC 5041 §7.1 and §7.2: an untagged message must fit its buffer; DDP untagged 0x05", {});
  term("terminate-stag", kTermStag, "an RDMA Write to an STag that names no region", {kTermLayerDdp, kTermDdpTagged, 0x00},
       "RFC 5041 §7.1 and §7.2: tagged placement needs a valid STag; DDP tagged 0x00", {});
  term("terminate-bounds", kTermBounds, "an RDMA Write running past the end of the advertised region",
       {kTermLayerDdp, kTermDdpTagged, 0x01}, "RFC 5041 §7.1 and §7.2: tagged placement stays inside the region; DDP tagged 0x01", {});
  term("terminate-access", kTermAccess, "an RDMA Write to a region advertised for remote read only",
       {kTermLayerRdma, kTermRdmaProtection, 0x02}, "RFC 5040 §4.8 and §7.2: an RDMA Write needs an STag with remote-write rights; RDMA protection 0x02", {});
  term("terminate-read-stag", kTermReadStag, "an RDMA Read Request naming an invalid source STag",
       {kTermLayerRdma, kTermRdmaProtection, 0x00}, "RFC 5040 §7.2: a Read Request's source STag must be valid; RDMA protection 0x00", {});
  term("terminate-read-bounds", kTermReadBounds, "an RDMA Read Request running past the source region",
       {kTermLayerRdma, kTermRdmaProtection, 0x01}, "RFC 5040 §7.2: a Read Request stays inside the source region; RDMA protection 0x01", {});
  term("terminate-ord", kTermOrd, "one RDMA Read Request more than the responder's IRD", {kTermLayerDdp, kTermDdpUntagged, 0x02},
       "RFC 6581 §9.1, RFC 5040 §6.1: Read Requests in flight never exceed the responder's IRD; the extra one finds no "
       "queue 1 buffer (DDP untagged 0x02)",
       {"iwarp.rdmap.ird_ord"});
  term("terminate-invalidate", kTermInvalidate, "a Send with Invalidate naming an STag that cannot be invalidated",
       {kTermLayerRdma, kTermRdmaOperation, 0x09}, "RFC 5040 §5.3, §7.2: the STag a Send with Invalidate names must be one that can be invalidated; RDMA operation 0x09", {});
  term("terminate-ddp-version", kTermDdpVersion, "a Send whose DDP header says version 2",
       {kTermLayerDdp, kTermDdpUntagged, 0x06},
       "RFC 5041 §4.1 (DV) and §7.2, RFC 5040 §7.2 item 1: every segment carries DDP version 1; another on an untagged "
       "segment is DDP untagged 0x06",
       {"iwarp.ddp.version"});
  term("terminate-ddp-version-tagged", kTermDdpVersionTagged, "an RDMA Write whose DDP header says version 2",
       {kTermLayerDdp, kTermDdpTagged, 0x04},
       "RFC 5041 §4.1 (DV) and §7.2, RFC 5040 §7.2 item 1: every segment carries DDP version 1; another on a tagged "
       "segment is DDP tagged 0x04",
       {"iwarp.ddp.version"});
  term("terminate-rdmap-version", kTermRdmapVersion, "a Send whose RDMAP control field says version 2",
       {kTermLayerRdma, kTermRdmaOperation, 0x05},
       "RFC 5040 §4.1 (RV) and §7.2 item 3: the RDMAP version must be valid; another is a Remote Operation Error "
       "0x05 (§4.8 Figure 9)",
       {"iwarp.rdmap.version"});
  term("terminate-opcode", kTermOpcode, "an untagged message with the undefined RDMAP opcode 0xF",
       {kTermLayerRdma, kTermRdmaOperation, 0x06},
       "RFC 5040 §7.2 item 2: the RDMA opcode must be valid; an undefined one is a Remote Operation Error 0x06, "
       "Unexpected OpCode (§4.8 Figure 9)",
       {"iwarp.rdmap.opcode"});
  term("terminate-qn", kTermQn, "a Send on DDP queue 5", {kTermLayerDdp, kTermDdpUntagged, 0x01},
       "RFC 5041 §7.1 (untagged, item 1) and §7.2: the QN must be valid for the stream; another is DDP untagged 0x01",
       {"iwarp.ddp.qn", "iwarp.rdmap.queue"});  // (a Send belongs on queue 0, RFC 5040 §3.1: both rules break)
  term("terminate-read-version", kTermReadVersion, "a zero-length RDMA Read Request whose RDMAP control field says version 2",
       {kTermLayerRdma, kTermRdmaOperation, 0x05},
       "RFC 5040 §7.2 (RDMA Request Messages, item 3): a Read Request's RDMAP version must be valid; another is a "
       "Remote Operation Error 0x05 (§4.8 Figure 9)",
       {"iwarp.rdmap.version"});
  term("terminate-read-opcode", kTermReadOpcode, "a zero-length RDMA Read Request on queue 1 with the undefined opcode 0xF",
       {kTermLayerRdma, kTermRdmaOperation, 0x06},
       "RFC 5040 §7.2 (RDMA Request Messages, item 2): a Read Request's opcode must be valid; an undefined one is a "
       "Remote Operation Error 0x06, Unexpected OpCode (§4.8 Figure 9)",
       {"iwarp.rdmap.opcode"});
  term("terminate-read-wrap", kTermReadWrap, "an RDMA Read Request of 64 octets at source offset 2^64 - 32",
       {kTermLayerRdma, kTermRdmaProtection, 0x04, false, 0x01},
       "RFC 5040 §7.2 (RDMA Request Messages, items 4c to 4e): offset plus size must not wrap; TO Wrap 0x04 (§4.8 "
       "Figure 9), or Base or bounds violation 0x01 for the offset outside the region, which a responder may find first",
       {});
  term("terminate-zero-send", kTermZeroSend, "zero-length Sends, one more than the receives the responder posted",
       {kTermLayerDdp, kTermDdpUntagged, 0x02},
       "RFC 5040 §5.3: a zero-length Send still consumes an untagged buffer, so one more than were posted finds none "
       "(DDP untagged 0x02, RFC 5041 §7.2)",
       {});
  term("terminate-atomic-align", kTermAtomicAlign, "a FetchAdd whose target offset is 4 octets off 64-bit alignment",
       {kTermLayerRdma, kTermRdmaOperation, 0x07},
       "RFC 7306 §5.1.1 and §8.2: a misaligned FetchAdd is an error that leaves memory alone and draws a Remote "
       "Operation Error 0x07, Catastrophic error localized to the RDMAP Stream",
       {"iwarp.rdmap.atomic.alignment"});
  term("terminate-cmpswap-align", kTermCmpSwapAlign, "a CmpSwap whose target offset is 4 octets off 64-bit alignment",
       {kTermLayerRdma, kTermRdmaOperation, 0x07},
       "RFC 7306 §5.1.2 and §8.2: a misaligned CmpSwap is not performed, leaves memory alone and draws a Remote "
       "Operation Error 0x07, Catastrophic error localized to the RDMAP Stream",
       {"iwarp.rdmap.atomic.alignment"});
  term("terminate-atomic-opcode", kTermAtomicOpcode, "an Atomic Request with Atomic Operation Code 1, which RFC 7306 does not define",
       {kTermLayerRdma, 0, 0, true},
       "RFC 7306 §5.2.1 item 4 and §8: an Atomic Operation Code the responder does not support is surfaced as an "
       "error, reported with a Terminate of the RDMA layer (RFC 5040 §7.1; the text names no code)",
       {"iwarp.rdmap.atomic.format"});
  term("terminate-immediate-length", kTermImmediateLength, "an Immediate Data message carrying 4 octets instead of 8",
       {kTermLayerRdma, 0, 0, true},
       "RFC 7306 §6.3: the receiver checks that Immediate Data carry exactly 8 octets; one that does not is an error "
       "on an incoming message, reported with a Terminate (§8.2; the text names no code)",
       {"iwarp.ddp.segment.header"});  // (the 4 octets are too few for the Immediate Data header the opcode calls for)
  // RFC 7306 §8.2 items 1-3: an incoming Atomic Request gets the checks of
  // every message first (DDP fields, RDMAP opcode and version).
  term("terminate-atomic-ddp-version", kTermAtomicDdpVersion, "a FetchAdd whose DDP header says version 2",
       {kTermLayerDdp, kTermDdpUntagged, 0x06},
       "RFC 7306 §8.2 item 1, RFC 5041 §4.1 (DV) and §7.2: DDP validates every field of an Atomic Request's segment; "
       "another DDP version on an untagged segment is DDP untagged 0x06",
       {"iwarp.ddp.version"});
  term("terminate-atomic-rdmap-opcode", kTermAtomicRdmapOpcode,
       "a FetchAdd's segment (queue 3, Atomic Request header) with the undefined RDMAP opcode 0xF",
       {kTermLayerRdma, kTermRdmaOperation, 0x06},
       "RFC 7306 §8.2 item 2, RFC 5040 §4.8 Figure 9: the RDMAP opcode of an incoming Atomic message is validated; an "
       "undefined one is a Remote Operation Error 0x06, Unexpected OpCode",
       {"iwarp.rdmap.opcode"});
  term("terminate-atomic-version", kTermAtomicVersion, "a FetchAdd whose RDMAP control field says version 2",
       {kTermLayerRdma, kTermRdmaOperation, 0x05},
       "RFC 7306 §8.2 item 3, RFC 5040 §4.8 Figure 9: the RDMAP version of an incoming Atomic message is validated; "
       "another is a Remote Operation Error 0x05",
       {"iwarp.rdmap.version"});
  for (auto* t : {"terminate-atomic-align", "terminate-cmpswap-align", "terminate-atomic-opcode", "terminate-immediate-length",
                  "terminate-atomic-ddp-version", "terminate-atomic-rdmap-opcode", "terminate-atomic-version"})
    for (auto& x : v)
      if (x.name == t) x.needs_rfc7306 = true;
  term("silent-after-crc", kSilentAfterCrc, "an FPDU with a corrupted CRC, then a zero-length RDMA Read Request",
       {kTermLayerLlp, 0, 0x02},
       "RFC 5044 §8: after reporting an error MPA passes no more FPDUs of that half connection; RFC 5040 §7.1: "
       "nothing follows the Terminate. The Read Request behind the bad FPDU must go unanswered",
       {"iwarp.mpa.fpdu.crc"}, true);
  v.back().behind = ScenarioInfo::Behind::zero_read;
  term("silent-after-msn", kSilentAfterMsn, "a Send whose MSN skips one, then a zero-length RDMA Read Request",
       {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5041 §7.1: after an error DDP drops every later segment of the stream; RFC 5040 §7.1: nothing follows the "
       "Terminate. The Read Request behind the bad Send must go unanswered",
       {"iwarp.ddp.msn"});
  v.back().behind = ScenarioInfo::Behind::zero_read;
  term("terminate-first-error", kTermFirstError, "a Send whose MSN skips one, then an RDMA Write to an STag that names no region",
       {kTermLayerDdp, kTermDdpUntagged, 0x03},
       "RFC 5040 §7.1 rule 4: with several errors found before the Terminate goes out, it describes the first message "
       "that erred (here the Send: DDP untagged 0x03, its DDP header copied)",
       {"iwarp.ddp.msn"});
  v.back().behind = ScenarioInfo::Behind::second_error;
  // Two connections: the STag of the first, used on the second (RFC 5040
  // §7.2 and §8.1.1, RFC 5041 §8.2 and §8.3.1); the first goes on after the
  // second's Terminate, and its data must be intact.
  term("terminate-stag-stream", kTermStagStream,
       "an RDMA Write on a second connection to the STag the responder advertised on the first",
       {kTermLayerDdp, kTermDdpTagged, 0x00, false, 0x02},
       "RFC 5041 §8.2 and §8.3.1, RFC 5040 §8.1.1: an STag is used only on the streams of its protection domain (and "
       "its stream); a Write naming another's is not placed and is reported (DDP tagged 0x00 invalid STag, or 0x02 "
       "STag not associated with the stream). The first connection's buffer must be untouched",
       {});
  v.back().second_connection = true;
  term("terminate-read-stag-stream", kTermReadStagStream,
       "an RDMA Read Request on a second connection naming the source STag the responder advertised on the first",
       {kTermLayerRdma, kTermRdmaProtection, 0x00, false, 0x03},
       "RFC 5040 §7.2 (RDMA Request item 4b) and §8.1.1: a Read Request's Data Source STag must be associated with the "
       "stream it arrives on (RDMA protection 0x03, or 0x00 invalid STag)",
       {});
  v.back().second_connection = true;
  term("terminate-invalidate-stream", kTermInvalidateStream,
       "a Send with Invalidate on a second connection naming the STag the responder advertised on the first",
       {kTermLayerRdma, 0, 0, true},
       "RFC 5040 §7.2 (Send with Invalidate items 4-5): the Invalidate STag must be valid and associated with the "
       "stream it arrives on; the text names no code (any RDMA-layer Terminate). The first connection's STag must "
       "still work afterwards",
       {});
  v.back().second_connection = true;
  term("terminate-revoked", kTermRevoked,
       "a Send with Invalidate naming the responder's own writable STag, then an RDMA Write to it",
       {kTermLayerDdp, kTermDdpTagged, 0x00},
       "RFC 5040 §8.1.1 and RFC 5041 §8.3.1: once remote access to an STag is revoked the network can no longer change "
       "the buffer; the Write names an invalid STag (DDP tagged 0x00)",
       {});
  v.push_back({"terminate-before-reply", kTermBeforeReply,
               "an FPDU sent right behind the MPA Request, before the Reply", 64, 1, std::nullopt, true, "RFC 5044 §7.1.2: the initiator sends no FPDU before it has received the Reply; with no framing agreed the "
               "responder can only close",
               {"iwarp.mpa.fpdu.before_exchange"}, true, false, false});  // sent before markers/CRC were agreed
  // A Request the responder must refuse by closing the connection, with no
  // Reply and no Terminate (no framing is agreed).
  auto bad_request = [&](std::string_view n, Code c, std::string_view s, std::string_view rule,
                         std::vector<std::string_view> failing) {
    const bool unrecognisable = failing.empty();
    v.push_back({n, c, s, 64, 1, std::nullopt, true, rule, std::move(failing), false, false, false, true, unrecognisable});
  };
  bad_request("mpa-request-key", kMpaKey, "an MPA Request whose key ends in \"FramE\"",
              "RFC 5044 §7.1.1 (Key) and §7.1.2 rule 5: a responder finding any other key than \"MPA ID Req Frame\" "
              "closes the connection",
              {});  // (unanswered, the connection has nothing the checker reads as MPA: iwarp.mpa.req.key has no frame)
  bad_request("mpa-request-revision", kMpaRevision, "an MPA Request of revision 0",
              "RFC 5044 §7.1.1 (Rev): a receiver that cannot interoperate with the revision received (no MPA revision "
              "0 exists) closes the connection; §7.1.2 rule 2: an improperly formatted Request is answered by a close",
              {"iwarp.mpa.rr.revision"});
  bad_request("mpa-request-private-data", kMpaPrivateData, "an MPA Request with 513 octets of private data",
              "RFC 5044 §7.1.1 (PD_Length, Private Data): private data of more than 512 octets makes the receiver "
              "close the connection",
              {"iwarp.mpa.rr.pd_length"});
  // No Request at all: a responder should give up waiting for it (RFC 5044
  // §7.1.2 rules 8 and 10, SHOULD); judged by the time it takes to close.
  v.push_back({"mpa-no-request", kMpaWithheld, "a TCP connection on which the initiator never sends its MPA Request",
               64, 1, std::nullopt, true,
               "RFC 5044 §7.1.2 rule 8: a responder should time out waiting for the Request (two responders meeting); "
               "rule 10: a reasonable timeout for the whole set of startup frames (SHOULD)",
               {}, false, false, false, true, true});
  return v;
}

}  // namespace

std::string ExpectedTerminate::text() const {
  if (any_type) return fmt::format("{}/any", layer);
  return or_code ? fmt::format("{}/{}/{:#04x} or {:#04x}", layer, etype, code, *or_code)
                 : fmt::format("{}/{}/{:#04x}", layer, etype, code);
}

const std::vector<ScenarioInfo>& scenarios() {
  static const std::vector<ScenarioInfo> v = make_catalog();
  return v;
}

const std::vector<ReplyFault>& reply_faults() {
  using F = eng::Faults::Frame;
  static const std::vector<ReplyFault> v = {
      {"key", F::key, "a Reply whose key ends in \"FramE\"",
       "RFC 5044 §7.1.1 (Key) and §7.1.2 rules 3 and 5: an initiator finding any other key than \"MPA ID Rep "
       "Frame\" closes the connection",
       {"iwarp.mpa.rep.key"}},
      {"revision", F::revision, "a Reply of revision 0",
       "RFC 5044 §7.1.1 (Rev): a receiver that cannot interoperate with the revision received (no MPA revision 0 "
       "exists) closes the connection; §7.1.2 rule 3: an improperly formatted Reply is answered by a close",
       // (revision 1's layout: to an enhanced Request, a Reply that is not enhanced)
       {"iwarp.mpa.rr.revision", "iwarp.mpa.v2.reply_enhanced"}},
      {"private-data", F::private_data, "a Reply with 513 octets of private data",
       "RFC 5044 §7.1.1 (PD_Length, Private Data): private data of more than 512 octets makes the receiver close "
       "the connection",
       {"iwarp.mpa.rr.pd_length"}},
      {"request-key", F::request_key, "a Reply that carries the Request's key, as a second initiator would",
       "RFC 5044 §7.1.2 rule 8: an initiator uses the difference between the Request and the Reply to detect two "
       "initiators meeting; rule 3: an improperly formatted Reply is answered by a close",
       {"iwarp.mpa.rep.key"}},
      {"withheld", F::withheld, "no Reply at all",
       "RFC 5044 §7.1.2 rule 10: an MPA implementation should time out waiting for the startup frames (SHOULD)",
       {}},
      {"ord-excess", F::ord_excess, "an enhanced Reply whose ORD is 0x3FFE, beyond the IRD the Request offered",
       "RFC 6581 §9.1: an initiator without the resources for the IRD the responder's ORD needs sends a Terminate "
       "LLP/0/6 (insufficient IRD) and ends the connection",
       {"iwarp.mpa.v2.ird_ord"},
       ExpectedTerminate{kTermLayerLlp, 0, pi::kTermLlpInsufficientIrd}},
  };
  return v;
}

std::vector<std::string_view> rping_faults() { return {"terminate-read-bounds", "terminate-ord", "terminate-bounds"}; }

const ReplyFault* find_reply_fault(std::string_view name) {
  for (const auto& f : reply_faults())
    if (f.name == name) return &f;
  return nullptr;
}

const ScenarioInfo* find_scenario(std::string_view name) {
  for (const auto& s : scenarios())
    if (s.name == name) return &s;
  return nullptr;
}


}  // namespace rdmaconf::interop::iwarp

#pragma once
// iWARP wire headers: MPA (RFC 5044, RFC 6581), DDP (RFC 5041), RDMAP
// (RFC 5040, RFC 7306). Section numbers are those of the RFC texts (the
// requirement ledger, conformance/iwarp/ledger/, is held against them).
#include <initializer_list>
#include <iterator>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols::iwarp {

// ---------------------------------------------------------------- MPA
inline constexpr std::string_view kMpaRequestKey = "MPA ID Req Frame";
inline constexpr std::string_view kMpaReplyKey = "MPA ID Rep Frame";
inline constexpr std::size_t kMpaMaxPrivateData = 512;  // RFC 5044 §7.1.1
inline constexpr std::size_t kMpaMarkerInterval = 512;  // RFC 5044 §4.3
inline constexpr std::size_t kMpaCrcSize = 4;
inline constexpr std::size_t kMaxUlpdu = 64768;  // RFC 5044 §3: MULPDU is 128 to 64768 octets

// MPA Request / Reply frame (RFC 5044 §7.1.1); the "enhanced" bit is RFC 6581's.
struct MpaRr { enum : std::size_t { key, m, c, r, enhanced, rsvd, rev, pd_len, count_ }; };
inline constexpr ValueName kMpaRevisions[] = {{1, "RFC 5044"}, {2, "RFC 6581 enhanced"}};
inline constexpr FieldDef kMpaRrFields[] = {
    {"mpa.key", "Key", 0, 128, Display::ascii, {}, false, "RFC 5044 §7.1.1"},
    {"mpa.marker_flag", "Markers required (M)", 128, 1, Display::flag, {}, false, "RFC 5044 §7.1.1"},
    {"mpa.crc_flag", "CRC required (C)", 129, 1, Display::flag, {}, false, "RFC 5044 §7.1.1"},
    {"mpa.rej_flag", "Connection rejected (R)", 130, 1, Display::flag, {}, false, "RFC 5044 §7.1.1"},
    {"mpa.enhanced_flag", "Enhanced connection setup", 131, 1, Display::flag, {}, false, "RFC 6581 §6"},
    {"mpa.rsvd", "Reserved", 132, 4, Display::hex, {}, true, "RFC 5044 §7.1.1"},
    {"mpa.rev", "Revision", 136, 8, Display::dec, kMpaRevisions, false, "RFC 5044 §7.1.1, RFC 6581 §6"},
    {"mpa.pd_length", "Private data length", 144, 16, Display::dec, {}, false, "RFC 5044 §7.1.1"},
};
inline constexpr HeaderDef kMpaRr{"mpa.rr", "MPA Request/Reply", "RFC 5044 §7.1.1", 20, kMpaRrFields};

// RFC 6581 enhanced-mode IRD/ORD word, first in the private data of revision 2.
struct MpaV2 { enum : std::size_t { p2p, send_rtr, ird, write_rtr, read_rtr, ord, count_ }; };
inline constexpr FieldDef kMpaV2Fields[] = {
    {"mpa.v2.p2p", "Peer-to-peer (A)", 0, 1, Display::flag, {}, false, "RFC 6581 §9"},
    {"mpa.v2.send_rtr", "Zero-length Send RTR (B)", 1, 1, Display::flag, {}, false, "RFC 6581 §9"},
    {"mpa.v2.ird", "IRD", 2, 14, Display::dec, {}, false, "RFC 6581 §9"},
    {"mpa.v2.write_rtr", "Zero-length Write RTR (C)", 16, 1, Display::flag, {}, false, "RFC 6581 §9"},
    {"mpa.v2.read_rtr", "Zero-length Read RTR (D)", 17, 1, Display::flag, {}, false, "RFC 6581 §9"},
    {"mpa.v2.ord", "ORD", 18, 14, Display::dec, {}, false, "RFC 6581 §9"},
};
inline constexpr HeaderDef kMpaV2{"mpa.v2", "MPA enhanced IRD/ORD", "RFC 6581 §9", 4, kMpaV2Fields};

// FPDU header: the ULPDU length. Pad and CRC are computed (hooks in mpa.hpp).
struct MpaFpdu { enum : std::size_t { ulpdu_len, count_ }; };
inline constexpr FieldDef kMpaFpduFields[] = {
    {"mpa.ulpdu_length", "ULPDU length", 0, 16, Display::dec, {}, false, "RFC 5044 §4.1"},
};
inline constexpr HeaderDef kMpaFpdu{"mpa.fpdu", "MPA FPDU", "RFC 5044 §4.1", 2, kMpaFpduFields};

struct MpaMarker { enum : std::size_t { rsvd, fpduptr, count_ }; };
inline constexpr FieldDef kMpaMarkerFields[] = {
    {"mpa.marker.rsvd", "Reserved", 0, 16, Display::hex, {}, true, "RFC 5044 §4.2"},
    {"mpa.marker.fpduptr", "FPDU pointer", 16, 16, Display::dec, {}, false, "RFC 5044 §4.2"},
};
inline constexpr HeaderDef kMpaMarker{"mpa.marker", "MPA marker", "RFC 5044 §4.2", 4, kMpaMarkerFields};

// ---------------------------------------------------------------- DDP + RDMAP control
// The RDMAP control bits live in DDP's octet reserved for the ULP (RFC 5040 §4.1),
// so both DDP layouts carry them.
enum RdmapOpcode : std::uint8_t {
  kOpWrite = 0x0, kOpReadRequest = 0x1, kOpReadResponse = 0x2, kOpSend = 0x3, kOpSendInvalidate = 0x4,
  kOpSendSe = 0x5, kOpSendSeInvalidate = 0x6, kOpTerminate = 0x7, kOpImmediate = 0x8, kOpImmediateSe = 0x9,
  kOpAtomicRequest = 0xA, kOpAtomicResponse = 0xB,
};
inline constexpr ValueName kRdmapOpcodes[] = {
    {kOpWrite, "RDMA Write"}, {kOpReadRequest, "RDMA Read Request"}, {kOpReadResponse, "RDMA Read Response"},
    {kOpSend, "Send"}, {kOpSendInvalidate, "Send with Invalidate"}, {kOpSendSe, "Send with Solicited Event"},
    {kOpSendSeInvalidate, "Send with SE and Invalidate"}, {kOpTerminate, "Terminate"},
    {kOpImmediate, "Immediate Data"}, {kOpImmediateSe, "Immediate Data with SE"},
    {kOpAtomicRequest, "Atomic Request"}, {kOpAtomicResponse, "Atomic Response"},
};
// RFC 5040 §4.2 Figure 4 and RFC 7306 §10.2 (queue 1 carries Atomic Requests too).
inline constexpr ValueName kDdpQueues[] = {{0, "Send"}, {1, "Read Request"}, {2, "Terminate"}, {3, "Atomic Response"}};

#define RDMACONF_DDP_CONTROL_ROWS                                                                  \
  {"ddp.t_flag", "Tagged (T)", 0, 1, Display::flag, {}, false, "RFC 5041 §4.1"},                    \
      {"ddp.l_flag", "Last (L)", 1, 1, Display::flag, {}, false, "RFC 5041 §4.1"},                   \
      {"ddp.rsvd", "Reserved", 2, 4, Display::hex, {}, true, "RFC 5041 §4.1"},                       \
      {"ddp.dv", "DDP version", 6, 2, Display::dec, {}, false, "RFC 5041 §4.1"},                     \
      {"rdmap.rv", "RDMAP version", 8, 2, Display::dec, {}, false, "RFC 5040 §4.1"},               \
      {"rdmap.rsvd", "Reserved", 10, 2, Display::hex, {}, true, "RFC 5040 §4.1"},                  \
  {                                                                                                \
    "rdmap.opcode", "RDMAP opcode", 12, 4, Display::hex, kRdmapOpcodes, false, "RFC 5040 §4.1, RFC 7306 §4.1" \
  }

struct DdpTagged { enum : std::size_t { t, l, rsvd, dv, rv, rdmap_rsvd, opcode, stag, to, count_ }; };
inline constexpr FieldDef kDdpTaggedFields[] = {
    RDMACONF_DDP_CONTROL_ROWS,
    {"ddp.stag", "STag", 16, 32, Display::hex, {}, false, "RFC 5041 §4.2"},
    {"ddp.to", "Tagged offset", 48, 64, Display::hex, {}, false, "RFC 5041 §4.2"},
};
inline constexpr HeaderDef kDdpTagged{"ddp.tagged", "DDP tagged header", "RFC 5041 §4.2", 14, kDdpTaggedFields};

struct DdpUntagged { enum : std::size_t { t, l, rsvd, dv, rv, rdmap_rsvd, opcode, rsvd_ulp, qn, msn, mo, count_ }; };
inline constexpr FieldDef kDdpUntaggedFields[] = {
    RDMACONF_DDP_CONTROL_ROWS,
    {"ddp.rsvdulp", "Reserved for ULP (RDMAP Invalidate STag)", 16, 32, Display::hex, {}, false, "RFC 5041 §4.3, RFC 5040 §4.1"},
    {"ddp.qn", "Queue number", 48, 32, Display::dec, kDdpQueues, false, "RFC 5041 §4.3"},
    {"ddp.msn", "Message sequence number", 80, 32, Display::dec, {}, false, "RFC 5041 §4.3"},
    {"ddp.mo", "Message offset", 112, 32, Display::dec, {}, false, "RFC 5041 §4.3"},
};
inline constexpr HeaderDef kDdpUntagged{"ddp.untagged", "DDP untagged header", "RFC 5041 §4.3", 18, kDdpUntaggedFields};
#undef RDMACONF_DDP_CONTROL_ROWS

// ---------------------------------------------------------------- RDMAP bodies
struct ReadRequest { enum : std::size_t { sink_stag, sink_to, size, src_stag, src_to, count_ }; };
inline constexpr FieldDef kReadRequestFields[] = {
    {"rdmap.sink_stag", "Data sink STag", 0, 32, Display::hex, {}, false, "RFC 5040 §4.4"},
    {"rdmap.sink_to", "Data sink tagged offset", 32, 64, Display::hex, {}, false, "RFC 5040 §4.4"},
    {"rdmap.read_size", "RDMA Read message size", 96, 32, Display::dec, {}, false, "RFC 5040 §4.4"},
    {"rdmap.src_stag", "Data source STag", 128, 32, Display::hex, {}, false, "RFC 5040 §4.4"},
    {"rdmap.src_to", "Data source tagged offset", 160, 64, Display::hex, {}, false, "RFC 5040 §4.4"},
};
inline constexpr HeaderDef kReadRequest{"rdmap.readreq", "RDMA Read Request", "RFC 5040 §4.4", 28, kReadRequestFields};

inline constexpr ValueName kTermLayers[] = {{0, "RDMA"}, {1, "DDP"}, {2, "LLP (MPA/TCP)"}};
struct Terminate { enum : std::size_t { layer, etype, ecode, m, d, r, rsvd, count_ }; };
inline constexpr FieldDef kTerminateFields[] = {
    {"rdmap.term.layer", "Layer", 0, 4, Display::dec, kTermLayers, false, "RFC 5040 §4.8"},
    {"rdmap.term.etype", "Error type", 4, 4, Display::dec, {}, false, "RFC 5040 §4.8"},
    {"rdmap.term.ecode", "Error code", 8, 8, Display::hex, {}, false, "RFC 5040 §4.8"},
    {"rdmap.term.m", "DDP segment length valid (M)", 16, 1, Display::flag, {}, false, "RFC 5040 §4.8"},
    {"rdmap.term.d", "DDP header included (D)", 17, 1, Display::flag, {}, false, "RFC 5040 §4.8"},
    {"rdmap.term.r", "RDMAP header included (R)", 18, 1, Display::flag, {}, false, "RFC 5040 §4.8"},
    {"rdmap.term.rsvd", "Reserved", 19, 13, Display::hex, {}, true, "RFC 5040 §4.8"},
};
inline constexpr HeaderDef kTerminate{"rdmap.term", "RDMAP Terminate control", "RFC 5040 §4.8", 4, kTerminateFields};

// Terminate layers and error types (RFC 5040 §7.2, RFC 5044 §8).
inline constexpr unsigned kTermLayerRdma = 0, kTermLayerDdp = 1, kTermLayerLlp = 2;
inline constexpr unsigned kTermRdmaProtection = 1, kTermRdmaOperation = 2;
inline constexpr unsigned kTermDdpTagged = 1, kTermDdpUntagged = 2;
// RFC 6581 §8: the LLP (MPA) error codes of enhanced connection setup.
inline constexpr unsigned kTermLlpInsufficientIrd = 0x06, kTermLlpNoMatchingRtr = 0x07;

// Layer / error type / error code combinations a Terminate may carry
// (RFC 5040 §4.8 Figure 9 for the RDMA layer, RFC 5041 §7.2 for DDP,
// RFC 5044 §8 and RFC 6581 §8 for the LLP layer).
struct TerminateCodes {
  unsigned layer, etype;
  std::initializer_list<unsigned> codes;
};
inline constexpr TerminateCodes kTerminateCodes[] = {
    {0, 0, {0x00}},                                      // RDMA: local catastrophic
    {0, 1, {0x00, 0x01, 0x02, 0x03, 0x04, 0x09, 0xff}},  // RDMA: remote protection error
    {0, 2, {0x05, 0x06, 0x07, 0x08, 0x09, 0xff}},        // RDMA: remote operation error
    {1, 0, {0x00}},                                      // DDP: local catastrophic
    {1, 1, {0x00, 0x01, 0x02, 0x03, 0x04}},              // DDP: tagged buffer error
    {1, 2, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06}},        // DDP: untagged buffer error
    {2, 0, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}},  // LLP (MPA/TCP)
};
constexpr bool terminate_code_defined(unsigned layer, unsigned etype, unsigned code) {
  for (const auto& t : kTerminateCodes)
    if (t.layer == layer && t.etype == etype)
      for (unsigned c : t.codes)
        if (c == code) return true;
  return false;
}

struct DdpSegLen { enum : std::size_t { len, count_ }; };
inline constexpr FieldDef kDdpSegLenFields[] = {
    {"rdmap.term.ddp_seg_len", "Terminated DDP segment length", 0, 16, Display::dec, {}, false, "RFC 5040 §4.8"},
};
inline constexpr HeaderDef kDdpSegLen{"rdmap.term.seglen", "Terminated DDP segment length", "RFC 5040 §4.8", 2, kDdpSegLenFields};

struct Immediate { enum : std::size_t { data, count_ }; };
inline constexpr FieldDef kImmediateFields[] = {
    {"rdmap.immediate", "Immediate data", 0, 64, Display::hex, {}, false, "RFC 7306 §6.2"},
};
inline constexpr HeaderDef kImmediate{"rdmap.imm", "Immediate Data", "RFC 7306 §6.2", 8, kImmediateFields};

// RFC 7306 §5.2.1 Figure 5 and §10.1: FetchAdd 0000b, CmpSwap 0010b; 0x1 is reserved.
inline constexpr std::uint8_t kAtomicFetchAdd = 0x0, kAtomicCmpSwap = 0x2;
inline constexpr ValueName kAtomicOps[] = {{kAtomicFetchAdd, "FetchAdd"}, {kAtomicCmpSwap, "CmpSwap"}};
struct AtomicRequest {
  enum : std::size_t { rsvd, op, req_id, stag, to, add_swap, add_swap_mask, compare, compare_mask, count_ };
};
inline constexpr FieldDef kAtomicRequestFields[] = {
    {"rdmap.atomic.rsvd", "Reserved", 0, 28, Display::hex, {}, true, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.op", "Atomic operation", 28, 4, Display::dec, kAtomicOps, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.req_id", "Request identifier", 32, 32, Display::dec, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.stag", "Remote STag", 64, 32, Display::hex, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.to", "Remote tagged offset", 96, 64, Display::hex, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.add_swap", "Add or swap data", 160, 64, Display::hex, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.add_swap_mask", "Add or swap mask", 224, 64, Display::hex, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.compare", "Compare data", 288, 64, Display::hex, {}, false, "RFC 7306 §5.2.1"},
    {"rdmap.atomic.compare_mask", "Compare mask", 352, 64, Display::hex, {}, false, "RFC 7306 §5.2.1"},
};
inline constexpr HeaderDef kAtomicRequest{"rdmap.atomicreq", "Atomic Request", "RFC 7306 §5.2.1", 52, kAtomicRequestFields};

struct AtomicResponse { enum : std::size_t { req_id, orig, count_ }; };
inline constexpr FieldDef kAtomicResponseFields[] = {
    {"rdmap.atomic.resp_req_id", "Original request identifier", 0, 32, Display::dec, {}, false, "RFC 7306 §5.2.2"},
    {"rdmap.atomic.orig", "Original remote data value", 32, 64, Display::hex, {}, false, "RFC 7306 §5.2.2"},
};
inline constexpr HeaderDef kAtomicResponse{"rdmap.atomicresp", "Atomic Response", "RFC 7306 §5.2.2", 12, kAtomicResponseFields};

static_assert(table_is_sound(kMpaRr) && std::size(kMpaRrFields) == MpaRr::count_);
static_assert(table_is_sound(kMpaV2) && std::size(kMpaV2Fields) == MpaV2::count_);
static_assert(table_is_sound(kMpaFpdu) && std::size(kMpaFpduFields) == MpaFpdu::count_);
static_assert(table_is_sound(kMpaMarker) && std::size(kMpaMarkerFields) == MpaMarker::count_);
static_assert(table_is_sound(kDdpTagged) && std::size(kDdpTaggedFields) == DdpTagged::count_);
static_assert(table_is_sound(kDdpUntagged) && std::size(kDdpUntaggedFields) == DdpUntagged::count_);
static_assert(table_is_sound(kReadRequest) && std::size(kReadRequestFields) == ReadRequest::count_);
static_assert(table_is_sound(kTerminate) && std::size(kTerminateFields) == Terminate::count_);
static_assert(table_is_sound(kDdpSegLen) && std::size(kDdpSegLenFields) == DdpSegLen::count_);
static_assert(table_is_sound(kImmediate) && std::size(kImmediateFields) == Immediate::count_);
static_assert(table_is_sound(kAtomicRequest) && std::size(kAtomicRequestFields) == AtomicRequest::count_);
static_assert(table_is_sound(kAtomicResponse) && std::size(kAtomicResponseFields) == AtomicResponse::count_);

// Field indices shared by both DDP layouts (the control rows come first in each).
static_assert(std::size_t{DdpTagged::opcode} == std::size_t{DdpUntagged::opcode} && std::size_t{DdpTagged::t} == std::size_t{DdpUntagged::t});

}  // namespace rdmaconf::protocols::iwarp

#pragma once
// The RDMAP operations as one table, in the spirit of the Linux siw driver's
// per-opcode packet info: for each opcode (RFC 5040 §4.2, RFC 7306 §4.1-4.2) how it
// travels (tagged or on which untagged queue), the RDMAP header after the DDP
// header, what payload it carries and what answers it. The engine's transmit
// and receive, the codec, the framing heuristics of the checker and the cases
// read it; nothing else spells these facts.
#include <array>
#include <cstdint>
#include <string_view>

#include "protocols/iwarp/headers.hpp"

namespace rdmaconf::protocols::iwarp {

enum class RdmapKind : std::uint8_t { write, read_request, read_response, send, terminate, immediate, atomic_request, atomic_response };
enum class RdmapPayload : std::uint8_t {
  none,      // the RDMAP header is all there is (Read Request, Terminate's copies aside, Atomics)
  data,      // any number of octets (Write, Read Response, the Send family)
};
inline constexpr std::uint8_t kNoQueue = 0xFF;
inline constexpr std::uint8_t kNoOpcode = 0xFF;

struct RdmapOpInfo {
  bool valid = false;
  std::uint8_t opcode = 0;
  RdmapKind kind = RdmapKind::send;
  bool tagged = false;                // tagged DDP segments (RFC 5040 §5.1)
  std::uint8_t queue = kNoQueue;      // the untagged queue (RFC 5040 §4.2 Figure 4; RFC 7306 §4.1 Figure 2)
  const HeaderDef* header = nullptr;  // the RDMAP header after the DDP header, if any
  RdmapPayload payload = RdmapPayload::none;
  bool solicited = false;             // Send with SE, Immediate Data with SE
  bool invalidate = false;            // carries an STag to invalidate (in DDP's reserved-for-ULP word)
  std::uint8_t answered_by = kNoOpcode;  // the opcode of the response a peer owes
};

constexpr std::array<RdmapOpInfo, 16> make_rdmap_table() {
  std::array<RdmapOpInfo, 16> t{};
  auto op = [&](std::uint8_t code, RdmapKind kind, bool tagged, std::uint8_t queue, const HeaderDef* header,
                RdmapPayload payload, bool se = false, bool inv = false, std::uint8_t answer = kNoOpcode) {
    t[code] = RdmapOpInfo{true, code, kind, tagged, queue, header, payload, se, inv, answer};
  };
  using K = RdmapKind;
  using P = RdmapPayload;
  op(kOpWrite, K::write, true, kNoQueue, nullptr, P::data);
  op(kOpReadRequest, K::read_request, false, 1, &kReadRequest, P::none, false, false, kOpReadResponse);
  op(kOpReadResponse, K::read_response, true, kNoQueue, nullptr, P::data);
  op(kOpSend, K::send, false, 0, nullptr, P::data);
  op(kOpSendInvalidate, K::send, false, 0, nullptr, P::data, false, true);
  op(kOpSendSe, K::send, false, 0, nullptr, P::data, true);
  op(kOpSendSeInvalidate, K::send, false, 0, nullptr, P::data, true, true);
  op(kOpTerminate, K::terminate, false, 2, &kTerminate, P::none);
  op(kOpImmediate, K::immediate, false, 0, &kImmediate, P::none);
  op(kOpImmediateSe, K::immediate, false, 0, &kImmediate, P::none, true);
  // RFC 7306 §5.2: Atomic Requests share the Read Request queue (and so its
  // IRD/ORD accounting); Atomic Responses travel on queue 3, the one queue
  // RFC 7306 adds (§4.1 Figure 2, §10.2).
  op(kOpAtomicRequest, K::atomic_request, false, 1, &kAtomicRequest, P::none, false, false, kOpAtomicResponse);
  op(kOpAtomicResponse, K::atomic_response, false, 3, &kAtomicResponse, P::none);
  return t;
}
inline constexpr std::array<RdmapOpInfo, 16> kRdmapOps = make_rdmap_table();

// The entry of a 4-bit RDMAP opcode; `valid` is false for the undefined ones.
constexpr const RdmapOpInfo& rdmap_op(std::uint8_t opcode) { return kRdmapOps[opcode & 0xF]; }
// The highest untagged queue number RDMAP uses (RFC 5040's 0-2, RFC 7306's 3;
// RFC 7306 §10.2 leaves every other number unassigned).
inline constexpr std::uint8_t kMaxRdmapQueue = 3;
inline constexpr std::size_t kRdmapQueues = kMaxRdmapQueue + 1;

static_assert(rdmap_op(kOpReadRequest).answered_by == kOpReadResponse && rdmap_op(kOpWrite).tagged &&
              rdmap_op(kOpTerminate).queue == 2 && !rdmap_op(0xC).valid && rdmap_op(kOpAtomicRequest).queue == 1 &&
              rdmap_op(kOpAtomicResponse).queue == 3);

}  // namespace rdmaconf::protocols::iwarp

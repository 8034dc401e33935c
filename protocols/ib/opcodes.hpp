#pragma once
// The BTH opcode table (IBTA Vol.1 §9.2.1 Table 35 and Annex A17 for CNP):
// which extension headers follow the BTH, whether a payload may follow, and
// where the packet sits in a message. Built at compile time from the list of
// operations and the operations each transport allows.
#include <array>
#include <cstdint>
#include <string_view>

namespace rdmaconf::protocols::ib {

// Extension headers in the order they follow the BTH.
enum Ext : std::uint16_t {
  kExtRdeth = 1u << 0,
  kExtDeth = 1u << 1,
  kExtXrceth = 1u << 2,
  kExtFeth = 1u << 3,
  kExtReth = 1u << 4,
  kExtAtomicEth = 1u << 5,
  kExtAeth = 1u << 6,
  kExtAtomicAckEth = 1u << 7,
  kExtImmDt = 1u << 8,
  kExtIeth = 1u << 9,
};
inline constexpr std::size_t kExtCount = 10;

// The operation in an opcode's low five bits (IBTA Vol.1 §9.2.1 Table 35);
// the top three bits select the transport (kTransportUc, ...).
enum Op : std::uint8_t {
  kSendFirst = 0x00, kSendMiddle = 0x01, kSendLast = 0x02, kSendLastImm = 0x03, kSendOnly = 0x04, kSendOnlyImm = 0x05,
  kWriteFirst = 0x06, kWriteMiddle = 0x07, kWriteLast = 0x08, kWriteLastImm = 0x09, kWriteOnly = 0x0A,
  kWriteOnlyImm = 0x0B, kReadRequest = 0x0C, kReadRespFirst = 0x0D, kReadRespMiddle = 0x0E, kReadRespLast = 0x0F,
  kReadRespOnly = 0x10, kAck = 0x11, kAtomicAck = 0x12, kCompareSwap = 0x13, kFetchAdd = 0x14, kResync = 0x15,
  kSendLastInv = 0x16, kSendOnlyInv = 0x17, kFlush = 0x1C, kAtomicWrite = 0x1D,
};
inline constexpr std::uint8_t kOperationMask = 0x1F;
inline constexpr std::uint8_t kTransportRc = 0x00, kTransportUc = 0x20, kTransportRd = 0x40, kTransportUd = 0x60,
                              kTransportXrc = 0xA0;
inline constexpr std::uint8_t kOpcodeCnp = 0x81;  // RoCEv2 Congestion Notification (Annex A17.9.3; ledger ib-cnp-format)

// PSNs are 24 bits and wrap (IBTA Vol.1 §9.7.1): the signed distance a - b
// within half the space, and a PSN moved by n.
inline constexpr std::uint32_t kPsnMask = 0xFFFFFF;
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) {
  const std::uint32_t d = (a - b) & kPsnMask;
  return d >= 0x800000 ? static_cast<std::int32_t>(d) - 0x1000000 : static_cast<std::int32_t>(d);
}
constexpr std::uint32_t psn_add(std::uint32_t a, std::int64_t n) { return static_cast<std::uint32_t>(a + n) & kPsnMask; }
static_assert(psn_diff(0, kPsnMask) == 1 && psn_diff(kPsnMask, 0) == -1 && psn_add(kPsnMask, 2) == 1);
static_assert(psn_diff(0x7FFFFF, 0) == 0x7FFFFF && psn_diff(0x800000, 0) == -0x800000);

enum class Transport : std::uint8_t { rc, uc, rd, ud, cnp, xrc };
enum class Seq : std::uint8_t { none, first, middle, last, only };
enum class OpKind : std::uint8_t { send, write, read_request, read_response, ack, atomic_ack, atomic, resync, flush, atomic_write, cnp };
enum class PayloadRule : std::uint8_t { none, any, fixed8, fixed16 };

struct OpcodeInfo {
  bool valid = false;
  std::uint8_t code = 0;
  Transport transport = Transport::rc;
  OpKind kind = OpKind::send;
  Seq seq = Seq::none;
  std::uint16_t exts = 0;
  PayloadRule payload = PayloadRule::none;
  std::string_view transport_name = {};
  std::string_view op_name = {};
};

const OpcodeInfo& opcode_info(std::uint8_t opcode);
std::string_view transport_name(Transport t);
// "RC RDMA WRITE First"; "unknown opcode" for undefined codes.
std::string opcode_name(std::uint8_t opcode);

}  // namespace rdmaconf::protocols::ib

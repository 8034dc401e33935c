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

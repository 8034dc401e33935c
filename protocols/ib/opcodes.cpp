#include "protocols/ib/opcodes.hpp"

#include <string>

namespace rdmaconf::protocols::ib {
namespace {

struct Op {
  std::uint8_t low;
  std::string_view name;
  OpKind kind;
  Seq seq;
  std::uint16_t exts;
  PayloadRule payload;
  bool request;  // requests carry DETH on RD and XRCETH on XRC
};

constexpr Op kOps[] = {
    {kSendFirst, "SEND First", OpKind::send, Seq::first, 0, PayloadRule::any, true},
    {kSendMiddle, "SEND Middle", OpKind::send, Seq::middle, 0, PayloadRule::any, true},
    {kSendLast, "SEND Last", OpKind::send, Seq::last, 0, PayloadRule::any, true},
    {kSendLastImm, "SEND Last with Immediate", OpKind::send, Seq::last, kExtImmDt, PayloadRule::any, true},
    {kSendOnly, "SEND Only", OpKind::send, Seq::only, 0, PayloadRule::any, true},
    {kSendOnlyImm, "SEND Only with Immediate", OpKind::send, Seq::only, kExtImmDt, PayloadRule::any, true},
    {kWriteFirst, "RDMA WRITE First", OpKind::write, Seq::first, kExtReth, PayloadRule::any, true},
    {kWriteMiddle, "RDMA WRITE Middle", OpKind::write, Seq::middle, 0, PayloadRule::any, true},
    {kWriteLast, "RDMA WRITE Last", OpKind::write, Seq::last, 0, PayloadRule::any, true},
    {kWriteLastImm, "RDMA WRITE Last with Immediate", OpKind::write, Seq::last, kExtImmDt, PayloadRule::any, true},
    {kWriteOnly, "RDMA WRITE Only", OpKind::write, Seq::only, kExtReth, PayloadRule::any, true},
    {kWriteOnlyImm, "RDMA WRITE Only with Immediate", OpKind::write, Seq::only, kExtReth | kExtImmDt, PayloadRule::any, true},
    {kReadRequest, "RDMA READ Request", OpKind::read_request, Seq::only, kExtReth, PayloadRule::none, true},
    {kReadRespFirst, "RDMA READ Response First", OpKind::read_response, Seq::first, kExtAeth, PayloadRule::any, false},
    {kReadRespMiddle, "RDMA READ Response Middle", OpKind::read_response, Seq::middle, 0, PayloadRule::any, false},
    {kReadRespLast, "RDMA READ Response Last", OpKind::read_response, Seq::last, kExtAeth, PayloadRule::any, false},
    {kReadRespOnly, "RDMA READ Response Only", OpKind::read_response, Seq::only, kExtAeth, PayloadRule::any, false},
    {kAck, "Acknowledge", OpKind::ack, Seq::none, kExtAeth, PayloadRule::none, false},
    {kAtomicAck, "ATOMIC Acknowledge", OpKind::atomic_ack, Seq::none, kExtAeth | kExtAtomicAckEth, PayloadRule::none, false},
    {kCompareSwap, "CmpSwap", OpKind::atomic, Seq::only, kExtAtomicEth, PayloadRule::none, true},
    {kFetchAdd, "FetchAdd", OpKind::atomic, Seq::only, kExtAtomicEth, PayloadRule::none, true},
    {kResync, "RESYNC", OpKind::resync, Seq::only, 0, PayloadRule::none, true},
    {kSendLastInv, "SEND Last with Invalidate", OpKind::send, Seq::last, kExtIeth, PayloadRule::any, true},
    {kSendOnlyInv, "SEND Only with Invalidate", OpKind::send, Seq::only, kExtIeth, PayloadRule::any, true},
    {kFlush, "FLUSH", OpKind::flush, Seq::only, kExtFeth | kExtReth, PayloadRule::none, true},
    {kAtomicWrite, "ATOMIC WRITE", OpKind::atomic_write, Seq::only, kExtReth, PayloadRule::fixed8, true},
};

constexpr const Op* find_op(std::uint8_t low) {
  for (const auto& o : kOps)
    if (o.low == low) return &o;
  return nullptr;
}

constexpr bool allowed(Transport t, std::uint8_t low) {
  switch (t) {
    case Transport::rc: return low <= kFetchAdd || low == kSendLastInv || low == kSendOnlyInv || low == kFlush || low == kAtomicWrite;
    case Transport::uc: return low <= kWriteOnlyImm;
    case Transport::rd: return low <= kResync;
    case Transport::ud: return low == kSendOnly || low == kSendOnlyImm;
    case Transport::xrc: return low <= kFetchAdd || low == kSendLastInv || low == kSendOnlyInv;
    case Transport::cnp: return false;
  }
  return false;
}

constexpr std::array<OpcodeInfo, 256> build() {
  std::array<OpcodeInfo, 256> t{};
  constexpr std::pair<Transport, std::uint8_t> bases[] = {
      {Transport::rc, kTransportRc}, {Transport::uc, kTransportUc}, {Transport::rd, kTransportRd}, {Transport::ud, kTransportUd},
      {Transport::xrc, kTransportXrc}};
  constexpr std::string_view names[] = {"RC", "UC", "RD", "UD", "CNP", "XRC"};
  for (auto [tr, base] : bases) {
    for (std::uint8_t low = 0; low < 0x20; ++low) {
      const Op* op = find_op(low);
      if (!op || !allowed(tr, low)) continue;
      OpcodeInfo& i = t[base + low];
      i.valid = true;
      i.code = static_cast<std::uint8_t>(base + low);
      i.transport = tr;
      i.kind = op->kind;
      i.seq = op->seq;
      i.exts = op->exts;
      if (tr == Transport::rd) i.exts |= kExtRdeth | (op->request ? kExtDeth : 0);
      if (tr == Transport::ud) i.exts |= kExtDeth;
      if (tr == Transport::xrc && op->request) i.exts |= kExtXrceth;
      i.payload = op->payload;
      i.transport_name = names[static_cast<int>(tr)];
      i.op_name = op->name;
    }
  }
  // RoCEv2 Congestion Notification Packet: BTH plus 16 reserved octets (Annex A17.9).
  OpcodeInfo& cnp = t[kOpcodeCnp];
  cnp = OpcodeInfo{true, kOpcodeCnp, Transport::cnp, OpKind::cnp, Seq::none, 0, PayloadRule::fixed16, "CNP", "Congestion Notification"};
  return t;
}

constexpr std::array<OpcodeInfo, 256> kTable = build();

}  // namespace

const OpcodeInfo& opcode_info(std::uint8_t opcode) { return kTable[opcode]; }

std::string_view transport_name(Transport t) {
  constexpr std::string_view names[] = {"RC", "UC", "RD", "UD", "CNP", "XRC"};
  return names[static_cast<int>(t)];
}

std::string opcode_name(std::uint8_t opcode) {
  const auto& i = kTable[opcode];
  if (!i.valid) return "unknown opcode";
  if (i.transport == Transport::cnp) return std::string(i.op_name);
  return std::string(i.transport_name) + " " + std::string(i.op_name);
}

}  // namespace rdmaconf::protocols::ib

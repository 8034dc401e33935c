#pragma once
// InfiniBand transport headers (IBTA Vol. 1 ch. 7-9) and the RoCEv2 port
// (IBTA Vol. 1 Annex A17). Section numbers follow Release 1.4 of Vol. 1.
#include <iterator>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols::ib {

inline constexpr std::uint16_t kRoceV2Port = 4791;

inline constexpr ValueName kLnh[] = {{0, "Raw"}, {1, "IP non-IBA"}, {2, "IBA local (BTH)"}, {3, "IBA global (GRH)"}};
struct Lrh { enum : std::size_t { vl, lver, sl, rsvd1, lnh, dlid, rsvd2, pktlen, slid, count_ }; };
inline constexpr FieldDef kLrhFields[] = {
    {"ib.lrh.vl", "Virtual lane", 0, 4, Display::dec, {}, false, "IBTA Vol.1 §7.7.1"},
    {"ib.lrh.lver", "Link version", 4, 4, Display::dec, {}, false, "IBTA Vol.1 §7.7.2"},
    {"ib.lrh.sl", "Service level", 8, 4, Display::dec, {}, false, "IBTA Vol.1 §7.7.3"},
    {"ib.lrh.rsvd1", "Reserved", 12, 2, Display::hex, {}, true, "IBTA Vol.1 §7.7"},
    {"ib.lrh.lnh", "Link next header", 14, 2, Display::dec, kLnh, false, "IBTA Vol.1 §7.7.4"},
    {"ib.lrh.dlid", "Destination LID", 16, 16, Display::hex, {}, false, "IBTA Vol.1 §7.7.5"},
    {"ib.lrh.rsvd2", "Reserved", 32, 5, Display::hex, {}, true, "IBTA Vol.1 §7.7"},
    {"ib.lrh.pktlen", "Packet length (4-octet words)", 37, 11, Display::dec, {}, false, "IBTA Vol.1 §7.7.7"},
    {"ib.lrh.slid", "Source LID", 48, 16, Display::hex, {}, false, "IBTA Vol.1 §7.7.8"},
};
inline constexpr HeaderDef kLrh{"ib.lrh", "Local Route Header", "IBTA Vol.1 §7.7", 8, kLrhFields};

struct Grh { enum : std::size_t { ipver, tclass, flow, paylen, nxthdr, hoplmt, sgid, dgid, count_ }; };
inline constexpr FieldDef kGrhFields[] = {
    {"ib.grh.ipver", "IP version", 0, 4, Display::dec, {}, false, "IBTA Vol.1 §8.3.1"},
    {"ib.grh.tclass", "Traffic class", 4, 8, Display::hex, {}, false, "IBTA Vol.1 §8.3.2"},
    {"ib.grh.flowlabel", "Flow label", 12, 20, Display::hex, {}, false, "IBTA Vol.1 §8.3.3"},
    {"ib.grh.paylen", "Payload length", 32, 16, Display::dec, {}, false, "IBTA Vol.1 §8.3.4"},
    {"ib.grh.nxthdr", "Next header", 48, 8, Display::hex, {}, false, "IBTA Vol.1 §8.3.5"},
    {"ib.grh.hoplmt", "Hop limit", 56, 8, Display::dec, {}, false, "IBTA Vol.1 §8.3.6"},
    {"ib.grh.sgid", "Source GID", 64, 128, Display::ipv6, {}, false, "IBTA Vol.1 §8.3.7"},
    {"ib.grh.dgid", "Destination GID", 192, 128, Display::ipv6, {}, false, "IBTA Vol.1 §8.3.8"},
};
inline constexpr HeaderDef kGrh{"ib.grh", "Global Route Header", "IBTA Vol.1 §8.3", 40, kGrhFields};

// Opcode value names are filled from the opcode table in opcodes.hpp.
struct Bth { enum : std::size_t { opcode, se, migreq, padcnt, tver, pkey, fecn, becn, rsvd1, destqp, ackreq, rsvd2, psn, count_ }; };
inline constexpr FieldDef kBthFields[] = {
    {"ib.bth.opcode", "Opcode", 0, 8, Display::hex, {}, false, "IBTA Vol.1 §9.2.1"},
    {"ib.bth.se", "Solicited event", 8, 1, Display::flag, {}, false, "IBTA Vol.1 §9.2.2"},
    {"ib.bth.m", "MigReq", 9, 1, Display::flag, {}, false, "IBTA Vol.1 §9.2.3"},
    {"ib.bth.padcnt", "Pad count", 10, 2, Display::dec, {}, false, "IBTA Vol.1 §9.2.4"},
    {"ib.bth.tver", "Transport header version", 12, 4, Display::dec, {}, false, "IBTA Vol.1 §9.2.5"},
    {"ib.bth.p_key", "Partition key", 16, 16, Display::hex, {}, false, "IBTA Vol.1 §9.2.6"},
    {"ib.bth.f", "FECN", 32, 1, Display::flag, {}, false, "IBTA Vol.1 Annex A17 (RoCEv2)"},
    {"ib.bth.b", "BECN", 33, 1, Display::flag, {}, false, "IBTA Vol.1 Annex A17 (RoCEv2)"},
    {"ib.bth.rsvd1", "Reserved (variant)", 34, 6, Display::hex, {}, true, "IBTA Vol.1 §9.2"},
    {"ib.bth.destqp", "Destination QP", 40, 24, Display::hex, {}, false, "IBTA Vol.1 §9.2.7"},
    {"ib.bth.a", "Acknowledge request", 64, 1, Display::flag, {}, false, "IBTA Vol.1 §9.2.8"},
    {"ib.bth.rsvd2", "Reserved", 65, 7, Display::hex, {}, true, "IBTA Vol.1 §9.2"},
    {"ib.bth.psn", "Packet sequence number", 72, 24, Display::dec, {}, false, "IBTA Vol.1 §9.2.9"},
};
inline constexpr HeaderDef kBth{"ib.bth", "Base Transport Header", "IBTA Vol.1 §9.2", 12, kBthFields};

struct Rdeth { enum : std::size_t { rsvd, een, count_ }; };
inline constexpr FieldDef kRdethFields[] = {
    {"ib.rdeth.rsvd", "Reserved", 0, 8, Display::hex, {}, true, "IBTA Vol.1 §9.3.1"},
    {"ib.rdeth.een", "EE context", 8, 24, Display::hex, {}, false, "IBTA Vol.1 §9.3.1"},
};
inline constexpr HeaderDef kRdeth{"ib.rdeth", "Reliable Datagram ETH", "IBTA Vol.1 §9.3.1", 4, kRdethFields};

struct Deth { enum : std::size_t { qkey, rsvd, srcqp, count_ }; };
inline constexpr FieldDef kDethFields[] = {
    {"ib.deth.q_key", "Queue key", 0, 32, Display::hex, {}, false, "IBTA Vol.1 §9.3.2"},
    {"ib.deth.rsvd", "Reserved", 32, 8, Display::hex, {}, true, "IBTA Vol.1 §9.3.2"},
    {"ib.deth.srcqp", "Source QP", 40, 24, Display::hex, {}, false, "IBTA Vol.1 §9.3.2"},
};
inline constexpr HeaderDef kDeth{"ib.deth", "Datagram ETH", "IBTA Vol.1 §9.3.2", 8, kDethFields};

struct Xrceth { enum : std::size_t { rsvd, xrcsrq, count_ }; };
inline constexpr FieldDef kXrcethFields[] = {
    {"ib.xrceth.rsvd", "Reserved", 0, 8, Display::hex, {}, true, "IBTA Vol.1 Annex A14"},
    {"ib.xrceth.xrcsrq", "XRC shared receive queue", 8, 24, Display::hex, {}, false, "IBTA Vol.1 Annex A14"},
};
inline constexpr HeaderDef kXrceth{"ib.xrceth", "XRC ETH", "IBTA Vol.1 Annex A14", 4, kXrcethFields};

struct Reth { enum : std::size_t { va, rkey, dmalen, count_ }; };
inline constexpr FieldDef kRethFields[] = {
    {"ib.reth.va", "Virtual address", 0, 64, Display::hex, {}, false, "IBTA Vol.1 §9.3.3"},
    {"ib.reth.r_key", "Remote key", 64, 32, Display::hex, {}, false, "IBTA Vol.1 §9.3.3"},
    {"ib.reth.dma_length", "DMA length", 96, 32, Display::dec, {}, false, "IBTA Vol.1 §9.3.3"},
};
inline constexpr HeaderDef kReth{"ib.reth", "RDMA ETH", "IBTA Vol.1 §9.3.3", 16, kRethFields};

struct AtomicEth { enum : std::size_t { va, rkey, swapadd, compare, count_ }; };
inline constexpr FieldDef kAtomicEthFields[] = {
    {"ib.atomiceth.va", "Virtual address", 0, 64, Display::hex, {}, false, "IBTA Vol.1 §9.3.4"},
    {"ib.atomiceth.r_key", "Remote key", 64, 32, Display::hex, {}, false, "IBTA Vol.1 §9.3.4"},
    {"ib.atomiceth.swap_or_add", "Swap (or add) data", 96, 64, Display::hex, {}, false, "IBTA Vol.1 §9.3.4"},
    {"ib.atomiceth.compare", "Compare data", 160, 64, Display::hex, {}, false, "IBTA Vol.1 §9.3.4"},
};
inline constexpr HeaderDef kAtomicEth{"ib.atomiceth", "Atomic ETH", "IBTA Vol.1 §9.3.4", 28, kAtomicEthFields};

inline constexpr ValueName kAethSyndromeKinds[] = {{0, "ACK"}, {1, "RNR NAK"}, {2, "Reserved"}, {3, "NAK"}};
struct Aeth { enum : std::size_t { syndrome, msn, count_ }; };
inline constexpr FieldDef kAethFields[] = {
    {"ib.aeth.syndrome", "Syndrome", 0, 8, Display::hex, {}, false, "IBTA Vol.1 §9.3.5"},
    {"ib.aeth.msn", "Message sequence number", 8, 24, Display::dec, {}, false, "IBTA Vol.1 §9.3.5"},
};
inline constexpr HeaderDef kAeth{"ib.aeth", "ACK ETH", "IBTA Vol.1 §9.3.5", 4, kAethFields};

// AETH syndrome (IBTA Vol.1 §9.3.5): bit 7 reserved, bits 6-5 the kind,
// bits 4-0 the credit count (ACK), the timer (RNR NAK) or the NAK code.
enum class AckKind : std::uint8_t { ack, rnr_nak, reserved, nak };
inline constexpr AckKind ack_kind(std::uint32_t syndrome) { return static_cast<AckKind>((syndrome >> 5) & 3); }
inline constexpr std::uint32_t syndrome(AckKind k, std::uint32_t low) { return static_cast<std::uint32_t>(k) << 5 | (low & 0x1f); }
inline constexpr std::uint32_t kNakPsnSequence = 0, kNakInvalidRequest = 1, kNakRemoteAccess = 2,
                               kNakRemoteOperational = 3, kNakInvalidRd = 4;

struct AtomicAckEth { enum : std::size_t { orig, count_ }; };
inline constexpr FieldDef kAtomicAckEthFields[] = {
    {"ib.atomicacketh.orig", "Original remote data", 0, 64, Display::hex, {}, false, "IBTA Vol.1 §9.3.6"},
};
inline constexpr HeaderDef kAtomicAckEth{"ib.atomicacketh", "Atomic ACK ETH", "IBTA Vol.1 §9.3.6", 8, kAtomicAckEthFields};

struct ImmDt { enum : std::size_t { imm, count_ }; };
inline constexpr FieldDef kImmDtFields[] = {
    {"ib.immdt", "Immediate data", 0, 32, Display::hex, {}, false, "IBTA Vol.1 §9.3.7"},
};
inline constexpr HeaderDef kImmDt{"ib.immdt", "Immediate Data ETH", "IBTA Vol.1 §9.3.7", 4, kImmDtFields};

struct Ieth { enum : std::size_t { rkey, count_ }; };
inline constexpr FieldDef kIethFields[] = {
    {"ib.ieth.r_key", "Invalidated remote key", 0, 32, Display::hex, {}, false, "IBTA Vol.1 §9.3.8"},
};
inline constexpr HeaderDef kIeth{"ib.ieth", "Invalidate ETH", "IBTA Vol.1 §9.3.8", 4, kIethFields};

// FLUSH extension header (IBTA Vol.1 1.5 memory placement extensions).
struct Feth { enum : std::size_t { rsvd, sel, plt, count_ }; };
inline constexpr FieldDef kFethFields[] = {
    {"ib.feth.rsvd", "Reserved", 0, 26, Display::hex, {}, true, "IBTA Vol.1 1.5 §9.3.9"},
    {"ib.feth.sel", "Selectivity level", 26, 2, Display::dec, {}, false, "IBTA Vol.1 1.5 §9.3.9"},
    {"ib.feth.plt", "Placement type", 28, 4, Display::dec, {}, false, "IBTA Vol.1 1.5 §9.3.9"},
};
inline constexpr HeaderDef kFeth{"ib.feth", "Flush ETH", "IBTA Vol.1 1.5 §9.3.9", 4, kFethFields};

static_assert(table_is_sound(kLrh) && std::size(kLrhFields) == Lrh::count_);
static_assert(table_is_sound(kGrh) && std::size(kGrhFields) == Grh::count_);
static_assert(table_is_sound(kBth) && std::size(kBthFields) == Bth::count_);
static_assert(table_is_sound(kRdeth) && std::size(kRdethFields) == Rdeth::count_);
static_assert(table_is_sound(kDeth) && std::size(kDethFields) == Deth::count_);
static_assert(table_is_sound(kXrceth) && std::size(kXrcethFields) == Xrceth::count_);
static_assert(table_is_sound(kReth) && std::size(kRethFields) == Reth::count_);
static_assert(table_is_sound(kAtomicEth) && std::size(kAtomicEthFields) == AtomicEth::count_);
static_assert(table_is_sound(kAeth) && std::size(kAethFields) == Aeth::count_);
static_assert(table_is_sound(kAtomicAckEth) && std::size(kAtomicAckEthFields) == AtomicAckEth::count_);
static_assert(table_is_sound(kImmDt) && std::size(kImmDtFields) == ImmDt::count_);
static_assert(table_is_sound(kIeth) && std::size(kIethFields) == Ieth::count_);
static_assert(table_is_sound(kFeth) && std::size(kFethFields) == Feth::count_);

}  // namespace rdmaconf::protocols::ib

#pragma once
// The U-Net wire format: our definition, in the spirit of U-Net/FE (von
// Eicken et al., SOSP 1995, and its Fast Ethernet version), which addressed
// an endpoint by (MAC address, port) with a small header after the Ethernet
// header. docs/unet.md is the specification; this table is its layout.
//
//   Ethernet II, EtherType 0x88B5 (IEEE Std 802 local experimental EtherType 1)
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  +-------+-----+-+---------------+-------------------------------+
//  |Version| Rsv |C|   Reserved    |   Destination port (tag)      |
//  +-------+-----+-+---------------+-------------------------------+
//  |      Source port (tag)        |        Message length         |
//  +-------------------------------+-------------------------------+
//  |  message (length octets), then Ethernet padding to 60 octets  |
//
// C (close): the last message of the channel from its sender's side.
#include <cstdint>

#include "protocols/core/field.hpp"

namespace rdmaconf::protocols::unet {

inline constexpr std::uint16_t kEthertype = 0x88b5;
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 8;
// Ports 0 and 0xffff name no endpoint.
inline constexpr std::uint16_t kPortNone = 0, kPortReserved = 0xffff;
// Ethernet: 1500 octets of MTU, 60 octets of minimum frame (without FCS).
inline constexpr std::size_t kMtu = 1500, kMaxMessage = kMtu - kHeaderSize, kMinFrame = 60, kEthHeader = 14;

struct Unet { enum : std::size_t { version, rsvd_flags, close, rsvd, dst_port, src_port, length, count_ }; };
inline constexpr FieldDef kUnetFields[] = {
    {"unet.version", "Version", 0, 4},
    {"unet.flags.rsvd", "Reserved flags", 4, 3, Display::hex, {}, true, "docs/unet.md (header)"},
    {"unet.flags.close", "Close", 7, 1, Display::flag},
    {"unet.rsvd", "Reserved", 8, 8, Display::hex, {}, true, "docs/unet.md (header)"},
    {"unet.dst_port", "Destination port (tag)", 16, 16},
    {"unet.src_port", "Source port (tag)", 32, 16},
    {"unet.length", "Message length", 48, 16},
};
inline constexpr HeaderDef kUnet{"unet", "U-Net header", "docs/unet.md (header)", kHeaderSize, kUnetFields};
static_assert(table_is_sound(kUnet));

}  // namespace rdmaconf::protocols::unet

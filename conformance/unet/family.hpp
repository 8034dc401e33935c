#pragma once
// The U-Net family of `rdmaconf check`: frames of EtherType 0x88B5 carrying
// our U-Net header (protocols/unet/headers.hpp, docs/unet.md), judged per
// channel: the pair of endpoints, each a (MAC address, port) tag.
#include "conformance/family.hpp"

namespace rdmaconf::conformance::unet {

const ProtocolFamily& family();

}  // namespace rdmaconf::conformance::unet

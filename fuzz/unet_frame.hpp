#pragma once
// Shared by the U-Net fuzz targets: fixes a frame's U-Net header through the
// header table (version 1, reserved fields zero, a length that fits) so that
// mutations reach the checks past it.
#include <algorithm>
#include <vector>

#include "protocols/core/bits.hpp"
#include "protocols/core/header.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::fuzz {

inline bool is_unet(const std::vector<std::byte>& f) {
  namespace pu = protocols::unet;
  return f.size() >= pu::kEthHeader + pu::kHeaderSize && protocols::be16(f, 12) == pu::kEthertype;
}

inline void make_well_formed(std::vector<std::byte>& f) {
  namespace pu = protocols::unet;
  const auto at = protocols::MutBytes(f).subspan(pu::kEthHeader, pu::kHeaderSize);
  auto h = protocols::Header::decode(pu::kUnet, at);
  const std::size_t room = f.size() - pu::kEthHeader - pu::kHeaderSize;
  h->set(pu::Unet::version, pu::kVersion);
  h->set(pu::Unet::rsvd_flags, 0);
  h->set(pu::Unet::rsvd, 0);
  h->set(pu::Unet::length, std::min<std::size_t>(h->get(pu::Unet::length), room));
  h->encode(at);
}

}  // namespace rdmaconf::fuzz

#pragma once
// Shared by the U-Net fuzz targets: a frame's addresses, and a fix-up of its
// U-Net header (version 1, reserved fields zero, a length that fits) so that
// mutations reach the checks past it, both through the header tables.
#include <algorithm>
#include <vector>

#include "engines/unet/unet.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/core/header.hpp"
#include "protocols/net/headers.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::fuzz {

inline bool is_unet(const std::vector<std::byte>& f) {
  namespace pu = protocols::unet;
  return f.size() >= pu::kEthHeader + pu::kHeaderSize && protocols::be16(f, 12) == pu::kEthertype;
}

// The source MAC address and the two tags of a frame is_unet() accepts.
struct Addresses {
  engine::unet::Mac src_mac{};
  std::uint16_t dst_tag = 0, src_tag = 0;
};
inline Addresses addresses(const std::vector<std::byte>& f) {
  namespace pu = protocols::unet;
  Addresses a;
  const auto eth = protocols::Header::decode(protocols::net::kEth, f);
  const auto h = protocols::Header::decode(pu::kUnet, protocols::Bytes(f).subspan(pu::kEthHeader));
  const std::uint64_t mac = eth->get(protocols::net::Eth::src);
  for (std::size_t i = 0; i < 6; ++i) a.src_mac[i] = static_cast<std::uint8_t>(mac >> (40 - 8 * i));
  a.dst_tag = static_cast<std::uint16_t>(h->get(pu::Unet::dst_port));
  a.src_tag = static_cast<std::uint16_t>(h->get(pu::Unet::src_port));
  return a;
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

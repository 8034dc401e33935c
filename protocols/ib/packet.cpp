#include "protocols/ib/packet.hpp"

#include <algorithm>
#include <cstring>

#include "protocols/crc/crc32c.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::protocols::ib {

namespace {
constexpr const HeaderDef* kExtDefs[kExtCount] = {&kRdeth, &kDeth, &kXrceth, &kFeth, &kReth,
                                                   &kAtomicEth, &kAeth, &kAtomicAckEth, &kImmDt, &kIeth};
constexpr std::size_t ext_index(Ext e) { return static_cast<std::size_t>(__builtin_ctz(e)); }
}  // namespace

const HeaderDef& ext_def(std::size_t index) { return *kExtDefs[index]; }

const std::optional<Header>& IbPacket::get(Ext e) const { return ext[ext_index(e)]; }

Result<IbPacket> decode_transport(Bytes in) {
  auto bth = Header::decode(kBth, in);
  if (!bth) return bth.error();
  IbPacket p;
  p.bth = *bth;
  p.op = &opcode_info(static_cast<std::uint8_t>(bth->get(Bth::opcode)));
  std::size_t off = kBth.size;
  if (p.op->valid) {
    for (std::size_t i = 0; i < kExtCount; ++i) {
      if (!(p.op->exts & (1u << i))) continue;
      auto h = Header::decode(*kExtDefs[i], in.subspan(off));
      if (!h) {
        auto e = h.error();
        e.offset += off;
        return e;
      }
      p.ext[i] = *h;
      off += kExtDefs[i]->size;
    }
  }
  p.header_bytes = off;
  if (in.size() < off + kIcrcSize) return DecodeError{Errc::truncated, &kBth, off, off + kIcrcSize, in.size(), "ICRC"};
  p.pad = bth->get(Bth::padcnt);
  const std::size_t rest = in.size() - off - kIcrcSize;
  if (p.pad > rest) return DecodeError{Errc::bad_length, &kBth, off, off + p.pad + kIcrcSize, in.size(), "pad count exceeds payload"};
  p.payload = in.subspan(off, rest - p.pad);
  p.icrc = le32(in, in.size() - kIcrcSize);
  return p;
}

std::uint32_t roce_icrc(Bytes l3, bool ipv6, std::size_t ip_header_len) {
  // Masked copy of IP + UDP + BTH; everything after the BTH is covered as is.
  std::array<std::byte, 8 + 60 + 8 + 12> buf{};
  const std::size_t masked = ip_header_len + net::kUdp.size + kBth.size;
  if (l3.size() < masked + kIcrcSize || masked + 8 > buf.size()) return 0;
  std::fill_n(buf.begin(), 8, std::byte{0xff});
  std::memcpy(buf.data() + 8, l3.data(), masked);
  MutBytes m{buf.data() + 8, masked};
  const auto ff = std::byte{0xff};
  if (ipv6) {
    m[0] |= std::byte{0x0f};  // traffic class (low nibble of octet 0 ...)
    m[1] = ff;                // ... rest of traffic class and flow label
    m[2] = ff;
    m[3] = ff;
    m[7] = ff;                // hop limit
  } else {
    m[1] = ff;                // TOS
    m[8] = ff;                // TTL
    m[10] = ff;               // header checksum
    m[11] = ff;
  }
  m[ip_header_len + 6] = ff;  // UDP checksum
  m[ip_header_len + 7] = ff;
  m[ip_header_len + net::kUdp.size + 4] = ff;  // BTH FECN, BECN, reserved
  std::uint32_t s = crc::crc32_update(crc::kCrc32Init, Bytes{buf.data(), masked + 8});
  s = crc::crc32_update(s, l3.subspan(masked, l3.size() - masked - kIcrcSize));
  return ~s;
}

void encode_transport(std::vector<std::byte>& out, const IbPacketSpec& p) {
  const std::size_t pad = (4 - p.payload.size() % 4) % 4;
  Header bth = p.bth;
  bth.set(Bth::padcnt, pad);
  auto put = [&](const Header& h) { out.insert(out.end(), h.bytes().begin(), h.bytes().end()); };
  put(bth);
  for (const auto& e : p.ext)
    if (e) put(*e);
  out.insert(out.end(), p.payload.begin(), p.payload.end());
  out.insert(out.end(), pad + kIcrcSize, std::byte{0});
}

}  // namespace rdmaconf::protocols::ib

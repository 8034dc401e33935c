#include "protocols/ib/packet.hpp"

#include <algorithm>
#include <cstring>

#include <boost/crc.hpp>

#include "protocols/crc/crc32c.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::protocols::ib {

namespace {
constexpr const HeaderDef* kExtDefs[kExtCount] = {&kRdeth, &kDeth, &kXrceth, &kFeth, &kReth,
                                                   &kAtomicEth, &kAeth, &kAtomicAckEth, &kImmDt, &kIeth};
constexpr std::size_t ext_index(Ext e) { return static_cast<std::size_t>(__builtin_ctz(e)); }

// IPv6 and the GRH share their first eight octets' layout: traffic class,
// flow label and hop limit are the fields a router may change.
void mask_ipv6_like(MutBytes m) {
  const auto ff = std::byte{0xff};
  m[0] |= std::byte{0x0f};  // traffic class (low nibble of octet 0 ...)
  m[1] = ff;                // ... rest of traffic class and flow label
  m[2] = ff;
  m[3] = ff;
  m[7] = ff;                // hop limit
}

// Sets the fields the ICRC does not cover to all ones in a copy of IP, UDP
// and BTH (IBTA Vol.1 Annex A17.3.3).
void mask_variant_fields(MutBytes m, bool ipv6, std::size_t ip_header_len) {
  const auto ff = std::byte{0xff};
  if (ipv6) {
    mask_ipv6_like(m);
  } else {
    m[1] = ff;                // TOS
    m[8] = ff;                // TTL
    m[10] = ff;               // header checksum
    m[11] = ff;
  }
  m[ip_header_len + 6] = ff;  // UDP checksum
  m[ip_header_len + 7] = ff;
  m[ip_header_len + net::kUdp.size + 4] = ff;  // BTH FECN, BECN, reserved
}

// The ICRC of a packet whose IP, UDP and BTH headers are `head` and whose
// octets after the BTH, up to the ICRC field, are `rest`.
std::uint32_t icrc_of(Bytes head, Bytes rest, bool ipv6, std::size_t ip_header_len) {
  std::array<std::byte, 8 + 60 + 8 + 12> buf{};
  if (head.size() + 8 > buf.size()) return 0;
  std::fill_n(buf.begin(), 8, std::byte{0xff});
  std::memcpy(buf.data() + 8, head.data(), head.size());
  mask_variant_fields(MutBytes{buf.data() + 8, head.size()}, ipv6, ip_header_len);
  return ~crc::crc32_update(crc::crc32_update(crc::kCrc32Init, Bytes{buf.data(), head.size() + 8}), rest);
}

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
  const std::size_t masked = ip_header_len + net::kUdp.size + kBth.size;
  if (l3.size() < masked + kIcrcSize) return 0;
  return icrc_of(l3.first(masked), l3.subspan(masked, l3.size() - masked - kIcrcSize), ipv6, ip_header_len);
}

std::uint32_t roce_icrc(Bytes transport, const RoceFlow& f) {
  const std::size_t iph = f.ipv6 ? 40 : 20, udp_len = net::kUdp.size + transport.size();
  std::array<std::byte, 40 + 8 + 12> head{};
  const std::size_t hn = iph + net::kUdp.size + kBth.size;
  if (transport.size() < kBth.size + kIcrcSize) return 0;
  MutBytes h{head.data(), hn};
  if (f.ipv6) {
    h[0] = std::byte{0x60};
    put_be16(h, 4, static_cast<std::uint16_t>(udp_len));
    h[6] = std::byte{17};
    std::memcpy(h.data() + 8, f.src.data(), 16);
    std::memcpy(h.data() + 24, f.dst.data(), 16);
  } else {
    h[0] = std::byte{0x45};
    put_be16(h, 2, static_cast<std::uint16_t>(iph + udp_len));
    h[6] = std::byte{0x40};  // DF
    h[9] = std::byte{17};
    std::memcpy(h.data() + 12, f.src.data(), 4);
    std::memcpy(h.data() + 16, f.dst.data(), 4);
  }
  put_be16(h, iph, f.sport);
  put_be16(h, iph + 2, f.dport);
  put_be16(h, iph + 4, static_cast<std::uint16_t>(udp_len));
  std::memcpy(h.data() + iph + net::kUdp.size, transport.data(), kBth.size);
  return icrc_of(h, transport.subspan(kBth.size, transport.size() - kBth.size - kIcrcSize), f.ipv6, iph);
}

namespace {

// The ICRC of an InfiniBand packet that is not carried in UDP: `lrh_len`
// octets of LRH (8 natively, 0 for RoCEv1, which has none), a GRH when
// `global`, the transport packet and the ICRC field.
std::uint32_t icrc_without_udp(Bytes pkt, std::size_t lrh_len, bool global) {
  const std::size_t head = lrh_len + (global ? kGrh.size : 0) + kBth.size;
  if (pkt.size() < head + kIcrcSize) return 0;
  std::array<std::byte, 8 + 40 + 12> buf{};
  std::size_t n = 0;
  if (global) {  // eight octets of ones stand for the LRH, which routers rewrite
    std::fill_n(buf.begin(), kLrh.size, std::byte{0xff});
    std::memcpy(buf.data() + kLrh.size, pkt.data() + lrh_len, kGrh.size + kBth.size);
    mask_ipv6_like(MutBytes{buf.data() + kLrh.size, kGrh.size});
    n = kLrh.size + kGrh.size + kBth.size;
  } else {
    std::memcpy(buf.data(), pkt.data(), kLrh.size + kBth.size);
    buf[0] |= std::byte{0xf0};  // VL
    n = kLrh.size + kBth.size;
  }
  buf[n - kBth.size + 4] = std::byte{0xff};  // BTH FECN, BECN, reserved
  return ~crc::crc32_update(crc::crc32_update(crc::kCrc32Init, Bytes{buf.data(), n}),
                            pkt.subspan(head, pkt.size() - head - kIcrcSize));
}

}  // namespace

std::uint32_t native_icrc(Bytes pkt) {
  if (pkt.size() < kLrh.size) return 0;
  return icrc_without_udp(pkt, kLrh.size, (u8(pkt, 1) & 0x03) == kLnhGlobal);
}

std::uint32_t roce_v1_icrc(Bytes pkt) { return icrc_without_udp(pkt, 0, true); }

std::uint16_t vcrc(Bytes pkt) {
  boost::crc_optimal<16, 0x100B, 0xFFFF, 0xFFFF, true, true> c;
  c.process_bytes(pkt.data(), pkt.size());
  return static_cast<std::uint16_t>(c.checksum());
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

#include "conformance/ib/frame.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "protocols/ib/packet.hpp"

namespace rdmaconf::conformance::ib {

using namespace protocols;
using namespace protocols::ib;

namespace {

DecodedFrame fail(const captures::io::Packet& p, std::size_t offset, const DecodeError& e) {
  return DecodedFrame{FrameStatus::error, {}, captures::io::frame_error(p.frame, offset, e)};
}

// The GIDs of a GRH as the packet's addresses.
void take_gids(const Header& grh, IbFrame& p) {
  auto src = grh.field_bytes(Grh::sgid), dst = grh.field_bytes(Grh::dgid);
  std::copy_n(reinterpret_cast<const std::uint8_t*>(src.data()), 16, p.src.begin());
  std::copy_n(reinterpret_cast<const std::uint8_t*>(dst.data()), 16, p.dst.begin());
  p.ip_version = 6;
}

}  // namespace

IbFrame from_udp(const captures::io::Packet& p) {
  IbFrame f;
  f.frame = p.frame;
  f.ts_us = p.ts_us;
  f.ip_version = p.ip_version;
  f.src = p.src;
  f.dst = p.dst;
  f.sport = p.sport;
  f.dport = p.dport;
  f.l3 = p.l3;
  f.ip_header_len = p.ip_header_len;
  f.payload = p.payload;
  return f;
}

// After the GRH, the transport packet and ICRC run to the frame's end (the
// shortest RoCEv1 frame, 70 octets, is beyond Ethernet padding); a GRH
// payload length that disagrees with the frame is left for ib.grh.header.
DecodedFrame decode_roce_v1(const captures::io::Packet& in) {
  DecodedFrame d;
  const Bytes b = in.l3;
  // (The ICRC is the frame's last four octets: a frame the snap length cut has none to judge.)
  if (in.orig_len > in.l3_offset + b.size())
    return fail(in, in.l3_offset, DecodeError{Errc::truncated, &kGrh, 0, in.orig_len - in.l3_offset, b.size(),
                                              "frame cut short by the capture's snap length"});
  auto grh = Header::decode(kGrh, b);
  if (!grh) return fail(in, in.l3_offset, grh.error());
  if (grh->get(Grh::nxthdr) != kGrhNextIba) return d;
  IbFrame& p = d.f;
  take_gids(*grh, p);
  p.frame = in.frame;
  p.ts_us = in.ts_us;
  p.roce_v1 = true;
  p.l3 = b;
  p.ip_header_len = kGrh.size;
  p.payload = p.l3.subspan(kGrh.size);
  d.status = FrameStatus::ok;
  return d;
}

// LRH, then a GRH when LNH says one follows, then the transport packet up to
// the ICRC, then the VCRC. Packets that carry no BTH (raw, IPv6 over IB, a
// GRH whose next header is not IBA transport) are left alone.
DecodedFrame decode_native(const captures::io::Packet& in) {
  DecodedFrame d;
  const Bytes b = in.l3;
  if (in.orig_len > b.size())
    return fail(in, 0, DecodeError{Errc::truncated, &kLrh, 0, in.orig_len, b.size(), "frame cut short by the capture's snap length"});
  auto lrh = Header::decode(kLrh, b);
  if (!lrh) return fail(in, 0, lrh.error());
  const auto lnh = lrh->get(Lrh::lnh);
  if (lnh != kLnhLocal && lnh != kLnhGlobal) return d;
  IbFrame& p = d.f;
  std::size_t hdr = kLrh.size;
  if (lnh == kLnhGlobal) {
    auto grh = Header::decode(kGrh, b.subspan(hdr));
    if (!grh) return fail(in, hdr, grh.error());
    if (grh->get(Grh::nxthdr) != kGrhNextIba) return d;
    take_gids(*grh, p);
    hdr += kGrh.size;
  } else {
    put_be16(MutBytes{reinterpret_cast<std::byte*>(p.src.data()), 2}, 0, static_cast<std::uint16_t>(lrh->get(Lrh::slid)));
    put_be16(MutBytes{reinterpret_cast<std::byte*>(p.dst.data()), 2}, 0, static_cast<std::uint16_t>(lrh->get(Lrh::dlid)));
  }
  // PktLen counts the octets from the LRH through the ICRC; the link type
  // carries the VCRC after them. When the two disagree (a case judges that)
  // the frame's last two octets are still taken for the VCRC.
  const std::size_t declared = lrh->get(Lrh::pktlen) * 4;
  p.has_vcrc = b.size() != declared;
  const std::size_t end = p.has_vcrc ? b.size() - std::min(b.size(), kVcrcSize) : b.size();
  if (end < hdr)
    return fail(in, 0, DecodeError{Errc::truncated, lnh == kLnhGlobal ? &kGrh : &kLrh, 0, hdr + kVcrcSize, b.size(),
                                   "routing headers and VCRC"});
  if (p.has_vcrc) p.vcrc = read_vcrc(b);
  p.frame = in.frame;
  p.ts_us = in.ts_us;
  p.native_ib = true;
  p.l3 = b.first(end);
  p.ip_header_len = hdr;
  p.payload = p.l3.subspan(hdr);
  d.status = FrameStatus::ok;
  return d;
}

}  // namespace rdmaconf::conformance::ib

#include "engines/iwarp/mpa_setup.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace rdmaconf::engine::iwarp {

namespace pi = protocols::iwarp;
using protocols::Bytes;
using protocols::Header;

std::vector<std::byte> mpa_request(const QpConfig& cfg) {
  pi::MpaRrParams p;
  p.kind = pi::MpaFrameKind::request;
  p.markers = cfg.markers;
  p.crc = cfg.crc;
  p.revision = cfg.revision;
  p.enhanced = cfg.enhanced;
  p.p2p = cfg.p2p;
  p.send_rtr = cfg.p2p && cfg.rtr == Rtr::send;
  p.write_rtr = cfg.p2p && cfg.rtr == Rtr::write;
  p.read_rtr = cfg.p2p && cfg.rtr == Rtr::read;
  p.ird = cfg.ird;
  p.ord = cfg.ord;
  p.private_data = cfg.private_data;
  std::vector<std::byte> out = encode_frame(std::move(p), cfg.faults.request);
  if (cfg.faults.fpdu_before_reply) {
    // Framed as if CRC were on, right behind the Request.
    std::vector<std::byte> seg;
    pi::encode_ddp_untagged(seg, pi::kOpSend, 0, 1, 0, true, {});
    pi::encode_fpdu(out, Bytes(seg), cfg.crc);
  }
  return out;
}

std::vector<std::byte> encode_frame(pi::MpaRrParams p, Faults::Frame fault) {
  if (fault == Faults::Frame::withheld) return {};
  if (fault == Faults::Frame::revision) {  // revision 1's layout (no RFC 6581 bit), then 0
    p.revision = 1;
    p.enhanced = p.p2p = p.send_rtr = p.write_rtr = p.read_rtr = false;
  }
  if (fault == Faults::Frame::rtr_bits) {
    p.p2p = false;
    p.send_rtr = p.write_rtr = p.read_rtr = true;
  }
  if (fault == Faults::Frame::ord_excess) p.ord = 0x3FFE;  // (0x3FFF would mean "left to the ULP")
  if (fault == Faults::Frame::private_data)  // PD_Length 513, the IRD/ORD word included
    p.private_data.assign(pi::kMpaMaxPrivateData + 1 - (p.revision == 2 && p.enhanced ? pi::kMpaV2.size : 0), std::byte{0x5a});
  std::vector<std::byte> out;
  pi::encode_mpa_rr(out, p);
  if (fault == Faults::Frame::key) out[15] ^= std::byte{0x20};  // "MPA ID Req FramE", "MPA ID Rep FramE"
  if (fault == Faults::Frame::revision) out[17] = std::byte{0};
  if (fault == Faults::Frame::request_key)  // the Request's key in a Reply
    std::memcpy(out.data(), pi::kMpaRequestKey.data(), pi::kMpaRequestKey.size());
  return out;
}

ReplyPlan plan_reply(const pi::MpaRrFrame& request, const QpConfig& cfg) {
  ReplyPlan plan;
  const Header& h = request.hdr;
  const unsigned rev = static_cast<unsigned>(h.get(pi::MpaRr::rev));
  if (request.kind() != pi::MpaFrameKind::request) {
    plan.problem = "expected an MPA Request key";
    return plan;
  }
  if (rev < 1 || rev > 2) {
    plan.problem = fmt::format("Request revision {}", rev);
    return plan;
  }
  pi::MpaRrParams& p = plan.params;
  p.kind = pi::MpaFrameKind::reply;
  p.revision = static_cast<std::uint8_t>(std::min<unsigned>(rev, cfg.revision));
  p.markers = cfg.markers;
  p.crc = cfg.crc;
  p.private_data = cfg.private_data;
  p.enhanced = p.revision == 2 && cfg.enhanced && rev == 2 && h.get(pi::MpaRr::enhanced) && request.v2;
  plan.ord_eff = cfg.ord;
  if (p.enhanced) {
    const Header& v = *request.v2;
    if (v.get(pi::MpaV2::p2p)) {
      // RFC 6581 §9.2: the responder echoes the peer-to-peer flag and names
      // an RTR type it supports (we support all three): the first offered
      // one, or, when the Request offers none, the zero-length Send, since a
      // responder that supports none of the offered types must name one it
      // does. The initiator then sends that RTR or Terminates (LLP/0/7).
      p.p2p = true;
      plan.p2p = true;
      plan.rtr = v.get(pi::MpaV2::send_rtr) ? Rtr::send : v.get(pi::MpaV2::write_rtr) ? Rtr::write
                 : v.get(pi::MpaV2::read_rtr) ? Rtr::read : Rtr::send;
      p.send_rtr = plan.rtr == Rtr::send;
      p.write_rtr = plan.rtr == Rtr::write;
      p.read_rtr = plan.rtr == Rtr::read;
    }
    plan.ord_eff = static_cast<std::uint16_t>(std::min<std::uint64_t>(cfg.ord, v.get(pi::MpaV2::ird)));
    p.ird = cfg.ird;
    p.ord = plan.ord_eff;
  }
  return plan;
}

Negotiated responder_settles(const pi::MpaRrFrame& request, const ReplyPlan& plan, const QpConfig& cfg) {
  Negotiated n;
  n.crc = cfg.crc || request.hdr.get(pi::MpaRr::c);
  n.tx_markers = request.hdr.get(pi::MpaRr::m);
  n.rx_markers = cfg.markers;
  n.ord_eff = plan.ord_eff;
  n.ird_eff = cfg.ird;
  n.p2p = plan.p2p;
  n.rtr = plan.p2p ? plan.rtr : Rtr::none;
  return n;
}

ReplyReading read_reply(const pi::MpaRrFrame& f, const QpConfig& cfg) {
  ReplyReading r;
  const Header& h = f.hdr;
  const unsigned rev = static_cast<unsigned>(h.get(pi::MpaRr::rev));
  if (f.kind() != pi::MpaFrameKind::reply) {
    r.why = "expected an MPA Reply key";
    return r;
  }
  if (h.get(pi::MpaRr::r)) {
    r.outcome = ReplyReading::Outcome::rejected;
    return r;
  }
  if (rev < 1 || rev > cfg.revision) {
    r.why = fmt::format("Reply revision {} (we asked for {})", rev, cfg.revision);
    return r;
  }
  Negotiated& n = r.settled;
  n.crc = cfg.crc || h.get(pi::MpaRr::c);
  n.rx_markers = cfg.markers;
  n.tx_markers = h.get(pi::MpaRr::m);
  n.ord_eff = cfg.ord;
  n.ird_eff = cfg.ird;
  r.outcome = ReplyReading::Outcome::established;
  const bool enhanced = rev == 2 && h.get(pi::MpaRr::enhanced) && f.v2;
  if (cfg.enhanced && enhanced) {
    const Header& v = *f.v2;
    n.ord_eff = static_cast<std::uint16_t>(std::min<std::uint64_t>(cfg.ord, v.get(pi::MpaV2::ird)));
    if (cfg.p2p) {
      const bool match = (cfg.rtr == Rtr::send && v.get(pi::MpaV2::send_rtr)) ||
                         (cfg.rtr == Rtr::write && v.get(pi::MpaV2::write_rtr)) ||
                         (cfg.rtr == Rtr::read && v.get(pi::MpaV2::read_rtr));
      // RFC 6581 §9.2: an initiator that cannot send any RTR type the Reply
      // names (we send only the configured one) Terminates with LLP/0/7.
      if (!v.get(pi::MpaV2::p2p) || !match) {
        r.outcome = ReplyReading::Outcome::terminate;
        r.llp_code = pi::kTermLlpNoMatchingRtr;
        r.why = "the Reply names no RTR type we send (RFC 6581 §9.2: LLP/0/7)";
        return r;
      }
      n.p2p = true;
      n.rtr = cfg.rtr;
    }
    if (v.get(pi::MpaV2::ord) > cfg.ird) {
      r.outcome = ReplyReading::Outcome::terminate;
      r.llp_code = pi::kTermLlpInsufficientIrd;
      r.why = fmt::format("the responder's ORD {} exceeds our IRD {}", v.get(pi::MpaV2::ord), cfg.ird);
    }
  }
  return r;
}

}  // namespace rdmaconf::engine::iwarp

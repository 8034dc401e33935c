#pragma once
// iWARP traffic for the golden captures: MPA exchange and FPDUs of a configured
// connection, the message edits fault scenarios use, and the capture writer.
#include "captures/gen/common.hpp"
#include "protocols/iwarp/codec.hpp"

namespace rdmaconf::captures::gen {

using protocols::iwarp::MpaFrameKind;
using protocols::iwarp::MpaRrParams;

// ---- iWARP message encoders (DDP segment = DDP header + RDMAP body + payload)
inline Buf ddp_untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo, bool last, Bytes rest,
                 std::uint32_t rsvd_ulp = 0) {
  Buf b;
  iwarp::encode_ddp_untagged(b, opcode, qn, msn, mo, last, rest, rsvd_ulp);
  return b;
}

inline Buf ddp_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, bool last, Bytes payload) {
  Buf b;
  iwarp::encode_ddp_tagged(b, opcode, stag, to, last, payload);
  return b;
}

// The messages of a conversation, before framing: the MPA frames' parameters
// and each side's ULPDUs (DDP segments) in sending order.
struct Traffic {
  MpaRrParams req, rep;
  std::vector<Buf> init, resp;
};

struct IwarpConfig {
  std::uint8_t revision = 2;
  bool enhanced = true;
  bool req_crc = true, rep_crc = false;
  bool req_markers = false, rep_markers = false;  // M: asks the other side to send markers
  bool p2p = false;                               // RFC 6581 peer-to-peer, zero-length Send RTR
  bool omit_rtr = false;                          // p2p without the RTR message (fault)
  bool write_rtr = false;                         // p2p: the RTR sent is a zero-length RDMA Write, not a Send
  std::uint8_t req_reserved = 0;
  std::uint8_t req_revision_override = 0;
  std::size_t req_extra_pd = 0;
  std::string reply_key;             // replaces the Reply key when not empty
  std::string request_key;           // replaces the Request key when not empty
  std::size_t mss = 1448;            // segment size the generator sends with
  // false: segments hold whole FPDUs, as many as fit, as an MPA-aware sender
  // sends them (an FPDU larger than a segment goes alone, in pieces); true:
  // the stream is cut every `mss` octets whatever its FPDUs (a fault).
  bool unaligned = false;
  std::uint16_t advertised_mss = 1460;
  int corrupt_crc_at = -1;           // initiator FPDU index whose CRC is wrong (-2: every one)
  int short_ulpdu_at = -1;           // initiator FPDU index replaced by a 10-octet ULPDU
  int pad_fault_at = -1;             // initiator FPDU index with a non-zero pad octet (CRC still right)
  int length_fault_at = -1;          // initiator FPDU index whose length field says 8 octets more (CRC over it as sent)
  std::size_t fin_cut = 0;           // the initiator's FIN comes this many octets before its stream's end
  bool no_mpa_exchange = false;      // both sides send FPDUs right after the TCP handshake
  bool zero_crc_from_responder = false;
  bool gap_in_initiator = false;     // drop the octets of one segment from the capture
  bool ipv6 = false;
  bool reject = false, data_after_reject = false;
  std::string streaming_after_reject;  // octets the initiator sends in streaming mode after a rejection
  bool reset_at_end = false;           // the responder ends the connection with a RST, not a FIN
  bool early_fpdu = false;           // the initiator's FPDUs go out before the Reply
  bool responder_first = false;      // the responder's Send goes out before the initiator's FPDUs
  std::size_t midstream_skip = 0;    // >0: no handshake or MPA frames, and this many initiator FPDU octets missing
  std::int64_t marker_fault = -1;    // initiator marker number given a wrong pointer / reserved bits
  std::uint16_t marker_ptr_xor = 0, marker_rsvd = 0;
  bool unrequested_markers = false;  // the initiator adds markers though the Reply's M = 0
  bool omitted_markers = false;      // the responder sends no markers though the Request's M = 1
  std::string fault;                 // the one thing this capture does wrong, in words
  std::function<void(Traffic&)> edit;  // message-level fault
};

inline nlohmann::json config_json(const IwarpConfig& c) {
  nlohmann::json j = {{"mpa_revision", c.revision}, {"enhanced", c.enhanced}, {"initiator_crc", c.req_crc},
                      {"responder_crc", c.rep_crc}, {"initiator_markers", c.req_markers},
                      {"responder_markers", c.rep_markers}, {"peer_to_peer", c.p2p}, {"segment_size", c.mss},
                      {"advertised_mss", c.advertised_mss}, {"ipv6", c.ipv6}, {"reject", c.reject},
                      {"request_private_data", c.req_extra_pd + (c.revision == 2 && c.enhanced ? 4 : 0)},
                      {"capture_gap_in_initiator_stream", c.gap_in_initiator}, {"fault", c.fault.empty() ? "none" : c.fault}};
  if (c.midstream_skip) j["capture_starts_mid_stream_after_initiator_octets"] = c.midstream_skip;
  if (c.p2p) j["rtr_sent"] = c.omit_rtr ? "none" : c.write_rtr ? "zero-length RDMA Write" : "zero-length Send";
  j["segments"] = c.unaligned ? "cut every segment_size octets, whatever the FPDU boundaries"
                              : "whole FPDUs, as many as fit in segment_size; a larger FPDU alone, in pieces";
  return j;
}

// ---- message-level edits used by the fault scenarios
// Sets a field of the DDP header (tagged or untagged, from the T bit) at the front of a ULPDU.
inline void set_ddp(Buf& u, std::size_t field, std::uint64_t v) {
  const HeaderDef& d = (static_cast<unsigned>(u[0]) & 0x80) ? iwarp::kDdpTagged : iwarp::kDdpUntagged;
  Header h = *Header::decode(d, B(u));
  h.set(field, v);
  std::copy(h.bytes().begin(), h.bytes().end(), u.begin());
}
// Sets a field of the RDMAP header that follows an untagged DDP header.
inline void set_body(Buf& u, const HeaderDef& def, std::size_t field, std::uint64_t v) {
  Header h = *Header::decode(def, Bytes(u).subspan(iwarp::kDdpUntagged.size));
  h.set(field, v);
  std::copy(h.bytes().begin(), h.bytes().end(), u.begin() + iwarp::kDdpUntagged.size);
}

inline Buf read_request(std::uint32_t msn, std::uint32_t size) {
  Header rr(iwarp::kReadRequest);
  rr.set(iwarp::ReadRequest::sink_stag, 0x1111);
  rr.set(iwarp::ReadRequest::sink_to, 0x2000);
  rr.set(iwarp::ReadRequest::size, size);
  rr.set(iwarp::ReadRequest::src_stag, 0x2222);
  rr.set(iwarp::ReadRequest::src_to, 0x8000);
  return ddp_untagged(iwarp::kOpReadRequest, 1, msn, 0, true, rr.bytes());
}

// Atomic Requests travel on queue 1 with the Read Requests, Atomic Responses
// on queue 3 (RFC 7306 §5.2; spelt out here, not read from our tables).
inline constexpr std::uint32_t kAtomicRequestQueue = 1, kAtomicResponseQueue = 3;
// A FetchAdd (code 0) or CmpSwap (code 2) request (RFC 7306 §5.2.1 Figure 5).
inline Buf atomic_request(std::uint32_t msn, unsigned code, std::uint32_t id, std::uint64_t to, std::uint64_t add_swap,
                          std::uint64_t add_swap_mask, std::uint64_t compare, std::uint64_t compare_mask) {
  Header at(iwarp::kAtomicRequest);
  at.set(iwarp::AtomicRequest::op, code);
  at.set(iwarp::AtomicRequest::req_id, id);
  at.set(iwarp::AtomicRequest::stag, 0x3333);
  at.set(iwarp::AtomicRequest::to, to);
  at.set(iwarp::AtomicRequest::add_swap, add_swap);
  at.set(iwarp::AtomicRequest::add_swap_mask, add_swap_mask);
  at.set(iwarp::AtomicRequest::compare, compare);
  at.set(iwarp::AtomicRequest::compare_mask, compare_mask);
  return ddp_untagged(iwarp::kOpAtomicRequest, kAtomicRequestQueue, msn, 0, true, at.bytes());
}
inline Buf atomic_response(std::uint32_t msn, std::uint32_t id, std::uint64_t original) {
  Header ar(iwarp::kAtomicResponse);
  ar.set(iwarp::AtomicResponse::req_id, id);
  ar.set(iwarp::AtomicResponse::orig, original);
  return ddp_untagged(iwarp::kOpAtomicResponse, kAtomicResponseQueue, msn, 0, true, ar.bytes());
}

// Terminate: layer/type/code, with the offending tagged DDP header copied when `copy`.
inline Buf terminate(unsigned layer, unsigned etype, unsigned code, bool copy, bool announce_copy = true) {
  Header tc(iwarp::kTerminate);
  tc.set(iwarp::Terminate::layer, layer);
  tc.set(iwarp::Terminate::etype, etype);
  tc.set(iwarp::Terminate::ecode, code);
  tc.set(iwarp::Terminate::m, announce_copy);
  tc.set(iwarp::Terminate::d, announce_copy);
  Buf body(tc.bytes().begin(), tc.bytes().end());
  if (copy) {
    Header sl(iwarp::kDdpSegLen);
    sl.set(iwarp::DdpSegLen::len, 1014);
    iwarp::append(body, sl);
    iwarp::append(body, B(ddp_tagged(iwarp::kOpWrite, 0xdead, 0, true, {})));
  }
  return ddp_untagged(iwarp::kOpTerminate, 2, 1, 0, true, B(body));
}

// Every RDMAP opcode, both directions: the initiator sends the four Sends, a
// two-segment Send, both Immediate Data forms, a three-segment RDMA Write, a
// Read Request, a FetchAdd and a CmpSwap; the responder answers with a
// three-segment Read Response, two Atomic Responses and a Send, and ends with
// a Terminate. The positions of the messages faults edit:
struct InitAt { enum : std::size_t { read_req = 11, fetch_add = 12, cmp_swap = 13 }; };
struct RespAt { enum : std::size_t { read_resp = 0, fetch_add = 3, cmp_swap = 4, send = 5, term = 6 }; };
inline Traffic iwarp_traffic(const IwarpConfig& c) {
  Traffic t;
  t.req.kind = MpaFrameKind::request;
  t.req.crc = c.req_crc;
  t.req.markers = c.req_markers;
  t.req.revision = c.req_revision_override ? c.req_revision_override : c.revision;
  t.req.enhanced = c.enhanced && c.revision == 2;
  t.req.ird = 16;
  t.req.ord = 16;
  t.req.p2p = c.p2p;
  t.req.send_rtr = c.p2p;
  t.req.write_rtr = c.p2p;
  t.req.reserved_bits = c.req_reserved;
  t.req.private_data = pattern(c.req_extra_pd, 1);

  t.rep = t.req;
  t.rep.kind = MpaFrameKind::reply;
  t.rep.crc = c.rep_crc;
  t.rep.markers = c.rep_markers;
  t.rep.reject = c.reject;
  t.rep.revision = c.revision;
  t.rep.reserved_bits = 0;
  t.rep.ird = 8;
  t.rep.ord = 8;
  t.rep.write_rtr = false;  // the responder selects the Send RTR
  t.rep.private_data = pattern(8, 2);

  std::uint32_t msn = 1;
  if (c.p2p && !c.omit_rtr)
    t.init.push_back(c.write_rtr ? ddp_tagged(iwarp::kOpWrite, 0, 0, true, {}) : ddp_untagged(iwarp::kOpSend, 0, msn++, 0, true, {}));
  t.init.push_back(ddp_untagged(iwarp::kOpSend, 0, msn++, 0, true, B(pattern(37, 3))));
  t.init.push_back(ddp_untagged(iwarp::kOpSendInvalidate, 0, msn++, 0, true, B(pattern(64, 4)), 0x1234));
  t.init.push_back(ddp_untagged(iwarp::kOpSendSe, 0, msn++, 0, true, B(pattern(1, 5))));
  t.init.push_back(ddp_untagged(iwarp::kOpSendSeInvalidate, 0, msn++, 0, true, B(pattern(2, 6)), 0x5678));
  t.init.push_back(ddp_untagged(iwarp::kOpSend, 0, msn, 0, false, B(pattern(600, 12))));
  t.init.push_back(ddp_untagged(iwarp::kOpSend, 0, msn++, 600, true, B(pattern(300, 13))));
  t.init.push_back(ddp_untagged(iwarp::kOpImmediate, 0, msn++, 0, true, B(pattern(8, 7))));
  t.init.push_back(ddp_untagged(iwarp::kOpImmediateSe, 0, msn++, 0, true, B(pattern(8, 8))));
  for (int s = 0; s < 3; ++s)
    t.init.push_back(ddp_tagged(iwarp::kOpWrite, 0xabcd01, 0x10000 + s * 1000u, s == 2, B(pattern(1000, 9 + s))));
  t.init.push_back(read_request(1, 2500));
  // Queue 1's next MSNs: a FetchAdd of 5 with Add Mask 0 (one 64-bit add;
  // Compare Data 0, Compare Mask all ones), then a masked CmpSwap.
  t.init.push_back(atomic_request(2, 0x0, 1, 0x40, 5, 0, 0, ~0ull));
  t.init.push_back(atomic_request(3, 0x2, 2, 0x48, 0x7700, 0xff00, 41, 0xffff));

  for (int s = 0; s < 3; ++s)
    t.resp.push_back(ddp_tagged(iwarp::kOpReadResponse, 0x1111, 0x2000 + s * 1000u, s == 2, B(pattern(s == 2 ? 500 : 1000, 20 + s))));
  t.resp.push_back(atomic_response(1, 1, 41));
  t.resp.push_back(atomic_response(2, 2, 41));
  t.resp.push_back(ddp_untagged(iwarp::kOpSend, 0, 1, 0, true, B(pattern(100, 30))));
  // DDP layer, tagged buffer error, invalid STag, with the offending DDP header copied.
  t.resp.push_back(terminate(1, 1, 0, true));
  if (c.edit) c.edit(t);
  return t;
}

// One side's FPDU stream and where each FPDU ends in it.
struct Framed {
  Buf bytes;
  std::vector<std::size_t> ends;
};

// Frames one side's ULPDUs. With markers, `landings` counts where in an FPDU
// each marker fell (from the positions the encoder used).
inline Framed frame_stream(const std::vector<Buf>& msgs, bool crc, bool markers, const IwarpConfig& c, bool initiator,
                 std::map<std::string, int>& landings) {
  Framed out;
  iwarp::MarkerStream ms;
  if (initiator) {
    ms.fault_index = c.marker_fault;
    ms.fault_ptr_xor = c.marker_ptr_xor;
    ms.fault_rsvd = c.marker_rsvd;
  }
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const int idx = static_cast<int>(i);
    Buf m = msgs[i];
    if (initiator && idx == c.short_ulpdu_at) m.resize(10);
    if (markers) {
      const std::uint64_t begin = ms.pos;
      iwarp::encode_fpdu_marked(out.bytes, B(m), crc, ms);
      out.ends.push_back(out.bytes.size());
      // Classify each marker position inside this FPDU by the unmarked offset it interrupts.
      std::uint64_t seen = 0;
      for (std::uint64_t p = begin; p < ms.pos; ++p) {
        if (!iwarp::is_marker_position(p)) continue;
        const std::uint64_t at = p - begin - 4 * seen++;
        const std::size_t hdr = (static_cast<unsigned>(m[0]) & 0x80) ? iwarp::kDdpTagged.size : iwarp::kDdpUntagged.size;
        const std::size_t size = iwarp::fpdu_size(m.size());
        landings[at == 0 ? "fpdu_start" : at < 2 + hdr ? "ddp_header" : at == size - 4 ? "before_crc" : "payload_or_pad"]++;
      }
      continue;
    }
    const std::size_t start = out.bytes.size();
    iwarp::encode_fpdu(out.bytes, B(m), false);
    out.ends.push_back(out.bytes.size());
    MutBytes f{out.bytes.data() + start, out.bytes.size() - start};
    if (initiator && idx == c.pad_fault_at) f[2 + m.size()] = std::byte{0x01};
    if (initiator && idx == c.length_fault_at) put_be16(f, 0, static_cast<std::uint16_t>(m.size() + 8));
    const bool zero = !initiator && c.zero_crc_from_responder;
    if (crc && !zero) put_le32(f, f.size() - 4, iwarp::fpdu_crc(f.first(f.size() - 4)));
    if (initiator && (idx == c.corrupt_crc_at || c.corrupt_crc_at == -2)) f[f.size() - 1] ^= std::byte{0x5a};
  }
  return out;
}

// Sends octets [from, to) of a side's FPDU stream. Aligned (the default),
// each segment starts where an FPDU starts and holds as many whole FPDUs as
// fit in c.mss; an FPDU larger than that goes alone in c.mss-octet pieces,
// and a segment that starts inside an FPDU (after a capture gap, say) ends
// with it. Returns how many FPDUs no larger than c.mss were split between
// segments (none when aligned).
inline std::size_t send_fpdus(TcpConversation& t, int dir, const Framed& s, const IwarpConfig& c, std::size_t from,
                              std::size_t to) {
  const auto& ends = s.ends;
  std::size_t split = 0, pos = from;
  std::vector<std::size_t> cuts;
  while (pos < to) {
    std::size_t n = std::min(c.mss, to - pos);
    if (!c.unaligned) {
      const auto next = std::upper_bound(ends.begin(), ends.end(), pos);  // the end of the FPDU pos is in
      const bool at_start = pos == 0 || std::binary_search(ends.begin(), ends.end(), pos);
      if (next != ends.end() && *next <= std::min(pos + c.mss, to)) {
        if (!at_start) {
          n = *next - pos;  // the rest of an FPDU begun elsewhere
        } else {
          auto last = std::upper_bound(next, ends.end(), std::min(pos + c.mss, to));
          n = *std::prev(last) - pos;  // whole FPDUs, as many as fit
        }
      }
    }
    t.send(dir, Bytes(s.bytes).subspan(pos, n), n);
    pos += n;
    cuts.push_back(pos);
  }
  // FPDUs that fit in a segment and were split all the same.
  std::size_t begin = 0;
  for (const std::size_t e : ends) {
    const std::size_t b = begin;
    begin = e;
    if (b < from || e > to || e - b > c.mss) continue;
    if (std::any_of(cuts.begin(), cuts.end(), [&](std::size_t x) { return x > b && x < e; })) ++split;
  }
  return split;
}

// What a conversation's construction gives its manifest beyond the config.
struct IwarpBuilt {
  std::map<std::string, int> marker_landings;  // where markers fell in FPDUs (markers only)
  std::size_t split_fpdus = 0;                 // FPDUs that fit a segment but were split
};

inline IwarpBuilt iwarp_conversation(const std::string& path, const IwarpConfig& c) {
  PcapWriter w(path);
  const Host a = c.ipv6 ? host_v6(1, 40001) : host_v4(192, 0, 2, 1, 40001);
  const Host b = c.ipv6 ? host_v6(2, 4791 + 1) : host_v4(192, 0, 2, 2, 7174);
  TcpConversation t(w, a, b);
  const Traffic m = iwarp_traffic(c);
  const bool crc = m.req.crc || m.rep.crc;

  Buf req, rep;
  iwarp::encode_mpa_rr(req, m.req);
  iwarp::encode_mpa_rr(rep, m.rep);
  if (!c.reply_key.empty()) std::copy_n(reinterpret_cast<const std::byte*>(c.reply_key.data()), 16, rep.begin());
  if (!c.request_key.empty()) std::copy_n(reinterpret_cast<const std::byte*>(c.request_key.data()), 16, req.begin());

  IwarpBuilt built;
  // Markers go toward the side that asked: the Request's M asks the responder to send them.
  const Framed istream = frame_stream(m.init, crc, m.rep.markers || c.unrequested_markers, c, true, built.marker_landings);
  Framed rstream = frame_stream(m.resp, crc, m.req.markers && !c.omitted_markers, c, false, built.marker_landings);
  auto send = [&](int dir, const Framed& f, std::size_t from, std::size_t to) { built.split_fpdus += send_fpdus(t, dir, f, c, from, to); };
  auto send_all = [&](int dir, const Framed& f) { send(dir, f, 0, f.bytes.size()); };

  if (c.midstream_skip) {
    // The capture starts after the MPA exchange, inside the initiator's FPDUs.
    t.skip(0, req.size() + c.midstream_skip);
    t.skip(1, rep.size());
    send(0, istream, c.midstream_skip, istream.bytes.size());
    send_all(1, rstream);
    t.close();
    return built;
  }
  t.handshake(c.advertised_mss);
  if (c.no_mpa_exchange) {
    send_all(0, istream);
    send_all(1, rstream);
    t.close();
    return built;
  }
  t.send(0, B(req), c.mss);
  if (c.reject) {
    t.send(1, B(rep), c.mss);
    if (c.data_after_reject) send_all(0, istream);
    if (!c.streaming_after_reject.empty())
      t.send(0, Bytes(reinterpret_cast<const std::byte*>(c.streaming_after_reject.data()), c.streaming_after_reject.size()), c.mss);
    t.close();
    return built;
  }
  if (c.early_fpdu) send_all(0, istream);
  t.send(1, B(rep), c.mss);
  if (c.responder_first) {
    // The responder's Send, sent ahead of the initiator's FPDUs.
    std::map<std::string, int> ignored;
    send_all(1, frame_stream({m.resp[RespAt::send]}, crc, false, c, false, ignored));
    std::vector<Buf> rest = m.resp;
    rest.erase(rest.begin() + RespAt::send);
    rstream = frame_stream(rest, crc, m.req.markers && !c.omitted_markers, c, false, ignored);
  }
  if (!c.early_fpdu) {
    if (c.gap_in_initiator) {
      // Send the first half, leave out 300 octets, send the rest.
      const std::size_t half = istream.bytes.size() / 2, hole = 300;
      send(0, istream, 0, half);
      t.skip(0, hole);
      send(0, istream, half + hole, istream.bytes.size());
    } else {
      send(0, istream, 0, istream.bytes.size() - c.fin_cut);
    }
  }
  send_all(1, rstream);
  if (c.reset_at_end) t.reset(1);
  else t.close();
  return built;
}

}  // namespace rdmaconf::captures::gen

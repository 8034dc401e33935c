// rdmaconf-gen: writes the golden captures and their manifests.
//   rdmaconf-gen OUTDIR            every scenario
//   rdmaconf-gen OUTDIR NAME...    only those
// Each scenario builds its traffic with the project's encoders and states,
// from how it builds it, which verdict each exercised case must reach: the
// manifest is written from that declaration, never from running the checker.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "captures/gen/pcap_writer.hpp"
#include "protocols/ib/packet.hpp"
#include "protocols/iwarp/codec.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::captures;
using namespace rdmaconf::protocols;
using protocols::iwarp::MpaFrameKind;
using protocols::iwarp::MpaRrParams;
using Buf = std::vector<std::byte>;

namespace {

Bytes B(const Buf& b) { return {b.data(), b.size()}; }

Buf pattern(std::size_t n, unsigned seed) {
  Buf b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte((i * 31 + seed * 7 + (i >> 8)) & 0xff);
  return b;
}

// ---- iWARP message encoders (DDP segment = DDP header + RDMAP body + payload)
// Both DDP layouts start with the same control rows (headers.hpp asserts the indices match).
Header ddp_header(bool tagged, std::uint8_t opcode, bool last) {
  Header h(tagged ? iwarp::kDdpTagged : iwarp::kDdpUntagged);
  h.set(iwarp::DdpTagged::t, tagged);
  h.set(iwarp::DdpTagged::l, last);
  h.set(iwarp::DdpTagged::dv, 1);
  h.set(iwarp::DdpTagged::rv, 1);
  h.set(iwarp::DdpTagged::opcode, opcode);
  return h;
}

Buf segment(const Header& h, Bytes rest) {
  Buf b;
  iwarp::append(b, h);
  iwarp::append(b, rest);
  return b;
}

Buf ddp_untagged(std::uint8_t opcode, std::uint32_t qn, std::uint32_t msn, std::uint32_t mo, bool last, Bytes rest,
                 std::uint32_t rsvd_ulp = 0) {
  Header h = ddp_header(false, opcode, last);
  h.set(iwarp::DdpUntagged::rsvd_ulp, rsvd_ulp);
  h.set(iwarp::DdpUntagged::qn, qn);
  h.set(iwarp::DdpUntagged::msn, msn);
  h.set(iwarp::DdpUntagged::mo, mo);
  return segment(h, rest);
}

Buf ddp_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, bool last, Bytes payload) {
  Header h = ddp_header(true, opcode, last);
  h.set(iwarp::DdpTagged::stag, stag);
  h.set(iwarp::DdpTagged::to, to);
  return segment(h, payload);
}

struct IwarpConfig {
  std::uint8_t revision = 2;
  bool enhanced = true;
  bool req_crc = true, rep_crc = false;
  std::uint8_t req_reserved = 0;
  std::uint8_t req_revision_override = 0;
  std::size_t req_extra_pd = 0;
  std::string reply_key;             // replaces the Reply key when not empty
  std::size_t mss = 1448;
  int corrupt_crc_at = -1;           // initiator FPDU index whose CRC is wrong
  int short_ulpdu_at = -1;           // initiator FPDU index replaced by a 10-octet ULPDU
  bool gap_in_initiator = false;     // drop the octets of one segment from the capture
  bool ipv6 = false;
};

nlohmann::json config_json(const IwarpConfig& c) {
  return {{"mpa_revision", c.revision}, {"enhanced", c.enhanced}, {"initiator_crc", c.req_crc}, {"responder_crc", c.rep_crc},
          {"mss", c.mss}, {"ipv6", c.ipv6}, {"corrupt_crc_at_fpdu", c.corrupt_crc_at}, {"short_ulpdu_at_fpdu", c.short_ulpdu_at},
          {"request_reserved_bits", c.req_reserved}, {"request_revision_override", c.req_revision_override},
          {"request_private_data", c.req_extra_pd + (c.revision == 2 && c.enhanced ? 4 : 0)},
          {"reply_key", c.reply_key.empty() ? std::string(iwarp::kMpaReplyKey) : c.reply_key},
          {"capture_gap_in_initiator_stream", c.gap_in_initiator}};
}

// Every RDMAP opcode, both directions: the initiator sends the four Sends,
// both Immediate Data forms, a three-segment RDMA Write, a Read Request and an
// Atomic Request; the responder answers with a three-segment Read Response,
// an Atomic Response and a Send, and ends with a Terminate.
void iwarp_conversation(const std::string& path, const IwarpConfig& c) {
  PcapWriter w(path);
  const Host a = c.ipv6 ? host_v6(1, 40001) : host_v4(192, 0, 2, 1, 40001);
  const Host b = c.ipv6 ? host_v6(2, 4791 + 1) : host_v4(192, 0, 2, 2, 7174);
  TcpConversation t(w, a, b);
  t.handshake();
  const bool crc = c.req_crc || c.rep_crc;

  MpaRrParams req;
  req.kind = MpaFrameKind::request;
  req.crc = c.req_crc;
  req.revision = c.req_revision_override ? c.req_revision_override : c.revision;
  req.enhanced = c.enhanced && c.revision == 2;
  req.ird = 16;
  req.ord = 16;
  req.reserved_bits = c.req_reserved;
  req.private_data = pattern(c.req_extra_pd, 1);
  Buf r;
  iwarp::encode_mpa_rr(r, req);
  t.send(0, B(r), c.mss);

  MpaRrParams rep = req;
  rep.kind = MpaFrameKind::reply;
  rep.crc = c.rep_crc;
  rep.revision = c.revision;
  rep.reserved_bits = 0;
  rep.ird = 8;
  rep.ord = 8;
  rep.private_data = pattern(8, 2);
  Buf p;
  iwarp::encode_mpa_rr(p, rep);
  if (!c.reply_key.empty()) std::copy_n(reinterpret_cast<const std::byte*>(c.reply_key.data()), 16, p.begin());
  t.send(1, B(p), c.mss);

  // Initiator's messages.
  std::vector<Buf> init;
  std::uint32_t msn0 = 1;
  const Buf small = pattern(37, 3);
  init.push_back(ddp_untagged(0x3, 0, msn0++, 0, true, B(small)));
  init.push_back(ddp_untagged(0x4, 0, msn0++, 0, true, B(pattern(64, 4)), 0x1234));
  init.push_back(ddp_untagged(0x5, 0, msn0++, 0, true, B(pattern(1, 5))));
  init.push_back(ddp_untagged(0x6, 0, msn0++, 0, true, B(pattern(2, 6)), 0x5678));
  init.push_back(ddp_untagged(0x8, 0, msn0++, 0, true, B(pattern(8, 7))));
  init.push_back(ddp_untagged(0x9, 0, msn0++, 0, true, B(pattern(8, 8))));
  for (int s = 0; s < 3; ++s) init.push_back(ddp_tagged(0x0, 0xabcd01, 0x10000 + s * 1000u, s == 2, B(pattern(1000, 9 + s))));
  {
    Header rr(iwarp::kReadRequest);
    rr.set(iwarp::ReadRequest::sink_stag, 0x1111);
    rr.set(iwarp::ReadRequest::sink_to, 0x2000);
    rr.set(iwarp::ReadRequest::size, 2500);
    rr.set(iwarp::ReadRequest::src_stag, 0x2222);
    rr.set(iwarp::ReadRequest::src_to, 0x8000);
    init.push_back(ddp_untagged(0x1, 1, 1, 0, true, rr.bytes()));
  }
  {
    Header at(iwarp::kAtomicRequest);
    at.set(iwarp::AtomicRequest::op, 0);
    at.set(iwarp::AtomicRequest::req_id, 1);
    at.set(iwarp::AtomicRequest::stag, 0x3333);
    at.set(iwarp::AtomicRequest::to, 0x40);
    at.set(iwarp::AtomicRequest::add_swap, 5);
    at.set(iwarp::AtomicRequest::add_swap_mask, ~0ull);
    init.push_back(ddp_untagged(0xA, 3, 1, 0, true, at.bytes()));
  }
  Buf stream;
  for (std::size_t i = 0; i < init.size(); ++i) {
    const int idx = static_cast<int>(i);
    if (idx == c.short_ulpdu_at) init[i] = Buf(init[i].begin(), init[i].begin() + 10);
    const std::size_t start = stream.size();
    iwarp::encode_fpdu(stream, B(init[i]), crc);
    if (idx == c.corrupt_crc_at) stream[stream.size() - 1] ^= std::byte{0x5a};
    (void)start;
  }
  if (c.gap_in_initiator) {
    // Send the first half, leave out one segment's worth, send the rest.
    const std::size_t half = stream.size() / 2, hole = 300;
    t.send(0, Bytes(stream).first(half), c.mss);
    t.skip(0, hole);
    t.send(0, Bytes(stream).subspan(half + hole), c.mss);
  } else {
    t.send(0, B(stream), c.mss);
  }

  // Responder's messages.
  std::vector<Buf> resp;
  for (int s = 0; s < 3; ++s)
    resp.push_back(ddp_tagged(0x2, 0x1111, 0x2000 + s * 1000u, s == 2, B(pattern(s == 2 ? 500 : 1000, 20 + s))));
  {
    Header ar(iwarp::kAtomicResponse);
    ar.set(iwarp::AtomicResponse::req_id, 1);
    ar.set(iwarp::AtomicResponse::orig, 41);
    resp.push_back(ddp_untagged(0xB, 4, 1, 0, true, ar.bytes()));
  }
  resp.push_back(ddp_untagged(0x3, 0, 1, 0, true, B(pattern(100, 30))));
  {
    // Terminate: DDP layer, tagged buffer error, invalid STag, with the offending DDP header copied.
    Header tc(iwarp::kTerminate);
    tc.set(iwarp::Terminate::layer, 1);
    tc.set(iwarp::Terminate::etype, 1);
    tc.set(iwarp::Terminate::ecode, 0);
    tc.set(iwarp::Terminate::m, 1);
    tc.set(iwarp::Terminate::d, 1);
    Buf body(tc.bytes().begin(), tc.bytes().end());
    Header sl(iwarp::kDdpSegLen);
    sl.set(iwarp::DdpSegLen::len, 1014);
    iwarp::append(body, sl);
    const Buf offending = ddp_tagged(0x0, 0xdead, 0, true, {});
    iwarp::append(body, B(offending));
    resp.push_back(ddp_untagged(0x7, 2, 1, 0, true, B(body)));
  }
  Buf rstream;
  for (const auto& m : resp) iwarp::encode_fpdu(rstream, B(m), crc);
  t.send(1, B(rstream), c.mss);
  t.close();
}

// ---- RoCEv2
struct RoceConfig {
  bool ipv6 = false;
  int corrupt_icrc_at = -1;
  int tver_at = -1;
  int bad_opcode_at = -1;
  int reserved_at = -1;
  int truncate_at = -1;
  int bad_pad_at = -1;
};

nlohmann::json config_json(const RoceConfig& c) {
  return {{"ipv6", c.ipv6}, {"corrupt_icrc_at_packet", c.corrupt_icrc_at}, {"tver_1_at_packet", c.tver_at},
          {"undefined_opcode_at_packet", c.bad_opcode_at}, {"reserved_bit_at_packet", c.reserved_at},
          {"truncated_reth_at_packet", c.truncate_at}, {"wrong_pad_at_packet", c.bad_pad_at}};
}

void roce_capture(const std::string& path, const RoceConfig& c) {
  PcapWriter w(path);
  const Host a = c.ipv6 ? host_v6(0x11, 49152) : host_v4(198, 51, 100, 1, 49152);
  Host b = c.ipv6 ? host_v6(0x12, ib::kRoceV2Port) : host_v4(198, 51, 100, 2, ib::kRoceV2Port);
  Host a_dst = a;
  a_dst.port = ib::kRoceV2Port;
  Host b_src = b;
  b_src.port = 49153;
  int index = 0;
  auto packet = [&](bool from_a, std::uint8_t opcode, std::uint32_t qp, std::uint32_t psn, Buf payload,
                    std::initializer_list<std::pair<ib::Ext, Header>> exts) {
    ib::IbPacketSpec s;
    s.bth.set(ib::Bth::opcode, opcode);
    s.bth.set(ib::Bth::pkey, 0xffff);
    s.bth.set(ib::Bth::destqp, qp);
    s.bth.set(ib::Bth::psn, psn);
    s.bth.set(ib::Bth::ackreq, opcode <= 0x14 && (opcode & 0x1f) != 0x11);
    if (index == c.tver_at) s.bth.set(ib::Bth::tver, 1);
    if (index == c.bad_opcode_at) s.bth.set(ib::Bth::opcode, 0x1f);
    if (index == c.reserved_at) s.bth.set(ib::Bth::rsvd2, 0x10);
    for (auto& [e, h] : exts) s.ext[static_cast<std::size_t>(__builtin_ctz(e))] = h;
    s.payload = std::move(payload);
    Buf t;
    ib::encode_transport(t, s);
    if (index == c.truncate_at) t.erase(t.begin() + 12 + 8, t.begin() + 12 + 16);  // cut half of the RETH
    if (index == c.bad_pad_at) t.erase(t.end() - 4 - 1);  // one pad octet fewer than the pad count says
    auto l3 = ip_udp(from_a ? a : b_src, from_a ? b : a_dst, B(t), c.ipv6);
    const std::size_t iph = c.ipv6 ? 40 : 20;
    put_le32(l3, l3.size() - 4, ib::roce_icrc(B(l3), c.ipv6, iph));
    if (index == c.corrupt_icrc_at) l3[l3.size() - 2] ^= std::byte{0x01};
    w.ip_packet(from_a ? a : b_src, from_a ? b : a_dst, B(l3));
    ++index;
  };
  auto reth = [](std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
    Header h(ib::kReth);
    h.set(ib::Reth::va, va);
    h.set(ib::Reth::rkey, rkey);
    h.set(ib::Reth::dmalen, len);
    return h;
  };
  auto aeth = [](std::uint32_t msn) {
    Header h(ib::kAeth);
    h.set(ib::Aeth::msn, msn);
    return h;
  };
  const std::uint32_t qa = 0x11, qb = 0x12;
  // RC: Write First/Middle/Last (1024 PMTU), Send Only, Send Only with Immediate, Read Request and its Response
  // First/Last, CmpSwap and FetchAdd with their Atomic ACKs, ACKs.
  packet(true, 0x06, qb, 100, pattern(1024, 1), {{ib::kExtReth, reth(0x1000, 0x77, 2500)}});
  packet(true, 0x07, qb, 101, pattern(1024, 2), {});
  packet(true, 0x08, qb, 102, pattern(452, 3), {});
  packet(false, 0x11, qa, 102, {}, {{ib::kExtAeth, aeth(1)}});
  packet(true, 0x04, qb, 103, pattern(33, 4), {});
  Header imm(ib::kImmDt);
  imm.set(ib::ImmDt::imm, 0xfeedbeef);
  packet(true, 0x05, qb, 104, pattern(7, 5), {{ib::kExtImmDt, imm}});
  packet(true, 0x0C, qb, 105, {}, {{ib::kExtReth, reth(0x9000, 0x88, 1500)}});
  packet(false, 0x0D, qa, 105, pattern(1024, 6), {{ib::kExtAeth, aeth(3)}});
  packet(false, 0x0F, qa, 106, pattern(476, 7), {{ib::kExtAeth, aeth(3)}});
  Header at(ib::kAtomicEth);
  at.set(ib::AtomicEth::va, 0x40);
  at.set(ib::AtomicEth::rkey, 0x99);
  at.set(ib::AtomicEth::swapadd, 1);
  at.set(ib::AtomicEth::compare, 0);
  packet(true, 0x13, qb, 107, {}, {{ib::kExtAtomicEth, at}});
  Header aa(ib::kAtomicAckEth);
  aa.set(ib::AtomicAckEth::orig, 0);
  packet(false, 0x12, qa, 107, {}, {{ib::kExtAeth, aeth(4)}, {ib::kExtAtomicAckEth, aa}});
  packet(true, 0x14, qb, 108, {}, {{ib::kExtAtomicEth, at}});
  packet(false, 0x12, qa, 108, {}, {{ib::kExtAeth, aeth(5)}, {ib::kExtAtomicAckEth, aa}});
  Header ieth(ib::kIeth);
  ieth.set(ib::Ieth::rkey, 0x77);
  packet(true, 0x17, qb, 109, pattern(12, 8), {{ib::kExtIeth, ieth}});
  packet(false, 0x11, qa, 109, {}, {{ib::kExtAeth, aeth(6)}});
  // UD Send Only with DETH, and a CNP.
  Header deth(ib::kDeth);
  deth.set(ib::Deth::qkey, 0x11111111);
  deth.set(ib::Deth::srcqp, 0x20);
  packet(true, 0x64, 0x21, 1, pattern(256, 9), {{ib::kExtDeth, deth}});
  packet(false, 0x81, qa, 0, Buf(16), {});
}

// ---- scenarios
using Expect = std::map<std::string, std::string>;
struct Scenario {
  std::string name, description;
  std::function<nlohmann::json(const std::string&)> make;  // writes the capture, returns its config
  Expect expected;
};

Expect iwarp_clean(bool crc) {
  return {{"iwarp.mpa.req.key", "PASS"}, {"iwarp.mpa.rep.key", "PASS"}, {"iwarp.mpa.rr.reserved", "PASS"},
          {"iwarp.mpa.rr.revision", "PASS"}, {"iwarp.mpa.rr.pd_length", "PASS"},
          {"iwarp.mpa.fpdu.crc", crc ? "PASS" : "NOT_APPLICABLE"}, {"iwarp.ddp.segment.header", "PASS"}};
}
Expect with(Expect e, const std::string& id, const std::string& v) {
  e[id] = v;
  return e;
}
Expect roce_clean() {
  return {{"roce.packet.headers", "PASS"}, {"roce.icrc", "PASS"}, {"ib.bth.tver", "PASS"},
          {"ib.bth.opcode", "PASS"}, {"ib.bth.reserved", "PASS"}, {"ib.bth.padcnt", "PASS"}};
}

template <class C>
std::function<nlohmann::json(const std::string&)> iw(C c) {
  return [c](const std::string& p) { iwarp_conversation(p, c); return config_json(c); };
}
template <class C>
std::function<nlohmann::json(const std::string&)> ro(C c) {
  return [c](const std::string& p) { roce_capture(p, c); return config_json(c); };
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> v;
  IwarpConfig rev2crc;
  v.push_back({"iwarp-rev2-crc", "MPA revision 2 (RFC 6581 IRD/ORD), CRC asked by the initiator, every RDMAP opcode, FPDUs coalesced into 1448-octet segments",
               iw(rev2crc), iwarp_clean(true)});
  IwarpConfig rev1;
  rev1.revision = 1;
  rev1.enhanced = false;
  rev1.req_crc = false;
  rev1.mss = 100;
  v.push_back({"iwarp-rev1-nocrc-split", "MPA revision 1 without CRC, FPDUs split across 100-octet segments",
               iw(rev1), iwarp_clean(false)});
  IwarpConfig rep_crc6;
  rep_crc6.req_crc = false;
  rep_crc6.rep_crc = true;
  rep_crc6.ipv6 = true;
  rep_crc6.mss = 333;
  v.push_back({"iwarp-ipv6-reply-crc", "IPv6; only the responder asks for CRC, so both directions use it; 333-octet segments",
               iw(rep_crc6), iwarp_clean(true)});
  IwarpConfig bad_crc;
  bad_crc.corrupt_crc_at = 3;
  v.push_back({"iwarp-fault-crc", "as iwarp-rev2-crc, with the CRC of the initiator's fourth FPDU altered",
               iw(bad_crc), with(iwarp_clean(true), "iwarp.mpa.fpdu.crc", "FAIL")});
  IwarpConfig rsvd;
  rsvd.req_reserved = 0x4;
  v.push_back({"iwarp-fault-rr-reserved", "the MPA Request sets a reserved flag bit",
               iw(rsvd), with(iwarp_clean(true), "iwarp.mpa.rr.reserved", "FAIL")});
  IwarpConfig rev3;
  rev3.req_revision_override = 3;
  v.push_back({"iwarp-fault-rr-revision", "the MPA Request carries revision 3 (the Reply answers 2)",
               iw(rev3), with(iwarp_clean(true), "iwarp.mpa.rr.revision", "FAIL")});
  IwarpConfig pd;
  pd.req_extra_pd = 600;
  v.push_back({"iwarp-fault-rr-pd-length", "the MPA Request carries 604 octets of private data",
               iw(pd), with(iwarp_clean(true), "iwarp.mpa.rr.pd_length", "FAIL")});
  IwarpConfig key;
  key.reply_key = "MPA ID Rep Frxme";
  v.push_back({"iwarp-fault-rep-key", "the MPA Reply's key is misspelt; framing after it is not followed",
               iw(key), [] {
                 Expect e = iwarp_clean(true);
                 e["iwarp.mpa.rep.key"] = "FAIL";
                 e.erase("iwarp.mpa.rr.reserved");  // the misspelt Reply is not an MPA frame, so
                 e.erase("iwarp.mpa.rr.revision");  // these cases see only the Request: PASS in
                 e.erase("iwarp.mpa.rr.pd_length"); // practice, but not what this capture is for
                 e["iwarp.mpa.fpdu.crc"] = "INCONCLUSIVE";
                 e["iwarp.ddp.segment.header"] = "INCONCLUSIVE";
                 return e;
               }()});
  IwarpConfig shortu;
  shortu.short_ulpdu_at = 2;
  v.push_back({"iwarp-fault-ddp-short", "the initiator's third FPDU carries a 10-octet ULPDU, too short for a DDP header",
               iw(shortu), with(iwarp_clean(true), "iwarp.ddp.segment.header", "FAIL")});
  IwarpConfig gap;
  gap.gap_in_initiator = true;
  gap.mss = 300;
  v.push_back({"iwarp-gap", "300 octets of the initiator's FPDU stream are missing from the capture: what follows is inconclusive, not a violation",
               iw(gap), with(with(iwarp_clean(true), "iwarp.mpa.fpdu.crc", "INCONCLUSIVE"), "iwarp.ddp.segment.header", "INCONCLUSIVE")});

  v.push_back({"roce-v4", "RoCEv2 over IPv4: RC Write/Send/Read/Atomics/ACKs, Send with Invalidate, UD Send, CNP", ro(RoceConfig{}), roce_clean()});
  RoceConfig v6;
  v6.ipv6 = true;
  v.push_back({"roce-v6", "the same traffic over IPv6 (UDP checksum set)", ro(v6), roce_clean()});
  RoceConfig icrc;
  icrc.corrupt_icrc_at = 4;
  v.push_back({"roce-fault-icrc", "the ICRC of the fifth packet is altered", ro(icrc), with(roce_clean(), "roce.icrc", "FAIL")});
  RoceConfig tver;
  tver.tver_at = 1;
  v.push_back({"roce-fault-tver", "the second packet has transport version 1", ro(tver), with(roce_clean(), "ib.bth.tver", "FAIL")});
  RoceConfig op;
  op.bad_opcode_at = 3;
  v.push_back({"roce-fault-opcode", "the fourth packet (an ACK) has the undefined opcode 0x1F", ro(op), with(roce_clean(), "ib.bth.opcode", "FAIL")});
  RoceConfig rs;
  rs.reserved_at = 2;
  v.push_back({"roce-fault-reserved", "the third packet sets a reserved BTH bit", ro(rs), with(roce_clean(), "ib.bth.reserved", "FAIL")});
  RoceConfig tr;
  tr.truncate_at = 6;
  v.push_back({"roce-fault-truncated-reth", "the seventh packet (RDMA READ Request, no payload) carries only half of its RETH", ro(tr),
               with(roce_clean(), "roce.packet.headers", "FAIL")});
  RoceConfig pad;
  pad.bad_pad_at = 4;
  v.push_back({"roce-fault-padcnt", "the fifth packet (33-octet SEND Only, pad count 3) carries only two pad octets", ro(pad),
               with(roce_clean(), "ib.bth.padcnt", "FAIL")});
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: rdmaconf-gen OUTDIR [SCENARIO...]\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  std::vector<std::string> only(argv + 2, argv + argc);
  int made = 0;
  for (const auto& s : scenarios()) {
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    const fs::path pcap = out / (s.name + ".pcap");
    nlohmann::json m;
    m["capture"] = pcap.filename().string();
    m["made_by"] = "rdmaconf-gen (captures/gen/main.cpp), scenario " + s.name;
    m["description"] = s.description;
    m["config"] = s.make(pcap.string());
    m["expected"] = s.expected;
    std::ofstream(out / (s.name + ".manifest.json")) << m.dump(2) << "\n";
    ++made;
  }
  if (!only.empty() && made != static_cast<int>(only.size())) {
    std::cerr << "rdmaconf-gen: unknown scenario name\n";
    return 2;
  }
  return 0;
}

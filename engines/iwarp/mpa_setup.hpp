#pragma once
// MPA connection setup of the reference iWARP engine, apart from the queue
// pair that uses it: the initiator's Request, the responder's Reply to a
// Request, the initiator's reading of the Reply, and what they settle for
// the connection (RFC 5044 §7.1: CRC and markers; RFC 6581 §9.1 IRD and
// ORD, §9.2 peer-to-peer mode and its RTR). Pure functions of the decoded
// frames and the configuration.
#include <cstdint>
#include <string>
#include <vector>

#include "protocols/iwarp/codec.hpp"

namespace rdmaconf::engine::iwarp {

enum class Rtr { none, send, write, read };  // RFC 6581 ready-to-receive message type

struct Faults {
  std::uint64_t corrupt_crc_fpdu = 0;      // flip the CRC of the Nth FPDU sent (1-based; 0 off)
  bool corrupt_every_crc = false;          // every FPDU's CRC field flipped (0x5a5a5a5a without CRC)
  std::uint64_t wrong_marker = 0;          // XOR the pointer of the Nth marker sent
  bool marker_reserved_bits = false;       // every marker with its reserved field and its pointer's two low bits set
  std::uint64_t skip_msn_message = 0;      // the Nth untagged Send-queue message skips one MSN
  std::uint64_t repeat_msn_message = 0;    // the Nth untagged Send-queue message reuses the last MSN
  bool ignore_ord = false;                 // send Read Requests beyond the negotiated ORD
  bool fpdu_before_reply = false;          // the initiator sends an FPDU right behind its Request
  std::uint64_t oversize_length_fpdu = 0;  // the Nth FPDU's length field claims 64 octets more than sent
  std::uint64_t skip_read_msn = 0;         // the Nth RDMA Read Request skips one MSN on its queue
  // Our MPA Request (initiator) or Reply (responder) breaks one rule of
  // RFC 5044 §7.1.1: a key ending in "FramE", revision 0 (no MPA revision a
  // receiver can interoperate with), or 513 octets of private data; or it
  // is never sent (withheld: §7.1.2 rules 8 and 10, the startup timeouts),
  // or (a Reply) it carries the Request's key, as a second initiator would
  // (request_key: §7.1.2 rule 8). With the RFC 6581 word: A = 0 with B, C
  // and D set (rtr_bits, §9.2), or (a Reply) an ORD of 0x3FFE, beyond any
  // initiator's IRD (ord_excess, §9.1).
  enum class Frame : std::uint8_t { none, key, revision, private_data, withheld, request_key, rtr_bits, ord_excess };
  Frame request = Frame::none, reply = Frame::none;
  // Our Terminates: the copied DDP header with a bit of its MSN or TO
  // flipped, or no copied headers at all (M = D = R = 0).
  enum class Terminate : std::uint8_t { none, wrong_ddp_header, no_headers };
  Terminate terminate = Terminate::none;
  // The Nth FPDU sent (1-based; 0 off) carries DDP version 2, RDMAP version
  // 2, the undefined opcode 0xF, (untagged) queue number 5, (an Atomic
  // Request) Atomic Operation Code 1, which RFC 7306 §5.2.1 Figure 5 does
  // not define, or its RDMAP header's last 4 octets left out (an Immediate
  // Data message then carries 4 octets of data instead of 8).
  enum class Segment : std::uint8_t { none, ddp_version, rdmap_version, opcode, qn, atomic_opcode, short_body };
  Segment segment = Segment::none;
  std::uint64_t segment_fpdu = 0;
};

struct QpConfig {
  bool initiator = true;
  std::uint8_t revision = 2;
  bool enhanced = true;        // RFC 6581 IRD/ORD word (revision 2 only)
  bool crc = true;             // ask for CRC (used when either side asks)
  bool markers = false;        // ask the peer to send markers to us
  bool p2p = false;            // RFC 6581 peer-to-peer mode: the initiator sends an RTR first
  Rtr rtr = Rtr::send;         // initiator: the RTR type it offers / uses
  std::uint16_t ird = 16, ord = 16;
  std::vector<std::byte> private_data;
  bool reject = false;         // responder: reject the Request
  std::size_t mulpdu = 8192;   // largest ULPDU we send (capped by the 16-bit length field)
  std::uint64_t setup_timeout_ms = 5000;
  Faults faults;
};

// What negotiation settles for a connection.
struct Negotiated {
  bool crc = false;         // CRC in use, both ways
  bool tx_markers = false;  // we send markers (the peer asked)
  bool rx_markers = false;  // the peer sends markers (we asked)
  bool p2p = false;         // peer-to-peer mode: the initiator's RTR goes first
  Rtr rtr = Rtr::none;
  std::uint16_t ord_eff = 0, ird_eff = 0;
};

// The initiator's first octets: its MPA Request (and, with the
// fpdu_before_reply fault, an FPDU right behind it).
std::vector<std::byte> mpa_request(const QpConfig& cfg);
// An MPA Request or Reply of `p`, with `fault` planted (Faults::Frame).
std::vector<std::byte> encode_frame(protocols::iwarp::MpaRrParams p, Faults::Frame fault);

// The MPA Reply a responder configured by `cfg` answers a decoded Request
// with (RFC 5044 §7.1.1; RFC 6581 §9.1 IRD/ORD, §9.2 RTR), and the RTR type
// and ORD that follow from it; or why the Request cannot be answered.
struct ReplyPlan {
  protocols::iwarp::MpaRrParams params;
  bool p2p = false;
  Rtr rtr = Rtr::none;
  std::uint16_t ord_eff = 0;
  std::string problem;  // not empty: no Reply can be made (a wrong key or revision)
};
ReplyPlan plan_reply(const protocols::iwarp::MpaRrFrame& request, const QpConfig& cfg);

// What the responder settles in answering `request` by `plan`.
Negotiated responder_settles(const protocols::iwarp::MpaRrFrame& request, const ReplyPlan& plan, const QpConfig& cfg);

// The initiator's reading of the responder's Reply: established with what
// it settles; rejected by the responder; a Reply it cannot use (`why`); or
// established only to Terminate at once with LLP error type 0 and
// `llp_code` (RFC 6581 §9.2: no RTR type it can send; §9.1: the
// responder's ORD beyond its IRD).
struct ReplyReading {
  enum class Outcome { established, rejected, failed, terminate } outcome = Outcome::failed;
  Negotiated settled;
  std::string why;
  std::uint8_t llp_code = 0;
};
ReplyReading read_reply(const protocols::iwarp::MpaRrFrame& reply, const QpConfig& cfg);

}  // namespace rdmaconf::engine::iwarp

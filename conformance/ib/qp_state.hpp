#pragma once
// Per-QP state of an InfiniBand transport conversation, built from the
// packets alone (IBTA Vol.1 ch. 9). Within one conversation (two addresses)
// requests are grouped into request flows (direction, destination QP) and
// answers (ACK, NAK, Read Response, Atomic ACK) into response flows; a
// response flow is paired with the request flow in the other direction whose
// PSNs it answers. The tracker keeps what a conforming requester and responder
// would know (next PSN, the responder's expected PSN, open message,
// outstanding Reads and Atomics, pending NAKs) and reports, for each packet,
// the facts the cases judge. It assumes the capture saw every packet that
// crossed the link, unless the traffic itself proves a loss (an ACK beyond
// PSNs the capture never saw), which it reports as such.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocols/ib/packet.hpp"

namespace rdmaconf::conformance::ib {

using protocols::ib::kPsnMask;
using protocols::ib::psn_add;
using protocols::ib::psn_diff;
// a - b in the 24-bit PSN space, in [-2^23, 2^23).

// Packets a Read Response of `len` octets takes at path MTU `pmtu` (0: unknown;
// then only a length of at most 256 octets, the smallest MTU, is certain).
std::uint32_t read_packets(std::uint64_t len, std::uint32_t pmtu);
bool valid_mtu(std::uint64_t n);

using protocols::ib::AckKind;
using protocols::ib::ack_kind;
using protocols::ib::kNakPsnSequence;
using protocols::ib::kNakInvalidRequest;
using protocols::ib::kNakRemoteAccess;
using protocols::ib::kNakRemoteOperational;
using protocols::ib::kNakInvalidRd;

struct Request {  // an outstanding Read or Atomic request
  std::uint32_t psn = 0;
  std::uint32_t packets = 1;  // response packets it takes (0: unknown yet)
  std::uint64_t length = 0;
  protocols::ib::OpKind kind{};
  std::uint64_t frame = 0;
};

struct RespFlow;

struct ReqFlow {
  int dir = 0;
  std::uint32_t dqp = 0;
  protocols::ib::Transport transport{};
  std::uint64_t packets = 0, first_frame = 0, last_frame = 0;
  std::optional<std::uint16_t> pkey;
  // requester
  bool next_known = false;
  std::uint32_t next_psn = 0, max_psn = 0, first_psn = 0;
  std::uint32_t last_end = 0;  // the PSN after the latest request packet's
  enum class Msg { unknown, none, open } msg = Msg::unknown;
  protocols::ib::OpKind msg_kind{};
  std::optional<std::uint64_t> msg_dmalen;  // RETH DMA length of the Write in progress
  std::uint64_t msg_bytes = 0;
  std::deque<Request> outstanding;
  struct Gap {
    std::uint32_t from = 0;
    std::vector<bool> seen;  // PSNs from `from` on, resent later or not
    std::uint64_t frame = 0;
    bool capture_loss = false;  // the responder acknowledged past it
  };
  std::vector<Gap> gaps;
  struct Wanted {
    std::uint32_t psn;
    std::uint64_t frame;
    bool resent = false;  // the requester sent it again, no answer having reached it
    std::optional<std::uint32_t> acked_then;  // the responder's highest acknowledged PSN at the resend
    // An answer after the resend that repeats an acknowledge the responder
    // had given before it (no answer in flight, but its reply to the
    // duplicate), covering only earlier PSNs.
    std::optional<std::uint64_t> answered_below;
  };
  std::deque<Wanted> ack_wanted;  // AckReq packets not yet covered by a response
  std::uint64_t ackreq_total = 0;
  struct PendingNak {
    std::uint32_t psn;
    std::uint64_t frame;
    bool rnr;
    std::uint64_t requests_after = 0;
    // A resend after the NAK that starts beyond its PSN: the requester went
    // back, so it acted on the NAK (a timer's resend would start at or before
    // the NAK's PSN, the oldest it had not seen acknowledged), but not from its PSN.
    std::optional<std::uint32_t> resent_from;
  };
  std::vector<PendingNak> naks;  // NAKs the requester has not yet acted on
  std::optional<std::uint64_t> fatal_nak;  // frame of a fatal NAK (the QP is in error)
  bool sent_after_fatal = false;
  // responder's view: the PSN it expects next, and an open sequence error
  bool epsn_known = false;
  std::uint32_t epsn = 0;
  bool in_gap = false;
  std::uint64_t gap_frame = 0;
  std::uint32_t gap_psn = 0;  // the out-of-sequence PSN that opened it
  int gap_naks = 0;
  // PSNs of requests seen with a wrong ICRC (the latest few): the responder
  // drops such a packet, so a sequence-error NAK naming one is its due.
  std::vector<std::uint32_t> bad_icrc;
  // The latest request was a resend the traffic explains: it followed a NAK
  // of its PSN, or continued such a resend PSN by PSN.
  bool resending = false;
  // What the latest new request packets carried, by PSN (opcode and data): a
  // PSN that comes again with other content was given to two packets.
  struct Sent {
    std::uint32_t psn;
    std::size_t content;
    std::uint64_t frame;
    protocols::ib::OpKind kind;
    std::uint32_t n;  // PSNs it takes
  };
  std::deque<Sent> sent;
  // Whether a request packet the capture holds (among those kept) took PSN `q`.
  bool sent_psn(std::uint32_t q) const;
  // What an answer said about the requester's stream that the capture does
  // not bear out when it is read: an acknowledge of a PSN beyond the latest
  // request, or a sequence-error NAK when every request came in sequence.
  // The requester's next new request settles it: the next PSN in sequence
  // proves no request had gone unseen (the claim was wrong); a hole explains
  // it by a request the capture lost. A later request that carries the
  // acknowledged PSN was written to the file after its answer.
  struct Claim {
    enum class Kind { ack_ahead, nak_unprovoked } kind;
    std::uint32_t psn;
    std::uint64_t frame;
    std::uint32_t max_sent;  // the requester's highest PSN in the capture then
    enum class State { open, proved, explained } state = State::open;
    std::string why;  // for explained
    bool reached = false;
  };
  std::vector<Claim> claims;
  RespFlow* resp = nullptr;
};

struct RespFlow {
  int dir = 0;
  std::uint32_t dqp = 0;
  std::uint64_t packets = 0, first_frame = 0, last_frame = 0;
  std::optional<std::uint16_t> pkey;
  std::optional<std::uint32_t> msn;
  std::uint32_t msn_psn = 0;  // PSN of the packet that carried `msn`
  bool acked_any = false;
  std::optional<std::uint32_t> answered_psn;  // PSN of the latest ACK or NAK
  bool request_since = false;                 // a request of that PSN came after it
  std::uint32_t max_acked = 0;  // highest PSN acknowledged
  // Read Response in progress
  enum class Msg { unknown, none, open } msg = Msg::unknown;
  Request reading;
  std::uint32_t next_psn = 0, got_packets = 0;
  std::uint64_t got_bytes = 0;
  // The open Read Response's packets (their PSN, content and frame), to
  // tell a PSN given again to other content from a copy.
  struct Sent {
    std::uint32_t psn;
    std::size_t content;
    std::uint64_t frame;
  };
  std::vector<Sent> msg_sent;
  ReqFlow* req = nullptr;
};

// What the cases judge about one packet. Optional members are set only
// when the packet is of the kind they concern and the state allows a verdict.
struct Facts {
  const protocols::ib::IbPacket* ib = nullptr;
  ReqFlow* req = nullptr;    // the request flow the packet belongs to or answers
  RespFlow* resp = nullptr;  // the response flow of an answer
  std::uint32_t pmtu = 0;    // path MTU known before this packet (0: unknown)
  bool pmtu_from_option = false;
  std::optional<std::uint16_t> pkey_before;            // flow's P_Key when it differs
  std::optional<protocols::ib::Transport> transport_before;  // request flow's transport when it differs
  std::optional<std::string> order_error;              // opcode sequence violation
  enum class PsnClass { none, first, next, resend, gap, unknown } psn = PsnClass::none;
  std::uint32_t expected_psn = 0;                       // for gap and for response continuity
  std::optional<std::uint32_t> resp_psn_expected;       // Read Response Middle/Last: PSN it should carry
  struct Done {
    std::uint64_t want_len, got_len;
    std::uint32_t want_packets, got_packets;
    std::uint32_t first_psn;
  };
  std::optional<Done> write_done;  // RDMA Write message ended (RETH known)
  std::optional<Done> read_done;   // Read Response ended
  enum class Match { none, matched, unmatched } match = Match::none;  // Read Response First/Only, Atomic ACK
  // An unmatched answer whose PSN the capture shows was a request other than
  // a Read or Atomic: no lost request explains it.
  bool match_proved = false;
  // A Read Response Last off its PSN sequence that completed the requested
  // length: no packet of it is missing, so the PSN itself is wrong.
  bool resp_psn_proved = false;
  std::optional<std::uint32_t> max_sent;  // ACK/NAK: highest PSN its requester sent
  std::optional<std::uint32_t> msn_before;
  bool answer_repeated = false;  // an RNR NAK with no request of its PSN since the last answer to it
  bool msn_psn_back = false;  // this AETH's PSN is not above that of the AETH before (maybe an older answer)
  bool resend_explained = false;  // a resend that follows a NAK of its PSN or continues one
  bool resend_fills_gap = false;  // a resend of a PSN the capture had not shown before
  // A new request whose PSN an earlier packet of the flow (this frame) had
  // with other content: not a resend, and no capture artefact makes one
  // packet into another.
  std::optional<std::uint64_t> psn_reused;
  // A Read Response Middle or Last whose PSN a packet of the same response
  // (this frame) had with other content: the responder gave one PSN to two
  // packets (a copy has the same octets; a response served again after a
  // repeated request starts over with a First).
  std::optional<std::uint64_t> resp_psn_reused;
  // A new request with a PSN that an acknowledge (this frame) had already
  // named: the file holds the answer before the request.
  std::optional<std::uint64_t> acked_before_sent;
  bool ack_ahead = false;  // an acknowledge beyond the requester's latest PSN (a Claim)
  // A hole in the requester's PSNs that an acknowledge (this frame) had covered.
  std::optional<std::uint64_t> gap_acked;
  // sequence-error NAK bookkeeping
  std::optional<std::uint32_t> nak_expected;  // NAK-sequence: the PSN the responder expects (when known)
  bool nak_no_gap = false;                    // NAK-sequence with no out-of-sequence request seen (a Claim)
  // NAK-sequence naming a PSN inside the capture's hole: the responder had
  // the PSNs before it, which the capture lacks.
  bool nak_in_hole = false;
  int nak_count = 0;                          // NAKs sent for the current gap, this one included
  struct GapClosed {
    int naks;
    std::uint64_t frame;
  };
  std::optional<GapClosed> gap_closed;  // the requester resent the expected PSN
  bool gap_lost = false;                // an ACK proved the capture lost the "missing" PSNs
  int naks_followed = 0;                // NAKs this resend acts on
  std::optional<std::uint64_t> after_fatal;  // a request after a fatal NAK (its frame)
};

// End of capture: what is still open.
struct Closing {
  struct Item {
    const ReqFlow* flow;
    std::uint32_t psn;
    std::uint64_t frame;
    enum class State { fail, inconclusive, pass } state;
    std::string detail;
    bool from_responder = false;  // the frame is the responder's
  };
  std::uint64_t answered = 0;   // AckReq packets covered by a response
  std::uint64_t fatal_respected = 0;  // fatal NAKs after which the requester fell silent
  std::vector<Item> gaps;       // PSNs skipped by a requester
  std::vector<Item> unanswered; // AckReq packets without an answer
  std::vector<Item> not_resent; // NAKs the requester did not act on
  std::vector<Item> open_gaps;  // out-of-sequence requests with no NAK and no resend
  std::vector<Item> acked_ahead;     // acknowledges of PSNs beyond the requester's latest
  std::vector<Item> nak_unprovoked;  // sequence-error NAKs with every request in sequence
};

class Conversation {
 public:
  explicit Conversation(std::uint32_t pmtu_option) : pmtu_(pmtu_option), pmtu_option_(pmtu_option != 0) {}
  // Updates the state with a decoded packet sent in direction `dir` and
  // returns what the cases judge; the facts are valid until the next call.
  // `icrc_bad`: the packet's ICRC is wrong (roce.icrc FAILs it); a
  // conforming receiver drops it.
  const Facts& packet(int dir, const protocols::ib::IbPacket& p, std::uint64_t frame, bool icrc_bad = false);
  Closing close() const;
  std::uint32_t pmtu() const { return pmtu_; }
  bool pmtu_inferred() const { return pmtu_ != 0 && !pmtu_option_; }
  std::vector<const ReqFlow*> request_flows() const;

 private:
  void request(int dir, const protocols::ib::IbPacket& p, std::uint64_t frame, bool icrc_bad);
  void response(int dir, const protocols::ib::IbPacket& p, std::uint64_t frame);
  void responder_view(ReqFlow& f, std::uint32_t psn, std::uint32_t n, std::uint64_t frame);
  void settle_claims(ReqFlow& f, std::uint32_t psn, std::uint32_t n, std::uint64_t frame);
  static void add_claim(ReqFlow& f, ReqFlow::Claim c);
  RespFlow& pair(RespFlow& r, std::uint32_t psn);
  // `upto`: highest PSN acknowledged; `answered`: highest PSN whose AckReq this answers.
  void acknowledge(RespFlow& r, std::uint32_t upto, std::uint32_t answered);

  std::uint32_t pmtu_;
  bool pmtu_option_;
  std::map<std::pair<int, std::uint32_t>, std::unique_ptr<ReqFlow>> req_;
  std::map<std::pair<int, std::uint32_t>, std::unique_ptr<RespFlow>> resp_;
  Facts facts_;
};

}  // namespace rdmaconf::conformance::ib

#pragma once
// The reference InfiniBand transport engine (IBTA Vol. 1 ch. 9; RoCEv2 by
// Annex A17): RC requester and responder, UC and UD, sans I/O. It shares the
// verbs-style API with the iWARP engine (engines/common/verbs.hpp).
//
// Packets in:  receive(transport packet, icrc_ok)   BTH .. ICRC, one datagram
// Packets out: next_output(packet)                  BTH .. ICRC (ICRC field zero:
//                                                   the link seals it, it knows the
//                                                   IP and UDP headers)
// Time:        tick(now_ms)                         retransmission and RNR timers
//
// The queue pair is created ready to send (the verbs' RTS state) with the
// peer's QPN and both starting PSNs from an out-of-band exchange
// (interop/ib). Conforming reactions to a faulty peer: RC answers with the
// NAK the IBTA assigns (sequence error once per gap, RNR, Invalid Request,
// Remote Access Error) and silently drops what it must drop (bad ICRC, wrong
// QP, P_Key or Q_Key, malformed headers); UC and UD only drop. Deliberate
// misbehaviour for conformance testing is in Faults; docs/engine.md has the
// rules and the IBTA sections.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engines/common/verbs.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/ib/packet.hpp"

namespace rdmaconf::engine::ib {

using protocols::Bytes;

enum class QpType { rc, uc, ud };
std::string_view qp_type_name(QpType t);

struct Faults {
  std::uint64_t skip_packet = 0;     // the Nth request packet is not sent (its PSN is used up): a PSN gap
  std::uint64_t corrupt_icrc = 0;    // the Nth request packet leaves with a wrong ICRC
  std::uint64_t oversize_packet = 0; // the Nth request packet carries 64 octets more than the path MTU
  std::uint64_t wrong_pad = 0;       // the Nth request packet's pad count is one more than its pad
  std::uint64_t duplicate_packet = 0;  // the Nth request packet is sent twice in a row (the copy is a duplicate)
  std::uint64_t foreign_pkey = 0;    // the Nth request packet names P_Key 0x8001, a partition not the default one
  std::uint64_t foreign_transport = 0;  // the Nth request packet (a SEND or WRITE) carries the UC opcode of its kind
  std::uint64_t out_of_sequence = 0; // the Nth request packet (a SEND or WRITE) goes as a Middle, its RETH left out
};

struct QpConfig {
  QpType type = QpType::rc;
  std::uint32_t qpn = 0x11;        // ours
  std::uint32_t dest_qpn = 0x12;   // RC/UC: the peer's
  std::uint32_t sq_psn = 0;        // the first PSN we send
  std::uint32_t rq_psn = 0;        // the first PSN we expect from the peer
  std::uint16_t pkey = 0xffff;     // the default partition
  std::uint32_t qkey = 0x11111111; // UD: what senders must present
  unsigned pmtu = 1024;            // 256, 512, 1024, 2048 or 4096
  unsigned max_rd_atomic = 16;     // Reads/Atomics we keep outstanding (our ORD)
  unsigned max_dest_rd_atomic = 16;  // Reads/Atomics we accept outstanding (our IRD)
  unsigned retry_cnt = 7;          // retransmissions after a timeout or a sequence NAK
  unsigned rnr_retry = 7;          // retries after an RNR NAK; 7 means without limit
  unsigned min_rnr_timer = 1;      // the RNR NAK timer code we send (1 = 0.01 ms)
  std::uint64_t timeout_ms = 50;   // retransmission timeout
  unsigned ack_every = 16;         // AckReq / ACK at least every N packets
  unsigned max_inflight = 512;     // RC: PSNs sent and not yet acknowledged
  Faults faults;
};
std::string validate(const QpConfig& c);  // empty when c is usable

enum class QpState { rts, error };

struct OutPacket {
  std::vector<std::byte> bytes;  // BTH .. ICRC
  bool corrupt_icrc = false;     // the link must spoil the ICRC it computes
};

struct Counters {
  std::uint64_t packets_sent = 0, packets_received = 0;
  std::uint64_t dropped_icrc = 0, dropped_header = 0, dropped_sequence = 0, dropped_uc_ud = 0;
  std::uint64_t duplicates = 0, retransmitted = 0, timeouts = 0;
  std::uint64_t acks_sent = 0, naks_sent = 0, rnr_naks_sent = 0, naks_received = 0, rnr_naks_received = 0;
  // Requester: ATOMIC Acknowledges that came again for a completed Atomic
  // (the answer to a duplicate request), and those of them whose original
  // value differs from the first answer's (the Atomic was executed again).
  std::uint64_t atomic_replays = 0, atomic_replays_differing = 0;
};

// What the responder side did last about a packet it refused (for reports).
struct Refusal {
  std::string what;        // "NAK Invalid Request", "silent drop", ...
  std::string why;         // our words
  std::uint32_t psn = 0;
};

// RNR NAK timer codes to microseconds (IBTA Vol.1 §9.7.5.2.8, Table 45).
std::uint32_t rnr_timer_usec(unsigned code);

class QueuePair {
 public:
  QueuePair(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq, QpConfig cfg);

  bool post_send(const SendWr& wr);
  bool post_recv(const RecvWr& wr);

  // One transport packet; icrc_ok is the link's verdict on its ICRC.
  void receive(Bytes packet, bool icrc_ok = true);
  void tick(std::uint64_t now_ms);
  // The next packet to send, generated on demand; false when none is due.
  bool next_output(OutPacket& out);
  // Milliseconds until tick() has work, or nullopt when no timer runs.
  std::optional<std::uint64_t> next_timer(std::uint64_t now_ms) const;

  QpState state() const { return state_; }
  const QpConfig& config() const { return cfg_; }
  const Counters& counters() const { return ctr_; }
  const std::vector<Refusal>& refusals() const { return refusals_; }
  const std::string& error() const { return error_; }
  std::uint32_t expected_psn() const { return epsn_; }
  std::uint32_t next_psn() const { return next_psn_; }
  bool idle() const;  // nothing to send, nothing unacknowledged
  Faults& faults() { return cfg_.faults; }
  std::uint64_t request_packets() const { return req_packets_; }

 private:
  struct Wqe {
    SendWr wr;
    std::uint32_t first_psn = 0, npsn = 1, length = 0;
    std::uint32_t got = 0;    // Read: octets of response received
    std::uint64_t orig = 0;   // Atomic: the value the responder found
    bool done = false;        // may complete (acknowledged, or response complete)
  };
  struct Reply {              // a Read Response run or an ATOMIC Acknowledge we owe
    std::uint32_t psn = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0, length = 0, sent = 0;  // sent: packets emitted
    bool atomic = false;
    std::uint64_t orig = 0;
    std::uint32_t msn = 0;
  };
  // ---- requester
  void generate();
  void pump_requester();
  void emit_request(Wqe& w, std::uint32_t k, OutPacket& p);
  void on_response(const protocols::ib::IbPacket& pk);
  void ack_up_to(std::uint32_t psn);
  void retire();
  void rewind(std::uint32_t psn);
  void fail_wqe(std::uint32_t psn, WcStatus st, std::string why);
  void note_atomic_replay(std::uint32_t psn, const protocols::ib::IbPacket& pk);
  // ---- responder
  void on_request(const protocols::ib::IbPacket& pk);
  void on_request_uc_ud(const protocols::ib::IbPacket& pk);
  bool place_send(const protocols::ib::IbPacket& pk, bool first, bool last);
  void on_duplicate(const protocols::ib::IbPacket& pk, std::uint32_t psn);
  void nak(std::uint32_t code, std::uint32_t psn, std::string why, bool fatal);
  void refuse(std::string what, std::string why, std::uint32_t psn);
  void emit_ack(std::uint32_t syndrome, std::uint32_t psn, OutPacket& p);
  void emit_reply(Reply& r, OutPacket& p);
  // ---- both
  void to_error(std::string why);
  void build(std::uint8_t opcode, std::uint32_t dest_qp, std::uint32_t psn, bool se, bool ackreq,
             std::initializer_list<protocols::Header> exts, Bytes payload, OutPacket& p);

  ProtectionDomain& pd_;
  CompletionQueue& scq_;
  CompletionQueue& rcq_;
  QpConfig cfg_;
  QpState state_ = QpState::rts;
  std::string error_;
  Counters ctr_;
  std::vector<Refusal> refusals_;
  std::uint64_t now_ms_ = 0;

  // requester
  std::deque<SendWr> sq_;         // posted, no PSN yet
  std::deque<Wqe> wq_;            // PSNs assigned, not yet completed, in PSN order
  std::size_t emit_idx_ = 0;      // next packet to send: wq_[emit_idx_], packet emit_pkt_
  std::uint32_t emit_pkt_ = 0;
  std::uint32_t next_psn_ = 0;    // the next new PSN
  std::uint32_t acked_psn_ = 0;   // the highest PSN acknowledged
  unsigned outstanding_rd_ = 0;   // Reads and Atomics in wq_
  unsigned since_ackreq_ = 0;
  unsigned retries_left_ = 0, rnr_left_ = 0;
  std::uint64_t progress_ms_ = 0; // last time the oldest request made progress
  std::uint64_t rnr_until_ms_ = 0;
  bool rnr_wait_ = false;
  std::uint64_t req_packets_ = 0; // request packets emitted (fault counter)
  std::deque<std::pair<std::uint32_t, std::uint64_t>> atomics_done_;  // PSN and original of recent Atomics

  // responder
  std::deque<RecvWr> rq_;
  std::uint32_t epsn_ = 0, msn_ = 0;
  bool seq_nak_sent_ = false;
  struct InMsg {
    bool open = false, write = false;
    std::optional<RecvWr> wqe;   // Send: the receive it fills
    std::uint32_t got = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0, dmalen = 0;
  } in_;
  std::deque<Reply> replies_;     // owed, in PSN order
  std::deque<Reply> history_;     // Reads and Atomics already answered (duplicates)
  bool ack_due_ = false;
  unsigned since_ack_ = 0;
  std::optional<std::pair<std::uint32_t, std::uint32_t>> nak_due_;  // syndrome, PSN
  std::deque<OutPacket> staged_;   // generated, not yet handed out
  std::vector<std::vector<std::byte>> spare_;  // buffers to reuse
  OutPacket& stage();
};

}  // namespace rdmaconf::engine::ib

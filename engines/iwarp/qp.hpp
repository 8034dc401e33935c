#pragma once
// The reference iWARP engine's queue pair: MPA connection setup (what it
// negotiates is worked out in mpa_setup.hpp), FPDU framing with CRC and markers, DDP placement (RFC 5041) and
// RDMAP (RFC 5040, RFC 7306), sans I/O.
//
// Bytes in:  receive(octets the peer sent)          any split, any size
// Bytes out: output() / consume(n)                  what to write to the peer:
//            a TxQueue of pieces, the payload as views of the registered
//            regions (no staging copy); a send completes when the transport
//            has consumed its last octet
// Time:      tick(now_ms)                           the MPA setup timeout
// State:     state(), terminate_sent(), terminate_received(), error()
//
// The receive path is a resumable state machine (MPA frame header, private
// data; then FPDUs through the shared framer, protocols/iwarp/framer.hpp,
// which takes markers out wherever they fall), so the same stream split at
// every octet gives the same result. Violations by the peer end in a Terminate carrying the RFC's
// layer / type / code and the offending headers, then a clean close.
// Deliberate misbehaviour for conformance testing is in Faults.
#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engines/common/verbs.hpp"
#include "engines/iwarp/mpa_setup.hpp"
#include "engines/iwarp/tx_queue.hpp"
#include "protocols/core/bits.hpp"
#include "protocols/core/header.hpp"
#include "protocols/iwarp/codec.hpp"
#include "protocols/iwarp/framer.hpp"
#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::engine::iwarp {

using protocols::Bytes;
// The verbs-style types are shared with the InfiniBand engine.
using engine::Access, engine::kLocalWrite, engine::kRemoteRead, engine::kRemoteWrite, engine::kRemoteAtomic;
using engine::Completion, engine::wc_opcode, engine::CompletionQueue, engine::MemoryRegion, engine::ProtectionDomain, engine::RecvWr,
    engine::SendWr, engine::Sge, engine::WcOpcode, engine::WcStatus, engine::WrOpcode, engine::wc_status_name;

enum class QpState { idle, connecting, connected, terminated, closed, error };
std::string_view qp_state_name(QpState s);

struct TerminateInfo {
  unsigned layer = 0, etype = 0, code = 0;
  std::string reason;  // our words: what the peer did
  bool ddp_copied = false, rdmap_copied = false;  // the D and R bits: the offending headers it carries
  // A received Terminate's other parts (RFC 5040 §4.8, Figure 7): the M bit,
  // the DDP Segment Length (present with M or D), the copied DDP header
  // (with D: 14 octets tagged, 18 untagged, by its own T bit) and RDMAP
  // header (with R: a Read Request's 28), and what of them was missing.
  bool seglen_valid = false;
  std::optional<std::uint16_t> seglen;
  std::vector<std::byte> ddp_header, rdmap_header;
  std::string missing;
};

// The DDP segment we sent last: its first octets (DDP header, and the
// RDMAP header of an untagged one) and its ULPDU length.
struct SentSegment {
  std::array<std::byte, 48> head{};
  std::size_t head_size = 0, ulpdu_size = 0;
  protocols::Bytes head_bytes() const { return {head.data(), head_size}; }
};

class QueuePair {
 public:
  QueuePair(ProtectionDomain& pd, CompletionQueue& send_cq, CompletionQueue& recv_cq, QpConfig cfg);

  // Initiator: writes the MPA Request. Responder: nothing to do; it waits.
  void connect();
  // Octets from the peer, in order.
  void receive(Bytes in);
  // The same, for a caller that keeps what is not taken: the FPDUs whole in
  // `in` are read where they lie, and an FPDU not yet whole at its end is
  // left (its CRC begun over what is there); the return is how many octets
  // were taken. The caller hands the rest again, first, with what arrives
  // next, so that an FPDU is never copied together from pieces. Where that
  // cannot be (markers, the MPA frames) it takes everything, as receive().
  std::size_t receive_whole(Bytes in);
  // The peer closed its side (EOF).
  void peer_closed();
  void tick(std::uint64_t now_ms);

  // What to send to the peer (gather it); consume(n) after n octets went out.
  // Payload octets are views of registered regions until consumed.
  const TxQueue& output() const { return tx_; }
  void consume(std::size_t n);
  // True when the peer should be disconnected once output() is empty.
  bool wants_close() const { return state_ == QpState::terminated || state_ == QpState::error || close_after_flush_; }

  bool post_send(const SendWr& wr);
  bool post_recv(const RecvWr& wr);

  QpState state() const { return state_; }
  const QpConfig& config() const { return cfg_; }
  const std::string& error() const { return error_; }
  const std::optional<TerminateInfo>& terminate_sent() const { return term_sent_; }
  const std::optional<TerminateInfo>& terminate_received() const { return term_received_; }
  // Octets the peer sent after its Terminate (its stream ends there: RFC
  // 5040 §7.1), which are not read.
  std::uint64_t octets_after_terminate() const { return octets_after_terminate_; }
  // The peer's whole MPA Request or Reply came (whatever it said).
  bool mpa_frame_received() const { return !rr_.empty(); }
  // Negotiated: CRC in use, markers each way, IRD/ORD in effect, peer's private data.
  bool crc_in_use() const { return crc_; }
  bool markers_to_peer() const { return tx_markers_; }
  bool markers_from_peer() const { return rx_markers_; }
  std::uint16_t effective_ord() const { return ord_eff_; }
  std::uint16_t effective_ird() const { return ird_eff_; }
  const std::vector<std::byte>& peer_private_data() const { return peer_pd_; }
  std::uint64_t fpdus_sent() const { return fpdus_sent_; }
  const SentSegment& last_segment_sent() const { return last_sent_; }
  std::uint64_t fpdus_received() const { return fpdus_received_; }
  std::uint64_t markers_sent() const { return ms_.written; }
  std::uint64_t send_messages() const { return send_messages_; }
  // Faults may be armed while connected, relative to the counters above
  // (e.g. corrupt_crc_fpdu = fpdus_sent() + 1 spoils the next FPDU).
  Faults& faults() { return cfg_.faults; }

  struct Impl;

 private:
  // ---- setup
  void on_rr(Bytes frame);
  void settle(const Negotiated& n);  // what MPA setup settled, taken up
  void established();
  // ---- transmit
  void pump();
  void send_fpdu(Bytes ulpdu_head, Bytes payload);
  // Send-queue completions in posting order, each once the octets of its
  // work request have all been consumed (the region may then be reused).
  void complete(const Completion& c);
  void release_completions();
  void send_untagged(std::uint8_t opcode, std::uint32_t msn, Bytes body, Bytes payload,
                     std::uint32_t rsvd_ulp, std::size_t mo, bool last = true);
  void send_tagged(std::uint8_t opcode, std::uint32_t stag, std::uint64_t to, Bytes payload, bool last = true);
  bool start_wr(const SendWr& wr);
  // ---- receive
  void rx_bytes(Bytes in);
  void on_fpdu(Bytes fpdu, std::uint32_t crc_computed);
  void on_ulpdu(Bytes ulpdu);
  bool is_rtr(Bytes ulpdu) const;
  bool is_terminate(Bytes u) const;
  void on_tagged(const protocols::Header& h, Bytes ulpdu, Bytes payload);
  void on_untagged(const protocols::Header& h, Bytes ulpdu, Bytes payload);
  void on_read_request(const protocols::Header& ddp, Bytes ulpdu, Bytes body);
  void on_atomic_request(const protocols::Header& ddp, Bytes ulpdu, Bytes body);
  void on_terminate(Bytes body);
  // ---- errors
  void terminate(unsigned layer, unsigned etype, unsigned code, std::string reason, Bytes offending_ulpdu = {},
                 bool copy_rdmap = false);
  void fail(std::string why);  // no framing to carry a Terminate: close
  void flush_queues();

  ProtectionDomain& pd_;
  CompletionQueue& scq_;
  CompletionQueue& rcq_;
  QpConfig cfg_;
  QpState state_ = QpState::idle;
  std::string error_;
  std::optional<TerminateInfo> term_sent_, term_received_;
  bool close_after_flush_ = false;
  std::uint64_t started_ms_ = 0, now_ms_ = 0;

  // negotiated
  bool crc_ = false, tx_markers_ = false, rx_markers_ = false;
  std::uint16_t ord_eff_ = 0, ird_eff_ = 0;
  bool p2p_ = false;
  Rtr rtr_ = Rtr::none;
  bool may_send_ = false;  // responder: not before the peer's first FPDU (RFC 5044 §7.1.2) or RTR
  bool awaiting_rtr_ = false;
  std::vector<std::byte> peer_pd_;

  // transmit
  TxQueue tx_;
  struct DueCompletion {
    std::uint64_t at;  // tx_ position after the work request's last octet
    Completion c;
  };
  std::deque<DueCompletion> due_;
  protocols::iwarp::MarkerStream ms_;  // our marker positions, from our first FPDU
  std::uint64_t fpdus_sent_ = 0;
  SentSegment last_sent_;
  std::uint64_t read_requests_ = 0;  // RDMA Read Requests posted (for Faults::skip_read_msn)
  std::uint32_t next_msn_[protocols::iwarp::kRdmapQueues] = {1, 1, 1, 1};  // per untagged queue
  std::uint64_t send_messages_ = 0;
  struct PendingWr {
    SendWr wr;
    std::uint64_t sent = 0;  // octets already segmented
  };
  std::deque<PendingWr> sq_;
  struct OutstandingRead {
    std::uint64_t wr_id;
    std::uint32_t sink_stag;
    std::uint64_t sink_to;
    std::uint32_t length, received = 0;
    bool atomic = false;
    WcOpcode op = WcOpcode::rdma_read;
    std::uint32_t req_id = 0;
    bool internal = false;  // the RTR Read: no completion
  };
  std::deque<OutstandingRead> reads_;  // in order (RFC 5040: responses come in request order)
  std::uint32_t next_atomic_id_ = 1;
  // Responses we owe the peer (Read Responses, Atomic Responses), in order.
  struct OwedResponse {
    bool atomic = false;
    std::uint32_t src_stag = 0, sink_stag = 0;
    std::uint64_t src_to = 0, sink_to = 0;
    std::uint32_t length = 0, sent = 0;
    std::uint32_t req_id = 0;
    std::uint64_t original = 0;
  };
  std::deque<OwedResponse> owed_;
  std::uint32_t inbound_reads_ = 0;  // Read/Atomic Requests accepted, not yet fully answered
  std::deque<std::uint64_t> release_marks_;  // tx_ position at which an answer has gone out

  // receive
  enum class Rx { rr_header, rr_private, fpdu, dead };
  Rx rx_ = Rx::rr_header;
  std::vector<std::byte> stage_;  // the MPA Request or Reply being received
  std::size_t need_ = 20;
  protocols::iwarp::MpaFramer<> framer_;  // FPDUs from the peer's first one on
  // receive_whole(): the CRC register over the first rx_crc_done_ octets of
  // the FPDU left untaken at the front of what the caller hands again.
  std::uint32_t rx_crc_ = 0;
  std::size_t rx_crc_done_ = 0;
  std::vector<std::byte> rr_;
  std::uint64_t fpdus_received_ = 0, octets_after_terminate_ = 0;
  std::uint32_t expect_msn_[protocols::iwarp::kRdmapQueues] = {1, 1, 1, 1};
  std::deque<RecvWr> rq_;
  struct Inbound {  // the untagged message being received on queue 0
    bool open = false;
    RecvWr wr;
    std::uint32_t msn = 0, got = 0;
  } in_send_;
};

}  // namespace rdmaconf::engine::iwarp

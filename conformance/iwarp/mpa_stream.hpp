#pragma once
// MPA stream decoding for one TCP connection, both directions: the
// Request/Reply exchange, then FPDUs with their pad and CRC, each decoded down
// to DDP/RDMAP. A resumable state machine per direction (header, then the
// rest); "need more octets" is a state. FPDUs a direction sends before the
// negotiation is known are held and decoded once it is.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conformance/capture/tcp_reassembly.hpp"
#include "protocols/iwarp/codec.hpp"

namespace rdmaconf::conformance::iwarp {

using protocols::Bytes;
using protocols::iwarp::DdpSegment;
using protocols::iwarp::FpduView;
using protocols::iwarp::MpaRrFrame;

// What one MPA Request or Reply announced.
struct MpaSide {
  bool seen = false;
  std::uint8_t rev = 0;
  bool crc = false, markers = false, reject = false, p2p = false;
  std::optional<std::uint16_t> ird, ord;  // RFC 6581 enhanced mode only
};

struct Negotiated {
  MpaSide req, rep;
  bool enhanced = false;  // both frames revision 2 with the IRD/ORD word
  bool complete() const { return req.seen && rep.seen; }
  bool rejected() const { return rep.reject; }
  // CRC is used in both directions when either side asked (RFC 5044 §7.1.1).
  bool crc() const { return req.crc || rep.crc; }
  // Markers go toward a receiver that asked for them: the initiator's M asks the
  // responder to send markers, the responder's M asks the initiator to.
  bool markers_from_initiator() const { return rep.markers; }
  bool markers_from_responder() const { return req.markers; }
};

struct RrEvent {
  int dir = 0;
  bool from_initiator = true;
  const MpaRrFrame* frame = nullptr;  // null when the octets are not a decodable frame
  Bytes head;                          // the first octets as sent (for evidence)
  std::uint64_t first_frame = 0, last_frame = 0, offset = 0;
};

struct FpduEvent {
  int dir = 0;
  bool from_initiator = true;
  std::uint64_t first_frame = 0, last_frame = 0, offset = 0;
  const FpduView* fpdu = nullptr;
  bool crc_in_use = false;
  std::uint32_t crc_computed = 0;      // valid when crc_in_use
  const protocols::Result<DdpSegment>* ddp = nullptr;
  std::uint64_t index = 0;             // FPDU number in this direction, from 0
};

// Framing of one direction ended before its stream did (gap, markers not
// decoded, rejected connection, undecodable frame); what follows is unchecked.
struct StopEvent {
  int dir = 0;
  std::uint64_t offset = 0, frame = 0;
  bool gap = false;
  std::string reason;
};

class MpaListener {
 public:
  virtual ~MpaListener() = default;
  virtual void on_rr(const RrEvent&) {}
  virtual void on_fpdu(const FpduEvent&) {}
  virtual void on_stop(const StopEvent&) {}
};

class MpaConnection {
 public:
  MpaConnection(const capture::TcpStreamInfo& info, MpaListener& l);
  void data(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame);
  void gap(int dir, std::uint64_t offset, std::uint64_t len, std::uint64_t frame);
  // The capture ended or the connection closed: octets still buffered are reported.
  void close(std::uint64_t frame);

  bool is_mpa() const { return initiator_dir_ >= 0; }
  int initiator_dir() const { return initiator_dir_; }
  const Negotiated& negotiated() const { return neg_; }
  std::uint64_t fpdus(int dir) const { return d_[dir].fpdus; }

 private:
  enum class State { probe, rr, wait_negotiation, fpdu, stopped, not_mpa };
  struct Held {
    std::uint64_t offset, frame;
    std::vector<std::byte> bytes;
  };
  struct Dir {
    State state = State::probe;
    std::vector<std::byte> buf;   // a partial unit
    std::vector<std::byte> unit;  // a completed unit being decoded (keeps its capacity)
    std::uint64_t buf_off = 0;
    std::uint64_t buf_frame = 0;  // frame of buf's first octet
    std::vector<Held> held;       // FPDU octets waiting for the negotiation
    std::size_t held_bytes = 0;
    std::uint64_t fpdus = 0;
    std::uint64_t next_off = 0;
  };
  void feed(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame);
  // Size of the unit at the front of `b` if it can be known, else 0.
  std::size_t unit_size(int dir, Bytes b) const;
  void unit(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame);
  void on_rr(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame);
  void negotiation_done();
  void stop(int dir, std::uint64_t offset, std::uint64_t frame, std::string reason, bool gap = false);
  bool from_initiator(int dir) const { return dir == initiator_dir_; }

  capture::TcpStreamInfo info_;
  MpaListener& l_;
  int initiator_dir_ = -1;
  Negotiated neg_;
  Dir d_[2];
};

}  // namespace rdmaconf::conformance::iwarp

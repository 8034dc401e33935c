#pragma once
// MPA stream decoding for one TCP connection, both directions: the
// Request/Reply exchange, then FPDUs with their markers, pad and CRC, each
// decoded down to DDP/RDMAP. A resumable state machine per direction (header,
// then the rest); "need more octets" is a state. FPDUs a direction sends
// before the negotiation is known are held and decoded once it is.
//
// FPDUs are framed by the shared MPA framer (protocols/iwarp/framer.hpp),
// the one the engine uses: markers, where a direction carries them, are taken
// out and reported with the FPDU they sit in; the CRC is computed over the
// FPDU as sent, markers included.
//
// Mid-stream start: when the capture lacks a connection's SYN and a direction
// does not start with an MPA key, the decoder looks for FPDU boundaries in its
// first octets (see infer_alignment) and, when it finds a run of plausible
// FPDUs, decodes from there with parameters marked as inferred.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "captures/io/tcp_reassembly.hpp"
#include "conformance/case.hpp"
#include "protocols/iwarp/codec.hpp"
#include "protocols/iwarp/framer.hpp"

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
  bool inferred = false;  // no Request/Reply in the capture: found from the FPDUs
  bool crc_inferred = false;
  std::uint64_t frame = 0;  // the frame that completed the exchange
  // Stream offsets just past the Request (in the initiator's direction) and
  // the Reply (in the responder's).
  std::uint64_t request_end = 0, reply_end = 0;
  bool complete() const { return req.seen && rep.seen; }
  bool rejected() const { return rep.reject; }
  // CRC is used in both directions when either side asked (RFC 5044 §7.1.1).
  bool crc() const { return inferred ? crc_inferred : (req.crc || rep.crc); }
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
  // What its sender had received of the other direction when it sent the
  // first octet (captures::io::kAckUnknown when the capture cannot tell).
  std::uint64_t acked = captures::io::kAckUnknown;
};

// A marker taken out of an FPDU.
struct MarkerSeen {
  std::uint64_t offset = 0;  // stream offset of its first octet
  std::uint64_t frame = 0;
  std::uint16_t rsvd = 0, fpduptr = 0;
  std::uint16_t expected_ptr = 0;  // distance back to the start of its FPDU
};

struct FpduEvent {
  int dir = 0;
  bool from_initiator = true;
  std::uint64_t first_frame = 0, last_frame = 0;
  std::uint64_t offset = 0;            // stream offset of the FPDU's first octet (a leading marker's)
  std::uint64_t wire_size = 0;         // octets on the wire, markers included
  std::vector<MarkerSeen> markers;     // markers inside this FPDU, in stream order
  const FpduView* fpdu = nullptr;
  bool crc_in_use = false;
  std::uint32_t crc_computed = 0;      // valid when crc_in_use
  // CRCs in use and the sender's CRC field neither zero (one it did not
  // compute, iwarp.mpa.crc.used's finding) nor the computed one: the FPDU
  // may carry the link's damage.
  bool damaged = false;
  const protocols::Result<DdpSegment>* ddp = nullptr;
  std::uint64_t index = 0;             // FPDU number in this direction, from 0
  // What its sender had received of the other direction when it sent the
  // first octet (captures::io::kAckUnknown when the capture cannot tell).
  std::uint64_t acked = captures::io::kAckUnknown;
  // The largest TCP payload this direction's sender was seen to send up to
  // the FPDU's last octet (a segment size its sender used, or one the
  // capture merged or did not yet split: offloads).
  std::uint64_t max_segment = 0;
  // The TCP payload of the captured segment the FPDU's first octet came in.
  std::uint64_t first_segment = 0;
};

// Framing of one direction ended before its stream did (gap, markers not
// decoded, rejected connection, undecodable frame); what follows is unchecked.
struct StopEvent {
  int dir = 0;
  std::uint64_t offset = 0, frame = 0;
  bool gap = false;
  bool after_reject = false;  // octets sent after a rejecting MPA Reply
  // They start with an FPDU whose CRC checks (CRCs were negotiated): proof
  // the sender stayed in MPA, where other octets may be streaming-mode data.
  bool fpdu_after_reject = false;
  // The sender's FIN ended its stream inside an FPDU, every octet before
  // the FIN in the capture: the sender's doing, not the capture's.
  bool cut_by_fin = false;
  // The framing was lost to a violation already reported (an FPDU whose CRC
  // failed and whose successor fails too: a damaged length field): what
  // follows is its consequence, not judged on its own.
  std::optional<Evidence::Cause> caused_by;
  std::string reason;
};

// Mid-stream start: the first offset in `b` from which a chain of FPDUs
// follows by its length fields (at least three, or at the end of the capture
// one or more that end exactly with it). The chain must start at an FPDU that
// looks right (its ULPDU long enough for a DDP header whose version, reserved
// bits, RDMAP version and opcode are valid, whose buffer model fits the
// opcode, and whose queue number is one RDMAP uses) or whose CRC is right.
// Past its start, a bad header inside a consistent chain is a finding to
// report, not a reason to look elsewhere: the chain may hold a few (up to a
// third where most CRCs are right, one in six in a chain of six or more, half
// of one that ends exactly with the capture).
// CRC is taken to be in use when most of the chain's CRC fields are right, or
// none is zero.
struct InferredAlignment {
  std::size_t offset = 0;
  std::size_t fpdus = 0;
  bool crc = false;
  // Octets of the longest run of FPDUs in a row whose CRCs check: past one
  // marker interval, that run would hold a marker had the stream any (a
  // marker inside an FPDU is covered by its CRC), so markers are excluded.
  std::size_t crc_run = 0;
  // Octets the chain covers, and whether every header in it looked right:
  // past two marker intervals, a marker inside one of its FPDUs would have
  // thrown the next length field off, so markers are excluded too.
  std::size_t span = 0;
  bool all_plausible = false;
};
// `only_at_start`: the chain must begin at b's first octet (a stream whose start is known).
std::optional<InferredAlignment> infer_alignment(Bytes b, bool at_end, bool only_at_start = false);
// Whether `b` carries MPA markers (RFC 5044 §4.3, §5), proven: at one phase
// of the 512-octet interval, three markers in a row with zero reserved bits,
// each pointing to the FPDU whose length fields (markers stepped over) lead
// to the FPDU the next one points to.
bool markers_present(Bytes b, bool only_at_start = false);  // only_at_start: the first marker at b's first octet

class MpaListener {
 public:
  virtual ~MpaListener() = default;
  virtual void on_rr(const RrEvent&) {}
  virtual void on_fpdu(const FpduEvent&) {}
  virtual void on_stop(const StopEvent&) {}
};

class MpaConnection {
 public:
  // `info` must outlive the connection; its later updates (the directions' starts, FINs) are read from it.
  MpaConnection(const captures::io::TcpStreamInfo& info, MpaListener& l);
  void data(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked = captures::io::kAckUnknown);
  void gap(int dir, std::uint64_t offset, std::uint64_t len, std::uint64_t frame);
  // The capture ended or the connection closed: octets still buffered are reported.
  void close(std::uint64_t frame);

  bool is_mpa() const { return initiator_dir_ >= 0 || neg_.inferred; }
  // FPDUs from a direction's first octet, with no MPA Request or Reply before them.
  bool skipped_exchange(int dir) const { return d_[dir].from_start && d_[dir].state != State::not_mpa; }
  int initiator_dir() const { return initiator_dir_; }
  const Negotiated& negotiated() const { return neg_; }
  std::uint64_t fpdus(int dir) const { return d_[dir].fpdus; }
  // Mid-stream start: where framing was found in each direction (-1: not inferred).
  std::int64_t inferred_start(int dir) const { return d_[dir].inferred_at; }
  // Where framing was found again after each gap of a direction.
  struct Resync {
    std::uint64_t gap_end = 0;  // stream offset where the capture has octets again
    std::uint64_t resumed = 0;  // offset of the first FPDU found after it
  };
  const std::vector<Resync>& resyncs(int dir) const { return d_[dir].resyncs; }
  // Octets of a direction in the capture, judged (in MPA frames and FPDUs
  // delivered), missing (gaps), and why some were not judged.
  struct Coverage {
    std::uint64_t captured, judged, missing;
    const std::vector<std::string>& why;
  };
  // The largest payload of this direction's captured segments when it is
  // attested (0 when not): by two segments that do not follow one another,
  // by three in a row, or by two in a row of which the first ended at an
  // FPDU boundary. The sender's segment size, which one segment merged by
  // receive coalescing, or one cut in two (whose first part ends inside an
  // FPDU when it matters), cannot counterfeit.
  std::uint64_t segment_size(int dir) const { return d_[dir].largest.attested ? d_[dir].largest.size : 0; }
  // The largest payload of one captured segment of this direction.
  std::uint64_t max_segment(int dir) const { return d_[dir].max_segment; }
  Coverage coverage(int dir) const { return {d_[dir].captured, d_[dir].judged, d_[dir].missing, d_[dir].why}; }
  // Something the capture did to this direction that coverage() names.
  void note(int dir, std::string why) { d_[dir].why.push_back(std::move(why)); }
  bool markers(int dir) const { return d_[dir].markers; }
  // A direction whose peer asked for markers (M = 1) and that sends none:
  // where its first marker belongs there is no marker (the pointer and
  // reserved bits read there are not 0), and read without markers its first
  // FPDU is whole with a valid DDP header (and its CRC right, CRCs in use).
  // Its FPDUs are then framed without markers, as sent, so the one
  // violation does not turn into misread FPDUs.
  struct MarkersAbsent {
    std::uint64_t offset = 0, frame = 0;  // where the first marker belongs
    std::uint16_t rsvd = 0, fpduptr = 0;  // what the octets there read as
    bool crc = false;                     // the first FPDU's CRC checks without markers
  };
  const std::optional<MarkersAbsent>& markers_absent(int dir) const { return d_[dir].absent; }
  // The markers of the FPDU where framing stopped because a marker did not
  // point at its start and the FPDU, the markers stepped over, was broken
  // (CRC or DDP header): the markers are misplaced or missing. That FPDU is
  // not delivered; its markers are judged from here.
  const std::vector<MarkerSeen>& misplaced_markers(int dir) const { return d_[dir].misplaced; }
  // Whether the direction is known to carry no markers: its start is in the
  // capture (the negotiation says), or, framed mid-stream, a run of FPDUs
  // whose CRCs check spans more than a marker interval, or a chain of right
  // headers more than two.
  bool markers_excluded(int dir) const { return d_[dir].markers_excluded; }
  // Markers in a direction whose peer asked for none (RFC 5044 §7.1.1): seen
  // when the first FPDUs of the direction, framed without markers, went wrong
  // and a marker sits at every 512th octet from its first FPDU instead.
  struct StrayMarkers {
    std::uint64_t offset = 0, frame = 0;  // the first marker
    std::size_t count = 0;                // markers found in the octets looked at
  };
  const std::optional<StrayMarkers>& stray_markers(int dir) const { return d_[dir].stray; }
  // Whether a direction without markers was looked at for stray ones.
  bool stray_markers_judged(int dir) const { return d_[dir].probe == Probe::done; }
  // This direction's FPDUs are not all in view: framing found mid-stream, or
  // stopped at a capture gap. A reply with nothing to answer is then unjudgeable.
  // So is a direction whose first octets the capture may lack.
  // So is a direction with an FPDU whose CRC failed: its content is not used.
  bool partial(int dir) const {
    return !info_.start_known[dir] || d_[dir].inferred_at >= 0 || d_[dir].gap_seen || d_[dir].damaged;
  }
  // The first FPDU of this direction whose CRC failed, if any: where what the
  // other direction answers may have been lost.
  const std::optional<Evidence::Cause>& damaged(int dir) const { return d_[dir].damaged; }
  // Octets this direction sent after its own MPA frame that were still
  // waiting for the other side's when the connection closed (the other side
  // sent nothing at all, not even a malformed MPA frame).
  struct Unanswered {
    std::uint64_t offset = 0, frame = 0, octets = 0;
    // The capture holds no segment of the other side, but this side's ACKs
    // grew by this many octets of it: something was sent (the Reply, it may
    // be) that the capture lacks (a mirror of one side).
    std::uint64_t acked_unseen = 0;
  };
  const std::optional<Unanswered>& unanswered(int dir) const { return d_[dir].unanswered; }

 private:
  enum class State { probe, infer, seek_marker, check_markers, rr, wait_negotiation, fpdu, rejected, stopped, not_mpa };
  enum class Probe { off, collecting, done };
  struct Held {
    std::uint64_t offset, frame, acked, segment;
    std::vector<std::byte> bytes;
  };
  struct Dir {
    State state = State::probe;
    std::vector<std::byte> buf;   // a partial MPA key, Request or Reply
    std::vector<std::byte> unit;  // a completed Request or Reply being decoded
    std::uint64_t buf_off = 0;
    std::uint64_t buf_frame = 0;  // frame of buf's first octet
    std::uint64_t buf_acked = 0;  // acknowledgement carried with buf's first octet
    std::vector<Held> held;       // FPDU octets waiting for the negotiation
    std::optional<Unanswered> unanswered;
    std::size_t held_bytes = 0;
    std::uint64_t fpdus = 0;
    std::uint64_t next_off = 0;
    std::int64_t inferred_at = -1;
    std::vector<std::byte> not_mpa_head;  // first octets of a direction judged not MPA
    // A direction whose start is in the capture and holds no MPA key: FPDUs
    // from its first octet would make it iWARP without the MPA exchange.
    bool from_start = false;
    bool resync = false;  // looking for FPDU boundaries again after a gap
    // Its own MPA frame is in the capture, the other side's never will be
    // (that direction starts mid-stream): FPDUs from the end of this side's
    // frame, CRC and markers found from them.
    bool after_own_frame = false;
    bool markers_excluded = false;  // see markers_excluded()
    std::uint64_t gap_end = 0;  // seek_marker: where the capture has octets again
    std::uint64_t captured = 0, judged = 0, missing = 0;  // octets (see coverage())
    std::vector<std::string> why;                          // what left octets unjudged
    std::vector<Resync> resyncs;
    std::uint64_t not_mpa_off = 0, not_mpa_frame = 0;
    bool gap_seen = false;
    std::optional<Evidence::Cause> damaged;  // see damaged()
    // The last FPDU framed failed its CRC (not zero: not computed); when the
    // next fails too, the length field it was framed by is taken as damaged.
    bool last_damaged = false;
    bool sent_any = false;  // this direction carried at least one octet
    bool markers = false;
    std::uint64_t max_segment = 0;  // largest payload of one captured segment
    std::uint64_t segment = 0;      // payload of the captured segment being fed
    struct Largest {
      std::uint64_t size = 0, end = 0;  // its size, and where the last segment of that size ended
      std::uint64_t run = 0;            // segments of that size in a row, up to the last
      bool attested = false;            // see segment_size()
      bool at_boundary = false;         // the last of them ended at an FPDU boundary
    } largest;
    // Framing from the direction's first FPDU, or from where it was found
    // (mid-stream, after a gap): stream offset `base` is framer position 0.
    struct Tag {
      std::uint64_t frame = 0, acked = 0, segment = 0;
    };
    protocols::iwarp::MpaFramer<Tag> framer;
    std::uint64_t base = 0;
    // Stray markers: the first octets of a direction without markers, kept
    // until enough are here to look for markers (see stray_markers()).
    Probe probe = Probe::off;
    bool early_bad = false;  // an FPDU among them failed its CRC or held no DDP segment
    std::vector<std::byte> early;
    std::vector<std::uint64_t> early_frames;  // the frame of each 512th octet of `early`
    std::optional<StrayMarkers> stray;
    std::optional<MarkersAbsent> absent;
    std::vector<MarkerSeen> misplaced;  // see misplaced_markers()
    bool unproven_resume = false;       // framing found again by a marker, its first FPDU not yet seen
    FpduEvent event;                  // reused so its marker list keeps its capacity
  };
  static void note_segment(Dir& s, std::uint64_t offset, std::uint64_t size, bool at_boundary);
  void feed(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked);
  void feed_fpdus(int dir, Bytes data, std::uint64_t frame, std::uint64_t acked);
  void probe_markers(int dir);
  // A direction that must carry markers, held from its first FPDU until
  // enough is here to tell whether it does (see markers_absent()).
  void check_markers(int dir, bool at_end);
  // The other side's MPA frame will not come: frame `dir`'s held octets
  // without the negotiation (Dir::after_own_frame).
  void without_peer_frame(int dir);
  bool peer_frame_lost(int dir) const;
  // Whether the first FPDU of a direction read from its first octet is one:
  // its DDP header valid, or its CRC right (nullopt: not yet known).
  static std::optional<bool> first_fpdu_proof(const Dir& s);
  void infer(int dir, std::uint64_t frame, bool at_end);
  // After a gap in a direction with markers: the first marker past the gap
  // whose pointer names an FPDU that begins after it.
  void seek_marker(int dir, std::uint64_t frame, bool at_end);
  // Hands held octets from stream offset `from` on to the framer.
  void replay_held(int dir, std::uint64_t from);
  // Frames FPDUs from stream offset `at` on.
  void start_fpdus(int dir, std::uint64_t at, bool markers);
  // Size of the MPA Request or Reply at the front of `b` if it can be known, else 0.
  static std::size_t rr_size(Bytes b);
  void on_rr(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame, std::uint64_t acked);
  void negotiation_done(std::uint64_t frame);
  // data() without counting the octets as captured (they are held ones, replayed).
  void route(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked);
  void stop(int dir, std::uint64_t offset, std::uint64_t frame, std::string reason, bool gap = false, bool cut_by_fin = false,
            bool fpdu_after_reject = false, std::optional<Evidence::Cause> caused_by = {});
  // The FPDU just framed is not judged after all: framing stops at it.
  void unframe(int dir, std::string reason, bool gap, std::optional<Evidence::Cause> caused_by = {});
  bool from_initiator(int dir) const { return dir == initiator_dir_; }

  const captures::io::TcpStreamInfo& info_;  // the caller's, kept up to date as the connection goes on
  MpaListener& l_;
  int initiator_dir_ = -1;
  Negotiated neg_;
  Dir d_[2];
};

}  // namespace rdmaconf::conformance::iwarp

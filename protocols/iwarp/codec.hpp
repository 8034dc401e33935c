#pragma once
// iWARP codecs: MPA Request/Reply, FPDU framing with its pad and CRC hooks,
// and DDP segments with their RDMAP bodies.
#include <algorithm>
#include <cassert>
#include <optional>
#include <vector>

#include "protocols/core/decoded.hpp"
#include "protocols/crc/crc32c.hpp"
#include "protocols/iwarp/headers.hpp"

namespace rdmaconf::protocols::iwarp {

// ---- MPA Request / Reply (RFC 5044 §7.1.1, RFC 6581 §9)
enum class MpaFrameKind { request, reply, unknown };
struct MpaRrFrame {
  Header hdr;
  std::optional<Header> v2;  // RFC 6581 IRD/ORD word when revision 2 and enhanced
  Bytes private_data;        // all of it, the IRD/ORD word included
  std::size_t consumed = 0;
  MpaFrameKind kind() const;
};
// Needs the 20-octet header and all private data; never trusts pd_length beyond the input.
Result<MpaRrFrame> decode_mpa_rr(Bytes in);
// Does `in` start with one of the two keys (as far as it goes)? Used to
// recognise MPA on any port.
bool looks_like_mpa_key(Bytes in, MpaFrameKind kind);

struct MpaRrParams {
  MpaFrameKind kind = MpaFrameKind::request;
  bool markers = false, crc = false, reject = false;
  std::uint8_t revision = 1;
  bool enhanced = false;       // RFC 6581 bit; with revision 2 the IRD/ORD word is written
  bool p2p = false, send_rtr = false, write_rtr = false, read_rtr = false;
  std::uint16_t ird = 0, ord = 0;
  std::vector<std::byte> private_data;  // after the IRD/ORD word
  std::uint8_t reserved_bits = 0;       // for fault injection only
  bool omit_v2 = false;                 // fault injection: enhanced bit without the IRD/ORD word
};
void encode_mpa_rr(std::vector<std::byte>& out, const MpaRrParams& p);

// ---- FPDU framing (RFC 5044 §4): length, ULPDU, pad to 4, CRC field.
constexpr std::size_t mpa_pad(std::size_t ulpdu_len) { return (4 - (ulpdu_len + 2) % 4) % 4; }
// Octets of an FPDU without markers.
constexpr std::size_t fpdu_size(std::size_t ulpdu_len) { return 2 + ulpdu_len + mpa_pad(ulpdu_len) + kMpaCrcSize; }

struct FpduView {
  std::uint16_t ulpdu_len = 0;
  Bytes ulpdu;
  std::size_t pad = 0;
  std::uint32_t crc_wire = 0;  // the CRC field as a CRC32c value (it travels little-endian)
  std::size_t consumed = 0;
};
// Decodes one FPDU from marker-free bytes.
Result<FpduView> decode_fpdu(Bytes in);
// CRC32c over the FPDU up to (not including) its CRC field, markers included
// when the caller kept them (RFC 5044 covers them).
std::uint32_t fpdu_crc(Bytes covered);
// fpdu_crc of any slice of one buffer (crc(from, to)), each in constant time
// after one pass over it: for scans that try an FPDU at every offset.
using FpduCrcSlices = crc::Crc32cSlices;
// Faults a sender may put into an FPDU it writes (the engine's fault plans).
struct FpduFaults {
  std::uint16_t length_excess = 0;  // the length field claims this many octets more (the CRC covers the true one)
  std::uint32_t crc_xor = 0;        // XORed into the CRC field as sent
};
// Writes length, ULPDU (`head` then `payload`, so a sender need not join
// them), zero pad and CRC (or zero when crc is off) into `f`, which holds
// exactly fpdu_size(head.size() + payload.size()) octets; the CRC in one
// pass over the octets as laid down.
void write_fpdu(MutBytes f, Bytes head, Bytes payload, bool crc, const FpduFaults& faults = {});
// Appends length, ULPDU, zero pad and CRC (or zero when crc is off).
void encode_fpdu(std::vector<std::byte>& out, Bytes ulpdu, bool crc);

// Appends an FPDU to a stream that carries markers (RFC 5044 §4.3): a
// 4-octet marker sits at every 512th octet counted from the first FPDU of the
// direction, and its pointer gives the distance back to the ULPDU Length
// field of the FPDU it sits in. A marker that falls where an FPDU begins
// belongs to that FPDU (pointer 0), and comes before its length field. `pos` is the stream position relative to the first FPDU and
// advances; the CRC covers the markers inside the FPDU.
struct MarkerStream {
  std::uint64_t pos = 0;      // stream position relative to the first FPDU
  std::uint64_t written = 0;  // markers written so far
  // Fault injection: the marker with this number gets its pointer XORed and
  // its reserved bits set (the CRC still covers what was sent).
  std::int64_t fault_index = -1;
  std::uint16_t fault_ptr_xor = 0, fault_rsvd = 0;
  // ORed into every marker: its pointer (the reserved low bits, 0x3) and
  // its reserved field.
  std::uint16_t ptr_or = 0, rsvd_or = 0;
};
void encode_fpdu_marked(std::vector<std::byte>& out, Bytes ulpdu, bool crc, MarkerStream& st);

// The FPDU writer for a sender that gathers rather than copies (and the one
// behind the marked writers). It hands `sink` the FPDU in wire order as
// pieces: sink.grow(n) for room in the sink's own storage that emit_fpdu
// writes at once (length field with `head`, pad with the CRC field),
// sink.made(Bytes) for markers and the pieces of `head` and pad between
// them, which the sink copies before the call returns, and sink.view(Bytes)
// for parts of `payload`, whose views the sink may keep (they must then stay
// valid until those octets have been sent). The CRC is taken over the pieces
// as they go, markers included. `markers` null: no markers, and the FPDU is
// three pieces (length and head, payload, pad and CRC).
template <class Sink>
void emit_fpdu(Sink& sink, Bytes head, Bytes payload, bool crc, MarkerStream* markers, FpduFaults faults = {});
// Where markers sit: true when `pos` (relative to the first FPDU) is a marker position.
constexpr bool is_marker_position(std::uint64_t pos) { return pos % kMpaMarkerInterval == 0; }
// Octets an FPDU of `ulpdu_len` takes on a marked stream when it starts at
// `pos`: its own markers included (a leading one, and one due right before
// the CRC field), the one at the next FPDU's start not.
std::size_t marked_fpdu_size(std::size_t ulpdu_len, std::uint64_t pos);
// Writes that FPDU (head, then payload) into `f`, which holds exactly
// marked_fpdu_size(...) octets, and advances `st`. The CRC is taken in one
// pass over the octets as laid down, markers included.
void write_fpdu_marked(MutBytes f, Bytes head, Bytes payload, bool crc, MarkerStream& st, const FpduFaults& faults);

// ---- DDP segment and RDMAP body (RFC 5041 §4, RFC 5040 §4, RFC 7306)
struct DdpSegment {
  Header ddp;  // kDdpTagged or kDdpUntagged
  bool tagged = false;
  std::uint8_t opcode = 0;
  std::optional<Header> body;         // Read Request, Terminate control, Immediate, Atomic Request/Response
  std::optional<Header> term_seglen;  // Terminate: DDP segment length of the offending segment
  std::optional<Header> term_ddp;     // Terminate: copied DDP header
  std::optional<Header> term_rdmap;   // Terminate: copied RDMAP (Read Request) header
  bool term_incomplete = false;       // Terminate: a copied part its M/D/R bits announce is missing
  Bytes payload;                      // what follows the headers
};
Result<DdpSegment> decode_ddp(Bytes ulpdu);

// A DDP/RDMAP control field (T, L, DV, RV, opcode: the rows both DDP
// layouts share, e.g. DdpTagged::t) read from a ULPDU's first two octets
// (0 when fewer are there). Inline: every FPDU an engine receives is
// classified through here, and the rows all lie in the first 16 bits.
// ddp_control_row gives a row's place in those 16 bits (ddp_header writes
// them through it).
struct DdpControlRow {
  unsigned shift, mask;
};
constexpr DdpControlRow ddp_control_row(std::size_t field) {
  const FieldDef& f = kDdpTaggedFields[field];
  assert(f.bit_offset + f.bit_width <= 16);
  return {static_cast<unsigned>(16 - f.bit_offset - f.bit_width), (1u << f.bit_width) - 1};
}
inline unsigned ddp_control(Bytes ulpdu, std::size_t field) {
  if (ulpdu.size() < 2) return 0;
  const DdpControlRow r = ddp_control_row(field);
  const unsigned first16 = (static_cast<unsigned>(ulpdu[0]) << 8) | static_cast<unsigned>(ulpdu[1]);
  return (first16 >> r.shift) & r.mask;
}
static_assert([] {
  for (const FieldDef& f : kDdpTaggedFields)
    if (f.bit_offset < 16 && f.bit_offset + f.bit_width > 16) return false;
  return true;
}(), "ddp_control reads the control rows from the first 16 bits");

// A DDP header with DV 1, RV 1, the opcode and L set (both layouts share
// these control rows); the caller fills STag/TO or QN/MSN/MO.
Header ddp_header(bool tagged, std::uint8_t opcode, bool last);
// Appends a whole untagged / tagged DDP segment: header, then `rest` (the
// RDMAP body and payload).
void encode_ddp_untagged(std::vector<std::byte>& out, std::uint8_t opcode, std::uint32_t qn, std::uint32_t msn,
                         std::uint32_t mo, bool last, Bytes rest, std::uint32_t rsvd_ulp = 0);
void encode_ddp_tagged(std::vector<std::byte>& out, std::uint8_t opcode, std::uint32_t stag, std::uint64_t to,
                       bool last, Bytes payload);

// Appends a header's octets.
void append(std::vector<std::byte>& out, const Header& h);
void append(std::vector<std::byte>& out, Bytes b);

// ---- emit_fpdu

template <class Sink>
void emit_fpdu(Sink& sink, Bytes head, Bytes payload, bool crc, MarkerStream* st, FpduFaults faults) {
  const std::size_t len = head.size() + payload.size();
  std::uint32_t state = crc::kCrc32cInit;
  if (!st) {
    const MutBytes front = sink.grow(2 + head.size());
    put_be16(front, 0, static_cast<std::uint16_t>(len));
    if (!head.empty()) std::memcpy(front.data() + 2, head.data(), head.size());
    if (crc) state = crc::crc32c_update(crc::crc32c_update(state, front), payload);
    if (faults.length_excess) put_be16(front, 0, static_cast<std::uint16_t>(len + faults.length_excess));
    sink.view(payload);
    const std::size_t pad = mpa_pad(len);
    const MutBytes back = sink.grow(pad + kMpaCrcSize);
    std::memset(back.data(), 0, pad);
    if (crc && pad) state = crc::crc32c_update(state, back.first(pad));
    put_le32(back, pad, (crc ? crc::crc32c_final(state) : 0) ^ faults.crc_xor);
    return;
  }
  // Markers inside the FPDU point back to its ULPDU Length field (RFC 5044
  // §4.3), which comes after the leading marker where the FPDU has one.
  const std::uint64_t fpdu_pos = st->pos + (is_marker_position(st->pos) ? kMpaMarker.size : 0);
  auto marker = [&] {
    // Written through the marker's table into an 8-octet window (the
    // one-window path of write_bits), without a Header per marker.
    std::byte w[8] = {};
    const FieldDef& rsvd = kMpaMarker.fields[MpaMarker::rsvd];
    const FieldDef& fpduptr = kMpaMarker.fields[MpaMarker::fpduptr];
    auto ptr = static_cast<std::uint16_t>((st->pos < fpdu_pos ? 0 : st->pos - fpdu_pos) | st->ptr_or);
    if (static_cast<std::int64_t>(st->written) == st->fault_index) {
      ptr ^= st->fault_ptr_xor;
      write_bits(MutBytes{w, 8}, rsvd.bit_offset, rsvd.bit_width, st->fault_rsvd | st->rsvd_or);
    } else if (st->rsvd_or) {
      write_bits(MutBytes{w, 8}, rsvd.bit_offset, rsvd.bit_width, st->rsvd_or);
    }
    write_bits(MutBytes{w, 8}, fpduptr.bit_offset, fpduptr.bit_width, ptr);
    const Bytes m{w, kMpaMarker.size};
    sink.made(m);
    if (crc) state = crc::crc32c_update(state, m);
    st->pos += kMpaMarker.size;
    ++st->written;
  };
  // `wire` as sent, `covered` what the CRC takes for it (they differ only in
  // a faulty length field), split where markers fall.
  auto part = [&](Bytes wire, Bytes covered, bool composed) {
    while (!wire.empty()) {
      std::size_t n = wire.size();
      if (is_marker_position(st->pos)) marker();
      n = std::min<std::uint64_t>(n, kMpaMarkerInterval - st->pos % kMpaMarkerInterval);
      st->pos += n;
      if (composed) sink.made(wire.first(n));
      else sink.view(wire.first(n));
      if (crc) state = crc::crc32c_update(state, covered.first(n));
      wire = wire.subspan(n);
      covered = covered.subspan(n);
    }
  };
  std::byte length[2], true_length[2];
  put_be16(MutBytes{length, 2}, 0, static_cast<std::uint16_t>(len + faults.length_excess));
  put_be16(MutBytes{true_length, 2}, 0, static_cast<std::uint16_t>(len));
  part(Bytes{length, 2}, Bytes{true_length, 2}, true);
  part(head, head, true);
  part(payload, payload, false);
  static constexpr std::byte kZeros[4] = {};
  part(Bytes{kZeros, mpa_pad(len)}, Bytes{kZeros, mpa_pad(len)}, true);
  // A marker due right before the CRC field is inside the FPDU and covered;
  // octets are 4-aligned from the stream's start, so none falls inside it.
  if (is_marker_position(st->pos)) marker();
  std::byte field[kMpaCrcSize];
  put_le32(MutBytes{field, kMpaCrcSize}, 0, (crc ? crc::crc32c_final(state) : 0) ^ faults.crc_xor);
  sink.made(Bytes{field, kMpaCrcSize});
  st->pos += kMpaCrcSize;
}

}  // namespace rdmaconf::protocols::iwarp

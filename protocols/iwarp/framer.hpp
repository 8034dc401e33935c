#pragma once
// The one MPA receive framer (RFC 5044 §4-5): it takes the octets of one
// direction of an MPA connection, from its first FPDU on, in pieces of any
// size, and hands back whole FPDUs with their markers taken out and their
// CRC computed. Sans I/O: the iWARP engine feeds it what TCP delivered, the
// capture checker what the reassembler delivered, and neither judges the
// framing any other way.
//
// Markers: where the direction carries them, 4 octets sit at every 512th
// position counted from the framer's start (the direction's first FPDU). A
// marker at an FPDU's first position belongs to that FPDU. The CRC covers the
// FPDU as sent, markers included, up to its CRC field; octets and FPDU sizes
// are multiples of 4 from the start, so a marker never splits the CRC field.
//
// The framer judges nothing: a wrong marker pointer or CRC is reported in
// what it returns, for the caller to judge (the engine terminates, the
// checker records a verdict).
//
// `Tag` labels the octets of each call (the checker's frame number and
// acknowledgement, say); an FPDU and each marker carry the tag of the call
// that brought their first octet.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocols/crc/crc32c.hpp"
#include "protocols/iwarp/codec.hpp"

namespace rdmaconf::protocols::iwarp {

template <class Tag = std::uint64_t>
class MpaFramer {
 public:
  struct Marker {
    std::uint64_t pos = 0;  // framer position of its first octet
    std::uint16_t rsvd = 0, fpduptr = 0;
    std::uint16_t expected_ptr = 0;  // what the pointer should be: back to its FPDU's length field (0 for a leading marker)
    Tag tag{};
  };
  struct Fpdu {
    Bytes octets;               // length, ULPDU, pad, CRC field; markers taken out
    std::uint64_t start = 0;    // framer position of its first octet (a leading marker's)
    std::uint64_t wire_size = 0;  // octets as sent, markers included
    std::uint32_t crc = 0;      // CRC32c computed over what the CRC field covers (0 when CRC is off)
    std::span<const Marker> markers;  // the markers inside it, in order
    Tag tag{};
    std::uint32_t crc_field() const { return le32(octets, octets.size() - kMpaCrcSize); }
  };
  // An FPDU begun and not finished.
  struct Partial {
    std::uint64_t start = 0;
    std::size_t have = 0;  // its octets so far, markers not counted
    std::size_t need = 0;  // its size without markers, 0 while its length field is incomplete
    Tag tag{};
  };

  MpaFramer() = default;
  MpaFramer(bool markers, bool crc) { reset(markers, crc); }
  // Starts over at position 0 (a direction's first FPDU, or wherever the
  // caller found an FPDU's start); buffers keep their capacity.
  void reset(bool markers, bool crc) {
    markers_ = markers;
    crc_ = crc;
    pos_ = 0;
    open_ = false;
    mk_have_ = 0;
    stage_.clear();
    seen_.clear();
  }
  // Goes on at `pos` (an FPDU's first position, found after octets were
  // lost), counting positions, and so markers, as before.
  void resume_at(bool markers, bool crc, std::uint64_t pos) {
    reset(markers, crc);
    pos_ = pos;
  }
  // Passes over `n` octets a caller took as one whole unmarked FPDU itself,
  // between FPDUs (nothing open).
  void skip(std::uint64_t n) { pos_ += n; }
  bool markers() const { return markers_; }
  bool crc() const { return crc_; }
  // Octets taken since reset, markers included.
  std::uint64_t position() const { return pos_; }
  std::optional<Partial> partial() const {
    if (!open_) return std::nullopt;
    return Partial{start_, stage_.size(), need_, start_tag_};
  }

  // Takes octets from the front of `in` up to the end of the next whole FPDU
  // and returns it, or takes all of `in` and returns nothing (more needed).
  // What it returns is valid until the next call; an FPDU that arrived whole
  // and unmarked in `in` is a view of `in`, not a copy.
  std::optional<Fpdu> next(Bytes& in, const Tag& tag = {}) {
    if (!open_) {
      if (in.empty()) return std::nullopt;
      stage_.clear();
      seen_.clear();
      need_ = 0;
      open_ = true;
      start_ = pos_;
      start_tag_ = tag;
      crc_state_ = crc::kCrc32cInit;
      if (in.size() >= 2) {
        const std::size_t total = fpdu_size(be16(in, 0));
        const std::uint64_t into = pos_ % kMpaMarkerInterval;
        // Whole, and no marker inside it: no copy.
        if (in.size() >= total && (!markers_ || (into != 0 && into + total <= kMpaMarkerInterval))) {
          const Bytes f = in.first(total);
          in = in.subspan(total);
          pos_ += total;
          open_ = false;
          return Fpdu{f, start_, total, crc_ ? fpdu_crc(f.first(total - kMpaCrcSize)) : 0, {}, tag};
        }
      }
      if (markers_)
        if (auto f = whole_marked(in, tag)) return f;
    }
    while (!in.empty()) {
      if (markers_ && (mk_have_ > 0 || pos_ % kMpaMarkerInterval == 0)) {
        if (mk_have_ == 0) {
          mk_.pos = pos_;
          mk_.tag = tag;
        }
        const std::size_t n = std::min<std::size_t>(kMpaMarker.size - mk_have_, in.size());
        std::copy_n(in.begin(), n, mk_octets_ + mk_have_);
        // Covered unless the FPDU's octets have reached its CRC field.
        if (crc_ && (need_ == 0 || stage_.size() + kMpaCrcSize <= need_)) crc_state_ = crc::crc32c_update(crc_state_, in.first(n));
        mk_have_ += n;
        pos_ += n;
        in = in.subspan(n);
        if (mk_have_ < kMpaMarker.size) break;
        mk_have_ = 0;
        seen_.push_back(marker_at(Bytes{mk_octets_, kMpaMarker.size}, mk_.pos, mk_.tag));
        continue;
      }
      std::size_t n = std::min((need_ ? need_ : 2) - stage_.size(), in.size());
      if (markers_) n = std::min<std::size_t>(n, kMpaMarkerInterval - pos_ % kMpaMarkerInterval);
      if (crc_ && markers_) {  // (without markers the CRC is taken in one pass at the end)
        const std::size_t covered = need_ == 0 ? n : std::min(n, need_ - kMpaCrcSize - std::min(stage_.size(), need_ - kMpaCrcSize));
        crc_state_ = crc::crc32c_update(crc_state_, in.first(covered));
      }
      stage_.insert(stage_.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
      pos_ += n;
      in = in.subspan(n);
      if (need_ == 0 && stage_.size() == 2) need_ = fpdu_size(be16(Bytes(stage_), 0));
      if (need_ != 0 && stage_.size() == need_) {
        open_ = false;
        const Bytes f(stage_);
        const std::uint32_t c = !crc_ ? 0 : markers_ ? crc::crc32c_final(crc_state_) : fpdu_crc(f.first(need_ - kMpaCrcSize));
        return Fpdu{f, start_, pos_ - start_, c, seen_, start_tag_};
      }
    }
    return std::nullopt;
  }

 private:
  // The marker whose four octets are `m`, at framer position `pos`, read
  // through its table. Its expected pointer (RFC 5044 §4.3) is back to the
  // open FPDU's ULPDU Length field: past its leading marker when the FPDU
  // begins with one, and 0 for that leading marker itself.
  Marker marker_at(Bytes m, std::uint64_t pos, const Tag& tag) const {
    const FieldDef& rsvd = kMpaMarker.fields[MpaMarker::rsvd];
    const FieldDef& ptr = kMpaMarker.fields[MpaMarker::fpduptr];
    Marker mk;
    mk.pos = pos;
    mk.tag = tag;
    mk.rsvd = static_cast<std::uint16_t>(read_bits(m, rsvd.bit_offset, rsvd.bit_width));
    mk.fpduptr = static_cast<std::uint16_t>(read_bits(m, ptr.bit_offset, ptr.bit_width));
    const std::uint64_t length_field = start_ + (markers_ && is_marker_position(start_) ? kMpaMarker.size : 0);
    mk.expected_ptr = pos <= start_ ? 0 : static_cast<std::uint16_t>(pos - length_field);
    return mk;
  }

  // An FPDU that arrived whole on a marked stream: its octets copied out
  // between the markers in one sweep and its CRC taken in one pass over the
  // octets as they came (markers included), instead of octet run by octet
  // run below. Nothing when `in` does not hold all of it, or when the stream
  // was resumed off the 4-octet grid: there a marker can fall inside a length
  // or CRC field, which only the run-by-run path below takes apart.
  std::optional<Fpdu> whole_marked(Bytes& in, const Tag& tag) {
    if (pos_ % kMpaMarker.size != 0) return std::nullopt;
    const std::size_t lead = is_marker_position(pos_) ? kMpaMarker.size : 0;
    if (in.size() < lead + 2) return std::nullopt;
    const std::size_t wire = marked_fpdu_size(be16(in, lead), pos_);
    if (in.size() < wire) return std::nullopt;
    std::uint64_t p = pos_;
    for (std::size_t off = 0; off < wire;) {
      if (is_marker_position(p)) {
        seen_.push_back(marker_at(in.subspan(off, kMpaMarker.size), p, tag));
        off += kMpaMarker.size;
        p += kMpaMarker.size;
        continue;
      }
      const std::size_t n = std::min<std::uint64_t>(wire - off, kMpaMarkerInterval - p % kMpaMarkerInterval);
      stage_.insert(stage_.end(), in.begin() + static_cast<std::ptrdiff_t>(off),
                    in.begin() + static_cast<std::ptrdiff_t>(off + n));
      off += n;
      p += n;
    }
    const std::uint32_t c = crc_ ? fpdu_crc(in.first(wire - kMpaCrcSize)) : 0;
    in = in.subspan(wire);
    pos_ += wire;
    open_ = false;
    return Fpdu{Bytes(stage_), start_, wire, c, seen_, tag};
  }

  bool markers_ = false, crc_ = false;
  std::uint64_t pos_ = 0;
  bool open_ = false;  // an FPDU (or its leading marker) has begun
  std::uint64_t start_ = 0;
  Tag start_tag_{};
  std::vector<std::byte> stage_;  // the open FPDU's octets, markers taken out
  std::size_t need_ = 0;
  std::uint32_t crc_state_ = crc::kCrc32cInit;
  std::byte mk_octets_[4] = {};
  std::size_t mk_have_ = 0;
  Marker mk_{};
  std::vector<Marker> seen_;  // markers of the open FPDU
};

}  // namespace rdmaconf::protocols::iwarp

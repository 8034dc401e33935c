#include "conformance/iwarp/mpa_stream.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::conformance::iwarp {

using namespace protocols;
using namespace protocols::iwarp;

namespace {
constexpr std::size_t kMaxHeld = 4u << 20;  // octets held per direction while the negotiation is unknown
constexpr std::size_t kKeySize = 16;
constexpr std::size_t kInferFirstTry = 4096;    // mid-stream: first look for FPDUs at this many octets,
constexpr std::size_t kInferMax = 64u << 10;    // again at each doubling, and give up beyond this
constexpr std::size_t kInferMinRun = 3;         // FPDUs in a row that must look right

// The control rows' fixed values (reserved bits zero, DDP and RDMAP version
// 1) as a mask and a value over the first 16 bits, made from the table: the
// one test most octets of a stream scanned for FPDUs fail.
struct FixedBits {
  std::uint16_t mask = 0, value = 0;
};
constexpr FixedBits fixed_control_bits() {
  FixedBits f;
  const std::pair<std::size_t, std::uint16_t> rows[] = {
      {DdpUntagged::rsvd, 0}, {DdpUntagged::dv, 1}, {DdpUntagged::rv, 1}, {DdpUntagged::rdmap_rsvd, 0}};
  for (const auto& [i, v] : rows) {
    const FieldDef& d = kDdpUntagged.fields[i];
    if (d.bit_offset + d.bit_width > 16) throw "a fixed control row lies beyond the first 16 bits";  // (a compile error)
    const unsigned shift = static_cast<unsigned>(16 - d.bit_offset - d.bit_width);
    f.mask = static_cast<std::uint16_t>(f.mask | (((1u << d.bit_width) - 1) << shift));
    f.value = static_cast<std::uint16_t>(f.value | (v << shift));
  }
  return f;
}
constexpr FixedBits kFixedControl = fixed_control_bits();

// Could `u` (the first octets of a ULPDU whose length field said `len`) be a
// DDP segment carrying RDMAP? Octets not yet present are not judged.
bool plausible_ulpdu(std::uint16_t len, Bytes u) {
  if (len < kDdpTagged.size) return false;
  if (u.size() < 2) return true;
  // Reserved bits, DDP and RDMAP versions: all in one test.
  if ((be16(u, 0) & kFixedControl.mask) != kFixedControl.value) return false;
  // Both layouts share the control rows; read the others through the table.
  auto field = [&](std::size_t i) {
    const FieldDef& f = kDdpUntagged.fields[i];
    return read_bits(u, f.bit_offset, f.bit_width);
  };
  const bool tagged = field(DdpUntagged::t);
  const auto& op = rdmap_op(static_cast<std::uint8_t>(field(DdpUntagged::opcode)));
  if (!op.valid || tagged != op.tagged) return false;
  if (!tagged && len < kDdpUntagged.size) return false;
  const FieldDef& qn = kDdpUntagged.fields[DdpUntagged::qn];
  if (!tagged && u.size() * 8 >= qn.bit_offset + qn.bit_width && read_bits(u, qn.bit_offset, qn.bit_width) > kMaxRdmapQueue)
    return false;
  return true;
}

}  // namespace

// A phase of markers needs kInferMinRun of them at least.
constexpr std::size_t kMarkerSpan = (kInferMinRun - 1) * kMpaMarkerInterval + kMpaMarker.size;

namespace {

// Octets `b` read as an MPA stream with a marker at every 512th octet from
// `phase`: where FPDUs begin and end with the markers stepped over.
struct MarkedStream {
  Bytes b;
  std::size_t phase;
  bool at_marker(std::size_t pos) const { return pos >= phase && (pos - phase) % kMpaMarkerInterval == 0; }
  std::size_t next_marker(std::size_t pos) const {
    return pos <= phase ? phase : phase + (pos - phase + kMpaMarkerInterval - 1) / kMpaMarkerInterval * kMpaMarkerInterval;
  }
  // The position `n` octets of FPDU after `pos`, markers stepped over.
  std::size_t advance(std::size_t pos, std::size_t n) const {
    while (n > 0) {
      if (at_marker(pos)) {
        pos += kMpaMarker.size;
        continue;
      }
      const std::size_t step = std::min(n, next_marker(pos) - pos);
      pos += step;
      n -= step;
    }
    return pos;
  }
  std::uint16_t pointer(std::size_t marker) const {
    const FieldDef& f = kMpaMarker.fields[MpaMarker::fpduptr];
    return static_cast<std::uint16_t>(read_bits(b.subspan(marker, kMpaMarker.size), f.bit_offset, f.bit_width));
  }
  bool reserved_zero(std::size_t marker) const {
    const FieldDef& f = kMpaMarker.fields[MpaMarker::rsvd];
    return read_bits(b.subspan(marker, kMpaMarker.size), f.bit_offset, f.bit_width) == 0;
  }
  // Where the FPDU a marker names begins (its length field), if in `b`.
  std::optional<std::size_t> named_fpdu(std::size_t marker) const {
    const std::size_t ptr = pointer(marker);
    if (ptr == 0) return marker + kMpaMarker.size;  // the FPDU begins right after the marker
    if (ptr > marker) return std::nullopt;           // it began before the octets at hand
    return marker - ptr;
  }
  // Whether walking FPDUs from the one `first` names, by their length
  // fields, reaches the FPDU that the next marker names: the two markers
  // and the FPDUs between them agree. Every FPDU on the way must hold a
  // DDP header at least.
  bool agree(std::size_t first, std::size_t second) const {
    const auto from = named_fpdu(first);
    if (!from || !reserved_zero(first) || !reserved_zero(second)) return false;
    std::size_t at = *from;
    while (at < second) {
      if (at_marker(at)) at += kMpaMarker.size;
      // (A marker may sit between the length field's two octets.)
      const std::size_t low = at_marker(at + 1) ? at + 1 + kMpaMarker.size : at + 1;
      if (low >= b.size()) return false;
      const auto len = static_cast<std::uint16_t>(static_cast<unsigned>(b[at]) << 8 | static_cast<unsigned>(b[low]));
      if (len < kDdpTagged.size) return false;
      const std::size_t end = advance(at, fpdu_size(len));
      if (end > second) {
        // The second marker sits inside this FPDU: it must point back to its start.
        return pointer(second) == second - at;
      }
      at = end;
    }
    // An FPDU ends exactly where the second marker sits: the next begins after it.
    return at == second && pointer(second) == 0;
  }
};


// Whether the first FPDU of `b` (with `markers`, a marker at every 512th
// octet from its first) carries a CRC that checks (CRCs in use).
bool first_crc_checks(Bytes b, bool markers) {
  MpaFramer<int> framer(markers, true);
  const auto f = framer.next(b);
  if (!f) return false;
  const auto v = decode_fpdu(f->octets);
  return v && v->crc_wire == f->crc;
}
}  // namespace

bool markers_present(Bytes b, bool only_at_start) {
  if (b.size() < kMarkerSpan) return false;
  for (std::size_t m = 0; m < (only_at_start ? 1 : kMpaMarkerInterval) && m + kMarkerSpan <= b.size(); ++m) {
    // Proven: kInferMinRun markers in a row, each pair of neighbours agreeing
    // with the FPDU lengths between them.
    const MarkedStream ms{b, m};
    std::size_t run = 1;
    for (std::size_t p = m; p + kMpaMarkerInterval + kMpaMarker.size <= b.size(); p += kMpaMarkerInterval) {
      run = ms.agree(p, p + kMpaMarkerInterval) ? run + 1 : 1;
      if (run >= kInferMinRun) return true;
    }
  }
  return false;
}

std::optional<InferredAlignment> infer_alignment(Bytes b, bool at_end, bool only_at_start) {
  // Every offset may try a CRC over up to 64 KiB: computed afresh each time,
  // a stream of 64 KiB that is not MPA took some 30 ms (nearly all of it
  // CRC), where the slices' CRCs from one pass take well under one. (A
  // chain from the first octet only covers each octet once at most.)
  std::optional<FpduCrcSlices> slices;
  const auto crc_of = [&](std::size_t from, std::size_t to) {
    if (only_at_start) return fpdu_crc(b.subspan(from, to - from));
    if (!slices) slices.emplace(b);
    return slices->crc(from, to);
  };
  const std::size_t last_k = only_at_start ? std::min<std::size_t>(b.size(), 1) : std::min<std::size_t>(b.size(), 0xffff + 8);
  for (std::size_t k = 0; k < last_k; ++k) {
    std::size_t pos = k, n = 0, plausible = 0, crc_ok = 0, crc_zero = 0, run = 0, best_run = 0;
    bool lost = false;
    while (pos + 2 <= b.size()) {
      const std::uint16_t len = be16(b, pos);
      const std::size_t sz = fpdu_size(len);
      const Bytes u = b.subspan(pos + 2, std::min<std::size_t>(len, b.size() - pos - 2));
      const bool looks = plausible_ulpdu(len, u);
      const bool whole = pos + sz <= b.size();
      const std::uint32_t field = whole ? le32(b, pos + sz - kMpaCrcSize) : 0;
      const bool crc_right = whole && field != 0 && crc_of(pos, pos + sz - kMpaCrcSize) == field;
      // The chain starts at an FPDU the headers or the CRC vouch for; past
      // it a bad header is a finding, as long as most of the chain looks right.
      if (n == 0 && !looks && !crc_right) {
        lost = true;
        break;
      }
      if (!whole) break;
      ++n;
      plausible += looks || crc_right;
      crc_ok += crc_right;
      crc_zero += field == 0;
      run = crc_right ? run + sz : 0;
      best_run = std::max(best_run, run);
      pos += sz;
      if (3 * (n - plausible) > n + 6) {  // far too many wrong to be accepted below
        lost = true;
        break;
      }
    }
    // Wrong headers are accepted where the CRCs prove the framing, or few
    // (one in six) in a long chain; a chain the stream's markers break (they
    // are not known mid-stream) goes wrong within a few FPDUs.
    // A chain that ends exactly where the capture does is consistent to its
    // last octet: half of it may be wrong.
    const std::size_t wrong = n - plausible;
    const bool exact = at_end && pos == b.size() && n >= 2 && 2 * wrong <= n;
    if (lost || (wrong && !exact && !(crc_ok * 2 > n && 3 * wrong <= n) && !(n >= 6 && 6 * wrong <= n))) continue;
    if (n >= kInferMinRun || (at_end && n >= 1 && pos == b.size())) {
      // CRCs in use: most fields right, or none zero in a long chain of right headers (a sender without
      // CRCs sends zeros; non-zero wrong fields are damage or a wrong CRC, which iwarp.mpa.fpdu.crc then
      // reports).
      const bool crc = crc_ok * 2 > n || (crc_zero == 0 && wrong == 0 && n >= 2 * kInferMinRun);
      return InferredAlignment{k, n, crc, best_run, pos - k, wrong == 0};
    }
  }
  return std::nullopt;
}

MpaConnection::MpaConnection(const captures::io::TcpStreamInfo& info, MpaListener& l) : info_(info), l_(l) {}

void MpaConnection::stop(int dir, std::uint64_t offset, std::uint64_t frame, std::string reason, bool gap, bool cut_by_fin,
                         bool fpdu_after_reject, std::optional<Evidence::Cause> caused_by) {
  Dir& s = d_[dir];
  const bool after_reject = s.state == State::rejected;
  s.gap_seen |= gap;
  // (The octets of a frame begun before the stop are unjudged from its start.)
  std::uint64_t from = s.buf.empty() ? offset : std::min(offset, s.buf_off);
  if (const auto p = s.framer.partial(); p && s.state == State::fpdu) from = std::min(from, s.base + p->start);
  s.why.push_back(fmt::format("from offset {}: {}", from, reason));
  s.state = State::stopped;
  s.buf.clear();
  s.framer.reset(false, false);
  l_.on_stop(StopEvent{dir, offset, frame, gap, after_reject, fpdu_after_reject, cut_by_fin, std::move(caused_by), std::move(reason)});
}

void MpaConnection::note_segment(Dir& s, std::uint64_t offset, std::uint64_t size, bool at_boundary) {
  auto& m = s.largest;
  if (size > m.size) m = {size, offset + size, 1, false, at_boundary};
  else if (size < m.size) return;
  else if (offset == m.end) m = {size, offset + size, m.run + 1, m.attested || m.run + 1 >= 3 || m.at_boundary, at_boundary};
  else m = {size, offset + size, 1, true, at_boundary};
}

void MpaConnection::data(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked) {
  d_[dir].captured += data.size();
  d_[dir].max_segment = std::max<std::uint64_t>(d_[dir].max_segment, data.size());
  d_[dir].segment = data.size();
  route(dir, offset, data, frame, acked);
  const Dir& s = d_[dir];
  note_segment(d_[dir], offset, data.size(), s.state == State::fpdu && !s.framer.partial());
}

void MpaConnection::route(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked) {
  Dir& s = d_[dir];
  s.sent_any |= !data.empty();
  switch (s.state) {
    case State::not_mpa:
    case State::stopped:
      return;
    case State::rejected: {
      // RFC 5044 §7.1.2: after a rejection both sides leave MPA and the TCP
      // connection stays open for the ULP's streaming data. Only a whole
      // FPDU whose CRC checks (CRCs negotiated, no markers) proves a side
      // went on in MPA.
      bool fpdu = false;
      if (neg_.crc() && !neg_.markers_from_initiator() && !neg_.markers_from_responder() && data.size() >= 2) {
        const std::size_t total = fpdu_size(be16(data, 0));
        fpdu = data.size() >= total && le32(data, total - kMpaCrcSize) == fpdu_crc(data.first(total - kMpaCrcSize));
      }
      stop(dir, offset, frame, fpdu ? "an FPDU (its CRC checks) after a rejecting MPA Reply" : "streaming data after a rejecting MPA Reply",
           false, false, fpdu);
      return;
    }
    case State::wait_negotiation:
      if (s.held_bytes + data.size() > kMaxHeld) {
        s.held.clear();
        stop(dir, offset, frame, "no MPA Reply within 4 MiB of FPDU data; framing not followed", true);
        return;
      }
      s.held.push_back(Held{offset, frame, acked, s.segment, {data.begin(), data.end()}});
      s.held_bytes += data.size();
      return;
    case State::seek_marker:
      s.held.push_back(Held{offset, frame, acked, s.segment, {data.begin(), data.end()}});
      s.held_bytes += data.size();
      seek_marker(dir, frame, false);
      return;
    case State::infer: {
      const std::size_t before = s.held_bytes;
      s.held.push_back(Held{offset, frame, acked, s.segment, {data.begin(), data.end()}});
      s.held_bytes += data.size();
      if (s.from_start) {
        const auto first = first_fpdu_proof(s);
        if (!first) return;  // not known yet
        if (!*first) {
          // Not FPDUs from the first octet: an ordinary TCP stream, held no longer.
          s.state = State::not_mpa;
          s.held.clear();
          s.held_bytes = 0;
          return;
        }
      }
      // Try at 4 KiB and at each doubling up to the limit.
      for (std::size_t at = kInferFirstTry; at <= kInferMax; at *= 2)
        if (before < at && s.held_bytes >= at) return infer(dir, frame, false);
      if (s.held_bytes > kInferMax) infer(dir, frame, false);
      return;
    }
    case State::fpdu:
      feed_fpdus(dir, data, frame, acked);
      return;
    case State::check_markers:
      s.held.push_back(Held{offset, frame, acked, s.segment, {data.begin(), data.end()}});
      s.held_bytes += data.size();
      check_markers(dir, false);
      return;
    default:
      feed(dir, offset, data, frame, acked);
  }
}

std::optional<bool> MpaConnection::first_fpdu_proof(const Dir& s) {
  std::array<std::byte, 2 + kDdpUntagged.size> head{};
  std::size_t n = 0;
  for (const auto& h : s.held)
    for (std::size_t i = 0; i < h.bytes.size() && n < head.size(); ++i) head[n++] = h.bytes[i];
  if (n < 2) return std::nullopt;
  // A marker (reserved bits and FPDU pointer 0) where the first FPDU
  // begins: FPDUs with markers from the first octet (RFC 5044 §4.3), proven
  // by a run of markers that agree with the FPDU lengths between them.
  if (n >= kMpaMarker.size && std::all_of(head.begin(), head.begin() + kMpaMarker.size, [](std::byte b) { return b == std::byte{0}; })) {
    if (s.held_bytes < kMarkerSpan) return std::nullopt;
    std::vector<std::byte> all;
    for (const auto& h : s.held) all.insert(all.end(), h.bytes.begin(), h.bytes.end());
    if (markers_present({all.data(), all.size()}, true)) return true;
  }
  const std::uint16_t len = be16(Bytes(head.data(), n), 0);
  if (plausible_ulpdu(len, Bytes(head.data() + 2, n - 2))) return true;
  // No valid DDP header (another stack's versions, opcodes or queues): a CRC
  // that checks over the FPDU its length field frames still proves MPA
  // framing, and the FPDUs are judged. Held for an FPDU of at most a jumbo
  // frame: an ordinary stream is let go soon.
  constexpr std::size_t kLongestProof = 9216;
  const std::size_t size = fpdu_size(len);
  if (size > kLongestProof) return false;
  if (s.held_bytes < size) return std::nullopt;
  std::vector<std::byte> first;
  first.reserve(size);
  for (const auto& h : s.held) {
    const std::size_t take = std::min(h.bytes.size(), size - first.size());
    first.insert(first.end(), h.bytes.begin(), h.bytes.begin() + static_cast<std::ptrdiff_t>(take));
    if (first.size() == size) break;
  }
  return first_crc_checks({first.data(), first.size()}, false);
}

void MpaConnection::infer(int dir, std::uint64_t frame, bool at_end) {
  Dir& s = d_[dir];
  if (s.held.empty()) {  // nothing came (after a gap, or at all)
    if (at_end) s.state = State::not_mpa;
    return;
  }
  std::vector<std::byte> all;
  all.reserve(s.held_bytes);
  for (const auto& h : s.held) all.insert(all.end(), h.bytes.begin(), h.bytes.end());
  const bool known_start = s.from_start || s.after_own_frame;
  // FPDUs where the MPA Request or Reply belongs: the connection skipped
  // the exchange. The SYN's sender is the initiator.
  const auto skipped_exchange = [&] {
    if (initiator_dir_ < 0) initiator_dir_ = 0;
    const Bytes head{s.not_mpa_head.data(), s.not_mpa_head.size()};
    RrEvent e{dir, from_initiator(dir), nullptr, head, s.not_mpa_frame, s.not_mpa_frame, s.not_mpa_off};
    l_.on_rr(e);
  };
  const bool from_first_octet = s.from_start && !s.after_own_frame && !s.resync;
  if ((s.after_own_frame || from_first_octet) && markers_present({all.data(), all.size()}, true)) {
    // The markers sit every 512 octets from this side's first FPDU (the end
    // of its MPA frame, or the stream's first octet): frame them so.
    const std::uint64_t start = s.after_own_frame ? s.next_off : s.held.front().offset;
    if (from_first_octet) skipped_exchange();
    if (!neg_.complete()) {
      neg_.inferred = true;
      neg_.crc_inferred = neg_.req.crc || neg_.rep.crc || first_crc_checks({all.data(), all.size()}, true);
    }
    std::vector<Held> held;
    held.swap(s.held);
    s.held_bytes = 0;
    start_fpdus(dir, start, true);
    s.held.swap(held);
    replay_held(dir, start);
    return;
  }
  if (markers_present({all.data(), all.size()})) {
    // Where the markers sit depends on where the FPDUs began, which the
    // capture lacks: framing them mid-stream would mistake markers for data.
    if (!neg_.complete()) neg_.inferred = true;
    const std::uint64_t at = s.held.front().offset;
    s.held.clear();
    s.held_bytes = 0;
    s.state = State::fpdu;  // so that stop reports it
    stop(dir, at, frame, "the stream carries MPA markers, which a capture that starts mid-stream cannot place", true);
    return;
  }
  const auto found = infer_alignment({all.data(), all.size()}, at_end, known_start);
  if (!found) {
    // (From a known start one look is enough: the chain runs from the first octet or not at all.)
    if (at_end || known_start || s.held_bytes > kInferMax) {
      if (s.after_own_frame)
        s.why.push_back(fmt::format("from offset {}: no run of FPDUs follows this side's MPA frame", s.next_off));
      if (!s.from_start)
        s.why.push_back(fmt::format("from offset {}: no run of FPDUs found{}", s.held.front().offset, s.resync ? " after the gap" : ""));
      s.state = State::not_mpa;
      s.held.clear();
      s.held_bytes = 0;
    }
    return;
  }
  if (s.resync) {
    s.resync = false;
    s.resyncs.push_back({s.held.front().offset, s.held.front().offset + found->offset});
    s.why.push_back(fmt::format("framing found again at offset {}, {} octets after the gap", s.resyncs.back().resumed,
                                found->offset));
  } else if (s.from_start && !s.after_own_frame) {
    skipped_exchange();
  }
  if (!neg_.inferred && !neg_.complete()) {
    neg_.inferred = true;
    neg_.crc_inferred = found->crc;
  }
  std::vector<Held> held;
  held.swap(s.held);
  s.held_bytes = 0;
  const std::uint64_t start = held.front().offset + found->offset;
  if (!known_start && s.resyncs.empty()) {  // (from the start, nothing was skipped)
    s.inferred_at = static_cast<std::int64_t>(start);
    s.why.push_back(found->offset ? fmt::format("the capture starts mid-stream: framing found {} octets in, at offset {}", found->offset, start)
                                  : std::string("the capture starts mid-stream, at an FPDU's start"));
  }
  start_fpdus(dir, start, false);
  s.markers_excluded = known_start || found->crc_run > kMpaMarkerInterval + kMpaMarker.size ||
                       (found->all_plausible && found->fpdus >= kInferMinRun && found->span >= kMarkerSpan);
  s.held.swap(held);
  replay_held(dir, start);
}

void MpaConnection::replay_held(int dir, std::uint64_t from) {
  Dir& s = d_[dir];
  std::vector<Held> held;
  held.swap(s.held);
  s.held_bytes = 0;
  for (auto& h : held) {
    const std::uint64_t end = h.offset + h.bytes.size();
    if (end <= from) continue;
    const std::size_t skip = h.offset < from ? static_cast<std::size_t>(from - h.offset) : 0;
    s.segment = h.segment;
    feed(dir, h.offset + skip, Bytes(h.bytes).subspan(skip), h.frame, h.acked);
  }
}

void MpaConnection::seek_marker(int dir, std::uint64_t frame, bool at_end) {
  Dir& s = d_[dir];
  if (s.held.empty()) return;
  const std::uint64_t first = s.held.front().offset, last = s.held.back().offset + s.held.back().bytes.size();
  // The octet at stream offset `at`, if held (the held pieces are in order, without holes).
  auto octet = [&](std::uint64_t at) -> std::optional<std::byte> {
    for (const auto& h : s.held)
      if (at >= h.offset && at < h.offset + h.bytes.size()) return h.bytes[static_cast<std::size_t>(at - h.offset)];
    return std::nullopt;
  };
  // Markers sit every 512 octets from the direction's first FPDU (`base`).
  const std::uint64_t from = std::max(s.gap_end, first);
  std::uint64_t m = s.base + (from - s.base + kMpaMarkerInterval - 1) / kMpaMarkerInterval * kMpaMarkerInterval;
  for (; m + kMpaMarker.size <= last; m += kMpaMarkerInterval) {
    std::array<std::byte, 4> mk{};
    for (std::size_t i = 0; i < 4; ++i) mk[i] = *octet(m + i);
    const std::uint16_t ptr = be16(Bytes(mk.data(), mk.size()), 2);
    if (ptr > m - s.base || m - ptr < from) continue;  // its FPDU began in the gap (or the pointer is wrong)
    // The pointer names the FPDU's length field (the marker itself for 0);
    // an FPDU whose length field follows a marker begins with that marker.
    std::uint64_t start = m - ptr;
    if (ptr != 0 && start - s.base >= kMpaMarker.size && iwarp::is_marker_position(start - s.base - kMpaMarker.size)) {
      if (start - kMpaMarker.size < from) continue;  // its leading marker is in the gap
      start -= kMpaMarker.size;
    }
    s.resync = false;
    s.resyncs.push_back({s.gap_end, start});
    s.why.push_back(fmt::format("framing found again at offset {} by the marker at offset {}, {} octets after the gap",
                                start, m, start - s.gap_end));
    s.state = State::fpdu;
    s.unproven_resume = true;
    s.framer.resume_at(true, neg_.crc(), start - s.base);
    replay_held(dir, start);
    return;
  }
  if (at_end || s.held_bytes > kInferMax) {
    s.why.push_back(fmt::format("from offset {}: no marker after the gap names an FPDU that begins after it", s.gap_end));
    s.state = State::not_mpa;
    s.held.clear();
    s.held_bytes = 0;
    (void)frame;
  }
}

void MpaConnection::start_fpdus(int dir, std::uint64_t at, bool markers) {
  Dir& s = d_[dir];
  s.state = State::fpdu;
  s.markers = markers;
  s.markers_excluded = !markers;  // (infer() narrows it for a stream framed mid-way)
  s.base = at;
  s.framer.reset(markers, neg_.crc());
}

std::size_t MpaConnection::rr_size(Bytes b) { return b.size() < kMpaRr.size ? 0 : kMpaRr.size + be16(b, 18); }

void MpaConnection::probe_markers(int dir) {
  Dir& s = d_[dir];
  if (s.probe != Probe::collecting || s.early.size() < kMarkerSpan) return;
  s.probe = Probe::done;
  if (s.early_bad && markers_present({s.early.data(), s.early.size()}, true))
    s.stray = StrayMarkers{s.base, s.early_frames.front(), s.early.size() / kMpaMarkerInterval + 1};
  s.early = {};
  s.early_frames = {};
}

void MpaConnection::check_markers(int dir, bool at_end) {
  Dir& s = d_[dir];
  if (s.held_bytes < kMpaMarker.size && !at_end) return;
  // Only the first FPDU's octets are read: join no more of the hold.
  std::vector<std::byte> all;
  const auto prefix = [&](std::size_t n) {
    all.clear();
    for (const auto& h : s.held) {
      if (all.size() >= n) break;
      all.insert(all.end(), h.bytes.begin(), h.bytes.begin() + static_cast<std::ptrdiff_t>(std::min(h.bytes.size(), n - all.size())));
    }
    return Bytes{all.data(), all.size()};
  };
  Bytes b = prefix(kMpaMarker.size);
  const MarkedStream ms{b, 0};
  // The first marker sits where the first FPDU begins: pointer 0, reserved
  // bits 0. Where it does not, the first FPDU read without markers decides,
  // as soon as it is whole (the hold stays that short: the other
  // direction's answers to it must not be judged before it).
  const bool suspect = !s.held.empty() && s.held.front().offset == s.base && b.size() >= kMpaMarker.size &&
                       (ms.pointer(0) != 0 || !ms.reserved_zero(0));
  if (suspect) {
    const FieldDef& r = kMpaMarker.fields[MpaMarker::rsvd];
    const auto rsvd = static_cast<std::uint16_t>(read_bits(b, r.bit_offset, r.bit_width));
    const std::uint16_t pointer = ms.pointer(0);
    const std::uint16_t len = be16(b, 0);
    const std::size_t size = fpdu_size(len);
    if (s.held_bytes < size && !at_end) return;
    b = prefix(size);
    const bool whole = b.size() >= size;
    const bool crc_right = whole && neg_.crc() && le32(b, size - kMpaCrcSize) == fpdu_crc(b.first(size - kMpaCrcSize));
    if (whole && plausible_ulpdu(len, b.subspan(2, len)) && (crc_right || !neg_.crc())) {
      s.absent = MarkersAbsent{s.base, s.held.front().frame, rsvd, pointer, crc_right};
      s.markers = false;
      s.markers_excluded = true;
      s.framer.reset(false, neg_.crc());
    }
  }
  s.state = State::fpdu;
  replay_held(dir, s.base);
}

void MpaConnection::feed_fpdus(int dir, Bytes data, std::uint64_t frame, std::uint64_t acked) {
  Dir& s = d_[dir];
  if (s.probe == Probe::collecting) {
    const std::size_t had = s.early.size(), take = std::min(kMarkerSpan - had, data.size());
    s.early.insert(s.early.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
    for (std::size_t p = (had + kMpaMarkerInterval - 1) / kMpaMarkerInterval * kMpaMarkerInterval; p < had + take; p += kMpaMarkerInterval)
      s.early_frames.push_back(frame);
  }
  while (s.state == State::fpdu) {
    const auto f = s.framer.next(data, {frame, acked, s.segment});
    if (!f) return probe_markers(dir);
    const auto v = decode_fpdu(f->octets);  // (the framer sized it: this cannot fail)
    if (!v) {
      stop(dir, s.base + f->start, f->tag.frame, v.error().message());
      return;
    }
    FpduEvent& e = s.event;
    e.dir = dir;
    e.from_initiator = from_initiator(dir);
    e.first_frame = f->tag.frame;
    e.last_frame = frame;
    e.acked = f->tag.acked;
    e.offset = s.base + f->start;
    e.wire_size = f->wire_size;
    e.markers.clear();
    for (const auto& m : f->markers)
      e.markers.push_back(MarkerSeen{s.base + m.pos, m.tag.frame, m.rsvd, m.fpduptr, m.expected_ptr});
    e.fpdu = &*v;
    e.crc_in_use = s.framer.crc();
    e.crc_computed = f->crc;
    e.damaged = e.crc_in_use && v->crc_wire != 0 && v->crc_wire != e.crc_computed;
    const auto ddp = decode_ddp(v->ulpdu);
    e.ddp = &ddp;
    e.index = s.fpdus++;
    e.max_segment = s.max_segment;
    e.first_segment = f->tag.segment;
    s.judged += e.wire_size;
    if (s.probe == Probe::collecting && (!ddp.ok() || (e.crc_in_use && e.crc_computed != v->crc_wire))) s.early_bad = true;
    const bool broken = e.crc_in_use ? v->crc_wire != e.crc_computed : !plausible_ulpdu(v->ulpdu_len, v->ulpdu);
    // Framing found again after a gap by one marker's pointer holds only if
    // the FPDU it names is sound: else the marker was not one (the octets at
    // its place were data: markers left out, or misplaced), and what follows
    // the gap stays unjudged, the gap's doing.
    if (s.unproven_resume && broken) {
      unframe(dir,
              fmt::format("the FPDU that the marker found after the gap names, at offset {}, {}: the framing found again does not hold",
                          e.offset, e.crc_in_use ? "fails its CRC" : "holds no valid DDP header"),
              true);
      return;
    }
    s.unproven_resume = false;
    // A marker that does not point at the start of the FPDU it sits in, in
    // an FPDU that the markers' octets, stepped over, leave broken (its CRC
    // fails, or it holds no valid DDP header): the markers are not where
    // they belong (left out, or placed from another origin), so nothing
    // after can be framed. The markers are the violation; the FPDU is not
    // judged, and what follows is their consequence.
    if (s.markers && !e.markers.empty()) {
      const auto wrong = std::find_if(e.markers.begin(), e.markers.end(), [](const MarkerSeen& m) { return m.fpduptr != m.expected_ptr; });
      if (wrong != e.markers.end() && broken) {
        s.misplaced = e.markers;
        unframe(dir,
                fmt::format("the marker at offset {} does not point at the start of the FPDU framed at offset {}, which then {}: "
                            "this direction's markers are not where they belong, and the octets from here cannot be framed",
                            wrong->offset, e.offset, e.crc_in_use ? "fails its CRC" : "holds no valid DDP header"),
                false, Evidence::Cause{"iwarp.mpa.marker.fpduptr", wrong->frame});
        return;
      }
    }
    // An FPDU whose CRC fails right after one that failed, and that does not
    // even look like an FPDU (no valid DDP/RDMAP header): the first one's
    // length field is the damage (a wrong length misframes all that
    // follows), so framing stops there, reported as the consequence of the
    // first. (A sender whose every CRC is wrong still sends good headers.)
    if (e.damaged && s.last_damaged && !plausible_ulpdu(v->ulpdu_len, v->ulpdu)) {
      unframe(dir,
              fmt::format("the FPDU framed at offset {} fails its CRC as the one before it did: the length field that framed it is "
                          "taken as damaged (what it frames holds no valid DDP header), and the octets from here cannot be framed",
                          e.offset),
              false, *s.damaged);
      return;
    }
    s.last_damaged = e.damaged;
    if (e.damaged && !s.damaged) s.damaged = Evidence::Cause{"iwarp.mpa.fpdu.crc", e.first_frame};
    l_.on_fpdu(e);
  }
  probe_markers(dir);
}

void MpaConnection::unframe(int dir, std::string reason, bool gap, std::optional<Evidence::Cause> caused_by) {
  Dir& s = d_[dir];
  --s.fpdus;
  s.judged -= s.event.wire_size;
  stop(dir, s.event.offset, s.event.first_frame, std::move(reason), gap, false, false, std::move(caused_by));
}

void MpaConnection::feed(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame, std::uint64_t acked) {
  Dir& s = d_[dir];
  while (!data.empty()) {
    if (s.state == State::wait_negotiation || s.state == State::rejected || s.state == State::fpdu ||
        s.state == State::check_markers) {
      route(dir, offset, data, frame, acked);
      return;
    }
    if (s.state != State::probe && s.state != State::rr) return;

    if (s.state == State::probe) {
      // Recognise MPA by the key at the very start of a direction.
      if (s.buf.empty()) {
        s.buf_off = offset;
        s.buf_frame = frame;
        s.buf_acked = acked;
      }
      const std::size_t take = std::min(kKeySize - s.buf.size(), data.size());
      std::vector<std::byte> probe = s.buf;
      probe.insert(probe.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
      const Bytes p{probe.data(), probe.size()};
      const bool req = looks_like_mpa_key(p, MpaFrameKind::request);
      const bool rep = looks_like_mpa_key(p, MpaFrameKind::reply);
      if (!req && !rep) {
        if (!info_.start_known[dir]) {
          // The capture starts mid-connection (this direction's first octets
          // may be anywhere in its stream): look for FPDUs instead.
          s.state = State::infer;
          if (peer_frame_lost(1 - dir)) without_peer_frame(1 - dir);
          const std::vector<std::byte> had = std::move(s.buf);
          s.buf.clear();
          if (!had.empty()) route(dir, s.buf_off, {had.data(), had.size()}, s.buf_frame, s.buf_acked);
          route(dir, offset, data, frame, acked);
          return;
        }
        if (initiator_dir_ >= 0 && !d_[1 - dir].from_start) {
          // One side spoke MPA and this one starts with something else.
          RrEvent e{dir, from_initiator(dir), nullptr, p, s.buf_frame, frame, s.buf_off, s.buf_acked};
          l_.on_rr(e);
          s.buf.clear();
          stop(dir, s.buf_off, frame, from_initiator(dir) ? "initiator did not send an MPA Request" : "responder did not send an MPA Reply");
        } else {
          // Not MPA, unless the other side turns out to speak it: keep the first octets as evidence.
          // Unless FPDUs run from the first octet: iWARP that skipped the MPA exchange.
          s.not_mpa_head.assign(probe.begin(), probe.end());
          s.not_mpa_off = s.buf_off;
          s.not_mpa_frame = s.buf_frame;
          s.state = State::infer;
          s.from_start = true;
          const std::vector<std::byte> had = std::move(s.buf);
          s.buf.clear();
          if (!had.empty()) route(dir, s.buf_off, {had.data(), had.size()}, s.buf_frame, s.buf_acked);
          if (s.state == State::infer) route(dir, offset, data, frame, acked);
        }
        return;
      }
      if (probe.size() < kKeySize) {  // a prefix of a key so far
        s.buf = std::move(probe);
        return;
      }
      // The whole key is here: keep the octets buffered and parse the frame.
      if (req && initiator_dir_ < 0) initiator_dir_ = dir;
      if (rep && initiator_dir_ < 0) initiator_dir_ = 1 - dir;
      if (Dir& o = d_[1 - dir]; (o.state == State::not_mpa || (o.state == State::infer && o.from_start)) && !o.not_mpa_head.empty()) {
        o.held.clear();
        o.held_bytes = 0;
        // The other side spoke first, and not MPA.
        const Bytes h{o.not_mpa_head.data(), o.not_mpa_head.size()};
        RrEvent e{1 - dir, from_initiator(1 - dir), nullptr, h, o.not_mpa_frame, o.not_mpa_frame, o.not_mpa_off};
        l_.on_rr(e);
        o.state = State::probe;  // so that stop reports it
        stop(1 - dir, o.not_mpa_off, o.not_mpa_frame,
             from_initiator(1 - dir) ? "initiator did not send an MPA Request" : "responder did not send an MPA Reply");
      }
      s.state = State::rr;
      // Fall through with the probe octets still in s.buf (they are the frame's start).
      s.buf.assign(probe.begin(), probe.end() - static_cast<std::ptrdiff_t>(take));
    }

    if (!s.buf.empty()) {
      std::size_t need = rr_size({s.buf.data(), s.buf.size()});
      if (need == 0) {
        const std::size_t take = std::min(kMpaRr.size - s.buf.size(), data.size());
        s.buf.insert(s.buf.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
        data = data.subspan(take);
        offset += take;
        need = rr_size({s.buf.data(), s.buf.size()});
        if (need == 0) return;
      }
      const std::size_t take = std::min(need - s.buf.size(), data.size());
      s.buf.insert(s.buf.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
      data = data.subspan(take);
      offset += take;
      if (s.buf.size() < need) return;
      s.unit.swap(s.buf);  // s.buf takes the empty vector and its capacity
      on_rr(dir, {s.unit.data(), s.unit.size()}, s.buf_off, s.buf_frame, frame, s.buf_acked);
      s.unit.clear();
      continue;
    }

    const std::size_t n = rr_size(data);
    if (n != 0 && n <= data.size()) {
      on_rr(dir, data.first(n), offset, frame, frame, acked);
      data = data.subspan(n);
      offset += n;
      continue;
    }
    s.buf.assign(data.begin(), data.end());
    s.buf_off = offset;
    s.buf_frame = frame;
    s.buf_acked = acked;
    return;
  }
}

void MpaConnection::on_rr(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame,
                          std::uint64_t acked) {
  Dir& s = d_[dir];
  auto f = decode_mpa_rr(b);
  if (!f) {
    stop(dir, offset, first_frame, f.error().message());
    return;
  }
  const bool init = from_initiator(dir);
  RrEvent e{dir, init, &*f, b.first(std::min<std::size_t>(b.size(), kMpaRr.size)), first_frame, last_frame, offset, acked};
  s.judged += b.size();
  l_.on_rr(e);
  const Header& h = f->hdr;
  MpaSide& side = init ? neg_.req : neg_.rep;
  side.seen = true;
  (init ? neg_.request_end : neg_.reply_end) = offset + b.size();
  side.rev = static_cast<std::uint8_t>(h.get(MpaRr::rev));
  side.crc = h.get(MpaRr::c);
  side.markers = h.get(MpaRr::m);
  side.reject = !init && h.get(MpaRr::r);
  if (f->v2) {
    side.ird = static_cast<std::uint16_t>(f->v2->get(MpaV2::ird));
    side.ord = static_cast<std::uint16_t>(f->v2->get(MpaV2::ord));
    side.p2p = f->v2->get(MpaV2::p2p);
  }
  const bool expected_kind = f->kind() == (init ? MpaFrameKind::request : MpaFrameKind::reply);
  if (!expected_kind) {
    stop(dir, offset + b.size(), last_frame, init ? "initiator's first frame is not an MPA Request" : "responder's first frame is not an MPA Reply");
    return;
  }
  s.state = State::wait_negotiation;
  s.next_off = offset + b.size();  // where this direction's FPDUs (and markers) start
  if (neg_.complete()) negotiation_done(last_frame);
  else if (peer_frame_lost(dir)) without_peer_frame(dir);
}

void MpaConnection::negotiation_done(std::uint64_t frame) {
  neg_.frame = frame;
  neg_.enhanced = neg_.req.rev == 2 && neg_.rep.rev == 2 && neg_.req.ird && neg_.rep.ird;
  for (int dir = 0; dir < 2; ++dir) {
    Dir& s = d_[dir];
    if (s.state != State::wait_negotiation) continue;
    std::vector<Held> held;
    held.swap(s.held);
    s.held_bytes = 0;
    const bool markers = from_initiator(dir) ? neg_.markers_from_initiator() : neg_.markers_from_responder();
    if (neg_.rejected()) {
      s.state = State::rejected;
      if (!held.empty()) route(dir, held[0].offset, {held[0].bytes.data(), held[0].bytes.size()}, held[0].frame, held[0].acked);
      continue;
    }
    start_fpdus(dir, s.next_off, markers);
    // From the first FPDU of a direction after the exchange: markers there
    // would sit at known places, so a direction without them is looked at
    // for stray ones, and one with them for none at all.
    if (!markers && !partial(dir)) s.probe = Probe::collecting;
    if (markers && !partial(dir)) s.state = State::check_markers;
    for (auto& h : held) route(dir, h.offset, {h.bytes.data(), h.bytes.size()}, h.frame, h.acked);
  }
}

void MpaConnection::gap(int dir, std::uint64_t offset, std::uint64_t len, std::uint64_t frame) {
  Dir& s = d_[dir];
  s.missing += len;
  if (s.probe == Probe::collecting) s.probe = Probe::off;  // the octets looked at must be whole
  if (s.state == State::not_mpa || s.state == State::stopped) return;
  if (s.state == State::probe && s.buf.empty() && offset == 0) {
    s.state = State::not_mpa;  // never saw the start of this direction
    s.gap_seen = true;
    return;
  }
  if (s.state == State::infer && s.resync) {
    // Another gap before framing was found again: look from after this one.
    s.held.clear();
    s.held_bytes = 0;
    return;
  }
  if (s.state == State::check_markers) check_markers(dir, true);  // decided on what came before the gap
  if (s.state == State::infer) {
    infer(dir, frame, true);  // judge what came before the gap on its own
    if (s.state != State::fpdu) {
      // No framing found before the gap (too few octets to prove one, say):
      // the direction is not whole, and what the other answers may have
      // been in it.
      s.why.push_back(fmt::format("from offset {}: a capture gap of {} octets before the FPDUs' framing was found", offset, len));
      s.gap_seen = true;
      s.state = State::not_mpa;
      return;
    }
  }
  if (s.state == State::seek_marker) {
    // Another gap before a marker was found: look from after this one.
    s.held.clear();
    s.held_bytes = 0;
    s.gap_end = offset + len;
    return;
  }
  s.held.clear();
  // The FPDUs after the gap are found again: with markers, by the first
  // marker whose pointer names an FPDU that begins after the gap (RFC 5044
  // §5: markers exist to find FPDU boundaries); without, as at a mid-stream
  // start.
  const bool again = s.state == State::fpdu;
  const bool by_marker = s.markers;
  stop(dir, offset, frame, fmt::format("capture gap of {} octets at stream offset {}", len, offset), true);
  if (again) {
    s.state = by_marker ? State::seek_marker : State::infer;
    s.resync = true;
    s.gap_end = offset + len;
    s.held_bytes = 0;
    ++s.fpdus;  // FPDU numbers skip one where the gap hides FPDUs, so that cases following a sequence start again
  }
}

bool MpaConnection::peer_frame_lost(int dir) const {
  // The other direction began mid-stream (no key where its start would be)
  // and its frame was never seen: it cannot come any more.
  const Dir& o = d_[1 - dir];
  const MpaSide& other = from_initiator(dir) ? neg_.rep : neg_.req;
  return !other.seen && !info_.start_known[1 - dir] && o.state != State::probe && o.state != State::rr &&
         o.state != State::wait_negotiation;
}

void MpaConnection::without_peer_frame(int dir) {
  Dir& s = d_[dir];
  if (s.state != State::wait_negotiation || neg_.complete()) return;
  s.state = State::infer;
  s.after_own_frame = true;
  s.why.push_back(fmt::format("from offset {}: the other side's MPA frame is not in the capture (its direction starts "
                              "mid-stream); FPDUs framed from the end of this side's frame, CRC and markers found from them",
                              s.next_off));
  if (s.held.empty()) return;
  std::vector<Held> held;
  held.swap(s.held);
  s.held_bytes = 0;
  for (auto& h : held) route(dir, h.offset, {h.bytes.data(), h.bytes.size()}, h.frame, h.acked);
}

void MpaConnection::close(std::uint64_t frame) {
  for (int dir = 0; dir < 2; ++dir)
    if (peer_frame_lost(dir)) without_peer_frame(dir);
  for (int dir = 0; dir < 2; ++dir) {
    if (d_[dir].state == State::check_markers) check_markers(dir, true);
    if (d_[dir].state == State::infer) infer(dir, frame, true);
    if (d_[dir].state == State::seek_marker) seek_marker(dir, frame, true);
  }
  for (int dir = 0; dir < 2; ++dir) {
    Dir& s = d_[dir];
    // A frame begun and not finished: where, how much of it is here, and its size if known.
    std::optional<std::uint64_t> at;
    std::size_t have = 0, need = 0;
    if (s.state == State::rr && !s.buf.empty()) {
      at = s.buf_off;
      have = s.buf.size();
      need = rr_size({s.buf.data(), s.buf.size()});
    } else if (const auto p = s.framer.partial(); s.state == State::fpdu && p && p->have) {
      at = s.base + p->start;  // (markers alone, with no FPDU octet after them, are no FPDU)
      have = p->have;
      need = p->need;
    }
    if (at) {
      // With the FIN in the capture and no gap before it (the reassembler
      // reports a gap for any octet the FIN proves missing), the sender
      // itself stopped there.
      const bool fin = info_.fin[dir] && !s.gap_seen && s.state == State::fpdu;
      const std::string where = need ? fmt::format("inside a frame: {} of {} octets present", have, need)
                                     : fmt::format("inside a frame header: {} octets present", have);
      if (s.state == State::fpdu && s.last_damaged)
        // Framed by the length field after an FPDU whose CRC failed: that
        // length may be the damage, so the frame's size proves nothing.
        stop(dir, *at, frame, "stream ends " + where + ", framed after an FPDU whose CRC failed (its length field may be the damage)",
             false, false, false, s.damaged);
      else
        stop(dir, *at, frame, fin ? "the sender's FIN ends its stream " + where : "stream ends " + where, !fin, fin);
    } else if (s.state == State::wait_negotiation && !s.held.empty()) {
      // The other side sent nothing at all (no malformed frame, no gap): it never answered.
      if (!d_[1 - dir].sent_any && !d_[1 - dir].gap_seen) {
        Unanswered u{s.held[0].offset, s.held[0].frame, 0, info_.acked_unseen[1 - dir]};
        for (const auto& h : s.held) u.octets += h.bytes.size();
        s.unanswered = u;
      }
      stop(dir, s.held[0].offset, s.held[0].frame, "the other side's MPA frame is not in the capture", true);
    }
  }
}

}  // namespace rdmaconf::conformance::iwarp

// RFC 5044 §4 (FPDU format, markers) and §5 (CRC): what every FPDU carries.
#include <tuple>

#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"
#include "protocols/net/headers.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

void inconclusive_if_crc(CaseCtx& ctx, const IwarpConn& c, const iwarp::StopEvent& e) {
  if (c.mpa->negotiated().crc()) inconclusive_on_gap(ctx, e);
}
void inconclusive_if_markers(CaseCtx& ctx, const IwarpConn& c, const iwarp::StopEvent& e) {
  if (c.mpa->markers(e.dir)) inconclusive_on_gap(ctx, e);
}
// A CRC field of zero where CRCs are in use is a sender that does not compute
// them (iwarp.mpa.crc.used); any other mismatch is a wrong CRC (iwarp.mpa.fpdu.crc).
bool crc_not_computed(const iwarp::FpduEvent& e) { return e.fpdu->crc_wire == 0 && e.crc_computed != 0; }

// Judges markers; `check` returns {ok, expected, actual}.
template <class Check>
void judge_markers(CaseCtx& ctx, int dir, const std::vector<iwarp::MarkerSeen>& markers, Check check, std::string_view where) {
  for (const auto& m : markers) {
    auto [ok, expected, actual] = check(m);
    if (ok) {
      ctx.tally.pass();
      continue;
    }
    Evidence ev;
    ev.frames = {m.frame};
    ev.stream_offset = m.offset;
    ev.side = ctx.side(dir);
    ev.expected = std::move(expected);
    ev.actual = std::move(actual);
    ev.detail = std::string(where);
    fail_shown(ctx, dir, std::move(ev));
  }
}
template <class Check>
void judge_markers(CaseCtx& ctx, const iwarp::FpduEvent& e, Check check) {
  if (e.markers.empty()) return;
  judge_markers(ctx, e.dir, e.markers, check, fmt::format("marker in FPDU #{} (which starts at stream offset {})", e.index, e.offset));
}
auto fpduptr_check(const iwarp::MarkerSeen& m) {
  return std::tuple{m.fpduptr == m.expected_ptr, fmt::format("FPDU pointer {}", m.expected_ptr), fmt::format("{}", m.fpduptr)};
}
auto reserved_check(const iwarp::MarkerSeen& m) {
  return std::tuple{m.rsvd == 0, std::string("0x0000"), fmt::format("0x{:04x}", m.rsvd)};
}
// The markers where framing stopped (MpaConnection::misplaced_markers).
template <class Check>
void judge_misplaced_markers(CaseCtx& ctx, const IwarpConn& c, Check check) {
  for (int d = 0; d < 2; ++d)
    judge_markers(ctx, d, c.mpa->misplaced_markers(d), check,
                  "a marker of the FPDU where framing stopped: it does not point at the FPDU's start, and the FPDU, the markers "
                  "stepped over, is broken, so the markers are not where they belong (left out or misplaced)");
}

// A direction that sends no markers though its peer asked for them
// (MpaConnection::markers_absent): the marker rule broken where its first
// marker belongs; `what` says what the octets there read as, for the case.
template <class What>
void fail_absent_markers(CaseCtx& ctx, const IwarpConn& c, What what) {
  for (int d = 0; d < 2; ++d) {
    const auto& a = c.mpa->markers_absent(d);
    if (!a) continue;
    Evidence ev;
    ev.frames = {a->frame};
    ev.stream_offset = a->offset;
    ev.side = ctx.side(d);
    auto [expected, actual] = what(*a);
    ev.expected = std::move(expected);
    ev.actual = std::move(actual);
    ev.detail = fmt::format("no markers in this direction, though the peer set M: the octets where the first marker belongs are "
                            "its first FPDU's, which read without markers is whole with a valid DDP header{}; its FPDUs are "
                            "judged as sent, without markers",
                            a->crc ? " and its CRC right" : "");
    fail_shown(ctx, d, std::move(ev));
  }
}

// A case on one field of every marker: judged per FPDU, and at close on the
// markers where framing stopped and on a direction that left them out.
template <class Check, class What>
void add_marker_case(IwarpCases& k, const CaseText& text, Check check, What absent) {
  add(k, text)
      .fpdu([check](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) { judge_markers(ctx, e, check); })
      .close([check, absent](CaseCtx& ctx, const IwarpConn& c) {
        judge_misplaced_markers(ctx, c, check);
        fail_absent_markers(ctx, c, absent);
      })
      .stop(inconclusive_if_markers);
}

// Which directions' framing stopped before the connection closed.
// FPDUs that span captured segments, judged when the sender's segment size is known.
struct Spanning : CaseState {
  struct Fpdu {
    std::uint64_t first_frame, last_frame, offset, wire_size, first_segment;
  };
  std::vector<Fpdu> v[2];
  std::uint64_t dropped[2] = {};
};
constexpr std::size_t kMaxSpanning = 1 << 16;
// Whether a segment of `size` octets is full for a sender whose segments
// hold `fits` octets: as large, or, when the peer's MSS is what limits them,
// short of it by no more than TCP options can take (SACK blocks), and
// larger than half, which neither part of a segment cut in two is.
bool full(std::uint64_t size, std::uint64_t fits, std::uint64_t mss) {
  namespace net = protocols::net;
  if (size == fits) return true;
  return fits + net::kTcpOptionsMax >= mss && size < fits && size + net::kTcpOptionsMax >= fits && 2 * size > fits;
}

struct Ended : CaseState {
  bool stopped[2] = {false, false};
};

}  // namespace

void add_iwarp_mpa_fpdu_cases(IwarpCases& k) {
  add(k, {"iwarp.mpa.fpdu.crc", "RFC 5044", "§4.1, §4.3, §4.4, §7.1.1; RFC 5041 §3", Level::must,
          "When CRCs are in use on the connection (either side set C), every FPDU carries the CRC32c of its "
          "length field, ULPDU, pad and markers."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        if (!e.crc_in_use || crc_not_computed(e)) return;
        if (e.fpdu->crc_wire == e.crc_computed) return ctx.tally.pass();
        const auto detail = fmt::format("FPDU #{} of this direction, ULPDU length {}", e.index, e.fpdu->ulpdu_len);
        if (!c.mpa->markers(e.dir) && !c.mpa->markers_excluded(e.dir)) {
          // Framed mid-stream from too little to exclude markers, which the CRC would cover.
          Evidence ev = evidence_at(e, ctx.side(e.dir));
          ev.expected = fmt::format("0x{:08x}", e.crc_computed);
          ev.actual = fmt::format("0x{:08x}", e.fpdu->crc_wire);
          ev.detail = detail + "; the capture starts mid-stream, and too little of it checks to exclude MPA markers, which the "
                               "CRC would cover";
          return ctx.tally.inconclusive(std::move(ev));
        }
        fail_at(ctx, e, fmt::format("0x{:08x}", e.crc_computed), fmt::format("0x{:08x}", e.fpdu->crc_wire), detail);
      })
      .stop(inconclusive_if_crc);

  add(k, {"iwarp.mpa.crc.used", "RFC 5044", "§4.4, §7.1.1, §C.1; RFC 5041 §3", Level::must,
          "CRCs are used in both directions when either side asked for them: a sender whose peer set C computes "
          "the CRC of each FPDU rather than leaving the field zero."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        if (!e.crc_in_use) return;
        const auto& n = c.mpa->negotiated();
        RDMACONF_JUDGE(ctx, e, !crc_not_computed(e), "a computed CRC", "CRC field 0",
              n.inferred ? std::string("CRC use inferred from the traffic")
                         : fmt::format("initiator C={}, responder C={}", n.req.crc, n.rep.crc));
      })
      .stop(inconclusive_if_crc);

  add(k, {"iwarp.mpa.fpdu.pad", "RFC 5044", "§4.1", Level::must,
          "The pad after the ULPDU (0 to 3 octets, so that length field plus ULPDU end on a 4-octet boundary) "
          "is sent as zeros."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        if (e.fpdu->pad == 0) return;
        const protocols::Bytes pad{e.fpdu->ulpdu.data() + e.fpdu->ulpdu.size(), e.fpdu->pad};
        unsigned v = 0;
        for (auto b : pad) v = (v << 8) | static_cast<unsigned>(b);
        RDMACONF_JUDGE(ctx, e, v == 0, "zero pad", fmt::format("pad 0x{:0{}x}", v, 2 * pad.size()),
              fmt::format("ULPDU length {}, {} pad octets", e.fpdu->ulpdu_len, e.fpdu->pad));
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });

  add(k, {"iwarp.mpa.fpdu.whole", "RFC 5044", "§4.1, §4.4; RFC 5040 §6.1", Level::must,
          "Once FPDUs flow, a sender's stream is a sequence of whole FPDUs: when it closes its half of the "
          "connection (FIN), its last FPDU is complete."})
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) {
        ctx.state<Ended>().stopped[e.dir] = true;
        if (e.cut_by_fin) fail_at_stop(ctx, e, "a whole FPDU before the FIN", e.reason);
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        // A direction that sent FPDUs and ended with its FIN at an FPDU boundary.
        for (int d = 0; d < 2; ++d)
          if (c.info->fin[d] && c.mpa->fpdus(d) && !ctx.state<Ended>().stopped[d]) ctx.tally.pass();
      });

  add(k, {"iwarp.mpa.fpdu.ulpdu_limit", "RFC 5044", "§3; RFC 5041 §5.2", Level::must,
          "No ULPDU is longer than 64768 octets, the largest MULPDU there can be."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        RDMACONF_JUDGE(ctx, e, e.fpdu->ulpdu_len <= kMaxUlpdu, fmt::format("ULPDU length at most {}", kMaxUlpdu),
                       fmt::format("ULPDU length {}", e.fpdu->ulpdu_len));
      });

  add(k, {"iwarp.mpa.fpdu.ulpdu_max", "RFC 5044", "§3, §5.1", Level::should,
          "A sender sizes FPDUs to fit one TCP segment: an FPDU, markers included, is no larger than the "
          "maximum segment size its peer advertised in its SYN."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        const std::uint16_t mss = c.info->mss[1 - e.dir];  // advertised by the receiver
        if (mss == 0) return;
        RDMACONF_JUDGE(ctx, e, e.wire_size <= mss, fmt::format("at most {} octets (peer's MSS)", mss),
              fmt::format("{} octets", e.wire_size), fmt::format("ULPDU length {}", e.fpdu->ulpdu_len));
      });

  // Where the capture is taken, offloads and middleboxes act: receive
  // coalescing merges segments, segmentation offload and middleboxes split
  // them. So neither a captured segment's size nor every captured boundary
  // is the sender's. What stands: a sender that ignores FPDU boundaries fills
  // its segments to its segment size and lets an FPDU that would fit run on
  // into the next one. Its segment size is taken as the largest it sent
  // more than once (one merged segment cannot fake it), and no more than
  // the peer's MSS; it is known only when the stream is over, so spanning
  // FPDUs are judged at close. A spanning FPDU whose first segment is short
  // of that size is what a split leaves, and proves nothing; a segment larger
  // than the peer's MSS means merged or not yet split segments, whose sizes
  // say nothing of the wire's.
  add(k, {"iwarp.mpa.fpdu.alignment", "RFC 5044", "§5.1", Level::should,
          "A sender keeps FPDUs aligned with TCP segments: an FPDU that fits in the segments its sender uses "
          "travels in one segment, never split across two."})
      .fpdu([](CaseCtx& ctx, const IwarpConn& c, const iwarp::FpduEvent& e) {
        if (c.info->mss[1 - e.dir] == 0) return;  // the segment size the sender may use is unknown
        if (e.first_frame == e.last_frame) return ctx.tally.pass();
        auto& spans = ctx.state<Spanning>().v[e.dir];
        if (spans.size() < kMaxSpanning) spans.push_back({e.first_frame, e.last_frame, e.offset, e.wire_size, e.first_segment});
        else ++ctx.state<Spanning>().dropped[e.dir];
      })
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        auto& st = ctx.state<Spanning>();
        for (int d = 0; d < 2; ++d) {
          const std::uint64_t mss = c.info->mss[1 - d], largest = c.mpa->max_segment(d);
          const std::uint64_t fits = std::min(mss, c.mpa->segment_size(d));
          for (const auto& f : st.v[d]) {
            Evidence ev;
            ev.frames = {f.first_frame, f.last_frame};
            ev.stream_offset = f.offset;
            ev.side = ctx.side(d);
            if (f.wire_size > fits && fits && largest <= mss) {
              ctx.tally.pass();
            } else if (fits == 0) {
              ev.detail = fmt::format("the FPDU ({} octets) spans two captured segments, but this sender sent no two segments "
                                      "of the same size, so the segment size it uses is unknown",
                                      f.wire_size);
              ctx.tally.inconclusive(std::move(ev));
            } else if (largest > mss) {
              ev.detail = fmt::format("the FPDU ({} octets) spans two captured segments, but this sender's segments of up to {} "
                                      "octets exceed the peer's MSS of {}: the capture was taken where segments are merged or "
                                      "not yet split, so the segment size on the wire is unknown",
                                      f.wire_size, largest, mss);
              ctx.tally.inconclusive(std::move(ev));
            } else if (!full(f.first_segment, fits, mss)) {
              ev.detail = fmt::format("the FPDU ({} octets) spans two captured segments, but the one it begins in holds {} "
                                      "octets where this sender's segments hold {}: a segment of another size is what a split "
                                      "or a merge between the sender and the capture point leaves (offload, a middlebox), so "
                                      "the capture does not show the sender's own segment boundary",
                                      f.wire_size, f.first_segment, fits);
              ctx.tally.inconclusive(std::move(ev));
            } else {
              ev.expected = fmt::format("one TCP segment (the FPDU's {} octets fit in the {}-octet segments its sender uses)",
                                        f.wire_size, fits);
              ev.actual = fmt::format("split between frames {} and {}, the first of them full", f.first_frame, f.last_frame);
              ev.detail = fmt::format("peer's MSS {}; this sender's segment size {} (the largest it sent more than once)", mss, fits);
              ctx.tally.fail(std::move(ev));
            }
          }
          if (st.dropped[d]) {
            Evidence ev;
            ev.side = ctx.side(d);
            ev.detail = fmt::format("{} more FPDUs spanning segments past the first {} were not kept for judging", st.dropped[d],
                                    kMaxSpanning);
            ctx.tally.inconclusive(std::move(ev));
          }
        }
      });

  add_marker_case(k,
                  {"iwarp.mpa.marker.fpduptr", "RFC 5044", "§4.2, §4.3, §7.1.1", Level::must,
                   "Where markers are in use, one sits at every 512th octet of the stream counted from the first FPDU, "
                   "and its FPDU pointer is the distance back to the ULPDU Length field of the FPDU it sits in (0 when it comes right before that field, between FPDUs)."},
                  fpduptr_check, [](const iwarp::MpaConnection::MarkersAbsent& a) {
                    return std::pair{std::string("a marker with FPDU pointer 0 (the first FPDU begins here)"),
                                     fmt::format("no marker (the octets there read as pointer {})", a.fpduptr)};
                  });

  add(k, {"iwarp.mpa.marker.unrequested", "RFC 5044", "§7.1.1", Level::must,
          "An endpoint whose peer sent M = 0 adds no markers: a direction without markers whose first FPDUs fail "
          "(CRC or DDP header) where a marker sits at every 512th octet from its first FPDU added them."})
      .close([](CaseCtx& ctx, const IwarpConn& c) {
        for (int d = 0; d < 2; ++d) {
          if (c.mpa->markers(d) || !c.mpa->stray_markers_judged(d)) continue;
          const auto& m = c.mpa->stray_markers(d);
          if (!m) {
            ctx.tally.pass();
            continue;
          }
          Evidence ev;
          ev.frames = {m->frame};
          ev.stream_offset = m->offset;
          ev.side = ctx.side(d);
          ev.expected = "no markers (the peer's M = 0)";
          ev.actual = fmt::format("a marker at every 512th octet from stream offset {} ({} in a row)", m->offset, m->count);
          ev.detail = "the FPDUs read without markers fail their CRC or DDP header from the first marker on";
          fail_shown(ctx, d, std::move(ev));
        }
      });

  add_marker_case(k,
                  {"iwarp.mpa.marker.reserved", "RFC 5044", "§4.2", Level::must,
                   "The 16 reserved bits at the front of every marker are sent as zero."},
                  reserved_check, [](const iwarp::MpaConnection::MarkersAbsent& a) {
                    return std::pair{std::string("a marker whose reserved bits are 0x0000"),
                                     fmt::format("no marker (the octets there read as reserved bits 0x{:04x})", a.rsvd)};
                  });
}

}  // namespace rdmaconf::conformance

// RFC 5041 (DDP) §4 header format, §5 data transfer (untagged queues, MSN and
// MO; tagged offsets), as RDMAP (RFC 5040) uses it.
#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "conformance/iwarp/case.hpp"
#include "protocols/iwarp/rdmap.hpp"

namespace rdmaconf::conformance {

using namespace protocols::iwarp;

namespace {

// Untagged message state per direction and queue.
struct Queues : CaseState {
  struct Q {
    bool synced = false;        // false until the first segment seen in sequence
    std::uint32_t msn = 0;      // MSN of the current (or last) message; 0 before the first
    bool open = false;          // its last segment (L) not seen yet
    std::uint64_t next_mo = 0;  // MO the next segment of the open message must carry
  };
  std::map<std::uint32_t, Q> q[2];
  std::uint64_t next_index[2] = {0, 0};  // FPDU number expected next in each direction
  // A direction lost track of its messages (an FPDU that was no decodable
  // segment): what a case keeps of open messages there is forgotten.
  virtual void lost(int /*dir*/) {}
};

// The RsvdULP octet of a segment (RFC 5041 §4.2, §4.3): RDMAP's control
// field, its version, reserved bits and opcode (RFC 5040 §4.1).
std::uint64_t rsvd_ulp_octet(const Seg& g) {
  return (g.get(DdpTagged::rv) << 6) | (g.get(DdpTagged::rdmap_rsvd) << 4) | g.opcode();
}

// Tagged message state per direction.
struct Tagged : CaseState {
  struct T {
    bool open = false;
    std::uint32_t stag = 0;
    std::uint64_t next_to = 0;
    std::uint64_t first_to = 0;  // the tagged offset of the message's first segment
    std::uint64_t rsvd_ulp = 0;  // the RsvdULP octet of the message's first segment
  };
  T t[2];
  std::uint64_t next_index[2] = {0, 0};  // FPDU number expected next in each direction
};

// The RsvdULP of each untagged queue's open message's first segment (the
// octet and the 32-bit word after it), and each direction's tagged message.
struct RsvdUlp : Queues {
  std::map<std::uint32_t, std::uint64_t> first[2];
  Tagged tagged;
  void lost(int dir) override { first[dir].clear(); }
};

// The offsets each segment of a queue's open message covered, for judging
// the message as a whole when its last segment arrives (RFC 5041 lets a
// sender send a message's segments out of order: a SHOULD, §5.3).
struct Tiles : Queues {
  std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> open[2];
  void lost(int dir) override { open[dir].clear(); }
};

// A message whose last segment has arrived, its segments' [MO, end) in the
// order they came: a problem with how they cover the message (empty: none),
// and whether they came in increasing, contiguous order.
struct Coverage {
  std::string problem;
  bool in_order = true;
};
// RFC 5041 §5.2: a ULP message is shorter than 2^32 octets.
constexpr std::uint64_t kMaxMessage = (std::uint64_t{1} << 32) - 1;

Coverage cover(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& arrived) {
  Coverage c;
  for (const auto& [from, to] : arrived)
    if (to > kMaxMessage) {
      c.problem = fmt::format("the segment at MO {} ends at octet {} of the message: a message of 2^32 octets or more", from, to);
      return c;
    }
  std::uint64_t next = 0;
  for (const auto& [from, to] : arrived) {
    c.in_order &= from == next;
    next = to;
  }
  auto v = arrived;
  const std::uint64_t last_mo = v.back().first;
  std::sort(v.begin(), v.end());
  std::uint64_t at = 0;
  for (const auto& [from, to] : v) {
    if (from != at) {
      c.problem = from > at ? fmt::format("octets {} to {} of the message in no segment", at, from)
                            : fmt::format("two segments cover octet {}", from);
      return c;
    }
    at = to;
  }
  if (last_mo != v.back().first && v.back().second != v.back().first)
    c.problem = fmt::format("the last segment has MO {}, another MO {}", last_mo, v.back().first);
  return c;
}

// Adds a segment to its queue's open message; the whole message's segments
// once its last one has come, or nothing. A continuation whose message's
// start this case did not see is not judged.
std::optional<std::vector<std::pair<std::uint64_t, std::uint64_t>>> add_tile(Tiles& st, const iwarp::FpduEvent& e, const Seg& g,
                                                                             const Queues::Q& q) {
  const bool continuation = q.open && g.msn() == q.msn;
  auto& tiles = st.open[e.dir];
  if (!continuation) tiles[g.qn()].clear();
  const auto it = tiles.find(g.qn());
  if (continuation && (it == tiles.end() || it->second.empty())) return std::nullopt;
  auto& v = tiles[g.qn()];
  v.emplace_back(g.mo(), g.mo() + g.ddp_payload(e));
  if (!g.last()) return std::nullopt;
  auto out = std::move(v);
  tiles.erase(g.qn());
  return out;
}

// Adds a segment to its queue's open message; once its last one has come,
// the whole message's segments and how they cover it, or nothing.
struct Message {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> segments;
  Coverage coverage;
};
std::optional<Message> complete_message(Tiles& st, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q) {
  auto v = add_tile(st, e, g, q);
  if (!v) return std::nullopt;
  Coverage c = cover(*v);
  return Message{std::move(*v), std::move(c)};
}

// Runs `f(queue state, segment)` for an untagged segment whose queue's
// messages can be followed, then updates the queue.
template <class State, class F>
void untagged_step(CaseCtx& ctx, const IwarpConn& k, const iwarp::FpduEvent& e, const Seg& g, F f) {
    auto& st = ctx.state<State>();
    // An FPDU that was not a decodable segment hides a message: judge again
    // from the next segment of each queue. The same when framing was found mid-stream.
    if (e.index != st.next_index[e.dir]) {
      for (auto& [qn, q] : st.q[e.dir]) q.synced = false;
      st.lost(e.dir);
    }
    st.next_index[e.dir] = e.index + 1;
    if (g.tagged() || g.qn() > kMaxRdmapQueue) return;  // a queue RDMAP does not use: iwarp.ddp.qn's finding
    auto& q = st.q[e.dir][g.qn()];
    // A queue's first message is judged only where the direction is whole from its start.
    if (q.synced || (q.msn == 0 && !k.mpa->partial(e.dir))) f(ctx, e, g, q, st);
    q.synced = true;
    q.next_mo = g.mo() + g.ddp_payload(e);  // follows what was sent, so one error is reported once
    q.msn = g.msn();
    q.open = !g.last();
}

// Runs `f(queue state, segment)` for each untagged segment, then updates the queue.
template <class State = Queues, class F>
void each_untagged(BuiltIwarpCase& c, F f) {
  on_segments(c, [f](CaseCtx& ctx, const IwarpConn& k, const iwarp::FpduEvent& e, const Seg& g) { untagged_step<State>(ctx, k, e, g, f); });
}

// Runs `f(segment, message state)` for a tagged segment that continues its
// direction's open tagged message, then updates the state.
template <class F>
void tagged_step(Tagged& st, const iwarp::FpduEvent& e, const Seg& g, F f) {
  auto& t = st.t[e.dir];
  // A segment not seen (an FPDU that was no decodable segment, or not judged) may have been this message's.
  if (e.index != st.next_index[e.dir]) t.open = false;
  st.next_index[e.dir] = e.index + 1;
  if (!g.tagged()) return;
  if (t.open) {
    f(g, t);
  } else {
    t.rsvd_ulp = rsvd_ulp_octet(g);
    t.first_to = g.to();
  }
  t.open = !g.last();
  t.stag = g.stag();
  t.next_to = g.to() + g.ddp_payload(e);
}

template <class F>
void each_tagged(BuiltIwarpCase& c, F f) {
  on_segments(c, [f](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
    tagged_step(ctx.state<Tagged>(), e, g, [&](const Seg& s, const Tagged::T& t) { f(ctx, e, s, t); });
  });
}

}  // namespace

void add_iwarp_ddp_cases(IwarpCases& k) {
  add(k, {"iwarp.ddp.segment.header", "RFC 5041", "§4.2, §4.3, §4.4; RFC 5040 §3.1, §4.2, §6.1; RFC 5044 §3, §7.1.1", Level::must,
          "Every ULPDU is a DDP segment that holds its whole DDP header (14 octets tagged, 18 untagged) and the "
          "RDMAP header its opcode calls for (Read Request, Terminate, Immediate, Atomic)."})
      .fpdu([](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e) {
        RDMACONF_JUDGE(ctx, e, e.ddp->ok(), "a complete DDP/RDMAP header", e.ddp->ok() ? "" : e.ddp->error().message(),
              fmt::format("ULPDU length {}", e.fpdu->ulpdu_len));
      })
      .stop([](CaseCtx& ctx, const IwarpConn&, const iwarp::StopEvent& e) { inconclusive_on_gap(ctx, e); });

  on_segments(add(k, {"iwarp.ddp.version", "RFC 5041", "§4.1, §5.2; RFC 5044 §C.1", Level::must,
                      "Every DDP segment carries DDP version 1 (DV = 01b)."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, g.get(DdpTagged::dv) == 1, "DV 1", fmt::format("DV {}", g.get(DdpTagged::dv)));
              });

  on_segments(add(k, {"iwarp.ddp.reserved", "RFC 5041", "§4.1, §5.2", Level::must,
                      "The four reserved bits of the DDP control field are sent as zero."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                RDMACONF_JUDGE(ctx, e, g.get(DdpTagged::rsvd) == 0, "0", fmt::format("0x{:x}", g.get(DdpTagged::rsvd)));
              });

  on_segments(add(k, {"iwarp.ddp.qn", "RFC 5040", "§4.1; RFC 5041 §4.3", Level::must,
                      "An untagged segment names a queue RDMAP uses: 0 (Send family, Immediate Data), 1 (RDMA Read "
                      "Request, Atomic Request), 2 (Terminate) or 3 (Atomic Response, the one queue RFC 7306 adds)."}), kAnyUntagged,
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.tagged()) return;
                RDMACONF_JUDGE(ctx, e, g.qn() <= kMaxRdmapQueue, fmt::format("QN 0 to {}", kMaxRdmapQueue), fmt::format("QN {}", g.qn()),
                      fmt::format("opcode 0x{:x}, MSN {}", g.opcode(), g.msn()));
              });

  each_untagged(add(k, {"iwarp.ddp.msn", "RFC 5041", "§4.3, §5.3; RFC 5040 §5.2.1, §5.3, §5.4; RFC 7306 §5.2.1, §6.3", Level::must,
                        "On each untagged queue the first message has MSN 1 and each new message the next MSN; all "
                        "segments of one message carry the same MSN."}),
                [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q, Queues&) {
                  const std::uint32_t next = q.msn + 1;
                  // The same MSN again is a further segment of the open message; after that message's last
                  // segment, a segment with MO 0 and the same MSN is a new message that did not advance it.
                  const bool ok = g.msn() == next || (q.msn != 0 && g.msn() == q.msn && (q.open || g.mo() != 0));
                  RDMACONF_JUDGE(ctx, e, ok, q.msn == 0 ? std::string("MSN 1") : fmt::format("MSN {} or {}", q.msn, next),
                        fmt::format("MSN {}", g.msn()), fmt::format("queue {}", g.qn()));
                });

  // Judged per message when its last segment (L) arrives: the segments'
  // [MO, MO + payload) ranges tile the message from 0 with no gap or
  // overlap, and the last segment holds the highest MO (RFC 5041 §4.1).
  // Their order on the wire is iwarp.ddp.segment_order's (a SHOULD).
  each_untagged<Tiles>(add(k, {"iwarp.ddp.mo", "RFC 5041", "§4.1, §4.3, §5.2, §5.3", Level::must,
                               "The message offsets of an untagged message's segments give each segment's place in the "
                               "message: together they cover it from 0 with no gap or overlap, the last segment (L) "
                               "holding the highest, and the message is shorter than 2^32 octets."}),
                       [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q, Tiles& st) {
                         const auto m = complete_message(st, e, g, q);
                         if (!m) return;
                         RDMACONF_JUDGE(ctx, e, m->coverage.problem.empty(), "segments covering the message from MO 0, the last one highest",
                                        m->coverage.problem, fmt::format("queue {}, MSN {}, {} segments", g.qn(), g.msn(), m->segments.size()));
                       });

  each_untagged<Tiles>(add(k, {"iwarp.ddp.segment_order", "RFC 5041", "§5.3", Level::should,
                               "A message's segments go out in increasing message offset: the first with MO 0, each next "
                               "one where the previous one's payload ended (judged where they cover the message)."}),
                       [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q, Tiles& st) {
                         const auto m = complete_message(st, e, g, q);
                         if (!m || !m->coverage.problem.empty()) return;  // (a message that does not tile: iwarp.ddp.mo's finding)
                         std::string order;
                         for (const auto& [from, to] : m->segments) order += fmt::format("{}{}", order.empty() ? "MO " : ", ", from);
                         RDMACONF_JUDGE(ctx, e, m->coverage.in_order, "segments sent in increasing MO", order,
                                        fmt::format("queue {}, MSN {}", g.qn(), g.msn()));
                       });

  // A segment before a message's last carries less than 128 octets of
  // ULPDU: the sender's DDP did not fill it as far as MULPDU, which is never
  // below 128 (RFC 5044 §4.5): that SHOULD, or the MUST, is broken.
  on_segments(add(k, {"iwarp.ddp.segment_size", "RFC 5044", "§4.5", Level::should,
                      "A message's segments before its last are as large as MULPDU allows, so never under 128 octets of "
                      "ULPDU (no MULPDU is smaller)."}),
              [](CaseCtx& ctx, const IwarpConn&, const iwarp::FpduEvent& e, const Seg& g) {
                if (g.last()) return;
                RDMACONF_JUDGE(ctx, e, e.fpdu->ulpdu_len >= 128, "a ULPDU of at least 128 octets (a segment that is not the last)",
                               fmt::format("ULPDU length {}", e.fpdu->ulpdu_len),
                               g.tagged() ? fmt::format("tagged, STag 0x{:x}", g.stag()) : fmt::format("queue {}, MSN {}", g.qn(), g.msn()));
              });

  // RsvdULP is the RDMAP control octet and, untagged, the Invalidate STag word.
  on_segments(add(k, {"iwarp.ddp.rsvdulp", "RFC 5041", "§4.2, §4.3", Level::must,
                      "Every segment of one message carries the same RsvdULP field: the same RDMAP control octet "
                      "(version, reserved bits, opcode) and, untagged, the same 32-bit word after it."}),
              [](CaseCtx& ctx, const IwarpConn& conn, const iwarp::FpduEvent& e, const Seg& g) {
                auto& st = ctx.state<RsvdUlp>();
                tagged_step(st.tagged, e, g, [&](const Seg& s, const Tagged::T& t) {
                  RDMACONF_JUDGE(ctx, e, rsvd_ulp_octet(s) == t.rsvd_ulp,
                                 fmt::format("RsvdULP 0x{:02x} as the message's first segment", t.rsvd_ulp),
                                 fmt::format("RsvdULP 0x{:02x}", rsvd_ulp_octet(s)), fmt::format("tagged, STag 0x{:x}", s.stag()));
                });
                untagged_step<RsvdUlp>(ctx, conn, e, g, [](CaseCtx& c, const iwarp::FpduEvent& ev, const Seg& s, const Queues::Q& q, RsvdUlp& u) {
                  auto& firsts = u.first[ev.dir];
                  const std::uint64_t v = (rsvd_ulp_octet(s) << 32) | s.get(DdpUntagged::rsvd_ulp);
                  if (!(q.open && s.msn() == q.msn)) {
                    firsts[s.qn()] = v;
                    return;
                  }
                  const auto it = firsts.find(s.qn());
                  if (it == firsts.end()) return;  // the message's first segment was not seen
                  const std::uint64_t first = it->second;
                  RDMACONF_JUDGE(c, ev, v == first, fmt::format("RsvdULP 0x{:02x}, word 0x{:x} as the first segment", first >> 32,
                                                               first & 0xffffffff),
                                 fmt::format("RsvdULP 0x{:02x}, word 0x{:x}", v >> 32, v & 0xffffffff),
                                 fmt::format("queue {}, MSN {}", s.qn(), s.msn()));
                });
              });

  each_untagged(add(k, {"iwarp.ddp.last", "RFC 5041", "§4.1, §4.3, §5.2; RFC 5040 §5.4", Level::must,
                        "The L bit is set on the last segment of a message and only there: a new message on a queue "
                        "starts only after the previous one's last segment, and nothing of a message follows it."}),
                [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Queues::Q& q, Queues&) {
                  if (q.msn == 0) return ctx.tally.pass();
                  if (q.open && g.msn() == q.msn + 1)
                    return fail_at(ctx, e, fmt::format("a segment of message {} with L set first", q.msn),
                                   fmt::format("message {} starts", g.msn()), fmt::format("queue {}", g.qn()));
                  if (!q.open && g.msn() == q.msn && g.mo() == 0) return;  // a new message reusing the MSN: iwarp.ddp.msn
                  if (!q.open && g.msn() == q.msn)
                    return fail_at(ctx, e, fmt::format("message {} ended (L set)", q.msn),
                                   "another segment of it", fmt::format("queue {}", g.qn()));
                  ctx.tally.pass();
                });

  each_tagged(add(k, {"iwarp.ddp.tagged.stag", "RFC 5041", "§4.2; RFC 5040 §5.1, §5.2.2", Level::must,
                      "All segments of one tagged message carry the same STag."}),
              [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Tagged::T& t) {
                RDMACONF_JUDGE(ctx, e, g.stag() == t.stag, fmt::format("STag 0x{:x}", t.stag), fmt::format("STag 0x{:x}", g.stag()));
              });

  each_tagged(add(k, {"iwarp.ddp.tagged.to", "RFC 5041", "§5.2, §5.3", Level::must,
                      "The segments of one tagged message are contiguous: each tagged offset is the previous one "
                      "plus the previous segment's payload; the message is shorter than 2^32 octets."}),
              [](CaseCtx& ctx, const iwarp::FpduEvent& e, const Seg& g, const Tagged::T& t) {
                if (g.stag() != t.stag) return;  // iwarp.ddp.tagged.stag's finding
                if (g.to() != t.next_to)
                  return RDMACONF_JUDGE(ctx, e, false, fmt::format("TO 0x{:x}", t.next_to), fmt::format("TO 0x{:x}", g.to()),
                                        fmt::format("STag 0x{:x}", g.stag()));
                const std::uint64_t length = g.to() + g.ddp_payload(e) - t.first_to;
                RDMACONF_JUDGE(ctx, e, length <= kMaxMessage, "a message shorter than 2^32 octets",
                               fmt::format("{} octets from TO 0x{:x}", length, t.first_to), fmt::format("STag 0x{:x}", g.stag()));
              });
}

}  // namespace rdmaconf::conformance

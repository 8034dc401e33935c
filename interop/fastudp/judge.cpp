// The Fast UDP plug-in judge: every ring entry, transmit, interrupt and
// memory write of the plug-in against what the script expected of each
// frame (script.hpp), case by case.
#include <algorithm>
#include <map>
#include <tuple>

#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "interop/fastudp/script.hpp"

namespace rdmaconf::interop::fastudp {

namespace conf = conformance;
using conf::Judge;

namespace {

// ---- The judge ----


std::string hex_prefix(Bytes b, std::size_t n = 8) {
  std::string s;
  for (std::size_t i = 0; i < std::min(n, b.size()); ++i) s += fmt::format("{:02x}", static_cast<unsigned>(b[i]));
  return s;
}

std::string kind_name(std::uint32_t k) {
  switch (k) {
    case FUDP_ENTRY_SPLINTER: return "splinter";
    case FUDP_ENTRY_WHOLE: return "whole";
    case FUDP_ENTRY_TX_DONE: return "tx-done";
    default: return fmt::format("kind {}", k);
  }
}

std::string flags_text(std::uint32_t f) {
  std::string t;
  if (f & FUDP_ENTRY_F_TRUNCATED) t += "TRUNCATED|";
  if (f & FUDP_ENTRY_F_CSUM_OK) t += "CSUM_OK|";
  if (f & FUDP_ENTRY_F_NO_CSUM) t += "NO_CSUM|";
  if (f & ~(FUDP_ENTRY_F_TRUNCATED | FUDP_ENTRY_F_CSUM_OK | FUDP_ENTRY_F_NO_CSUM)) t += fmt::format("0x{:x}|", f);
  return t.empty() ? "none" : t.substr(0, t.size() - 1);
}

std::string written_text_of(const std::map<std::uint64_t, std::uint64_t>& w) {
  std::string t;
  for (const auto& [c, n] : w) t += fmt::format("{}receive {} ({} octets)", t.empty() ? "" : ", ", c, n);
  return t.empty() ? std::string("no user buffer") : t;
}

}  // namespace

void judge(Script& s, Judge& j) {
  const eng::Harness& h = s.harness();
  const auto& sent = s.sent();
  const auto& entries = h.entries();
  const auto untaken = h.published_untaken();

  // Which frame each ring entry is for: the first frame not yet claimed whose
  // octets start with the entry's and whose length it names.
  std::vector<std::vector<std::size_t>> entries_of(sent.size());
  std::vector<std::optional<std::size_t>> frame_of(entries.size());
  std::vector<bool> claimed(sent.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto& en = entries[e];
    if (en.head.kind == FUDP_ENTRY_TX_DONE) continue;
    for (std::size_t i = 0; i < sent.size(); ++i) {
      const auto& f = sent[i].frame;
      if (claimed[i] || en.head.frame_len != f.size() || en.data.empty() || en.data.size() > f.size() ||
          !std::equal(en.data.begin(), en.data.end(), f.begin()))
        continue;
      claimed[i] = true;
      frame_of[e] = i;
      entries_of[i].push_back(e);
      break;
    }
    if (!frame_of[e])
      j.fail(en.head.kind == FUDP_ENTRY_SPLINTER ? cid::splinter : cid::slow_path, 0, "an entry for a frame that was sent",
             fmt::format("a {} entry (slot {}) whose {} octets ({}...) and frame length {} match no frame sent",
                         kind_name(en.head.kind), en.slot, en.data.size(), hex_prefix(en.data), en.head.frame_len));
  }

  // The user buffers the NIC wrote while it handled each frame.
  std::vector<std::map<std::uint64_t, std::uint64_t>> written(sent.size());  // cookie -> octets
  {
    std::map<std::uint64_t, std::size_t> by_index;
    for (std::size_t i = 0; i < sent.size(); ++i) by_index[sent[i].index] = i;
    for (const auto& w : h.writes()) {
      const auto* r = h.receive_at(w.addr);
      auto it = by_index.find(w.frame);
      if (r && it != by_index.end()) written[it->second][r->cookie] += w.len;
    }
  }

  // Receives no datagram may reach: withdrawn (RX_CANCEL), dropped
  // (CTRL_RESET), or posted with a narrow register write; each judged by
  // its own case. And a NIC that holds fewer receives than it must (the
  // scenarios' RX_POSTED reads): the datagrams that then find none.
  const auto withdrawn = [&](const eng::Harness::Receive& r) -> std::pair<std::string_view, std::string_view> {
    if (r.cancelled) return {cid::rx_cancel, "withdrawn by RX_CANCEL"};
    if (r.reset) return {cid::ctrl, "dropped by CTRL_RESET"};
    if (r.narrow) return {cid::mmio, "posted with a 4-octet register write, which has no effect"};
    return {};
  };
  std::map<std::string_view, bool> any_withdrawn;
  for (const auto& r : h.receives())
    if (const auto w = withdrawn(r); !w.first.empty()) any_withdrawn[w.first] = true;
  std::optional<std::uint64_t> held_short;
  for (const auto& o : s.observed())
    if (o.rule == cid::posted_min && !o.ok && !held_short) held_short = o.frame;

  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& f = sent[i];
    const auto& w = written[i];
    const std::uint64_t fr = f.index;
    {
      std::string_view rule, why;
      std::uint64_t cookie = 0;
      for (auto e : entries_of[i])
        if (entries[e].head.kind == FUDP_ENTRY_SPLINTER)
          if (const auto* r = h.receive(entries[e].head.cookie)) std::tie(rule, why) = withdrawn(*r), cookie = r->cookie;
      // Octets that landed went into a buffer the NIC could write then (a
      // withdrawn receive's writes are refused and reported apart): only a
      // narrowly posted receive is wrong to fill.
      for (const auto& [c, n] : w)
        if (const auto* r = h.receive(c); r && r->narrow && rule.empty()) std::tie(rule, why) = withdrawn(*r), cookie = c;
      if (!rule.empty()) {
        j.fail(rule, fr, fmt::format("no datagram in receive {}, {}", cookie, why),
               fmt::format("the datagram went there ({})", w.empty() ? "a splinter entry names it" : written_text_of(w)));
        continue;
      }
      for (const auto& [r, any] : any_withdrawn) j.pass(r);
    }
    const auto written_text = [&] { return written_text_of(w); };
    // What the NIC did with the frame that the driver did not see: an entry
    // it published without an interrupt after it, and the counters that rose.
    const auto entry_kinds = [&] {
      std::string t;
      for (auto e : entries_of[i]) t += (t.empty() ? "" : ", ") + kind_name(entries[e].head.kind);
      if (!t.empty()) return "a " + t + " entry";
      for (const auto& u : untaken)
        if (u.head.frame_len == f.frame.size() && !u.data.empty() && u.data.size() <= f.frame.size() &&
            std::equal(u.data.begin(), u.data.end(), f.frame.begin()))
          return fmt::format("no ring entry the driver took; the NIC published a {} entry in slot {} but raised no "
                             "interrupt after it",
                             kind_name(u.head.kind), u.slot);
      return std::string("no ring entry");
    };
    const auto rose = [&] {
      const auto& after = h.stats_after();
      if (f.index == 0 || f.index > after.size()) return std::string();
      std::string t;
      for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) {
        const std::uint64_t before = f.index >= 2 ? after[f.index - 2][k] : 0, now = after[f.index - 1][k];
        if (now > before && k != FUDP_STAT_RX_FRAMES)
          t += fmt::format("{}{} +{}", t.empty() ? "" : ", ", eng::stat_name(k), now - before);
      }
      return t.empty() ? std::string("; no counter rose") : "; the NIC counted it: " + t;
    };
    switch (f.fate) {
      case Fate::deliver: {
        const bool one = w.size() == 1;
        const std::uint64_t got = one ? w.begin()->first : 0;
        const bool eligible = one && std::find(f.eligible.begin(), f.eligible.end(), got) != f.eligible.end();
        const bool none = w.empty() && std::none_of(entries_of[i].begin(), entries_of[i].end(), [&](std::size_t e) {
          return entries[e].head.kind == FUDP_ENTRY_SPLINTER;
        });
        if (!eligible && none && held_short)
          j.consequence(f.rule, fr, fmt::format("its payload in receive {}'s buffer (port {})", f.rx, h.receive(f.rx)->port),
                        "no user buffer; " + entry_kinds(), std::string(cid::posted_min), *held_short);
        else
          j.check(f.rule, eligible, fr, fmt::format("its payload in receive {}'s buffer (port {})", f.rx, h.receive(f.rx)->port),
                  w.empty() ? "no user buffer; " + entry_kinds() + rose() : written_text());
        if (f.zero4) j.check(cid::csum_zero4, !w.empty() || !entries_of[i].empty(), fr, "accepted (no checksum)", "discarded");
        if (!eligible) break;
        j.check(cid::oldest, got == f.rx, fr, fmt::format("receive {}, the oldest it matches", f.rx), fmt::format("receive {}", got));
        // The payload, from the buffer's first octet.
        const auto* r = h.receive(got);
        const auto buf = h.buffer(got);
        const std::uint32_t want = std::min(f.payload_len, r->length);
        const auto* p = f.frame.data() + f.header_len;
        const auto miss = std::mismatch(buf.begin(), buf.begin() + want, p);
        j.check(cid::payload, miss.first == buf.begin() + want, fr, fmt::format("{} payload octets", want),
                fmt::format("octet {} is 0x{:02x}, the payload's is 0x{:02x}", miss.first - buf.begin(),
                            miss.first == buf.begin() + want ? 0u : static_cast<unsigned>(*miss.first),
                            miss.first == buf.begin() + want ? 0u : static_cast<unsigned>(*miss.second)));
        if (f.surplus)
          j.check(cid::length, w.begin()->second <= f.payload_len, fr,
                  fmt::format("at most the {} octets the UDP length covers", f.payload_len),
                  fmt::format("{} octets written", w.begin()->second));
        // The splinter's entry.
        std::optional<std::size_t> e;
        for (auto k : entries_of[i])
          if (entries[k].head.kind == FUDP_ENTRY_SPLINTER) e = k;
        if (!e) {
          j.fail(cid::splinter, fr, "a splinter entry in the kernel ring", entry_kinds());
          break;
        }
        const auto& en = entries[*e].head;
        const bool ok = en.cookie == got && en.stored == f.header_len && en.payload_len == f.payload_len &&
                        en.delivered == want && entries_of[i].size() == 1;
        j.check(cid::splinter, ok, fr,
                fmt::format("one entry: receive {}, {} header octets, payload {}, delivered {}", got, f.header_len,
                            f.payload_len, want),
                fmt::format("{} entr{}: receive {}, {} octets stored, payload {}, delivered {}", entries_of[i].size(),
                            entries_of[i].size() == 1 ? "y" : "ies", en.cookie, en.stored, en.payload_len, en.delivered));
        const bool cut = f.payload_len > r->length;
        const bool flagged = (en.flags & FUDP_ENTRY_F_TRUNCATED) != 0;
        j.check(cid::truncation, flagged == cut && (!cut || (en.delivered == r->length && en.payload_len == f.payload_len)),
                fr,
                cut ? fmt::format("flagged truncated, {} of {} octets delivered", r->length, f.payload_len)
                    : std::string("not flagged truncated"),
                fmt::format("{}flagged, {} of {} delivered", flagged ? "" : "not ", en.delivered, en.payload_len));
        break;
      }
      case Fate::kernel: {
        // No user buffer; one whole entry with the frame.
        j.check(f.rule, w.empty(), fr, "no user buffer (whole to the kernel)", written_text());
        if (f.zero4) j.check(cid::csum_zero4, !w.empty() || !entries_of[i].empty(), fr, "accepted (no checksum)", "discarded");
        const std::string_view whole_case = f.rule == cid::fragment ? cid::fragment : cid::slow_path;
        std::optional<std::size_t> e;
        for (auto k : entries_of[i])
          if (entries[k].head.kind == FUDP_ENTRY_WHOLE) e = k;
        if (!e) {
          j.fail(whole_case, fr, "a whole entry in the kernel ring", entry_kinds() + rose());
          break;
        }
        const auto& en = entries[*e];
        const std::size_t room = h.slot_size() - FUDP_ENTRY_SIZE;
        const std::size_t want = std::min(f.frame.size(), room);
        const bool cut = f.frame.size() > room;
        j.check(whole_case,
                en.head.stored == want && en.data.size() == want && ((en.head.flags & FUDP_ENTRY_F_TRUNCATED) != 0) == cut,
                fr, fmt::format("{} octets of the {}-octet frame{}", want, f.frame.size(), cut ? ", flagged truncated" : ""),
                fmt::format("{} octets stored, flags 0x{:x}", en.head.stored, en.head.flags));
        break;
      }
      case Fate::drop:
        j.check(f.rule, w.empty() && entries_of[i].empty(), fr, "discarded: no user buffer, no ring entry",
                w.empty() ? entry_kinds() : written_text());
        break;
      case Fate::ignored:
        j.check(cid::ctrl, w.empty() && entries_of[i].empty(), fr, "ignored: the NIC is not enabled",
                w.empty() ? entry_kinds() : written_text());
        break;
    }
  }

  // Counters a scenario is about.
  std::array<std::uint64_t, FUDP_STAT_COUNT> now{};
  for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) now[k] = s.harness().read_stat(static_cast<fudp_stat>(k));
  for (const auto& [stat, want] : s.counters)
    j.check(want.second, now[stat] == want.first, 0, fmt::format("{} at {}", eng::stat_name(stat), want.first),
            fmt::format("{} at {}", eng::stat_name(stat), now[stat]));

  // Every counter against what the NIC did since the last reset (what it
  // did right is the other cases' business): frames taken while enabled,
  // datagrams placed (a splinter entry or octets in a user buffer), whole
  // entries, drops by the rule that dropped them, truncated splinters, sent
  // frames, and completions the ring had no slot for.
  {
    std::array<std::uint64_t, FUDP_STAT_COUNT> want{};
    for (std::size_t i = s.since_frame(); i < sent.size(); ++i) {
      const Sent& f = sent[i];
      if (f.fate == Fate::ignored) continue;
      ++want[FUDP_STAT_RX_FRAMES];
      bool splinter = false, whole = false, truncated = false;
      for (auto e : entries_of[i]) {
        splinter |= entries[e].head.kind == FUDP_ENTRY_SPLINTER;
        whole |= entries[e].head.kind == FUDP_ENTRY_WHOLE;
        truncated |= entries[e].head.kind == FUDP_ENTRY_SPLINTER && (entries[e].head.flags & FUDP_ENTRY_F_TRUNCATED);
      }
      if (splinter || !written[i].empty()) ++want[FUDP_STAT_RX_SPLINTERED];
      // Placed with no entry the driver took: truncated when longer than the buffer it went to.
      if (!splinter && !written[i].empty())
        if (const auto* r = h.receive(written[i].begin()->first); r && f.payload_len > r->length) truncated = true;
      if (truncated) ++want[FUDP_STAT_RX_TRUNCATED];
      if (whole) ++want[FUDP_STAT_RX_SLOW];
      if (!splinter && !whole && written[i].empty() && f.fate == Fate::drop) {
        if (f.rule == cid::csum_bad || f.rule == cid::csum_zero6) ++want[FUDP_STAT_RX_CSUM_BAD];
        if (f.rule == cid::length) ++want[FUDP_STAT_RX_MALFORMED];
        if (f.rule == cid::ring_full) ++want[FUDP_STAT_RX_RING_FULL];
      }
    }
    // Completions lost for want of a slot: only where the NIC's entries did fill the ring.
    const bool filled = entries.size() + untaken.size() >= h.ring_slots();
    for (std::size_t t = s.since_tx(); t < s.txs().size(); ++t)
      if (!s.txs()[t].done && filled) ++want[FUDP_STAT_RX_RING_FULL];
    want[FUDP_STAT_TX_FRAMES] = h.transmitted().size() >= s.since_tx() ? h.transmitted().size() - s.since_tx() : 0;
    std::string diff;
    for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) {
      const std::uint64_t got = now[k] - s.counter_base()[k];
      if (got != want[k]) diff += fmt::format("{}{} {} (expected {})", diff.empty() ? "" : ", ", eng::stat_name(k), got, want[k]);
    }
    j.check(cid::counters, diff.empty(), 0,
            s.since_frame() ? "every counter, counted from the last CTRL_RESET, as the NIC's actions imply"
                            : "every counter as the NIC's actions imply",
            diff.empty() ? std::string("as expected") : diff);
  }

  // Flags, by entry kind.
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto& en = entries[e].head;
    const std::uint64_t fr = frame_of[e] ? sent[*frame_of[e]].index : 0;
    if (en.kind == FUDP_ENTRY_SPLINTER) {
      const bool zero4 = frame_of[e] && sent[*frame_of[e]].zero4;
      const std::uint32_t want = zero4 ? FUDP_ENTRY_F_NO_CSUM : FUDP_ENTRY_F_CSUM_OK;
      j.check(cid::flags, (en.flags & ~FUDP_ENTRY_F_TRUNCATED) == want, fr,
              fmt::format("a splinter entry flagged {}{}", flags_text(want), zero4 ? " (IPv4, checksum zero)" : " (checksum verified)"),
              fmt::format("slot {} flagged {}", entries[e].slot, flags_text(en.flags)));
    } else if (en.kind == FUDP_ENTRY_WHOLE) {
      j.check(cid::flags, (en.flags & ~FUDP_ENTRY_F_TRUNCATED) == 0, fr, "a whole entry with no checksum flag",
              fmt::format("slot {} flagged {}", entries[e].slot, flags_text(en.flags)));
    } else if (en.kind == FUDP_ENTRY_TX_DONE) {
      j.check(cid::flags, en.flags == 0, 0, "a tx-done entry with no flag",
              fmt::format("slot {} flagged {}", entries[e].slot, flags_text(en.flags)));
    }
  }

  // Transmit completions: one tx-done entry per transmit that had a slot.
  {
    std::map<std::uint64_t, std::vector<std::size_t>> done;  // cookie -> entries
    for (std::size_t e = 0; e < entries.size(); ++e)
      if (entries[e].head.kind == FUDP_ENTRY_TX_DONE) done[entries[e].head.cookie].push_back(e);
    for (std::size_t t = 0; t < s.txs().size(); ++t) {
      const Tx& x = s.txs()[t];
      const auto it = done.find(x.cookie);
      const std::size_t n = it == done.end() ? 0 : it->second.size();
      if (!x.done) {
        j.check(cid::tx_done, n == 0, 0, fmt::format("transmit {}: no completion (no free ring slot)", t + 1),
                fmt::format("{} tx-done entr{}", n, n == 1 ? "y" : "ies"));
        continue;
      }
      if (n != 1) {
        std::string where = "none";
        for (const auto& u : untaken)
          if (u.head.kind == FUDP_ENTRY_TX_DONE && u.head.cookie == x.cookie)
            where = fmt::format("none the driver took; the NIC published one in slot {} but raised no interrupt after it", u.slot);
        j.fail(cid::tx_done, 0, fmt::format("transmit {} (cookie {}): one tx-done entry", t + 1, x.cookie),
               n ? fmt::format("{} tx-done entries", n) : where);
        continue;
      }
      const auto& en = entries[it->second.front()].head;
      j.check(cid::tx_done, en.frame_len == x.frame.size() && en.payload_len == 0 && en.delivered == 0 && en.stored == 0, 0,
              fmt::format("transmit {}: frame length {}, nothing stored", t + 1, x.frame.size()),
              fmt::format("frame length {}, payload {}, delivered {}, {} octets stored", en.frame_len, en.payload_len,
                          en.delivered, en.stored));
    }
    for (const auto& d : done) {
      const std::uint64_t cookie = d.first;  // a copy: Clang 14 does not capture structured bindings
      if (std::none_of(s.txs().begin(), s.txs().end(), [&](const Tx& x) { return x.cookie == cookie; }))
        j.fail(cid::tx_done, 0, "tx-done entries only for transmits posted",
               fmt::format("a tx-done entry (slot {}) names cookie {}, which no transmit had", entries[d.second.front()].slot, cookie));
    }
  }

  // What scenarios observed themselves (register reads).
  for (const auto& o : s.observed()) j.check(o.rule, o.ok, o.frame, o.expected, o.actual);

  // Ring order: entries for received frames in the order of the frames.
  std::optional<std::size_t> last;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (!frame_of[e]) continue;
    const std::size_t i = *frame_of[e];
    j.check(cid::ring_order, !last || i > *last, sent[i].index,
            fmt::format("after the entry for frame {}", last ? sent[*last].index : 0),
            fmt::format("slot {} holds frame {} after frame {}", entries[e].slot, sent[i].index, last ? sent[*last].index : 0));
    last = i;
  }

  // Interrupts: every write of the producer index word is followed by one.
  const auto& writes = h.writes();
  const auto& irqs = h.interrupts();
  std::size_t k = 0;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].addr != h.prod_word()) continue;
    while (k < irqs.size() && irqs[k].writes_before <= i) ++k;
    j.check(cid::irq, k < irqs.size(), writes[i].frame, "interrupt vector 0 after the entry is published",
            fmt::format("no interrupt after the producer index write at cycle {}", writes[i].cycle));
    if (k >= irqs.size() || !s.coalesce_cycles) continue;
    // A coalescing time limit bounds the wait: the interrupt comes before
    // the NIC takes any frame that arrives after the limit has run out.
    const std::uint64_t due = writes[i].cycle + s.coalesce_cycles;
    const auto late = std::find_if(sent.begin(), sent.end(), [&](const Sent& f) { return f.at && *f.at > due; });
    if (late == sent.end()) continue;
    j.check(cid::irq, irqs[k].frame < late->index, writes[i].frame,
            fmt::format("interrupt by cycle {} ({} cycles after the entry), before frame {} arrives at cycle {}", due,
                        s.coalesce_cycles, late->index, *late->at),
            fmt::format("the interrupt came at cycle {}, while frame {} was handled", irqs[k].cycle, irqs[k].frame));
  }

  // Transmit.
  const auto& out = h.transmitted();
  for (std::size_t t = 0; t < s.txs().size(); ++t) {
    const Tx& x = s.txs()[t];
    if (t >= out.size()) {
      j.fail(cid::tx_csum, 0, fmt::format("transmit {} on the wire", t + 1), "not sent");
      continue;
    }
    const auto& o = out[t];
    const std::size_t c = x.udp + 6;
    bool same = o.size() == x.frame.size();
    for (std::size_t b = 0; same && b < o.size(); ++b)
      if ((b < c || b >= c + 2) && o[b] != x.frame[b]) same = false;
    if (!x.offload) {
      j.check(cid::tx_csum, o == x.frame, 0, "sent unchanged (no offload asked)", "changed");
      continue;
    }
    const std::uint16_t field = same ? protocols::be16(o, c) : 0;
    const Bytes wire(o);
    const bool sums = same && protocols::net::udp_checksum(wire.subspan(14), wire.subspan(x.udp)) == 0;
    j.check(cid::tx_csum, same && sums && field != 0, 0,
            fmt::format("transmit {}: the frame with a checksum that verifies", t + 1),
            !same ? std::string("other octets changed") : fmt::format("checksum 0x{:04x}{}", field, sums ? "" : ", wrong"));
    if (x.zero_sum) j.check(cid::tx_ones, field == 0xffff, 0, fmt::format("transmit {}: checksum 0xffff", t + 1), fmt::format("0x{:04x}", field));
  }

  // The shim contract and host memory.
  bool clean_memory = true, clean_shim = true;
  for (const auto& v : h.violations()) {
    using K = eng::Violation::Kind;
    const std::string_view id = v.kind == K::write_outside    ? cid::memory
                                : v.kind == K::ring_overwrite ? cid::ring_full
                                : v.kind == K::write_cancelled ? cid::rx_cancel
                                : v.kind == K::write_reset     ? cid::ctrl
                                                               : cid::shim;
    if (id == cid::memory) clean_memory = false;
    if (id == cid::shim) clean_shim = false;
    j.fail(id, v.frame, "no such access", fmt::format("{} octets at 0x{:x}", v.len, v.addr),
           fmt::format("{}: {}", eng::violation_name(v.kind), v.what));
  }
  if (clean_memory)
    for (std::size_t i = 0; i < writes.size(); ++i) j.pass(cid::memory);
  if (clean_shim) j.pass(cid::shim);
}


}  // namespace rdmaconf::interop::fastudp

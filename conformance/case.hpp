#pragma once
// A conformance case: a stable ID, the requirement it checks (spec, section,
// level, our own words) and, per connection or conversation, a tally of
// checks that becomes PASS / FAIL / NOT_APPLICABLE / INCONCLUSIVE with evidence.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmaconf::conformance {

enum class Level { must, should, may };
enum class Verdict { pass, fail, not_applicable, inconclusive };

std::string_view level_name(Level l);      // "MUST"
std::string_view verdict_name(Verdict v);  // "PASS"

struct CaseInfo {
  std::string_view id;           // "iwarp.mpa.fpdu.crc"
  std::string_view spec;         // "RFC 5044"
  std::string_view section;      // "§4"
  Level level = Level::must;
  std::string_view requirement;  // our own words
  std::string_view family;       // the registering family's name ("iwarp")
};

// What a case file states of a case: everything but its family, which the
// family adds when it registers the case.
struct CaseText {
  std::string_view id, spec, section;
  Level level = Level::must;
  std::string_view requirement;
  CaseInfo in(std::string_view family) const { return CaseInfo{id, spec, section, level, requirement, family}; }
};

// A suite's cases from their texts, in the texts' order (for catalogs
// that live outside a capture family: the NIC and U-Net live suites).
template <std::size_t N>
struct TextCatalog {
  std::array<CaseInfo, N> infos;
  std::vector<const CaseInfo*> all;
  TextCatalog(const std::array<CaseText, N>& texts, std::string_view family) {
    for (std::size_t i = 0; i < N; ++i) {
      infos[i] = texts[i].in(family);
      all.push_back(&infos[i]);
    }
  }
};

struct Evidence {
  std::vector<std::uint64_t> frames;
  std::optional<std::uint64_t> stream_offset;
  std::string side;      // which endpoint sent the offending octets
  std::string expected;
  std::string actual;
  std::string detail;
  // Set on what follows from a violation reported elsewhere (octets a
  // broken length or missing markers made unreadable): that violation's
  // case and frame. Such evidence is never a FAIL of its own.
  struct Cause {
    std::string case_id;
    std::uint64_t frame = 0;
  };
  std::optional<Cause> caused_by;
};

// The capture artefacts a scope's traffic showed (a frame lost, seen twice or
// out of order), per direction: those that concern all that follows them,
// and those that concern a window of frames only (an inverted timestamp
// puts in doubt the order of the frames it falls among, no others).
struct Artefacts {
  struct Window {
    std::uint64_t first = 0, last = 0;  // frame numbers, inclusive
    std::string what;
    // Copies only: the two copies were compared and differ, which may have
    // changed what the receiver saw from there on (the state later octets
    // are judged against), not only these frames.
    bool differ = false;
  };
  static constexpr std::size_t kMaxWindows = 64;  // per direction; beyond, a window concerns the whole direction
  std::string whole[2];                           // each direction's first such artefact; empty: none
  std::vector<Window> windows[2];
  // Frames whose octets the capture holds another copy of, with other
  // content or not comparable (a retransmission the receiver may have taken
  // instead): what they show may not be what the receiver saw.
  std::vector<Window> copies[2];
  // The artefact of a direction in `dirs` that could explain a violation
  // shown by `frames` (every frame when empty), or null. Copies that differ,
  // in either direction, before its last frame do; with kCopiesOnly in
  // `dirs`, only they and other copies of its own octets do.
  const std::string* explaining(unsigned dirs, const std::vector<std::uint64_t>& frames) const;
};

// Tally::doubtful's `dirs` flag for a violation that what the capture lost
// or reordered cannot explain (the octets that show it are in the capture,
// in order) but another copy of those octets can: it is settled against
// Artefacts::copies only.
inline constexpr unsigned kCopiesOnly = 4;

class Tally {
 public:
  static constexpr std::size_t kMaxEvidence = 8;
  void pass() { ++checked_; }
  void fail(Evidence e);
  void inconclusive(Evidence e);
  // A violation in the bytes as captured that a capture artefact (a frame
  // the capture lost, saw twice or saw out of order) in the directions of
  // `dirs` (bit 0: direction 0, bit 1: direction 1) could also explain. It
  // is settled when the scope ends (ScopeState::outcomes): FAIL when the
  // scope showed no such artefact there, otherwise INCONCLUSIVE naming it
  // (see kCopiesOnly).
  void doubtful(Evidence e, unsigned dirs = 3);
  // Settles the doubtful violations against the scope's artefacts.
  void settle(const Artefacts& artefacts);
  Verdict verdict() const;
  std::uint64_t checked() const { return checked_; }
  std::uint64_t failed() const { return failed_; }
  // Violations recorded with doubtful() and not settled yet.
  bool unsettled() const { return doubtful_ != nullptr; }
  std::uint64_t inconclusive_count() const { return inconclusive_; }
  const std::vector<Evidence>& evidence() const { return evidence_; }

  // A tally as a report wrote it (reports::scope_from_json): its counts and
  // the evidence kept.
  static Tally restore(std::uint64_t checked, std::uint64_t failed, std::uint64_t inconclusive, std::vector<Evidence> evidence);

  Tally() = default;
  Tally(Tally&&) noexcept = default;
  Tally& operator=(Tally&&) noexcept = default;
  Tally(const Tally& o);
  Tally& operator=(const Tally& o);

 private:
  std::uint64_t checked_ = 0, failed_ = 0, inconclusive_ = 0;
  std::vector<Evidence> evidence_;
  // Violations not yet settled. Few cases ever have one, and every scope
  // keeps a tally per case (a scope's outcomes are handed to the report
  // writer's thread): kept apart, made on the first.
  struct Doubtful {
    std::vector<std::pair<unsigned, Evidence>> kept;
    std::uint64_t more[8] = {};  // beyond kMaxEvidence, by `dirs`
  };
  std::unique_ptr<Doubtful> doubtful_;
};

// Per-scope storage a case may keep between events (see Scope::state).
struct CaseState {
  virtual ~CaseState() = default;
};

}  // namespace rdmaconf::conformance

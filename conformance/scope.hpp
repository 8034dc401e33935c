#pragma once
// What a case sees of the scope (a connection, a conversation) it judges, and
// the tallies and per-case state the checker keeps for each scope.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "conformance/result.hpp"

namespace rdmaconf::conformance {

// What a case sees of the scope (connection or conversation) it checks.
struct CaseCtx {
  Tally& tally;
  std::unique_ptr<CaseState>& slot;
  const std::string* sides;  // label of each direction: sides[0], sides[1]
  template <class T>
  T& state() {
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }
  const std::string& side(int dir) const { return sides[dir]; }
};

// The tallies and case state of one scope, one slot per active case.
//
// The rule every case follows: a FAIL is recorded only on evidence that no
// loss, duplicate or reordering of captured frames can explain; a violation
// such an artefact could explain is recorded with Tally::doubtful and
// settled here against the artefacts the scope's traffic showed (each
// family records them: TCP gaps, PSN holes, repeated packets, a capture that
// starts or ends inside an exchange).
struct ScopeState {
  std::string sides[2];
  Artefacts artefacts;
  // The tallies and case states are made when a case first runs: a scope
  // no case has looked at yet (a half-open TCP connection, by the
  // thousand) takes no room for them.
  explicit ScopeState(std::size_t n) : n_(n) {}
  CaseCtx ctx(std::size_t i) {
    made();
    return CaseCtx{tallies_[i], slots_[i], sides};
  }
  Tally& tally(std::size_t i) {
    made();
    return tallies_[i];
  }
  // Records that the capture of direction `dir` shows a loss, duplicate or
  // reordering; only the first is kept (and only it is formatted).
  template <class... A>
  void artefact(int dir, fmt::format_string<A...> what, A&&... args) {
    if (artefacts.whole[dir].empty()) artefacts.whole[dir] = fmt::format(what, std::forward<A>(args)...);
  }
  // An artefact that concerns frames `first` to `last` of direction `dir`
  // only (past Artefacts::kMaxWindows, the whole direction).
  template <class... A>
  void artefact_between(int dir, std::uint64_t first, std::uint64_t last, fmt::format_string<A...> what, A&&... args) {
    if (!artefacts.whole[dir].empty()) return;
    if (artefacts.windows[dir].size() >= Artefacts::kMaxWindows) return artefact(dir, what, std::forward<A>(args)...);
    artefacts.windows[dir].push_back({first, last, fmt::format(what, std::forward<A>(args)...)});
  }
  // Frames `first` to `last` of direction `dir` hold octets of which the
  // capture has another copy (Artefacts::copies; `first` 0: frames not
  // known, the whole direction).
  // `differ`: see Artefacts::Window.
  template <class... A>
  void copies_between(int dir, std::uint64_t first, std::uint64_t last, bool differ, fmt::format_string<A...> what,
                      A&&... args) {
    auto& ws = artefacts.copies[dir];
    if (!ws.empty() && ws.back().first == 0) return;  // the whole direction already
    if (!first || ws.size() >= Artefacts::kMaxWindows) {
      differ = differ || std::any_of(ws.begin(), ws.end(), [](const Artefacts::Window& w) { return w.differ; });
      ws.clear();
      first = 0, last = ~std::uint64_t{0};
    }
    ws.push_back({first, last, fmt::format(what, std::forward<A>(args)...), differ});
  }
  // The verdicts, in the order of `cases` (the active ones, as the slots),
  // with the doubtful violations settled.
  std::vector<CaseOutcome> outcomes(const std::vector<const CaseInfo*>& cases) {
    made();
    std::vector<CaseOutcome> v;
    v.reserve(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      tallies_[i].settle(artefacts);
      v.push_back(CaseOutcome{cases[i], std::move(tallies_[i])});
    }
    return v;
  }

 private:
  // Runs for every case a scope's events reach: the check inline, the making apart.
  void made() {
    if (tallies_.size() != n_) [[unlikely]] make();
  }
  [[gnu::noinline]] void make() {
    tallies_.resize(n_);
    slots_.resize(n_);
  }
  std::size_t n_;
  std::vector<Tally> tallies_;
  std::vector<std::unique_ptr<CaseState>> slots_;
};

}  // namespace rdmaconf::conformance

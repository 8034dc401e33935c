#pragma once
// What a case sees of the scope (a connection, a conversation) it judges, and
// the tallies and per-case state the checker keeps for each scope.
#include <memory>
#include <string>
#include <vector>

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
struct ScopeState {
  std::vector<Tally> tallies;
  std::vector<std::unique_ptr<CaseState>> slots;
  std::string sides[2];
  explicit ScopeState(std::size_t n) : tallies(n), slots(n) {}
  CaseCtx ctx(std::size_t i) { return CaseCtx{tallies[i], slots[i], sides}; }
  // The verdicts, in the order of `cases` (the active ones, as the slots).
  std::vector<CaseOutcome> outcomes(const std::vector<const CaseInfo*>& cases) {
    std::vector<CaseOutcome> v;
    v.reserve(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) v.push_back(CaseOutcome{cases[i], std::move(tallies[i])});
    return v;
  }
};

}  // namespace rdmaconf::conformance

#pragma once
// Verdicts by case ID for suites that drive a device or an engine with
// traffic of their own (the NIC plug-in suite, the U-Net live suite), not a
// capture: one tally per active case, in catalog order, evidence naming
// the side that was judged.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conformance/result.hpp"

namespace rdmaconf::conformance {

class Judge {
 public:
  Judge(const std::vector<const CaseInfo*>& cases, std::string side) : side_(std::move(side)) {
    for (const auto* c : cases) {
      index_[c->id] = outcomes_.size();
      outcomes_.push_back(CaseOutcome{c, {}});
    }
  }
  void pass(std::string_view id) {
    if (auto* t = tally(id)) t->pass();
  }
  void fail(std::string_view id, std::uint64_t frame, std::string expected, std::string actual, std::string detail = {}) {
    if (auto* t = tally(id)) {
      Evidence e = evidence(frame, std::move(expected), std::move(actual));
      e.detail = std::move(detail);
      t->fail(std::move(e));
    }
  }
  void check(std::string_view id, bool ok, std::uint64_t frame, std::string expected, std::string actual, std::string detail = {}) {
    if (ok)
      pass(id);
    else
      fail(id, frame, std::move(expected), std::move(actual), std::move(detail));
  }
  // What follows from a violation judged elsewhere (its case and frame):
  // shown, never a FAIL of its own.
  void consequence(std::string_view id, std::uint64_t frame, std::string expected, std::string actual, std::string cause_case,
                   std::uint64_t cause_frame) {
    if (auto* t = tally(id)) {
      Evidence e = evidence(frame, std::move(expected), std::move(actual));
      e.caused_by = Evidence::Cause{std::move(cause_case), cause_frame};
      t->inconclusive(std::move(e));
    }
  }
  std::vector<CaseOutcome> take() { return std::move(outcomes_); }

 private:
  Evidence evidence(std::uint64_t frame, std::string expected, std::string actual) const {
    Evidence e;
    if (frame) e.frames.push_back(frame);
    e.side = side_;
    e.expected = std::move(expected);
    e.actual = std::move(actual);
    return e;
  }
  Tally* tally(std::string_view id) {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &outcomes_[it->second].tally;
  }
  std::string side_;
  std::map<std::string_view, std::size_t> index_;
  std::vector<CaseOutcome> outcomes_;
};

}  // namespace rdmaconf::conformance

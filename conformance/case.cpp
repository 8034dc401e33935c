#include "conformance/case.hpp"

namespace rdmaconf::conformance {

std::string_view level_name(Level l) {
  switch (l) {
    case Level::must: return "MUST";
    case Level::should: return "SHOULD";
    case Level::may: return "MAY";
  }
  return "?";
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "PASS";
    case Verdict::fail: return "FAIL";
    case Verdict::not_applicable: return "NOT_APPLICABLE";
    case Verdict::inconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

void Tally::fail(Evidence e) {
  ++checked_;
  ++failed_;
  // Keep the first few failures; the counts say how many there were.
  if (evidence_.size() < kMaxEvidence) evidence_.push_back(std::move(e));
}

void Tally::inconclusive(Evidence e) {
  ++inconclusive_;
  if (failed_ == 0 && evidence_.size() < kMaxEvidence) evidence_.push_back(std::move(e));
}

Verdict Tally::verdict() const {
  if (failed_) return Verdict::fail;
  if (inconclusive_) return Verdict::inconclusive;
  if (checked_) return Verdict::pass;
  return Verdict::not_applicable;
}

}  // namespace rdmaconf::conformance

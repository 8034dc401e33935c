#include "conformance/case.hpp"

#include <algorithm>

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

Tally Tally::restore(std::uint64_t checked, std::uint64_t failed, std::uint64_t inconclusive, std::vector<Evidence> evidence) {
  Tally t;
  t.checked_ = checked;
  t.failed_ = failed;
  t.inconclusive_ = inconclusive;
  t.evidence_ = std::move(evidence);
  return t;
}

Tally::Tally(const Tally& o)
    : checked_(o.checked_), failed_(o.failed_), inconclusive_(o.inconclusive_), evidence_(o.evidence_),
      doubtful_(o.doubtful_ ? std::make_unique<Doubtful>(*o.doubtful_) : nullptr) {}

Tally& Tally::operator=(const Tally& o) {
  if (this != &o) *this = Tally(o);
  return *this;
}

void Tally::doubtful(Evidence e, unsigned dirs) {
  dirs &= 7u;
  if (!doubtful_) doubtful_ = std::make_unique<Doubtful>();
  // The first few keep their evidence; beyond that only a count per set of directions.
  if (doubtful_->kept.size() < kMaxEvidence)
    doubtful_->kept.emplace_back(dirs, std::move(e));
  else
    ++doubtful_->more[dirs];
}

const std::string* Artefacts::explaining(unsigned dirs, const std::vector<std::uint64_t>& frames) const {
  auto within = [&](const std::vector<Window>& ws) -> const std::string* {
    for (const auto& w : ws) {
      if (frames.empty()) return &w.what;
      const auto [lo, hi] = std::minmax_element(frames.begin(), frames.end());
      if (*lo <= w.last && w.first <= *hi) return &w.what;
    }
    return nullptr;
  };
  for (int d = 0; d < 2; ++d) {
    if (!(dirs >> d & 1u)) continue;
    if (!(dirs & kCopiesOnly)) {
      if (!whole[d].empty()) return &whole[d];
      if (const std::string* w = within(windows[d])) return w;
    }
    if (const std::string* w = within(copies[d])) return w;
  }
  // Copies that differ, in either direction, before the violation's last frame.
  const std::uint64_t last = frames.empty() ? ~std::uint64_t{0} : *std::max_element(frames.begin(), frames.end());
  for (const auto& ws : copies)
    for (const auto& w : ws)
      if (w.differ && w.first <= last) return &w.what;
  return nullptr;
}

void Tally::settle(const Artefacts& artefacts) {
  if (!doubtful_) return;
  // Taken first: inconclusive() and fail() below add to this tally.
  const std::unique_ptr<Doubtful> d = std::move(doubtful_);
  for (auto& [dirs, ev] : d->kept) {
    if (const std::string* a = artefacts.explaining(dirs, ev.frames)) {
      ev.detail += (ev.detail.empty() ? "" : "; ") + ("a capture artefact could explain it: " + *a);
      inconclusive(std::move(ev));
    } else {
      fail(std::move(ev));
    }
  }
  // (Beyond the evidence kept, the frames are not known: any artefact of the directions explains them.)
  for (unsigned dirs = 0; dirs < 8; ++dirs) {
    const std::uint64_t n = d->more[dirs];
    if (artefacts.explaining(dirs, {})) {
      inconclusive_ += n;
    } else {
      checked_ += n;
      failed_ += n;
    }
  }
}

Verdict Tally::verdict() const {
  if (failed_) return Verdict::fail;
  if (inconclusive_) return Verdict::inconclusive;
  if (checked_) return Verdict::pass;
  return Verdict::not_applicable;
}

}  // namespace rdmaconf::conformance

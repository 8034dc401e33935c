#include "conformance/family.hpp"

#include <algorithm>

namespace rdmaconf::conformance {

namespace {
constexpr std::size_t kMaxWarnings = 20;
}

std::vector<std::uint64_t> option_values(const FamilyOptions& o, std::string_view name, std::vector<std::uint64_t> fallback) {
  const auto it = o.find(name);
  return it == o.end() || it->second.empty() ? fallback : it->second;
}

void RunContext::undecodable(const std::string& message) {
  ++out_.stats.undecodable_frames;
  if (out_.warnings.size() < kMaxWarnings) out_.warnings.push_back(out_.path + ": " + message);
  ++out_.warnings_total;
}

void RunContext::anomaly(const std::string& message) {
  ++out_.stats.capture_anomalies;
  if (out_.warnings.size() < kMaxWarnings) out_.warnings.push_back(out_.path + ": " + message);
  ++out_.warnings_total;
}

void Registry::add(const ProtocolFamily& f) {
  if (std::find(families_.begin(), families_.end(), &f) == families_.end()) families_.push_back(&f);
}

std::vector<const CaseInfo*> Registry::all_cases() const {
  std::vector<const CaseInfo*> v;
  for (const auto* f : families_) v.insert(v.end(), f->cases().begin(), f->cases().end());
  return v;
}

const ProtocolFamily* Registry::find(std::string_view name) const {
  for (const auto* f : families_)
    if (f->name() == name) return f;
  return nullptr;
}

Registry& Registry::get() {
  static Registry r;
  return r;
}

}  // namespace rdmaconf::conformance

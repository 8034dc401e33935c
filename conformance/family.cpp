#include "conformance/family.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "protocols/net/headers.hpp"
#include "protocols/registry.hpp"

namespace rdmaconf::conformance {

std::vector<std::uint64_t> option_values(const FamilyOptions& o, std::string_view name, std::vector<std::uint64_t> fallback) {
  const auto it = o.find(name);
  return it == o.end() || it->second.empty() ? fallback : it->second;
}

std::optional<std::string> parse_option(const OptionSpec& spec, std::string_view text, std::vector<std::uint64_t>& values) {
  values.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ',' || text[i] == ' ' || text[i] == '\t') {
      ++i;
      continue;
    }
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    const std::size_t stop = static_cast<std::size_t>(end - text.data());
    if (ec != std::errc() || (stop < text.size() && text[stop] != ',' && text[stop] != ' ' && text[stop] != '\t'))
      return fmt::format("{}: '{}' is not a number", spec.name, text.substr(i, text.find_first_of(", \t", i) - i));
    if (v > spec.max) return fmt::format("{}: {} is above {}", spec.name, v, spec.max);
    if (!spec.allowed.empty() && std::find(spec.allowed.begin(), spec.allowed.end(), v) == spec.allowed.end())
      return fmt::format("{}: {} is not one of {}", spec.name, v, fmt::join(spec.allowed, ", "));
    values.push_back(v);
    i = stop;
  }
  if (values.size() > 1 && !spec.repeatable) return fmt::format("{} takes one value, not {}", spec.name, values.size());
  return std::nullopt;
}

void RunContext::warn(std::uint64_t frame, const std::string& message) {
  if (out_.warnings.size() < kMaxInputWarnings) {
    out_.warnings.push_back(out_.path + ": " + message);
    out_.warning_frames.push_back(frame);
  }
  ++out_.warnings_total;
}

void RunContext::undecodable(std::uint64_t frame, const std::string& message) {
  if (on_warning) on_warning(frame, true, message);
  ++out_.stats.undecodable_frames;
  warn(frame, message);
}

void RunContext::anomaly(std::uint64_t frame, const std::string& message) {
  if (on_warning) on_warning(frame, false, message);
  ++out_.stats.capture_anomalies;
  warn(frame, message);
}

std::string RunContext::state_bound(std::uint64_t max_open) const {
  return fmt::format("{} open at once, the bound of this kind's {} KiB share of --state-memory", max_open, state_memory_ >> 10);
}

void RunContext::notice(std::uint64_t frame, const std::string& message) {
  if (on_warning) on_warning(frame, false, message);
  warn(frame, message);
}

void Registry::add(const ProtocolFamily& f) {
  if (std::find(families_.begin(), families_.end(), &f) != families_.end()) return;
  families_.push_back(&f);
  // The header tables again: the net ones with every family's EtherTypes
  // named, then the families' own.
  auto& names = ether_types_.emplace_back(std::begin(protocols::net::kEtherTypes), std::end(protocols::net::kEtherTypes));
  for (const auto* family : families_) names.insert(names.end(), family->ether_types().begin(), family->ether_types().end());
  headers_.clear();
  for (const auto* h : protocols::net_headers()) {
    const bool named = std::any_of(h->fields.begin(), h->fields.end(), [](const protocols::FieldDef& d) {
      return d.values.data() == std::data(protocols::net::kEtherTypes);
    });
    if (!named) {
      headers_.push_back(h);
      continue;
    }
    auto& t = net_tables_.emplace_back(NetTable{{h->fields.begin(), h->fields.end()}, *h});
    for (auto& d : t.fields)
      if (d.values.data() == std::data(protocols::net::kEtherTypes)) d.values = names;
    t.def.fields = t.fields;
    headers_.push_back(&t.def);
  }
  for (const auto* family : families_)
    for (const auto* h : family->headers())
      if (std::find(headers_.begin(), headers_.end(), h) == headers_.end()) headers_.push_back(h);
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

std::vector<const LedgerEntry*> statements_of(const CaseInfo& c) {
  const auto* f = Registry::get().find(c.family);
  const auto* l = f ? f->ledger() : nullptr;
  return l ? l->for_case(c.id) : std::vector<const LedgerEntry*>{};
}

}  // namespace rdmaconf::conformance

#include "conformance/params.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace rdmaconf::conformance {

std::string params_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::uint32_t Params::append(std::string_view s) {
  const auto off = static_cast<std::uint32_t>(buf_.size());
  buf_ += s;
  return off;
}

namespace {

// Keys compared octet by octet, not with memcmp: libFuzzer intercepts every
// memcmp a fuzz target makes, and the report's objects are built for every
// input (the key comparisons here cost 2-4 % of fuzz_capture's time, most
// of it in those hooks).
// fuzz/coverage-ignore.txt leaves these out of the comparison tracing too.
bool key_less(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  return a.size() < b.size();
}

bool key_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace

Params& Params::set_json(std::string_view key, std::string_view json) {
  if (buf_.empty()) {
    buf_.reserve(512);
    members_.reserve(16);
  }
  const auto len = static_cast<std::uint32_t>(json.size());
  for (auto& m : members_)
    if (key_equal(at(m.key, m.key_len), key)) {  // set again: the last value counts
      m.value = append(json);
      m.value_len = len;
      return *this;
    }
  const std::uint32_t k = append(key);
  members_.push_back({k, static_cast<std::uint32_t>(key.size()), append(json), len});
  return *this;
}

std::string Params::text() const {
  std::vector<Member> sorted = members_;
  std::sort(sorted.begin(), sorted.end(), [&](const Member& a, const Member& b) { return key_less(at(a.key, a.key_len), at(b.key, b.key_len)); });
  std::string out;
  out.reserve(buf_.size() + 4 * sorted.size() + 2);
  out += '{';
  for (const auto& m : sorted) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += at(m.key, m.key_len);
    out += "\":";
    out += at(m.value, m.value_len);
  }
  out += '}';
  return out;
}

std::string json_array(const std::vector<std::string>& elements) {
  std::string out = "[";
  for (const auto& e : elements) {
    if (out.size() > 1) out += ',';
    out += e;
  }
  out += ']';
  return out;
}

}  // namespace rdmaconf::conformance

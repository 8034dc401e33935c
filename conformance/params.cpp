#include "conformance/params.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace rdmaconf::conformance {

std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  if (!n || i + n > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if ((at(k) & 0xC0) != 0x80) return 0;
  return n;
}

namespace {

// Whether every octet of `s` is printable ASCII other than '"' and '\\',
// which a JSON string holds as they are. Eight octets at a time: the report
// is mostly such strings, and testing them one octet at a time was a tenth
// of what writing a scope cost (fuzz_capture, perf).
bool plain_ascii(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101, kHigh = 0x8080808080808080;
  // Non-zero when some octet of x is below n (n <= 0x80); exact as to whether one is.
  const auto any_below = [](std::uint64_t x, std::uint64_t n) { return (x - kOnes * n) & ~x & kHigh; };
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if ((w & kHigh) | any_below(w, 0x20) | any_below(w ^ (kOnes * '"'), 1) | any_below(w ^ (kOnes * '\\'), 1)) return false;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void put_json_string(std::string& out, std::string_view s) {
  out += '"';
  // The common case, nothing to escape, in one append.
  if (plain_ascii(s)) {
    out += s;
    out += '"';
    return;
  }
  utf8_runs(
      s,
      [&](std::string_view run) {
        for (char ch : run) {
          const auto c = static_cast<unsigned char>(ch);
          if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
          } else if (c < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 15];
          } else {
            out += ch;
          }
        }
      },
      [&](unsigned char) { out += "\\ufffd"; });
  out += '"';
}

std::string json_string(std::string_view s) {
  std::string out;
  put_json_string(out, s);
  return out;
}

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

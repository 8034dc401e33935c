#include "protocols/core/json_text.hpp"

#include <cstdint>
#include <cstring>

namespace rdmaconf::protocols {

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

}  // namespace rdmaconf::protocols

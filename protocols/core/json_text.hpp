#pragma once
// JSON string text, written by hand where a document would cost too much
// (a scope's parameters, the report writer's streaming): UTF-8 passes
// through, a byte that belongs to no well-formed sequence becomes U+FFFD,
// so that the text is always valid JSON.
#include <cstddef>
#include <string>
#include <string_view>

namespace rdmaconf::protocols {

// The length of the well-formed UTF-8 sequence that starts at s[i], a byte
// of 0x80 or more (RFC 3629 section 4: no overlong forms, no surrogates,
// nothing above U+10FFFF); 0 when none does.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

// Calls plain(text) for runs of ASCII and well-formed UTF-8 and bad(byte)
// for each other byte.
template <class Plain, class Bad>
void utf8_runs(std::string_view s, Plain&& plain, Bad&& bad) {
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : utf8_sequence(s, i);
    if (n) {
      i += n;
      continue;
    }
    plain(s.substr(from, i - from));
    bad(c);
    from = ++i;
  }
  plain(s.substr(from));
}

// A string as a JSON value, appended to `out`: UTF-8 passes through, a byte
// that does not belong to a well-formed sequence becomes U+FFFD, so that the
// text is always valid JSON.
void put_json_string(std::string& out, std::string_view s);
std::string json_string(std::string_view s);

}  // namespace rdmaconf::protocols

#pragma once
// Text a report or a capture gave (a file name, a scope's label, a warning
// naming a file), printed to a terminal: a control character in it (ESC
// starts a sequence that moves the cursor, retitles the window or rewrites
// what was printed before; a newline or a carriage return fakes a line of
// our own) is shown as an escape, \xNN (C0 and DEL) or \u00NN (C1, as
// UTF-8 encodes them), never sent as is. Everything else, including
// non-ASCII text, is left as it is.
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace rdmaconf::reports {

inline std::string term_text(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u == 0x7f) {
      o += fmt::format("\\x{:02x}", u);
    } else if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      o += fmt::format("\\u00{:02x}", static_cast<unsigned char>(s[++i]));
    } else {
      o += s[i];
    }
  }
  return o;
}

}  // namespace rdmaconf::reports

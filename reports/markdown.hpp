#pragma once
// Text a report gave (a verdict, a title, a finding's fields, a file name),
// written into Markdown that other people open: nothing in it can start a
// heading, a row, a link, an image, HTML or a code span of its own.

#include <algorithm>
#include <string>
#include <string_view>

namespace rdmaconf::reports {

// Markdown for text a report gave (a verdict, a title), shown in a table
// cell or a heading: a control character (a newline would start a heading
// or a row of its own) becomes a space, and what could open markup that
// carries something in (a link, an image, HTML, a code span, a cell) is
// escaped with a backslash.
inline std::string md_text(std::string_view s) {
  std::string o;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) o += ' ';
    else if (std::string_view("\\`[]<>|!").find(c) != std::string_view::npos) (o += '\\') += c;
    else o += c;
  }
  return o;
}

// The same as a code span in a table cell: fenced with one backtick more
// than the longest run inside, control characters as spaces, '|' escaped
// (GitHub's tables split cells at it even inside code).
inline std::string md_code(std::string_view s) {
  std::string body;
  std::size_t run = 0, longest = 0;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (u < 0x20 || u == 0x7f) body += ' ';
    else if (c == '|') body += "\\|";
    else body += c;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

}  // namespace rdmaconf::reports

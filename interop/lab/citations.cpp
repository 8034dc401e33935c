#include "interop/lab/citations.hpp"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace rdmaconf::interop::lab {

namespace {

constexpr std::size_t kMaxCitationText = 600;

std::string text_field(const nlohmann::json& j, const char* key, bool required) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw std::invalid_argument(fmt::format("{} is missing", key));
    return {};
  }
  if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxCitationText)
    throw std::invalid_argument(fmt::format("{}: expected a string of at most {} octets", key, kMaxCitationText));
  return it->get<std::string>();
}

Citation::Lines parse_lines(const std::string& kernel, const nlohmann::json& v) {
  const auto bad = [&] {
    return std::invalid_argument(fmt::format("lines.{}: expected \"FIRST-LAST\" or \"LINE\" (line numbers from 1)", kernel));
  };
  if (!v.is_string()) throw bad();
  const std::string s = v.get<std::string>();
  Citation::Lines l;
  const auto number = [&](std::string_view t) {
    if (t.empty() || t.size() > 7 || t.find_first_not_of("0123456789") != std::string_view::npos) throw bad();
    return static_cast<unsigned>(std::stoul(std::string(t)));
  };
  const auto dash = s.find('-');
  l.first = number(std::string_view(s).substr(0, dash));
  l.last = dash == std::string::npos ? l.first : number(std::string_view(s).substr(dash + 1));
  if (l.first == 0 || l.last < l.first) throw bad();
  return l;
}

// The function whose body holds line `n` (1-based) of `lines`: the nearest
// definition at or above it that starts at column 0 and is no prototype, with
// no closing brace at column 0 in between; empty when there is none.
std::string enclosing_function(const std::vector<std::string>& lines, unsigned n) {
  for (std::size_t i = n; i-- > 0;) {
    const std::string& l = lines[i];
    if (l.empty()) continue;
    if (l[0] == '}') return {};
    const bool starts = (l[0] >= 'a' && l[0] <= 'z') || (l[0] >= 'A' && l[0] <= 'Z') || l[0] == '_';
    const auto paren = l.find('(');
    if (!starts || paren == std::string::npos || l.back() == ';') continue;
    std::size_t end = paren;
    while (end > 0 && l[end - 1] == ' ') --end;
    std::size_t begin = end;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(l[begin - 1])) || l[begin - 1] == '_')) --begin;
    return l.substr(begin, end - begin);
  }
  return {};
}

}  // namespace

Citation parse_citation(const nlohmann::json& j) {
  Citation c;
  if (j.is_string()) {
    c.what = j.get<std::string>();
    if (c.what.empty() || c.what.size() > kMaxCitationText)
      throw std::invalid_argument(fmt::format("a note: expected 1..{} octets", kMaxCitationText));
    return c;
  }
  if (!j.is_object()) throw std::invalid_argument("expected a citation object {file, function, anchor, what, lines} or a note");
  for (const auto& [key, value] : j.items())
    if (key != "file" && key != "function" && key != "anchor" && key != "what" && key != "lines")
      throw std::invalid_argument(fmt::format("unknown field \"{}\"", key));
  c.file = text_field(j, "file", true);
  c.function = text_field(j, "function", false);
  c.anchor = text_field(j, "anchor", true);
  c.what = text_field(j, "what", true);
  if (c.file.empty() || c.file.front() == '/' || c.file.find("..") != std::string::npos)
    throw std::invalid_argument(fmt::format("file: expected a path inside the kernel's source, got \"{}\"", c.file));
  if (c.anchor.empty() || c.anchor.find('\n') != std::string::npos)
    throw std::invalid_argument("anchor: expected a fragment of one line of code");
  const auto lines = j.find("lines");
  if (lines == j.end() || !lines->is_object() || lines->empty())
    throw std::invalid_argument("lines: expected an object naming the lines in each kernel ({\"6.12\": \"619-621\"})");
  for (const auto& [kernel, v] : lines->items()) c.lines[kernel] = parse_lines(kernel, v);
  return c;
}

nlohmann::json Citation::to_json() const {
  if (note()) return what;
  nlohmann::json l = nlohmann::json::object();
  for (const auto& [k, v] : lines) l[k] = v.first == v.last ? fmt::format("{}", v.first) : fmt::format("{}-{}", v.first, v.last);
  return {{"file", file}, {"function", function}, {"anchor", anchor}, {"what", what}, {"lines", l}};
}

std::string Citation::where(const std::string& kernel) const {
  const auto it = lines.find(kernel);
  if (note() || it == lines.end()) return {};
  const auto& [first, last] = it->second;
  return fmt::format("{}:{}{}", file, first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last),
                     function.empty() ? "" : fmt::format(" in {}()", function));
}

std::vector<CitationProblem> check_citations(const std::map<std::string, std::vector<Citation>>& by_finding,
                                             const std::string& kernel, const std::filesystem::path& top) {
  std::vector<CitationProblem> out;
  std::map<std::string, std::vector<std::string>> files;  // read once each
  for (const auto& entry : by_finding)
    for (std::size_t i = 0; i < entry.second.size(); ++i) {
      // (Plain names, not structured bindings: Clang 14 cannot capture those in the lambda below.)
      const std::string& finding = entry.first;
      const Citation& c = entry.second[i];
      const auto it = c.lines.find(kernel);
      if (c.note() || it == c.lines.end()) continue;
      const unsigned first = it->second.first, last = it->second.last;
      const auto fail = [&](std::string why) {
        out.push_back({finding, i, fmt::format("findings.{}.source[{}] ({}:{}-{} on kernel {}): {}", finding, i, c.file, first, last,
                                               kernel, why)});
      };
      auto f = files.find(c.file);
      if (f == files.end()) {
        std::vector<std::string> text;
        std::ifstream in(top / c.file);
        for (std::string line; in && std::getline(in, line);) text.push_back(line);
        if (!in.eof()) text.clear();
        f = files.emplace(c.file, std::move(text)).first;
      }
      const auto& lines = f->second;
      if (lines.empty()) {
        fail(fmt::format("no such file in {}", top.string()));
        continue;
      }
      if (last > lines.size()) {
        fail(fmt::format("the file has {} lines", lines.size()));
        continue;
      }
      bool found = false;
      for (unsigned n = first; n <= last && !found; ++n) found = lines[n - 1].find(c.anchor) != std::string::npos;
      if (!found) {
        std::string at;
        for (std::size_t n = 0; n < lines.size() && at.empty(); ++n)
          if (lines[n].find(c.anchor) != std::string::npos) at = fmt::format("; it is at line {}", n + 1);
        fail(fmt::format("the lines do not hold \"{}\"{}", c.anchor, at.empty() ? "; the file does not hold it at all" : at));
        continue;
      }
      if (!c.function.empty()) {
        const std::string in = enclosing_function(lines, first);
        if (in != c.function)
          fail(fmt::format("the lines are in {}, not in {}()", in.empty() ? std::string("no function") : in + "()", c.function));
      }
    }
  return out;
}

}  // namespace rdmaconf::interop::lab

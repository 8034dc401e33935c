#pragma once
// Where in a kernel peer's source a finding comes from, per kernel of the
// lab's matrix (docs/lab.md, "Findings per kernel"): each citation names a
// file of the kernel's source, the function its lines are in, a fragment of
// the code those lines hold, and the lines in each kernel. The lab keeps the
// source of every kernel it builds (LAB/src/linux), and holds each citation
// against it, so that a citation cannot drift when a kernel moves its code.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmaconf::interop::lab {

struct Citation {
  std::string file;      // relative to the kernel source's top: drivers/infiniband/sw/siw/siw_cm.c
  std::string function;  // the function the lines are in; empty for declarations in a header
  std::string anchor;    // code the cited lines hold (one line's fragment)
  std::string what;      // what those lines do, in our words
  struct Lines {
    unsigned first = 0, last = 0;
  };
  std::map<std::string, Lines> lines;  // a kernel file's name (6.12, sid) -> the lines there
  // A citation written as text only (no file): shown, never held.
  bool note() const { return file.empty(); }
  nlohmann::json to_json() const;
  // "siw_cm.c:619-621 in siw_proc_mpareq()" for a kernel's lines ("" when it has none).
  std::string where(const std::string& kernel) const;
};

// A citation as cells.json gives it: an object {file, function, anchor, what,
// lines: {KERNEL: "A-B" or "A"}}, or a string (a note). Throws
// std::invalid_argument naming the field and what it expected.
Citation parse_citation(const nlohmann::json& j);

// Each citation with lines for `kernel`, held against that kernel's source
// tree (`top` holds drivers/...): the file exists, the lines lie in it, the
// anchor is in those lines, and the function named is the one they are in
// (the nearest definition above them, starting at column 0, whose body has
// not closed). One message per problem, naming the finding, the citation and
// what was found instead; none when every citation holds.
struct CitationProblem {
  std::string finding;
  std::size_t index = 0;  // the citation's place in the finding's source
  std::string problem;
};
std::vector<CitationProblem> check_citations(const std::map<std::string, std::vector<Citation>>& by_finding,
                                             const std::string& kernel, const std::filesystem::path& top);

}  // namespace rdmaconf::interop::lab

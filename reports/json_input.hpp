#pragma once
// The JSON the report commands are handed (check and lab reports, shards,
// history records, coverage files, manifests) comes from wherever a user
// found it, so its nesting is bounded before anything walks it: copying,
// dumping and destroying a value recurse once per level, and a document
// nested 100 000 deep would overflow the stack. No report this tool writes
// nests deeper than a dozen levels.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/compare.hpp"

namespace rdmaconf::reports {

inline constexpr int kMaxJsonDepth = 200;

// nlohmann::json::parse(in, keep, false): a discarded value when `in` is not
// JSON (or, with `say_where`, ReportError "NAME: not JSON at octet N: ..."),
// ReportError ("NAME: nested deeper than 200 levels") when it nests deeper
// than kMaxJsonDepth. `keep`, when given, decides as parse's callback does.
template <class Input>
nlohmann::json parse_input_json(Input&& in, const std::string& name, const nlohmann::json::parser_callback_t& keep = nullptr,
                                bool say_where = false) {
  const nlohmann::json::parser_callback_t bounded = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    if ((ev == nlohmann::json::parse_event_t::object_start || ev == nlohmann::json::parse_event_t::array_start) &&
        depth > kMaxJsonDepth)
      throw ReportError(fmt::format("{}: nested deeper than {} levels", name, kMaxJsonDepth));
    return keep ? keep(depth, ev, parsed) : true;
  };
  if (!say_where) return nlohmann::json::parse(std::forward<Input>(in), bounded, false);
  try {
    return nlohmann::json::parse(std::forward<Input>(in), bounded, true);
  } catch (const nlohmann::json::parse_error& e) {
    throw ReportError(fmt::format("{}: not JSON at octet {}: {}", name, e.byte, e.what()));
  }
}

// A key as a JSON Pointer's token (RFC 6901: '~' as "~0", '/' as "~1").
std::string pointer_token(const std::string& key);

// The verdicts a lab cell can have.
inline const std::vector<std::string> kLabVerdicts{"green", "red", "skipped"};
// The verdicts a check result can have.
inline const std::vector<std::string> kCheckVerdicts{"PASS", "FAIL", "INCONCLUSIVE", "NOT_APPLICABLE"};

// The shape of a report as its readers hold it, field by field: a field of
// another type than the tool writes is a ReportError naming the file and the
// field's JSON path ("FILE: /cells/3/verdict: expected a string, got a
// number"), never a type_error from the JSON library. `at` is the JSON path
// of the value handed in ("" for the document).
struct Shape {
  std::string file;

  static const char* kind(const nlohmann::json& j);
  [[noreturn]] void fail(const std::string& at, const char* want, const nlohmann::json& j) const;
  [[noreturn]] void fail(const std::string& at, const std::string& message) const;
  // The member `key` of object `j`: nullptr when it is absent (or null) and
  // not `required`.
  const nlohmann::json* member(const nlohmann::json& j, const std::string& at, const char* key, bool required) const;

  // Checks of a value.
  void object(const nlohmann::json& j, const std::string& at) const;
  void number(const nlohmann::json& j, const std::string& at) const;
  void text(const nlohmann::json& j, const std::string& at) const;
  void texts(const nlohmann::json& j, const std::string& at) const;
  // Members of object `j` that are numbers where present.
  void numbers(const nlohmann::json& j, const std::string& at, std::initializer_list<const char*> keys, bool required) const;

  // A member's value, or `fallback` where it is absent or null.
  std::string text_of(const nlohmann::json& j, const std::string& at, const char* key, const std::string& fallback = {}) const;
  // A non-negative integer.
  std::uint64_t count_of(const nlohmann::json& j, const std::string& at, const char* key, std::uint64_t fallback = 0) const;
  bool flag_of(const nlohmann::json& j, const std::string& at, const char* key, bool fallback = false) const;
  // An object or array member (an empty one where absent).
  const nlohmann::json& object_of(const nlohmann::json& j, const std::string& at, const char* key) const;
  const nlohmann::json& array_of(const nlohmann::json& j, const std::string& at, const char* key) const;
  // A member that is one of `allowed`.
  std::string one_of(const nlohmann::json& j, const std::string& at, const char* key, const std::vector<std::string>& allowed,
                     bool required) const;
};

// Where a streaming parse is (parse_input_json's callback sees every
// event): the chain of containers open, each by its key or array index.
class StreamPath {
 public:
  // Call first from the callback, with its depth, event and value.
  void event(int depth, nlohmann::json::parse_event_t ev, const nlohmann::json& parsed);
  // Whether the innermost container open is at `pattern` below the
  // document ("*" matches any key or index): {"inputs", "*"} is an input.
  // At an object_end or array_end event it is still open.
  bool at(std::initializer_list<const char*> pattern) const;
  // The JSON path of the innermost container open ("/inputs/3").
  std::string pointer() const;
  // The JSON path of the entry an array just took (at a value event).
  std::string entry_pointer() const;

 private:
  struct Level {
    std::string name;
    bool array;
    std::size_t next = 0;
  };
  std::vector<Level> levels_;
  std::string key_;
};

}  // namespace rdmaconf::reports

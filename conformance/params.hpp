#pragma once
// A scope's parameters (ScopeResult::params) as the text of a JSON object.
// A check of a million connections hands a million scopes to the report
// writer; as nlohmann::json documents their parameters were some thirty
// allocations each, built, handed to the writer's thread and freed again. As
// text they are one string.
#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocols/core/json_text.hpp"

namespace rdmaconf::conformance {

// JSON string escaping (protocols/core/json_text.hpp), shared with the report writer.
using protocols::json_string, protocols::put_json_string, protocols::utf8_runs, protocols::utf8_sequence;

// A document's compact text, as the JSON report writes it (invalid UTF-8
// replaced, so that the text is always valid JSON).
std::string params_text(const nlohmann::json& j);

// An object built member by member without a document. Keys are plain
// identifiers (nothing in them needs escaping); a key set again keeps its
// last value; text() lists the keys sorted, as nlohmann::json writes an
// object, so the two forms write the same text.
class Params {
 public:
  template <std::integral T>
  Params& set(std::string_view key, T v) {
    if constexpr (std::same_as<T, bool>) {
      return set_json(key, v ? "true" : "false");
    } else {
      char buf[24];
      return set_json(key, std::string_view(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf)));
    }
  }
  Params& set(std::string_view key, const Params& object) { return set_json(key, object.text()); }
  Params& set_string(std::string_view key, std::string_view s) { return set_json(key, json_string(s)); }
  // `json` is the value's JSON text.
  Params& set_json(std::string_view key, std::string_view json);
  std::string text() const;

 private:
  // Keys and values live in one buffer (a scope's parameters are built for
  // every connection: one allocation, not two per member).
  struct Member {
    std::uint32_t key, key_len, value, value_len;
  };
  std::string_view at(std::uint32_t off, std::uint32_t len) const { return std::string_view(buf_).substr(off, len); }
  std::uint32_t append(std::string_view s);
  std::string buf_;
  std::vector<Member> members_;
};

// JSON array text of the given elements' texts.
std::string json_array(const std::vector<std::string>& elements);

}  // namespace rdmaconf::conformance

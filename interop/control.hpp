#pragma once
// Checked reading of the JSON control messages the interop tools exchange
// (docs/interop.md). Every field is read with its type and range, and a wrong
// one is a message naming the field, what was expected and what came
// ("hello.size: expected an integer in 0..67108864, got 1e+30"), never an
// exception or a silent conversion. The first problem is kept; reads after
// it return their defaults, so a schema reads as a straight list of fields.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmaconf::interop {

class ControlFields {
 public:
  // `what` names the message in errors ("hello", "ready"); a message that is
  // not a JSON object is an error at once.
  ControlFields(const nlohmann::json& message, std::string_view what);

  // An integer (a JSON number with no fraction or exponent part) in lo..hi;
  // missing: `dflt`, or an error when there is none.
  std::uint64_t integer(const char* key, std::uint64_t lo, std::uint64_t hi, std::optional<std::uint64_t> dflt = std::nullopt);
  bool flag(const char* key, std::optional<bool> dflt = std::nullopt);
  // A string of at most max_len octets.
  std::string text(const char* key, std::size_t max_len, std::optional<std::string> dflt = std::nullopt);
  // A nested object (null when missing and optional).
  const nlohmann::json* object(const char* key, bool optional = false);
  // A nested array (null when missing and optional).
  const nlohmann::json* array(const char* key, bool optional = false);
  // An array of strings of at most max_len octets each (empty when missing and optional).
  std::vector<std::string> strings(const char* key, std::size_t max_len, bool optional = false);
  // A field not in `known` is an error (for files a person writes, where a
  // misspelt field must not pass silently as its default).
  void only(std::initializer_list<std::string_view> known) { only(std::vector<std::string_view>(known)); }
  void only(const std::vector<std::string_view>& known);
  // Records a problem found by the caller (a cross-field rule).
  void fail(std::string why);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  const nlohmann::json* find(const char* key, bool optional);
  const nlohmann::json* typed(const char* key, bool optional, bool (nlohmann::json::*is)() const noexcept, const char* kind);
  const nlohmann::json& m_;
  std::string what_, error_;
};

// The deepest nesting of arrays and objects a control line may hold (the
// messages of docs/interop.md need three).
inline constexpr unsigned kMaxControlDepth = 16;

// One control line as a client or peer sent it, read as a JSON object; else
// nullopt and why, naming the octet offset where it matters: octets that are
// not UTF-8 (RFC 3629), nesting deeper than kMaxControlDepth (checked before
// parsing, so no depth reaches the parser or a printer), not JSON, or JSON
// that is not an object.
std::optional<nlohmann::json> parse_control_line(std::string_view line, std::string& err);

// The offset of the first octet of `s` that is not part of a well-formed
// UTF-8 sequence (RFC 3629: no overlong forms, surrogates or values beyond
// U+10FFFF), or nullopt when all of it is.
std::optional<std::size_t> first_invalid_utf8(std::string_view s);

// Text from outside kept as it is where it is UTF-8, each octet that is not
// written as \\xNN (so that it can go into JSON).
std::string as_utf8(std::string_view s);

// Text from outside quoted in a message: its first `max` octets, with
// octets that are not printable ASCII written as \xNN, "..." when cut.
std::string printable(std::string_view s, std::size_t max);

// A JSON value as one line of text, for sending or printing: never throws
// (a string that is not UTF-8 has its bad octets replaced by U+FFFD).
std::string safe_dump(const nlohmann::json& j, int indent = -1);

// A UDP or TCP endpoint a control message names, as "ADDR:PORT" or
// "[V6ADDR]:PORT": numeric, a port other than 0, and a unicast address (not
// unspecified, broadcast or multicast). With `same_host` (the control
// connection's remote endpoint, as endpoint_name gives it), also that
// endpoint's address (any loopback address for a loopback one): a client
// names only itself. Empty when good, else why not.
std::string check_unicast_endpoint(std::string_view endpoint, std::string_view same_host = {});

}  // namespace rdmaconf::interop

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
  void only(std::initializer_list<std::string_view> known);
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

// A UDP or TCP endpoint a control message names, as "ADDR:PORT" or
// "[V6ADDR]:PORT": numeric, a port other than 0, and a unicast address (not
// unspecified, broadcast or multicast). With `same_host` (the control
// connection's remote endpoint, as endpoint_name gives it), also that
// endpoint's address (any loopback address for a loopback one): a client
// names only itself. Empty when good, else why not.
std::string check_unicast_endpoint(std::string_view endpoint, std::string_view same_host = {});

}  // namespace rdmaconf::interop

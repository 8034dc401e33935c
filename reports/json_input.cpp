#include "reports/json_input.hpp"

#include <string_view>

#include <fmt/ranges.h>

namespace rdmaconf::reports {

using json = nlohmann::json;

std::string pointer_token(const std::string& key) {
  std::string token;
  for (const char ch : key) token += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
  return token;
}

const char* Shape::kind(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "null";
}

void Shape::fail(const std::string& at, const char* want, const json& j) const {
  throw ReportError(fmt::format("{}: {}: expected {}, got {}", file, at.empty() ? "/" : at, want, kind(j)));
}

void Shape::fail(const std::string& at, const std::string& message) const {
  throw ReportError(fmt::format("{}: {}: {}", file, at.empty() ? "/" : at, message));
}

const json* Shape::member(const json& j, const std::string& at, const char* key, bool required) const {
  object(j, at);
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw ReportError(fmt::format("{}: {}/{}: missing", file, at, key));
    return nullptr;
  }
  return &*it;
}

void Shape::object(const json& j, const std::string& at) const {
  if (!j.is_object()) fail(at, "an object", j);
}
void Shape::number(const json& j, const std::string& at) const {
  if (!j.is_number()) fail(at, "a number", j);
}
void Shape::text(const json& j, const std::string& at) const {
  if (!j.is_string()) fail(at, "a string", j);
}
void Shape::texts(const json& j, const std::string& at) const {
  if (!j.is_array()) fail(at, "an array", j);
  for (std::size_t i = 0; i < j.size(); ++i) text(j[i], fmt::format("{}/{}", at, i));
}
void Shape::numbers(const json& j, const std::string& at, std::initializer_list<const char*> keys, bool required) const {
  for (const char* k : keys)
    if (const json* v = member(j, at, k, required)) number(*v, fmt::format("{}/{}", at, k));
}

std::string Shape::text_of(const json& j, const std::string& at, const char* key, const std::string& fallback) const {
  const json* v = member(j, at, key, false);
  if (!v) return fallback;
  text(*v, fmt::format("{}/{}", at, key));
  return v->get<std::string>();
}

std::uint64_t Shape::count_of(const json& j, const std::string& at, const char* key, std::uint64_t fallback) const {
  const json* v = member(j, at, key, false);
  if (!v) return fallback;
  if (!v->is_number_unsigned()) fail(fmt::format("{}/{}", at, key), "a non-negative integer", *v);
  return v->get<std::uint64_t>();
}

bool Shape::flag_of(const json& j, const std::string& at, const char* key, bool fallback) const {
  const json* v = member(j, at, key, false);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(fmt::format("{}/{}", at, key), "a boolean", *v);
  return v->get<bool>();
}

const json& Shape::object_of(const json& j, const std::string& at, const char* key) const {
  static const json empty = json::object();
  const json* v = member(j, at, key, false);
  if (!v) return empty;
  object(*v, fmt::format("{}/{}", at, key));
  return *v;
}

const json& Shape::array_of(const json& j, const std::string& at, const char* key) const {
  static const json empty = json::array();
  const json* v = member(j, at, key, false);
  if (!v) return empty;
  if (!v->is_array()) fail(fmt::format("{}/{}", at, key), "an array", *v);
  return *v;
}

std::string Shape::one_of(const json& j, const std::string& at, const char* key, const std::vector<std::string>& allowed,
                          bool required) const {
  const json* v = member(j, at, key, required);
  if (!v) return {};
  const std::string where = fmt::format("{}/{}", at, key);
  text(*v, where);
  const auto& s = v->get_ref<const std::string&>();
  for (const auto& a : allowed)
    if (s == a) return s;
  fail(where, fmt::format("expected one of {}, got {}", fmt::join(allowed, ", "), json(s).dump(-1, ' ', false, json::error_handler_t::replace)));
}

void StreamPath::event(int depth, json::parse_event_t ev, const json& parsed) {
  // The library leaves out some events inside a value a callback discarded
  // (its end, its scalars), so the levels are set by the callback's depth
  // (the document's is 0): a container starting or ending at depth d is
  // levels_[d]; a key or value at depth d belongs to levels_[d - 1].
  const auto d = static_cast<std::size_t>(depth < 0 ? 0 : depth);
  const auto keep_to = [&](std::size_t n) {
    if (levels_.size() > n) levels_.resize(n);
  };
  const auto name = [&] {
    if (levels_.empty()) return std::string();
    if (levels_.back().array) return std::to_string(levels_.back().next++);
    return pointer_token(key_);
  };
  switch (ev) {
    case json::parse_event_t::key:
      keep_to(d);
      key_ = parsed.is_string() ? parsed.get<std::string>() : std::string();
      break;
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      keep_to(d);
      levels_.push_back({name(), ev == json::parse_event_t::array_start});
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      keep_to(d + 1);  // (the container stays open for this event)
      break;
    case json::parse_event_t::value:
      keep_to(d);
      name();  // an array's entry takes its index
      break;
  }
}

bool StreamPath::at(std::initializer_list<const char*> pattern) const {
  if (levels_.size() != pattern.size() + 1) return false;
  std::size_t i = 1;
  for (const char* p : pattern) {
    if (std::string_view(p) != "*" && levels_[i].name != p) return false;
    ++i;
  }
  return true;
}

std::string StreamPath::pointer() const {
  std::string out;
  for (std::size_t i = 1; i < levels_.size(); ++i) out += "/" + levels_[i].name;
  return out;
}

std::string StreamPath::entry_pointer() const {
  if (levels_.empty() || !levels_.back().array || levels_.back().next == 0) return pointer();
  return fmt::format("{}/{}", pointer(), levels_.back().next - 1);
}

}  // namespace rdmaconf::reports

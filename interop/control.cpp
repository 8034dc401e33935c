#include "interop/control.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engines/common/socket.hpp"

namespace rdmaconf::interop {

using nlohmann::json;

namespace {

std::string shown(const json& v) {
  std::string s = safe_dump(v);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// The deepest nesting of `line`'s arrays and objects, brackets inside
// strings not counted; stops counting past `limit`, at the octet offset
// where the limit was passed.
struct Depth {
  unsigned max = 0;
  std::size_t where = 0;
};
Depth nesting(std::string_view line, unsigned limit) {
  Depth d;
  unsigned depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      d.max = std::max(d.max, ++depth);
      if (depth > limit) {
        d.where = i;
        return d;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return d;
}

}  // namespace

std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The length of the sequence and the range of its second octet (RFC 3629 §4).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;  // no surrogates
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;  // nothing beyond U+10FFFF
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return i;  // 0x80..0xC1 (a continuation or an overlong lead), 0xF5..0xFF
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::nullopt;
}

std::string as_utf8(std::string_view s) {
  std::string out;
  while (const auto bad = first_invalid_utf8(s)) {
    out += s.substr(0, *bad);
    out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[*bad]));
    s.remove_prefix(*bad + 1);
  }
  out += s;
  return out;
}

std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max) out += "...";
  return out;
}

std::string safe_dump(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

std::optional<json> parse_control_line(std::string_view line, std::string& err) {
  if (const auto bad = first_invalid_utf8(line)) {
    err = fmt::format("control line: octet {} (0x{:02x}) is not valid UTF-8", *bad, static_cast<unsigned char>(line[*bad]));
    return std::nullopt;
  }
  if (const Depth d = nesting(line, kMaxControlDepth); d.max > kMaxControlDepth) {
    err = fmt::format("control line: arrays and objects nested deeper than {} (at octet {})", kMaxControlDepth, d.where);
    return std::nullopt;
  }
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    err = fmt::format("control line: not a JSON object: {}", printable(line, 80));
    return std::nullopt;
  }
  return j;
}

ControlFields::ControlFields(const json& message, std::string_view what) : m_(message), what_(what) {
  if (!m_.is_object()) error_ = fmt::format("{}: expected a JSON object, got {}", what_, shown(m_));
}

void ControlFields::fail(std::string why) {
  if (error_.empty()) error_ = fmt::format("{}: {}", what_, why);
}

const json* ControlFields::find(const char* key, bool optional) {
  if (!ok()) return nullptr;
  const auto it = m_.find(key);
  if (it == m_.end()) {
    if (!optional) fail(fmt::format("{} is missing", key));
    return nullptr;
  }
  return &*it;
}

std::uint64_t ControlFields::integer(const char* key, std::uint64_t lo, std::uint64_t hi, std::optional<std::uint64_t> dflt) {
  const json* v = find(key, dflt.has_value());
  if (!v) return dflt.value_or(lo);
  // (is_number_integer: written without fraction or exponent)
  const bool whole = v->is_number_unsigned() || (v->is_number_integer() && v->get<std::int64_t>() >= 0);
  if (!whole || v->get<std::uint64_t>() < lo || v->get<std::uint64_t>() > hi) {
    fail(fmt::format("{}: expected an integer in {}..{}, got {}", key, lo, hi, shown(*v)));
    return dflt.value_or(lo);
  }
  return v->get<std::uint64_t>();
}

bool ControlFields::flag(const char* key, std::optional<bool> dflt) {
  const json* v = find(key, dflt.has_value());
  if (!v) return dflt.value_or(false);
  if (!v->is_boolean()) {
    fail(fmt::format("{}: expected true or false, got {}", key, shown(*v)));
    return dflt.value_or(false);
  }
  return v->get<bool>();
}

std::string ControlFields::text(const char* key, std::size_t max_len, std::optional<std::string> dflt) {
  const json* v = find(key, dflt.has_value());
  if (!v) return dflt.value_or(std::string());
  if (!v->is_string() || v->get_ref<const std::string&>().size() > max_len) {
    fail(fmt::format("{}: expected a string of at most {} octets, got {}", key, max_len, shown(*v)));
    return dflt.value_or(std::string());
  }
  return v->get<std::string>();
}

const json* ControlFields::typed(const char* key, bool optional, bool (json::*is)() const noexcept, const char* kind) {
  const json* v = find(key, optional);
  if (v && !(v->*is)()) {
    fail(fmt::format("{}: expected {}, got {}", key, kind, shown(*v)));
    return nullptr;
  }
  return v;
}

const json* ControlFields::object(const char* key, bool optional) { return typed(key, optional, &json::is_object, "an object"); }

const json* ControlFields::array(const char* key, bool optional) { return typed(key, optional, &json::is_array, "an array"); }

std::vector<std::string> ControlFields::strings(const char* key, std::size_t max_len, bool optional) {
  std::vector<std::string> out;
  const json* v = array(key, optional);
  if (!v) return out;
  for (const auto& e : *v) {
    if (!e.is_string() || e.get_ref<const std::string&>().size() > max_len) {
      fail(fmt::format("{}: expected strings of at most {} octets, got {}", key, max_len, shown(e)));
      return {};
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

void ControlFields::only(const std::vector<std::string_view>& known) {
  if (!ok()) return;
  for (const auto& [key, value] : m_.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return fail(fmt::format("unknown field \"{}\" (known: {})", key, fmt::join(known, ", ")));
}

std::string check_unicast_endpoint(std::string_view endpoint, std::string_view same_host) {
  sockaddr_storage a{};
  unsigned len = 0;
  std::string err;
  if (!engine::parse_endpoint(endpoint, a, len, err)) return err;
  bool bad_addr = false;
  std::uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    const std::uint32_t h = ntohl(in.sin_addr.s_addr);
    port = ntohs(in.sin_port);
    bad_addr = h == 0 || h == 0xFFFFFFFFu || (h >> 28) == 0xE;  // unspecified, broadcast, 224.0.0.0/4
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    port = ntohs(in6.sin6_port);
    bad_addr = IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr) || IN6_IS_ADDR_MULTICAST(&in6.sin6_addr);
  } else {
    return fmt::format("{}: not an IPv4 or IPv6 endpoint", endpoint);
  }
  if (bad_addr) return fmt::format("{}: not a unicast address", endpoint);
  if (port == 0) return fmt::format("{}: port 0", endpoint);
  if (!same_host.empty()) {
    sockaddr_storage h{};
    if (!engine::parse_endpoint(same_host, h, len, err)) return err;
    // The address as 16 octets, IPv4 ones mapped (::ffff:a.b.c.d), so that a
    // control connection accepted on an IPv6 socket compares with IPv4.
    auto mapped = [](const sockaddr_storage& x) {
      in6_addr m{};
      if (x.ss_family == AF_INET6) return reinterpret_cast<const sockaddr_in6&>(x).sin6_addr;
      m.s6_addr[10] = m.s6_addr[11] = 0xFF;
      std::memcpy(m.s6_addr + 12, &reinterpret_cast<const sockaddr_in&>(x).sin_addr, 4);
      return m;
    };
    auto loopback = [](const in6_addr& x) { return IN6_IS_ADDR_LOOPBACK(&x) || (IN6_IS_ADDR_V4MAPPED(&x) && x.s6_addr[12] == 127); };
    const in6_addr ma = mapped(a), mh = mapped(h);
    const bool same = (loopback(ma) && loopback(mh)) || std::memcmp(&ma, &mh, sizeof ma) == 0;
    if (!same) return fmt::format("{}: not the address the control connection came from ({})", endpoint, same_host);
  }
  return {};
}

}  // namespace rdmaconf::interop

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
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

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

void ControlFields::only(std::initializer_list<std::string_view> known) {
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

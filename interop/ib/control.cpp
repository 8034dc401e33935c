#include "interop/ib/control.hpp"

#include <fmt/format.h>

#include "interop/control.hpp"

namespace rdmaconf::interop::ib {

using nlohmann::json;
using engine::ib::QpType;

std::string_view type_name(QpType t) { return t == QpType::rc ? "rc" : t == QpType::uc ? "uc" : "ud"; }

std::optional<QpType> type_of(std::string_view s) {
  if (s == "rc") return QpType::rc;
  if (s == "uc") return QpType::uc;
  if (s == "ud") return QpType::ud;
  return std::nullopt;
}

namespace {

constexpr std::size_t kMaxText = 256;
constexpr std::uint64_t kAny = ~0ull;

// The object a message carries under `key` ({"hello": {...}}), or null with `err` set.
const json* body_of(const json& msg, const char* key, std::string& err) {
  ControlFields top(msg, "control message");
  const json* body = top.object(key);
  if (!body) err = top.error();
  return body;
}

// An endpoint field, which must also pass check_unicast_endpoint against `host`.
std::string endpoint(ControlFields& f, std::string_view host) {
  std::string e = f.text("udp", kMaxText);
  if (f.ok())
    if (std::string bad = check_unicast_endpoint(e, host); !bad.empty()) f.fail("udp: " + bad);
  return e;
}

template <class T>
std::optional<T> done_reading(ControlFields& f, T value, std::string& err) {
  if (f.ok()) return value;
  err = f.error();
  return std::nullopt;
}

}  // namespace

std::optional<Hello> read_hello(const json& msg, std::uint64_t max_size, std::string_view client, std::string& err) {
  const json* body = body_of(msg, "hello", err);
  if (!body) return std::nullopt;
  ControlFields f(*body, "hello");
  Hello h;
  h.scenario = f.text("scenario", kMaxText, "");
  const std::string type = f.text("type", kMaxText);
  if (f.ok() && !type_of(type)) f.fail(fmt::format("type: expected rc, uc or ud, got \"{:.20}\"", type));
  h.type = type_of(type).value_or(QpType::rc);
  h.qpn = static_cast<std::uint32_t>(f.integer("qpn", 1, kMaxQpn));
  h.psn = static_cast<std::uint32_t>(f.integer("psn", 0, kMaxPsn));
  h.udp = endpoint(f, client);
  h.mtu = static_cast<unsigned>(f.integer("mtu", 256, 4096, 1024));
  h.size = f.integer("size", 0, max_size, 0);
  h.buffer = f.integer("buffer", 0, max_size, 0);
  h.recvs = f.integer("recvs", 0, kMaxRecvs, 0);
  h.seed = f.integer("seed", 0, kAny, 0);
  if (f.ok() && h.recvs * h.size > max_size)
    f.fail(fmt::format("{} receives of {} octets: beyond --max-size {}", h.recvs, h.size, max_size));
  return done_reading(f, h, err);
}

std::optional<Ready> read_ready(const json& msg, std::string_view peer, std::string& err) {
  if (msg.is_object() && msg.contains("error") && msg["error"].is_string()) {
    err = fmt::format("the responder refused: {:.300}", msg["error"].get<std::string>());
    return std::nullopt;
  }
  const json* body = body_of(msg, "ready", err);
  if (!body) return std::nullopt;
  ControlFields f(*body, "ready");
  Ready r;
  r.qpn = static_cast<std::uint32_t>(f.integer("qpn", 1, kMaxQpn));
  r.psn = static_cast<std::uint32_t>(f.integer("psn", 0, kMaxPsn));
  r.udp = endpoint(f, peer);
  r.rkey = static_cast<std::uint32_t>(f.integer("rkey", 0, 0xFFFFFFFF, 0));
  r.va = f.integer("va", 0, kAny, 0);
  r.length = f.integer("length", 0, kAny, 0);
  r.atomic_rkey = static_cast<std::uint32_t>(f.integer("atomic_rkey", 0, 0xFFFFFFFF, 0));
  r.atomic_va = f.integer("atomic_va", 0, kAny, 0);
  r.qkey = static_cast<std::uint32_t>(f.integer("qkey", 0, 0xFFFFFFFF, 0));
  return done_reading(f, r, err);
}

std::optional<Done> read_done(const json& msg, std::string& err) {
  ControlFields f(msg, "done");
  if (f.ok() && !msg.contains("done")) return std::nullopt;
  if (f.ok() && !f.flag("done")) f.fail("done: expected true");
  Done d;
  d.packets_sent = f.integer("packets_sent", 0, kAny, 0);
  return done_reading(f, d, err);
}

bool check_result(const json& msg, std::string& err) {
  ControlFields f(msg, "result");
  for (const char* k : {"recv_count", "recv_digest", "src_qp", "buffer_digest", "atomic_value"}) (void)f.integer(k, 0, kAny, 0);
  (void)f.text("state", kMaxText, "");
  (void)f.text("error", 4096, "");
  if (const json* c = f.object("counters", true)) {
    ControlFields cf(*c, "result.counters");
    for (const auto& [k, v] : c->items()) (void)cf.integer(k.c_str(), 0, kAny);
    if (!cf.ok()) f.fail(cf.error());
  }
  if (const json* r = f.array("refusals", true)) {
    for (const auto& item : *r) {
      ControlFields rf(item, "result.refusals[]");
      (void)rf.text("what", kMaxText);
      (void)rf.text("why", 4096, "");
      (void)rf.integer("psn", 0, kMaxPsn, 0);
      if (!rf.ok()) {
        f.fail(rf.error());
        break;
      }
    }
  }
  if (const json* s = f.object("recv_statuses", true)) {
    ControlFields sf(*s, "result.recv_statuses");
    for (const auto& [k, v] : s->items()) (void)sf.integer(k.c_str(), 0, kAny);
    if (!sf.ok()) f.fail(sf.error());
  }
  if (const json* i = f.array("immediates", true))
    for (const auto& v : *i)
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)) {
        f.fail("immediates: expected integers");
        break;
      }
  err = f.error();
  return f.ok();
}

}  // namespace rdmaconf::interop::ib

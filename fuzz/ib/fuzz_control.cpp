// The RoCE interop control messages: any line a hostile client or peer sends
// (octets that are not UTF-8, deep nesting, wrong types) is read or refused
// with a reason and an error reply that can be sent, then goes through the
// schemas (hello, ready, done, result) without throwing, and a message a
// schema accepts holds values in its ranges.
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "interop/control.hpp"
#include "interop/ib/control.hpp"

using nlohmann::json;
namespace ib = rdmaconf::interop::ib;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  std::string err;
  const auto parsed = rdmaconf::interop::parse_control_line(line, err);
  // Whatever was refused, the error reply the peer sends about it is one
  // line of valid UTF-8 that reads back as {"error": ...}.
  const std::string reply = rdmaconf::interop::safe_dump(json{{"error", err}});
  if (rdmaconf::interop::first_invalid_utf8(reply) || reply.find('\n') != std::string::npos) std::abort();
  if (!parsed) {
    if (err.empty()) std::abort();  // refused without a reason
    (void)rdmaconf::interop::check_unicast_endpoint(line, "127.0.0.1:1");
    return 0;
  }
  const json& m = *parsed;
  err.clear();
  if (const auto h = ib::read_hello(m, 64u << 20, "127.0.0.1:1", err)) {
    if (h->qpn == 0 || h->qpn > ib::kMaxQpn || h->psn > ib::kMaxPsn || h->size > (64u << 20) || h->recvs * h->size > (64u << 20))
      std::abort();
  } else if (err.empty()) {
    std::abort();  // refused without a reason
  }
  err.clear();
  if (!ib::read_ready(m, "127.0.0.1:1", err) && err.empty()) std::abort();
  err.clear();
  (void)ib::read_done(m, err);
  if (m.is_object())
    for (const auto& [k, v] : m.items()) (void)ib::check_result(v, err);
  (void)ib::check_result(m, err);
  return 0;
}

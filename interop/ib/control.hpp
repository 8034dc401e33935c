#pragma once
// The RoCE interop control messages (docs/interop.md), one checked schema
// each: hello (requester to peer), ready (peer to requester), done (requester
// to peer), result (peer to requester). A message that does not fit its
// schema is refused with the reason; nothing in it is used.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engines/ib/qp.hpp"
#include "protocols/ib/headers.hpp"

namespace rdmaconf::interop::ib {

std::string_view type_name(engine::ib::QpType t);
std::optional<engine::ib::QpType> type_of(std::string_view s);

// The largest QPN and PSN: what the BTH's fields hold (protocols/ib's table).
inline constexpr std::uint64_t kMaxQpn = (1ull << protocols::ib::kBth.fields[protocols::ib::Bth::destqp].bit_width) - 1;
inline constexpr std::uint64_t kMaxPsn = (1ull << protocols::ib::kBth.fields[protocols::ib::Bth::psn].bit_width) - 1;
inline constexpr std::uint64_t kMaxRecvs = 1u << 20;

struct Hello {
  std::string scenario;
  engine::ib::QpType type = engine::ib::QpType::rc;
  std::uint32_t qpn = 0, psn = 0;
  std::string udp;
  unsigned mtu = 1024;
  std::uint64_t size = 0, buffer = 0, recvs = 0, seed = 0;
};
// `max_size`: the peer's --max-size (each buffer, and all receive slots
// together, at most that); `client`: the control connection's remote endpoint.
std::optional<Hello> read_hello(const nlohmann::json& msg, std::uint64_t max_size, std::string_view client, std::string& err);

struct Ready {
  std::uint32_t qpn = 0, psn = 0, rkey = 0, atomic_rkey = 0, qkey = 0;
  std::string udp;
  std::uint64_t va = 0, length = 0, atomic_va = 0;
};
// `peer`: the control connection's remote endpoint.
std::optional<Ready> read_ready(const nlohmann::json& msg, std::string_view peer, std::string& err);

struct Done {
  std::uint64_t packets_sent = 0;
};
// nullopt with `err` empty: not a done message (anything else the requester may send is ignored).
std::optional<Done> read_done(const nlohmann::json& msg, std::string& err);

// The peer's account: checked for types (integers, strings, the counters
// object, the refusals array of {what, why, psn}); the requester then reads it.
bool check_result(const nlohmann::json& msg, std::string& err);

}  // namespace rdmaconf::interop::ib

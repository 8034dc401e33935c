#pragma once
// What the parts of the RoCEv2 live suite share among themselves (catalog,
// requester, responder, perftest peer); not for other users.
#include <chrono>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "interop/ib/scenarios.hpp"

namespace rdmaconf::interop::ib {

using namespace engine;
using engine::ib::QpConfig, engine::ib::QpType, engine::ib::QueuePair, engine::ib::QpState, engine::ib::UdpLink,
    engine::ib::Mailbox;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// What the QP refused (the first 32), for reports.
nlohmann::json refusals_json(const eng::QueuePair& qp);

// The accept loop both servers share: each connection is a session in a
// thread of its own, at most max_sessions at once; beyond, a polite refusal
// (`busy` makes it in the client's protocol, if it has a way to say it).
// `between` runs around every accept. Returns once every session has ended.
void accept_sessions(int listen_fd, const PeerOptions& o, std::stop_token stop,
                     const std::function<void(nlohmann::json)>& report,
                     const std::function<nlohmann::json(int fd, std::uint64_t index)>& serve_one,
                     const std::function<std::string(const std::string& why)>& busy, const std::function<void()>& between);

}  // namespace rdmaconf::interop::ib

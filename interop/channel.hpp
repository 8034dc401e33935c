#pragma once
// The control channel of the live suites (docs/interop.md): JSON objects,
// one per line, over a stream socket. Every line is read through
// parse_control_line (its limits on size and nesting) and at most 1 MiB
// is held waiting for a line's end; a send never raises SIGPIPE.
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmaconf::interop {

// Sends one message as a line; false when the other side has gone.
bool send_message(int fd, const nlohmann::json& message);

class ControlChannel {
 public:
  // `stop`: a stop request ends a wait as a timeout does (a responder's session).
  explicit ControlChannel(int fd, std::stop_token stop = {}) : fd_(fd), stop_(std::move(stop)) {}
  int fd() const { return fd_; }
  bool send(const nlohmann::json& message) const { return send_message(fd_, message); }
  // The next message, if one is there or arrives within `timeout_ms`; a null
  // JSON value on timeout; nothing when the other side closed, sent a line
  // that is no JSON or one over the limits (`err` says which).
  std::optional<nlohmann::json> receive(int timeout_ms, std::string& err);

 private:
  int fd_;
  std::stop_token stop_;
  std::string buf_;
};

}  // namespace rdmaconf::interop

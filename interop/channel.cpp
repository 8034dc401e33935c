#include "interop/channel.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "interop/control.hpp"

namespace rdmaconf::interop {

namespace {
constexpr std::size_t kMaxLine = std::size_t{1} << 20;
}

bool send_message(int fd, const nlohmann::json& message) {
  const std::string s = safe_dump(message) + "\n";
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<nlohmann::json> ControlChannel::receive(int timeout_ms, std::string& err) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
      const std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return parse_control_line(line, err);
    }
    if (buf_.size() > kMaxLine) {
      err = "control connection: line longer than 1 MiB";
      return std::nullopt;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::clamp<decltype(left)>(left, 0, 100))) <= 0) {
      if (left <= 0 || stop_.stop_requested()) return nlohmann::json();
      continue;
    }
    char tmp[4096];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = "control connection closed by the other side";
      return std::nullopt;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
}

}  // namespace rdmaconf::interop

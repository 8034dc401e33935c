#pragma once
// Socket helpers shared by the engines' adapters: an owned descriptor,
// numeric endpoints, TCP listen / accept / connect.
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmaconf::engine {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// "ADDR:PORT", "[V6ADDR]:PORT" or "tcp://" followed by either. Numeric
// addresses only (no name resolution: the lab and tests use literals).
bool parse_endpoint(std::string_view text, sockaddr_storage& out, unsigned& len, std::string& err);
std::string endpoint_name(const sockaddr_storage& a);
// The other end of a connected socket ("" when it has none).
std::string remote_endpoint(int fd);
// 64 bits from the kernel's random source (getrandom): for values a remote
// peer must not guess (QPNs, PSNs, STag keys).
std::uint64_t random_u64();

Fd tcp_listen(std::string_view endpoint, std::string& err);
// The port a listening socket was bound to (useful with port 0).
std::uint16_t local_port(int fd);
// Waits up to timeout_ms for a connection; empty Fd on timeout (err says
// so). error_number, if given, gets accept's errno (0: timed out).
Fd tcp_accept(int listen_fd, int timeout_ms, std::string& err, int* error_number = nullptr);
Fd tcp_connect(std::string_view endpoint, int timeout_ms, std::string& err);

std::string errno_text(const char* what);
void set_nonblocking(int fd);
void set_nodelay(int fd);
// Waits for one event on fd (poll-style); false on timeout.
bool wait_fd(int fd, std::uint32_t events, int timeout_ms);

}  // namespace rdmaconf::engine

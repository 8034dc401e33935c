#pragma once
// The calling thread in a network namespace (one `ip netns add` made, under
// /var/run/netns) while the guard lives; sockets made meanwhile stay in it.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace rdmaconf::interop {

class InNetns {
 public:
  explicit InNetns(const std::string& ns) {
    self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (self_ < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0)
      error = "entering network namespace " + ns + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
  }
  ~InNetns() {
    if (self_ >= 0) {
      (void)setns(self_, CLONE_NEWNET);
      close(self_);
    }
  }
  InNetns(const InNetns&) = delete;
  InNetns& operator=(const InNetns&) = delete;
  std::string error;  // empty: the thread is in the namespace

 private:
  int self_ = -1;
};

}  // namespace rdmaconf::interop

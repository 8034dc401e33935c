#pragma once
// Network namespaces of our own (`ip netns add`, under /var/run/netns): the
// calling thread in one while a guard lives, and the namespaces a run makes,
// named so that they outlive no run.
#include <fcntl.h>
#include <sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "interop/child.hpp"

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

// The namespaces a live run makes are named rdmaconf-<tool>-<pid>-<part>
// after the process that made them. A run removes its own when it ends,
// and, on SIGTERM, SIGINT, SIGHUP, SIGQUIT or SIGPIPE, from the signal
// handler (unmounting and unlinking a namespace file are plain system calls,
// safe there), after killing the child processes it registered; the
// handler then ends the process by the same signal. What a run killed with
// SIGKILL left, the next run of any tool (or `rdmaconf unet cleanup`)
// removes: namespaces whose process no longer runs.
class RunNamespaces;


// One end of a veth pair, in a namespace of its own.
struct VethEnd {
  std::string ns, ifname, mac;
  std::vector<std::string> addresses;  // with prefix length, e.g. "10.77.0.1/24"
  struct Neighbour {
    std::string ip, mac;
  };
  std::vector<Neighbour> neighbours;  // permanent neighbour entries
};
// Makes both namespaces and the pair between them: the ends' MACs and
// addresses, loopback and both ends up, IPv6 off in both namespaces, the
// neighbour entries; with `tx_checksum_off`, each end's transmit checksum
// offload off (veth would leave checksums to a NIC that is not there).
// Empty on success, else the first command that failed and why.
std::string make_veth_pair(const VethEnd& a, const VethEnd& b, bool tx_checksum_off = false);

class RunNamespaces {
 public:
  // Removes namespaces rdmaconf-*-<pid>-* whose process is gone; their names.
  static std::vector<std::string> remove_stale();
  // A name for this run's namespace `part` of `tool` (registered: removed
  // by the destructor or the signal handler).
  std::string add(const std::string& tool, const std::string& part);
  // A child process (side B) killed before the namespaces go.
  void add_child(pid_t pid);
  ~RunNamespaces();  // removes what add() named, if it was made

 private:
  std::vector<std::string> names_;
};

}  // namespace rdmaconf::interop

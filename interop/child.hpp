#pragma once
// Child processes of the live suites, run one way: a function or a command
// in a child of its own process group, its standard output and error
// captured (bounded), an address-space limit, and a deadline at which the
// whole group is killed and reaped. What of the group still runs after the
// child's end (a plug-in or a tool that forked) is killed and named.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rdmaconf::interop {

struct ChildLimits {
  int timeout_ms = 10000;
  // Address space the child may take (0: no limit; none either in a
  // sanitizer build, whose shadow memory such a limit would refuse), and how
  // messages name the limit.
  std::uint64_t memory = 0;
  std::string memory_name = "memory limit";
  std::string timeout_hint = "a hang";  // what a missed deadline may mean, for its message
  std::size_t output_kept = 64 * 1024;  // of its standard output and error together
};

struct ChildEnd {
  std::string result;   // what the function returned (through a pipe of its own)
  std::string failure;  // empty: exited 0 and left nothing running
  std::string output;   // its standard output and error (the first output_kept octets)
  std::uint64_t output_dropped = 0;
  bool timed_out = false;
  int exit_status = 0;  // when it exited
  int signal = 0;       // when a signal ended it
};

// Runs `body` in the child; the string it returns comes back as `result`.
// The result travels through a pipe that the child's own children may hold
// open: the end is the child's exit, not the pipe's.
ChildEnd run_in_child(const std::function<std::string()>& body, const ChildLimits& limits);

// Runs a command (no shell; found on PATH) with standard input from
// /dev/null: empty when it exits 0, else a message that names the command
// and says how it ended, with the start of what it wrote to standard error.
std::string run_command(const std::vector<std::string>& argv, int timeout_ms = 10000);

}  // namespace rdmaconf::interop

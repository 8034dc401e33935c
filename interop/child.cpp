#include "interop/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "protocols/core/sanitizer.hpp"

namespace rdmaconf::interop {

namespace {
constexpr int kExitOutOfMemory = 71;
constexpr int kExitNoExec = 127;
}  // namespace

ChildEnd run_in_child(const std::function<std::string()>& body, const ChildLimits& limits) {
  // Orphans of the child (its own children) become ours, so that they can be
  // reaped once killed rather than left as zombies.
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  ChildEnd end;
  int res[2], out[2];
  if (pipe2(res, O_CLOEXEC) != 0) return end.failure = fmt::format("pipe: {}", std::strerror(errno)), end;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(res[0]);
    close(res[1]);
    return end.failure = fmt::format("pipe: {}", std::strerror(errno)), end;
  }
  std::fflush(nullptr);  // (nothing buffered in this process is written twice)
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {res[0], res[1], out[0], out[1]}) close(fd);
    return end.failure = fmt::format("fork: {}", std::strerror(errno)), end;
  }
  if (pid == 0) {
    setpgid(0, 0);
    close(res[0]);
    close(out[0]);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[1]);
    if (limits.memory && !kAddressSanitizer) {
      const rlimit lim{limits.memory, limits.memory};
      setrlimit(RLIMIT_AS, &lim);
    }
    std::string result;
    try {
      result = body();
    } catch (const std::bad_alloc&) {
      _exit(kExitOutOfMemory);
    }
    std::size_t done = 0;
    while (done < result.size()) {
      const ssize_t n = write(res[1], result.data() + done, result.size() - done);
      if (n <= 0) _exit(3);
      done += static_cast<std::size_t>(n);
    }
    std::fflush(nullptr);
    _exit(0);
  }
  setpgid(pid, pid);  // (also here: no race with the child's own call)
  close(res[1]);
  close(out[1]);
  for (int fd : {res[0], out[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);
  auto drain = [&] {
    char buf[65536];
    ssize_t n;
    while ((n = read(res[0], buf, sizeof buf)) > 0) end.result.append(buf, static_cast<std::size_t>(n));
    while ((n = read(out[0], buf, sizeof buf)) > 0) {
      const std::size_t keep = std::min<std::size_t>(static_cast<std::size_t>(n), limits.output_kept - end.output.size());
      end.output.append(buf, keep);
      end.output_dropped += static_cast<std::size_t>(n) - keep;
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.timeout_ms);
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t w = wait4(pid, &status, WNOHANG, &usage);
    if (w == pid) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      end.timed_out = true;
      kill(-pid, SIGKILL);
      while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
      }
      break;
    }
    pollfd p[2] = {{res[0], POLLIN, 0}, {out[0], POLLIN, 0}};
    (void)poll(p, 2, static_cast<int>(std::min<long long>(left, 50)));
    drain();
  }
  drain();
  // What of the group still runs after the child's end.
  unsigned left_behind = 0;
  if (kill(-pid, 0) == 0) {
    kill(-pid, SIGKILL);
    for (int i = 0; i < 200; ++i) {
      const pid_t w = waitpid(-pid, nullptr, WNOHANG);
      if (w > 0) {
        ++left_behind;
        continue;
      }
      if (w < 0 && errno == ECHILD && kill(-pid, 0) != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    left_behind = std::max(left_behind, 1u);
  }
  close(res[0]);
  close(out[0]);
  if (WIFEXITED(status)) end.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
  const std::uint64_t peak_mib = static_cast<std::uint64_t>(usage.ru_maxrss) / 1024, limit_mib = limits.memory >> 20;
  if (end.timed_out)
    end.failure = fmt::format("did not finish within {} ms ({})", limits.timeout_ms, limits.timeout_hint);
  else if (WIFEXITED(status) && end.exit_status == kExitOutOfMemory && limits.memory)
    end.failure = fmt::format("ran out of memory at the {} of {} MiB", limits.memory_name, limit_mib);
  else if (end.signal)
    end.failure = fmt::format("died of signal {} ({})", end.signal, strsignal(end.signal));
  else if (end.exit_status != 0)
    end.failure = fmt::format("exited with status {}", end.exit_status);
  if (!end.failure.empty() && limits.memory && !kAddressSanitizer && peak_mib * 4 >= limit_mib * 3)
    end.failure += fmt::format(" (its memory reached {} MiB of the {} MiB {})", peak_mib, limit_mib, limits.memory_name);
  if (left_behind)
    end.failure += fmt::format("{}forked: {} process{} of its own still ran when it ended (killed)",
                               end.failure.empty() ? "" : "; it ", left_behind, left_behind == 1 ? "" : "es");
  return end;
}

std::string run_command(const std::vector<std::string>& argv, int timeout_ms) {
  const std::string what = fmt::format("{}", fmt::join(argv, " "));
  if (argv.empty()) return "no command";
  ChildLimits limits;
  limits.timeout_ms = timeout_ms;
  limits.output_kept = 4096;
  const ChildEnd end = run_in_child(
      [&]() -> std::string {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "%s", std::strerror(errno));
        std::fflush(stderr);
        _exit(kExitNoExec);
      },
      limits);
  std::string text = end.output;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::string tail = text.empty() ? "" : ": " + text;
  if (end.timed_out) return fmt::format("{}: no end within {} ms (killed)", what, timeout_ms);
  if (end.signal) return fmt::format("{}: killed by signal {}{}", what, end.signal, tail);
  if (end.exit_status == kExitNoExec && !text.empty()) return fmt::format("{}: {}", what, text);
  if (end.exit_status != 0) return fmt::format("{}: exit status {}{}", what, end.exit_status, tail);
  if (!end.failure.empty()) return fmt::format("{}: {}", what, end.failure);
  return {};
}

}  // namespace rdmaconf::interop

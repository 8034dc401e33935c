// What `serve` does at the edge of its limits (interop/sessions.hpp): the
// accept loop backs off instead of spinning when descriptors run out, and
// says so once each way; --max-sessions is held against the descriptor
// limit before the first accept; --max-per-source refuses one source's
// extra sessions while other sources are served.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "engines/common/socket.hpp"
#include "interop/sessions.hpp"

namespace interop = rdmaconf::interop;
using rdmaconf::engine::Fd;

namespace {

// A TCP connection to `port` on 127.0.0.1 from the source address `from`
// (any address of 127/8 is the loopback's).
Fd connect_from(const char* from, std::uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  BOOST_REQUIRE(fd);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &a.sin_addr);
  BOOST_REQUIRE_MESSAGE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "bind " << from);
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  BOOST_REQUIRE_MESSAGE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "connect from " << from);
  return fd;
}

// The process's descriptor limit, put back when the test ends however it ends.
struct LimitGuard {
  rlimit saved{};
  LimitGuard() { ::getrlimit(RLIMIT_NOFILE, &saved); }
  ~LimitGuard() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

// Runs `child` in a forked process (for what cannot be undone in this one,
// such as lowering the hard limit) and returns what it wrote.
std::string in_child(const std::function<std::string()>& child) {
  int p[2];
  BOOST_REQUIRE(::pipe(p) == 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    const std::string out = child();
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(serve_limits)

// Three clients wait in the queue while the process may open no descriptor
// more: the acceptor tries some times in 600 ms, not thousands, logs one
// line naming the error and the limit, and once the limit is back it takes
// the connection and logs that it accepts again.
BOOST_AUTO_TEST_CASE(descriptors_run_out_and_come_back) {
  // Not under the sanitizers: UBSan's vptr check probes memory through a
  // pipe, which a process with no descriptor left cannot open, and then
  // reports every virtual call as one on an invalid object (seen in fmt's
  // buffer). CI runs this test in the Release build too (tools/quickstart).
  if (RDMACONF_SANITIZED) {
    BOOST_TEST_MESSAGE("skipped under the sanitizers");
    return;
  }
  std::string err;
  Fd listener = rdmaconf::engine::tcp_listen("127.0.0.1:0", err);
  BOOST_REQUIRE_MESSAGE(listener, err);
  const auto port = rdmaconf::engine::local_port(listener.get());
  std::vector<Fd> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(connect_from("127.0.0.1", port));
  std::vector<std::string> lines;
  interop::Acceptor acceptor(listener.get(), "serve test", [&](const std::string& l) { lines.push_back(l); });
  lines.reserve(8);  // (no allocation of a descriptor's worth below)
  std::uint64_t calls = 0;
  {
    LimitGuard guard;
    const int lowest_free = ::dup(0);
    BOOST_REQUIRE(lowest_free >= 0);
    ::close(lowest_free);
    rlimit tight = guard.saved;
    tight.rlim_cur = static_cast<rlim_t>(lowest_free);  // no descriptor more
    BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(600)) {
      BOOST_TEST(!acceptor.next(50));
      ++calls;
    }
  }
  BOOST_TEST(acceptor.failed_accepts() >= 3u);
  BOOST_TEST(acceptor.failed_accepts() <= 20u, acceptor.failed_accepts() << " accepts failed in 600 ms: a spin");
  BOOST_TEST(calls == acceptor.failed_accepts());
  BOOST_REQUIRE_EQUAL(lines.size(), 1u);
  BOOST_TEST(lines[0].find("serve test: accept: Too many open files") == 0u, lines[0]);
  BOOST_TEST(lines[0].find("(the descriptor limit: ") != std::string::npos, lines[0]);
  Fd fd = acceptor.next(1000);
  BOOST_TEST(static_cast<bool>(fd));
  BOOST_REQUIRE_EQUAL(lines.size(), 2u);
  BOOST_TEST(lines[1] == fmt::format("serve test: accepting again after {} failed accepts", acceptor.failed_accepts()));
  BOOST_TEST(static_cast<bool>(acceptor.next(1000)));
  BOOST_TEST(lines.size() == 2u);  // (no line for an accept that just works)
}

// --max-sessions against the descriptor limit: what fits passes, a soft
// limit too low is raised toward the hard one, and past the hard one the
// error names the numbers and the most sessions that would fit.
BOOST_AUTO_TEST_CASE(max_sessions_held_against_the_descriptor_limit) {
  const std::string out = in_child([] {
    std::string r;
    rlimit lim{500, 1000};
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return std::string("setrlimit failed");
    r += "16:" + interop::fit_descriptor_limit(16) + "\n";  // 16*4 + 256 + 64 = 384
    r += "100:" + interop::fit_descriptor_limit(100) + "\n";  // 720: raised
    ::getrlimit(RLIMIT_NOFILE, &lim);
    r += fmt::format("soft:{}\n", lim.rlim_cur);
    r += "4096:" + interop::fit_descriptor_limit(4096) + "\n";
    return r;
  });
  BOOST_TEST(out.find("16:\n") != std::string::npos, out);
  BOOST_TEST(out.find("100:\n") != std::string::npos, out);
  BOOST_TEST(out.find("soft:720\n") != std::string::npos, out);
  BOOST_TEST(out.find("4096:--max-sessions 4096 needs up to 16704 file descriptors (4 a session, 256 for refusals, "
                      "64 spare), and this process may open 720 (ulimit -n; at most 1000, ulimit -Hn): give "
                      "--max-sessions 170 at most, or raise the limit") != std::string::npos,
             out);
}

// --max-per-source 1: a second session from 127.0.0.1 is refused, saying
// why, while one from 127.0.0.2 is served; once the first ends, 127.0.0.1
// is served again.
BOOST_AUTO_TEST_CASE(one_source_cannot_take_every_session) {
  std::string err;
  Fd listener = rdmaconf::engine::tcp_listen("127.0.0.1:0", err);
  BOOST_REQUIRE_MESSAGE(listener, err);
  const auto port = rdmaconf::engine::local_port(listener.get());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> refusals;
  bool release = false;
  std::atomic<int> ended{0};
  interop::Refuser refuser([](std::string_view) { return std::optional<std::string>("busy\n"); },
                           [&](std::uint64_t index, bool, const std::string& outcome) {
                             std::lock_guard g(mu);
                             refusals.push_back(fmt::format("{}: {}", index, outcome));
                             cv.notify_all();
                           });
  interop::SessionPool pool(4, &refuser, 1);
  auto hold = [&](Fd&) {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return release; });
    ++ended;
  };
  auto accept_from = [&](const char* from, std::uint64_t index) {
    Fd c = connect_from(from, port);
    Fd s = rdmaconf::engine::tcp_accept(listener.get(), 2000, err);
    BOOST_REQUIRE_MESSAGE(s, err);
    return std::pair{std::move(c), pool.admit(std::move(s), hold, index)};
  };
  using A = interop::SessionPool::Admission;
  auto [c1, a1] = accept_from("127.0.0.1", 1);
  auto [c2, a2] = accept_from("127.0.0.1", 2);
  auto [c3, a3] = accept_from("127.0.0.2", 3);
  BOOST_TEST((a1 == A::served));
  BOOST_TEST((a2 == A::refused));
  BOOST_TEST((a3 == A::served));
  {
    std::unique_lock l(mu);
    BOOST_REQUIRE(cv.wait_for(l, std::chrono::seconds(5), [&] { return !refusals.empty(); }));
    BOOST_TEST(refusals[0] == "2: 1 sessions from 127.0.0.1 already, the most one source may hold (--max-per-source); answered");
    release = true;
    cv.notify_all();
  }
  for (int i = 0; i < 500 && ended < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  BOOST_REQUIRE_EQUAL(ended.load(), 2);
  for (int i = 0; i < 500 && pool.active() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto [c4, a4] = accept_from("127.0.0.1", 4);
  BOOST_TEST((a4 == A::served));
}

BOOST_AUTO_TEST_SUITE_END()

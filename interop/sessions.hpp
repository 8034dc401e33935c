#pragma once
// What both peers (`rdmaconf serve iwarp|ib`) share to serve many
// clients at once without one of them delaying or starving another: a pool
// that runs each session in a thread of its own up to a limit, and a memory
// budget the sessions' buffers draw on (docs/interop.md).
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <thread>

#include "engines/common/socket.hpp"

namespace rdmaconf::interop {

// What the peer's sessions may allocate together.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}
  bool take(std::uint64_t n);
  void give(std::uint64_t n) { used_ -= n; }
  std::uint64_t used() const { return used_.load(); }
  std::uint64_t limit() const { return limit_; }

 private:
  std::uint64_t limit_;
  std::atomic<std::uint64_t> used_{0};
};

// One session's share, given back when it ends.
class Reservation {
 public:
  explicit Reservation(MemoryBudget* b) : budget_(b) {}
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() {
    if (budget_) budget_->give(held_);
  }
  bool add(std::uint64_t n);
  std::uint64_t held() const { return held_; }

 private:
  MemoryBudget* budget_;
  std::uint64_t held_ = 0;
};

// Connections beyond the session limit, answered by one thread of their
// own: each waits in poll (no thread, no session slot) at most
// `deadline_ms` for what its answer needs (iWARP: the MPA Request, to
// answer with a rejecting Reply; RoCE: nothing), is answered and closed.
// At most `max_pending` wait at once; beyond, the one that has waited
// longest is closed to make room. So a refusal never waits behind another,
// and a client that speaks at once hears "busy" at once.
inline constexpr std::size_t kRefuserPending = 256;  // connections a Refuser lets wait at once, by default

class Refuser {
 public:
  // Given what the client has sent so far: the octets to send before
  // closing, or nullopt to wait for more. An empty answer closes without one.
  using Answer = std::function<std::optional<std::string>(std::string_view received)>;
  // How a refusal ended: "answered", "no answer within N ms", "closed by
  // the client", "closed to make room", "sent more than a refusal reads".
  using Report = std::function<void(std::uint64_t index, bool answered, const std::string& outcome)>;
  Refuser(Answer answer, Report report, int deadline_ms = 2000, std::size_t max_pending = kRefuserPending);
  ~Refuser();  // closes what still waits
  Refuser(const Refuser&) = delete;
  Refuser& operator=(const Refuser&) = delete;
  // `note` (if any) goes before how the refusal ended, in its report.
  void add(engine::Fd fd, std::uint64_t index, std::string note = {});

 private:
  struct Pending;
  void run(std::stop_token stop);
  Answer answer_;
  Report report_;
  int deadline_ms_;
  std::size_t max_pending_;
  engine::Fd wake_read_, wake_write_;
  std::mutex mu_;
  struct Incoming {
    engine::Fd fd;
    std::uint64_t index;
    std::string note;
  };
  std::vector<Incoming> inbox_;
  std::jthread thread_;  // last: starts after everything it uses exists
};

// The descriptors `serve` may hold at once with max_sessions sessions: a
// session's socket, its capture file, the poll set and wake-up a link
// opens (kDescriptorsPerSession), the refuser's waiting connections and a
// reserve. Checked before the first accept against RLIMIT_NOFILE, whose soft
// limit is raised toward the hard one when that is enough. Empty when it
// fits; else what to lower or raise.
inline constexpr unsigned kDescriptorsPerSession = 4;
inline constexpr unsigned kDescriptorReserve = 64;
std::string fit_descriptor_limit(unsigned max_sessions, std::size_t refuser_pending = kRefuserPending);

// The accept loop's side of running out of descriptors or memory: accept
// failing with EMFILE, ENFILE, ENOBUFS or ENOMEM leaves the connection in
// the kernel's queue and the listening socket readable, so a loop that
// tries again at once spins. next() then waits (10 ms, doubling to 1 s)
// before the next try, and `log` hears one line when it starts and one when
// accepting works again.
class Acceptor {
 public:
  using Log = std::function<void(const std::string&)>;
  Acceptor(int listen_fd, std::string name, Log log);
  // The next connection within timeout_ms (empty: none, or a wait after a failed accept).
  engine::Fd next(int timeout_ms);
  std::uint64_t failed_accepts() const { return failed_; }

 private:
  int fd_;
  std::string name_;
  Log log_;
  int backoff_ms_ = 0;
  std::uint64_t failed_ = 0, failed_at_start_ = 0;
};

// The address part of an endpoint ("192.0.2.9:4791" -> "192.0.2.9", "[::1]:7" -> "[::1]").
std::string host_part(const std::string& endpoint);

// Sessions in threads of their own, at most max_sessions at once, and at
// most max_per_source (0: no limit) from any one source address. A
// connection beyond goes to the refuser (closed at once without one). The
// destructor waits for every session still running. A job that leaves the
// connection in its Fd has it closed after its slot is free again, so that
// a client that sees the close may count on the slot.
class SessionPool {
 public:
  using Job = std::function<void(engine::Fd&)>;
  enum class Admission { served, refused, closed };

  explicit SessionPool(unsigned max_sessions, Refuser* refuser = nullptr, unsigned max_per_source = 0)
      : max_(max_sessions ? max_sessions : 1), max_per_source_(max_per_source), refuser_(refuser) {}
  ~SessionPool() { workers_.clear(); }  // (joins)
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  Admission admit(engine::Fd fd, Job serve, std::uint64_t index);
  unsigned active() const { return active_.load(); }

 private:
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };

  unsigned max_, max_per_source_;
  Refuser* refuser_;
  std::atomic<unsigned> active_{0};
  std::mutex sources_mu_;
  std::map<std::string, unsigned> sources_;  // sessions at once per source (with max_per_source)
  std::list<Worker> workers_;  // last: destroyed (joined) first
};

}  // namespace rdmaconf::interop

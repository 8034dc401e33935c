#pragma once
// What both peers (`rdmaconf peer`, iWARP and RoCEv2) share to serve many
// clients at once without one of them delaying or starving another: a pool
// that runs each session in a thread of its own up to a limit, and a memory
// budget the sessions' buffers draw on (docs/interop.md).
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
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

// Sessions in threads of their own, at most max_sessions at once. A
// connection beyond is refused in a thread too (a refusal is short and has
// its own deadline), a few at once; beyond those it is closed at once. The
// destructor waits for every session still running. A job that leaves the
// connection in its Fd has it closed after its slot is free again, so that
// a client that sees the close may count on the slot.
class SessionPool {
 public:
  using Job = std::function<void(engine::Fd&)>;
  enum class Admission { served, refused, closed };

  explicit SessionPool(unsigned max_sessions, unsigned max_refusing = 4)
      : max_(max_sessions ? max_sessions : 1), max_refusing_(max_refusing) {}
  ~SessionPool() { workers_.clear(); }  // (joins)
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  Admission admit(engine::Fd fd, Job serve, Job refuse);
  unsigned active() const { return active_.load(); }

 private:
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  void spawn(engine::Fd fd, Job job, std::atomic<unsigned>& count);

  unsigned max_, max_refusing_;
  std::atomic<unsigned> active_{0}, refusing_{0};
  std::list<Worker> workers_;  // last: destroyed (joined) first
};

}  // namespace rdmaconf::interop

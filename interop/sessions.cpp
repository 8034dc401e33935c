#include "interop/sessions.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>

namespace rdmaconf::interop {

bool MemoryBudget::take(std::uint64_t n) {
  std::uint64_t cur = used_.load();
  do {
    if (n > limit_ - std::min(cur, limit_)) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n));
  return true;
}

bool Reservation::add(std::uint64_t n) {
  if (budget_ && !budget_->take(n)) return false;
  held_ += n;
  return true;
}

SessionPool::Admission SessionPool::admit(engine::Fd fd, Job serve, std::uint64_t index) {
  workers_.remove_if([](Worker& w) { return w.done->load(); });  // (a finished jthread joins at once)
  if (active_.load() >= max_) {
    if (!refuser_) return Admission::closed;
    refuser_->add(std::move(fd), index);
    return Admission::refused;
  }
  ++active_;
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto f = std::make_shared<engine::Fd>(std::move(fd));
  workers_.push_back({done, std::jthread([job = std::move(serve), f, done, this] {
                        job(*f);
                        --active_;
                        *f = engine::Fd();
                        *done = true;
                      })});
  return Admission::served;
}

// ---------------------------------------------------------------- Refuser

struct Refuser::Pending {
  engine::Fd fd;
  std::uint64_t index = 0;
  std::chrono::steady_clock::time_point since, deadline;
  std::string got;
  bool answered = false;  // then: our half is shut, what still comes is drained until the client's FIN
};

Refuser::Refuser(Answer answer, Report report, int deadline_ms, std::size_t max_pending)
    : answer_(std::move(answer)), report_(std::move(report)), deadline_ms_(deadline_ms), max_pending_(std::max<std::size_t>(max_pending, 1)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_ = engine::Fd(p[0]);
    wake_write_ = engine::Fd(p[1]);
  }
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

Refuser::~Refuser() {
  thread_.request_stop();
  const char c = 0;
  if (wake_write_) (void)!::write(wake_write_.get(), &c, 1);
}

void Refuser::add(engine::Fd fd, std::uint64_t index) {
  {
    std::lock_guard g(mu_);
    inbox_.emplace_back(std::move(fd), index);
  }
  const char c = 0;
  if (wake_write_) (void)!::write(wake_write_.get(), &c, 1);
}

void Refuser::run(std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  constexpr std::size_t kMaxReceived = 64 * 1024;  // an MPA Request is at most 20 + 65535 octets; ours read 1 KiB
  std::list<Pending> pending;
  auto finish = [&](std::list<Pending>::iterator it, const std::string& outcome) {
    if (!it->answered) report_(it->index, false, outcome);
    return pending.erase(it);
  };
  // Answers an entry if what it received is enough.
  auto try_answer = [&](Pending& p) {
    const auto a = answer_(p.got);
    if (!a) return;
    if (!a->empty()) (void)::send(p.fd.get(), a->data(), a->size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(p.fd.get(), SHUT_WR);
    p.answered = true;
    // (A close with unread octets would send a reset, which can destroy the
    // answer before the client reads it: drain until the client's FIN.)
    p.deadline = Clock::now() + std::chrono::milliseconds(500);
    report_(p.index, !a->empty(), a->empty() ? "its first octets are not what a refusal answers" : "answered");
  };
  std::vector<pollfd> fds;
  while (!stop.stop_requested()) {
    {
      std::lock_guard g(mu_);
      for (auto& [fd, index] : inbox_) {
        if (pending.size() >= max_pending_) {
          auto oldest = std::min_element(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.since < b.since; });
          finish(oldest, "closed to make room");
        }
        const auto now = Clock::now();
        pending.push_back({std::move(fd), index, now, now + std::chrono::milliseconds(deadline_ms_), {}, false});
        try_answer(pending.back());
      }
      inbox_.clear();
    }
    fds.assign(1, pollfd{wake_read_.get(), POLLIN, 0});
    auto next = Clock::now() + std::chrono::milliseconds(200);
    for (const auto& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      next = std::min(next, p.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<decltype(wait)>(wait, 0, 200))) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      char buf[64];
      while (::read(wake_read_.get(), buf, sizeof buf) > 0) {
      }
    }
    std::size_t k = 1;
    const auto now = Clock::now();
    for (auto it = pending.begin(); it != pending.end(); ++k) {
      Pending& p = *it;
      if (fds[k].revents) {
        char buf[4096];
        const ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          it = finish(it, "closed by the client");
          continue;
        }
        if (n > 0 && !p.answered) {
          p.got.append(buf, static_cast<std::size_t>(n));
          if (p.got.size() > kMaxReceived) {
            it = finish(it, "sent more than a refusal reads");
            continue;
          }
          try_answer(p);
        }
      }
      if (now >= p.deadline) {
        it = finish(it, fmt::format("no answer within {} ms", deadline_ms_));
        continue;
      }
      ++it;
    }
  }
}

}  // namespace rdmaconf::interop

#include "interop/sessions.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

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
  std::string source, note;
  if (max_per_source_) {
    source = host_part(engine::remote_endpoint(fd.get()));
    std::lock_guard g(sources_mu_);
    if (const auto it = sources_.find(source); it != sources_.end() && it->second >= max_per_source_)
      note = fmt::format("{} sessions from {} already, the most one source may hold (--max-per-source)", it->second, source);
  }
  if (active_.load() >= max_ || !note.empty()) {
    if (!refuser_) return Admission::closed;
    refuser_->add(std::move(fd), index, std::move(note));
    return Admission::refused;
  }
  ++active_;
  if (max_per_source_) {
    std::lock_guard g(sources_mu_);
    ++sources_[source];
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto f = std::make_shared<engine::Fd>(std::move(fd));
  workers_.push_back({done, std::jthread([job = std::move(serve), f, done, source, this] {
                        job(*f);
                        if (max_per_source_) {
                          std::lock_guard g(sources_mu_);
                          if (const auto it = sources_.find(source); it != sources_.end() && --it->second == 0) sources_.erase(it);
                        }
                        --active_;
                        *f = engine::Fd();
                        *done = true;
                      })});
  return Admission::served;
}

std::string host_part(const std::string& endpoint) { return endpoint.substr(0, endpoint.rfind(':')); }

// ---------------------------------------------------------------- descriptors

std::string fit_descriptor_limit(unsigned max_sessions, std::size_t refuser_pending) {
  const rlim_t need = rlim_t{max_sessions} * kDescriptorsPerSession + refuser_pending + kDescriptorReserve;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return {};
  if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= need) {
    rlimit raised = lim;
    raised.rlim_cur = need;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return {};
  }
  const rlim_t ceiling = lim.rlim_max == RLIM_INFINITY ? lim.rlim_cur : std::max(lim.rlim_cur, lim.rlim_max);
  const rlim_t fixed = refuser_pending + kDescriptorReserve;
  const auto most = ceiling > fixed ? (ceiling - fixed) / kDescriptorsPerSession : 0;
  return fmt::format("--max-sessions {} needs up to {} file descriptors ({} a session, {} for refusals, {} spare), and "
                     "this process may open {} (ulimit -n; at most {}, ulimit -Hn): give --max-sessions {} at most, or "
                     "raise the limit",
                     max_sessions, need, kDescriptorsPerSession, refuser_pending, kDescriptorReserve, lim.rlim_cur, ceiling,
                     most);
}

// ---------------------------------------------------------------- Acceptor

Acceptor::Acceptor(int listen_fd, std::string name, Log log) : fd_(listen_fd), name_(std::move(name)), log_(std::move(log)) {}

engine::Fd Acceptor::next(int timeout_ms) {
  std::string err;
  int error_number = 0;
  engine::Fd fd = engine::tcp_accept(fd_, timeout_ms, err, &error_number);
  if (fd) {
    if (backoff_ms_ && log_)
      log_(fmt::format("{}: accepting again after {} failed accepts", name_, failed_ - failed_at_start_));
    backoff_ms_ = 0;
    return fd;
  }
  if (error_number != EMFILE && error_number != ENFILE && error_number != ENOBUFS && error_number != ENOMEM) return fd;
  ++failed_;
  if (!backoff_ms_) {
    failed_at_start_ = failed_ - 1;
    if (log_) {
      rlimit lim{};
      const bool known = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY;
      log_(fmt::format("{}: {}{}; waiting (10 ms, doubling to 1 s) with the connections queued until a session ends",
                       name_, err, known ? fmt::format(" (the descriptor limit: {})", lim.rlim_cur) : std::string()));
    }
  }
  backoff_ms_ = backoff_ms_ ? std::min(backoff_ms_ * 2, 1000) : 10;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(backoff_ms_, std::max(timeout_ms, 1))));
  return fd;
}

// ---------------------------------------------------------------- Refuser

struct Refuser::Pending {
  engine::Fd fd;
  std::uint64_t index = 0;
  std::string note;
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

void Refuser::add(engine::Fd fd, std::uint64_t index, std::string note) {
  {
    std::lock_guard g(mu_);
    inbox_.push_back({std::move(fd), index, std::move(note)});
  }
  const char c = 0;
  if (wake_write_) (void)!::write(wake_write_.get(), &c, 1);
}

void Refuser::run(std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  constexpr std::size_t kMaxReceived = 64 * 1024;  // an MPA Request is at most 20 + 65535 octets; ours read 1 KiB
  std::list<Pending> pending;
  const auto noted = [](const Pending& p, const std::string& outcome) {
    return p.note.empty() ? outcome : fmt::format("{}; {}", p.note, outcome);
  };
  auto finish = [&](std::list<Pending>::iterator it, const std::string& outcome) {
    if (!it->answered) report_(it->index, false, noted(*it, outcome));
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
    report_(p.index, !a->empty(), noted(p, a->empty() ? "its first octets are not what a refusal answers" : "answered"));
  };
  std::vector<pollfd> fds;
  while (!stop.stop_requested()) {
    {
      std::lock_guard g(mu_);
      for (auto& in : inbox_) {
        if (pending.size() >= max_pending_) {
          auto oldest = std::min_element(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.since < b.since; });
          finish(oldest, "closed to make room");
        }
        const auto now = Clock::now();
        pending.push_back({std::move(in.fd), in.index, std::move(in.note), now, now + std::chrono::milliseconds(deadline_ms_), {}, false});
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

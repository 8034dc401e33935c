#include "interop/sessions.hpp"

#include <algorithm>

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

void SessionPool::spawn(engine::Fd fd, Job job, std::atomic<unsigned>& count) {
  ++count;
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto f = std::make_shared<engine::Fd>(std::move(fd));
  workers_.push_back({done, std::jthread([job = std::move(job), f, done, &count] {
                        job(*f);
                        --count;
                        *f = engine::Fd();
                        *done = true;
                      })});
}

SessionPool::Admission SessionPool::admit(engine::Fd fd, Job serve, Job refuse) {
  workers_.remove_if([](Worker& w) { return w.done->load(); });  // (a finished jthread joins at once)
  if (active_.load() < max_) {
    spawn(std::move(fd), std::move(serve), active_);
    return Admission::served;
  }
  if (refusing_.load() < max_refusing_) {
    spawn(std::move(fd), std::move(refuse), refusing_);
    return Admission::refused;
  }
  return Admission::closed;
}

}  // namespace rdmaconf::interop

#include "cli/check_inputs.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <ostream>
#include <thread>

namespace rdmaconf::cli {

namespace {

// A rough size of a scope held in memory.
std::size_t weight(const conformance::ScopeResult& s) {
  std::size_t w = 512 + s.id.size() + s.label.size() + s.outcomes.size() * 256 + s.coverage.size() * 128;
  for (const auto& o : s.outcomes) w += o.tally.evidence().size() * 256;
  return w;
}

struct Stopped {};

}  // namespace

reports::Totals check_inputs(const conformance::CheckOptions& opt, const std::vector<std::string>& inputs,
                             const CheckInputsOptions& how, reports::ReportWriter* report, std::ostream& err) {
  reports::Totals totals;
  std::mutex m;
  std::condition_variable turn;
  std::size_t head = 0;  // the input whose turn it is to report (guarded by m)
  bool stop = false;     // a thread failed: everyone stops (guarded by m)
  std::exception_ptr failure;
  std::atomic<std::size_t> next{0};
  // Fewer inputs than threads: each input's connections are spread over the rest.
  const unsigned n = std::max(1u, std::min<unsigned>(how.jobs, static_cast<unsigned>(inputs.size())));
  const unsigned per_input = std::max(1u, how.jobs / n - (how.heavy_reports && how.jobs / n > 1 ? 1u : 0u));

  const auto worker = [&] {
    std::size_t i = 0;
    bool streaming = false;
    std::vector<conformance::ScopeResult> held;
    std::size_t held_weight = 0;
    // Waits for input i's turn, then reports what it held.
    const auto take_turn = [&] {
      {
        std::unique_lock l(m);
        turn.wait(l, [&] { return head == i || stop; });
        if (stop) throw Stopped{};
      }
      if (report) {
        report->begin_input(inputs[i]);
        for (auto& s : held) report->take(std::move(s));
      }
      held.clear();
      held_weight = 0;
      streaming = true;
    };
    conformance::CheckOptions o = opt;
    o.threads = per_input;
    o.keep_scopes = report != nullptr;
    o.on_scope = [&](const std::string&, conformance::ScopeResult&& s) {
      if (!streaming) {
        bool mine = false;
        {
          std::lock_guard l(m);
          mine = head == i;
        }
        if (mine || held_weight > how.hold_budget) take_turn();
      }
      if (streaming) {
        if (report) report->take(std::move(s));
        return;
      }
      held_weight += weight(s);
      held.push_back(std::move(s));
    };
    const conformance::Checker checker(o);
    try {
      while ((i = next++) < inputs.size()) {
        streaming = false;
        if (how.on_start) how.on_start(inputs[i]);
        const auto r = checker.check_file(inputs[i]);
        if (!streaming) take_turn();
        if (!r.error.empty()) err << "rdmaconf: " << r.error << "\n";
        if (report) report->end_input(r);
        totals.add(r);
        {
          std::lock_guard l(m);
          head = i + 1;
        }
        turn.notify_all();
      }
    } catch (const Stopped&) {
    } catch (...) {
      std::lock_guard l(m);
      if (!failure) failure = std::current_exception();
      stop = true;
      turn.notify_all();
    }
  };
  if (n == 1) {
    worker();
  } else {
    std::vector<std::jthread> threads;
    for (unsigned k = 0; k < n; ++k) threads.emplace_back(worker);
  }
  if (failure) std::rethrow_exception(failure);
  return totals;
}

}  // namespace rdmaconf::cli

#pragma once
// A peer (either transport's serve()) running in a thread of the test on a
// loopback listening socket, its per-connection reports collected.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engines/common/socket.hpp"

namespace rdmaconf::test {

class ServingPeer {
 public:
  using OnConnection = std::function<void(const nlohmann::json&)>;
  using Serve = std::function<void(int listen_fd, const OnConnection&, std::stop_token)>;

  explicit ServingPeer(Serve serve) {
    std::string err;
    lfd_ = engine::tcp_listen("127.0.0.1:0", err);
    BOOST_REQUIRE_MESSAGE(lfd_, err);
    port_ = engine::local_port(lfd_.get());
    thread_ = std::jthread([this, serve = std::move(serve)](std::stop_token st) {
      serve(lfd_.get(), [this](const nlohmann::json& j) {
        std::lock_guard g(mu_);
        reports_.push_back(j);
      }, st);
    });
  }
  ~ServingPeer() { stop(); }
  ServingPeer(const ServingPeer&) = delete;
  ServingPeer& operator=(const ServingPeer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return fmt::format("127.0.0.1:{}", port_); }
  std::vector<nlohmann::json> reports() {
    std::lock_guard g(mu_);
    return reports_;
  }
  // The count-th report, waiting up to 5 s for it (null if it does not come).
  nlohmann::json report(std::size_t count) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard g(mu_);
        if (reports_.size() >= count) return reports_[count - 1];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return nullptr;
  }
  // Stops accepting and waits for every session to end.
  void stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  engine::Fd lfd_;
  std::uint16_t port_ = 0;
  std::mutex mu_;
  std::vector<nlohmann::json> reports_;
  std::jthread thread_;  // last: starts after everything it uses exists
};

}  // namespace rdmaconf::test

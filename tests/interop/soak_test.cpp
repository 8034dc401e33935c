// A bounded soak: rounds of hostile clients against both peers (garbage,
// oversize lengths, silent and slowloris sockets, connection floods, wrong
// JSON types, stale datagram floods), each round followed by a good client
// that must pass. Afterwards the process's open descriptors are back at
// their baseline, and its resident memory has not grown round over round
// (outside AddressSanitizer builds, where LeakSanitizer checks instead).
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "engines/common/socket.hpp"
#include "protocols/core/sanitizer.hpp"
#include "interop/ib/scenarios.hpp"
#include "interop/iwarp/scenarios.hpp"
#include "tests/interop/serving_peer.hpp"

using nlohmann::json;
using rdmaconf::engine::Fd;
namespace ii = rdmaconf::interop::iwarp;
namespace ib = rdmaconf::interop::ib;
using namespace std::chrono_literals;

namespace {

// Under AddressSanitizer freed memory sits in its quarantine (up to 256 MiB)
// and stays resident, so RSS says nothing there; LeakSanitizer checks for
// leaks in that build instead.
constexpr bool kRssMeans = !rdmaconf::kAddressSanitizer;

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// What they are, for a failure message.
std::string fd_list() {
  std::string s;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    s += fmt::format(" {}->{}", e.path().filename().string(), std::filesystem::read_symlink(e.path(), ec).string());
  }
  return s;
}

std::size_t rss_kib() {
  std::ifstream s("/proc/self/status");
  std::string line;
  while (std::getline(s, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

Fd connect_to(const std::string& addr) {
  std::string err;
  return rdmaconf::engine::tcp_connect(addr, 2000, err);
}

void send_all(int fd, std::string_view s) { (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

// Waits (bounded) until `pred` holds.
template <class P>
bool eventually(P pred, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// A good client's run (`run()` returns a result with ok and message) gets
// through within 20 tries 200 ms apart: the peer may answer busy while the
// sessions a hostile round left behind end.
template <class Run>
void gets_through(Run run) {
  bool ok = false;
  std::string last;
  for (int attempt = 0; attempt < 20 && !ok; ++attempt) {
    const auto r = run();
    ok = r.ok;
    last = r.message;
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  BOOST_TEST(ok, last);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(peer_soak)

BOOST_AUTO_TEST_CASE(iwarp_peer_under_hostile_rounds) {
  ii::PeerOptions po;
  po.idle_timeout_ms = 800;
  po.max_sessions = 6;
  po.memory_budget = 64u << 20;
  const std::size_t fds0 = open_fds();
  rdmaconf::test::ServingPeer peer([po](int fd, const auto& on, std::stop_token st) { ii::serve(fd, po, on, st); });
  const std::string addr = "tcp://" + peer.endpoint();
  ii::RunOptions good;
  good.scenario = "write-bw";
  good.size = 4096;
  good.iterations = 50;
  good.timeout_ms = 3000;
  std::size_t rss_after_first = 0;
  for (int round = 0; round < 4; ++round) {
    BOOST_TEST_CONTEXT("round " << round) {
      std::vector<Fd> hostile;
      for (int i = 0; i < 8; ++i) hostile.push_back(connect_to(addr));  // silent
      for (int i = 0; i < 4; ++i) {                                      // garbage
        hostile.push_back(connect_to(addr));
        send_all(hostile.back().get(), std::string(1000, static_cast<char>('A' + i)));
      }
      for (int i = 0; i < 2; ++i) {  // an MPA Request claiming 65535 octets of private data
        hostile.push_back(connect_to(addr));
        std::string rq = "MPA ID Req Frame";
        rq += std::string("\x40\x02\xff\xff", 4);
        send_all(hostile.back().get(), rq);
      }
      for (int i = 0; i < 20; ++i) connect_to(addr);  // a flood of connections closed at once
      // Slowloris: an MPA Request one octet at a time, slower than the idle timeout allows in total.
      Fd slow = connect_to(addr);
      const std::string key = "MPA ID Req Frame";
      for (std::size_t k = 0; k < 6; ++k) {
        send_all(slow.get(), key.substr(k, 1));
        std::this_thread::sleep_for(100ms);
      }
      hostile.clear();
      slow = Fd();
      // A good client gets through (once the hostile ones have timed out, if they filled every session).
      gets_through([&] { return ii::run_initiator(addr, good); });
      if (round == 0) rss_after_first = rss_kib();
    }
  }
  // Every session ends; descriptors return to their baseline; memory did not grow with the rounds.
  // (The listening socket, the accept loop's epoll set and the refuser's
  // wake pipe are the four descriptors more.)
  BOOST_TEST(eventually([&] { return open_fds() <= fds0 + 4; }, 5000ms), "open descriptors: " << open_fds() << ", at the start " << fds0 << ":" << fd_list());
  if (kRssMeans)
    BOOST_TEST(rss_kib() <= rss_after_first + 32 * 1024, "RSS " << rss_kib() << " KiB after 4 rounds, " << rss_after_first << " after the first");
  peer.stop();
  BOOST_TEST(peer.reports().size() >= 4u * 35u);  // every connection reported, hostile ones included
}

BOOST_AUTO_TEST_CASE(roce_peer_under_hostile_rounds) {
  const auto port = static_cast<std::uint16_t>(23000 + getpid() % 20000);
  ib::PeerOptions po;
  po.udp_local = fmt::format("127.0.0.1:{}", port);
  po.idle_timeout_ms = 800;
  const std::size_t fds0 = open_fds();
  rdmaconf::test::ServingPeer peer([po](int fd, const auto& on, std::stop_token st) { ib::serve(fd, po, on, st); });
  const std::string control = peer.endpoint();
  ib::RunOptions good;
  good.scenario = "write";
  good.udp_local = fmt::format("127.0.0.2:{}", port);
  good.timeout_ms = 4000;
  std::size_t rss_after_first = 0;
  for (int round = 0; round < 4; ++round) {
    BOOST_TEST_CONTEXT("round " << round) {
      // Wrong JSON types, no JSON at all, a line that never ends, a silent client.
      for (const char* line : {R"({"hello":{"type":"rc","qpn":"x","udp":"127.0.0.2:1"}})", R"({"done":"yes"})",
                               R"({"hello":{"type":"rc","qpn":5,"psn":0,"udp":"127.0.0.2:1","size":1e30}})", "not json",
                               R"([1,2,3])"}) {
        Fd c = connect_to(control);
        send_all(c.get(), std::string(line) + "\n");
        std::this_thread::sleep_for(20ms);
      }
      {
        Fd c = connect_to(control);
        send_all(c.get(), std::string(200000, '{'));  // no newline
      }
      // Octets that are not UTF-8 (a lone 0xFF, an overlong NUL, one inside a
      // key), nesting 100 000 deep, and a storm of connections reset at once.
      const std::string deep = "{\"hello\":" + std::string(100000, '[') + std::string(100000, ']') + "}\n";
      for (const std::string& line : {std::string("\xff\n"), std::string("\xc0\x80\n"), std::string("{\"he\xffllo\":1}\n"), deep}) {
        Fd c = connect_to(control);
        send_all(c.get(), line);
        std::this_thread::sleep_for(20ms);
      }
      for (int i = 0; i < 50; ++i) {
        Fd c = connect_to(control);
        const linger reset{1, 0};
        ::setsockopt(c.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      }
      // Stale datagrams at the peer's port from the address the good client will use, and from another.
      for (std::uint32_t src : {0x7f000002u, 0x7f000003u}) {
        Fd u(::socket(AF_INET, SOCK_DGRAM, 0));
        sockaddr_in from{}, to{};
        from.sin_family = to.sin_family = AF_INET;
        from.sin_addr.s_addr = htonl(src);
        to.sin_addr.s_addr = htonl(0x7f000001);
        to.sin_port = htons(port);
        BOOST_REQUIRE(::bind(u.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
        const char junk[80] = {0x0A, 0, 0, 0, 0, 0, 1, 0};
        for (int i = 0; i < 500; ++i) ::sendto(u.get(), junk, sizeof junk, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      }
      // A good client gets through (once the storm's sessions have seen their
      // resets: meanwhile the sessions may be full, and busy is the answer).
      gets_through([&] { return ib::run_initiator(control, good); });
      if (round == 0) rss_after_first = rss_kib();
    }
  }
  // (The listening socket, the accept loop's epoll set, the peer's UDP socket and the refuser's wake pipe are the five more.)
  BOOST_TEST(eventually([&] { return open_fds() <= fds0 + 5; }, 3000ms), "open descriptors: " << open_fds() << ", at the start " << fds0 << ":" << fd_list());
  if (kRssMeans)
    BOOST_TEST(rss_kib() <= rss_after_first + 32 * 1024, "RSS " << rss_kib() << " KiB after 4 rounds, " << rss_after_first << " after the first");
  peer.stop();
}

BOOST_AUTO_TEST_SUITE_END()

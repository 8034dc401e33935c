// The toy family's live side: one scenario, `echo`, sends toy messages to a
// UDP socket of its own on loopback and judges toy.live.echo by what
// arrives. `--corrupt N` makes the sender cut the Nth message short, so
// that the case can be seen to FAIL.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "conformance/checker.hpp"
#include "conformance/judge.hpp"
#include "interop/live_suite.hpp"
#include "interop/peer_cli.hpp"

namespace rdmaconf::interop::toy {

namespace {

const conformance::CaseInfo kEcho{"toy.live.echo", "toy spec", "§2", conformance::Level::must,
                                  "A toy message sent over the wire arrives with its count and octets intact.", "toy"};

class Suite final : public LiveSuite {
 public:
  std::string_view family() const override { return "toy"; }
  std::string_view help(LiveRole role) const override {
    return role == LiveRole::live ? "the toy family's echo over loopback (tests/family/toy)" : "";
  }
  std::vector<LiveScenario> scenarios() const override {
    return {{"echo", "toy messages to a loopback UDP socket, each judged as it arrives", {"toy.live.echo"}}};
  }
  std::vector<const conformance::CaseInfo*> cases() const override { return {&kEcho}; }
  void add_options(CLI::App& c, LiveRole) override {
    c.add_option("--messages", messages_, "how many messages")->check(CLI::Range(1u, 1000u));
    c.add_option("--corrupt", corrupt_, "cut the Nth message one octet short (0: none)");
  }
  LiveOutcome run(LiveRole, const LiveCommon& common) override {
    LiveOutcome out;
    for (const auto& s : common.scenarios)
      if (s != "echo") {
        std::cerr << fmt::format("rdmaconf live toy: no scenario named '{}'\n", s);
        out.status = kLiveUsage;
        return out;
      }
    if (conformance::case_selected(kEcho, common.patterns, true)) out.cases.push_back(&kEcho);
    conformance::InputResult in;
    in.path = "toy-live:loopback";
    in.linktype = "toy-live";
    conformance::Judge j(out.cases, "toy");
    const std::string note = echo(j);
    conformance::ScopeResult s;
    s.family = "toy";
    s.id = "toy-live/0";
    s.label = "echo: " + note;
    s.outcomes = j.take();
    for (const auto& o : s.outcomes) in.verdicts.add(o.tally.verdict());
    in.scopes.push_back(std::move(s));
    out.input = std::move(in);
    return out;
  }

 private:
  // Sends the messages from one loopback socket to another, judging each
  // that arrives; a message that does not arrive within a second FAILs.
  std::string echo(conformance::Judge& j) const {
    const int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (rx < 0 || tx < 0 || bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(rx, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      if (rx >= 0) close(rx);
      if (tx >= 0) close(tx);
      return "no loopback UDP socket";
    }
    unsigned arrived = 0;
    for (unsigned n = 1; n <= messages_; ++n) {
      const unsigned count = n % 200;
      std::string m(1, static_cast<char>(count));
      m.append(count, 'x');
      if (n == corrupt_ && !m.empty()) m.pop_back();
      (void)sendto(tx, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
      pollfd p{rx, POLLIN, 0};
      char buf[512];
      const ssize_t got = poll(&p, 1, 1000) > 0 ? recv(rx, buf, sizeof buf, 0) : -1;
      const bool whole = got >= 1 && static_cast<unsigned char>(buf[0]) == static_cast<std::size_t>(got) - 1;
      arrived += got >= 0;
      if (whole) {
        j.pass("toy.live.echo");
      } else {
        j.fail("toy.live.echo", n, fmt::format("message {} whole", n),
               got < 0 ? "nothing arrived" : fmt::format("a count of {} before {} octets", static_cast<unsigned char>(buf[0]), got - 1));
      }
    }
    close(rx);
    close(tx);
    return fmt::format("{} of {} messages arrived", arrived, messages_);
  }

  unsigned messages_ = 20, corrupt_ = 0;
};

}  // namespace

std::unique_ptr<LiveSuite> live_suite() { return std::make_unique<Suite>(); }

}  // namespace rdmaconf::interop::toy

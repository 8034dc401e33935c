// The live commands as a user runs them: `rdmaconf peer` in the background,
// `rdmaconf interop` against it over loopback, the recordings judged by
// `rdmaconf check`, and the usage errors.
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/integration/support.hpp"

using namespace rdmaconf::test;

namespace {

// A loopback port nothing listens on right now.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(live_cli)

// `rdmaconf serve iwarp` and `rdmaconf live iwarp` (the present shape; the
// signal test below uses the earlier spelling, `peer --transport`).
BOOST_AUTO_TEST_CASE(serve_and_live_commands) {
  const auto d = temp_dir("live-cli");
  const int port = free_port();
  const std::string peer = fmt::format("tcp://127.0.0.1:{}", port);
  const std::vector<std::string> scenarios = {"rping", "write-bw", "terminate-stag"};
  std::string script = fmt::format(
      "{0} serve iwarp --listen 127.0.0.1:{1} --connections {2} --markers --pcap-dir {3}/peer > {3}/peer.jsonl 2> {3}/peer.err &\n"
      "for i in $(seq 100); do grep -q listening {3}/peer.err 2>/dev/null && break; sleep 0.05; done\n",
      kBin, port, scenarios.size(), d.string());
  for (const auto& s : scenarios)
    script += fmt::format("timeout 60 {0} live iwarp --peer {1} --scenario {2} --iterations 20 --pcap {3}/{2}.pcap "
                          "--json {3}/{2}.json > {3}/{2}.out 2>&1; echo \"{2} $?\"\n",
                          kBin, peer, s, d.string());
  script += "wait\n";
  std::ofstream(d / "run.sh") << script;
  const auto r = run("sh " + (d / "run.sh").string() + " 2>&1");
  for (const auto& s : scenarios) {
    BOOST_TEST(r.out.find(s + " 0") != std::string::npos, s << ": " << r.out << slurp(d / (s + ".out")));
    const auto j = nlohmann::json::parse(slurp(d / (s + ".json")), nullptr, false);
    BOOST_TEST(j.value("verdict", "") == "PASS", s << ": " << j.dump());
    BOOST_TEST(j["negotiated"].value("markers_to_peer", false), s);  // the peer asked for markers
    const auto c = run(fmt::format("{} check --strict --quiet {}/{}.pcap; echo rc=$?", kBin, d.string(), s));
    BOOST_TEST(c.out.find("rc=0") != std::string::npos, s << ": " << c.out);
  }
  // One JSON line per connection from the peer, in order, each a success.
  std::istringstream lines(slurp(d / "peer.jsonl"));
  std::string line;
  std::size_t n = 0;
  nlohmann::json term;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    BOOST_REQUIRE(n < scenarios.size());
    BOOST_TEST(j.value("scenario", "") == scenarios[n], line);
    BOOST_TEST(j.value("ok", false), line);
    term = j;
    ++n;
  }
  BOOST_TEST(n == scenarios.size());
  BOOST_TEST(term["terminate_sent"].value("layer", 9) == 1);  // DDP
  BOOST_TEST(term["terminate_sent"].value("type", 9) == 1);   // tagged buffer error
  BOOST_TEST(term["terminate_sent"].value("code", 9) == 0);   // invalid STag
  // The peer's own recordings pass the checker too.
  const auto c = run(fmt::format("{} check --strict --quiet {}/peer; echo rc=$?", kBin, d.string()));
  BOOST_TEST(c.out.find("rc=0") != std::string::npos, c.out);
  std::filesystem::remove_all(d);
}

// A peer stopped by SIGTERM or SIGINT while a client holds a session (one
// that sent nothing, so only the stop can end it before the 60 s timeout):
// the session ends, its recording is a whole pcap file, and the peer exits
// 0 within seconds.
BOOST_AUTO_TEST_CASE(peers_stop_cleanly_on_signals) {
  for (const std::string transport : {"iwarp", "roce"})
    for (const std::string sig : {"TERM", "INT"}) {
      const auto d = temp_dir("live-signal");
      const int port = free_port(), udp = free_port();
      const std::string roce = transport == "roce" ? fmt::format(" --udp 127.0.0.1:{}", udp) : "";
      const std::string script = fmt::format(
          "{0} peer --transport {5} --listen 127.0.0.1:{1} --timeout 60000 --pcap-dir {2}/peer{3} > {2}/peer.jsonl 2> {2}/peer.err &\n"
          "pid=$!\n"
          "for i in $(seq 100); do grep -q 'port {1}' {2}/peer.err 2>/dev/null && break; sleep 0.05; done\n"
          "exec 3<>/dev/tcp/127.0.0.1/{1}\n"
          "sleep 0.5\n"
          "start=$(date +%s%N)\n"
          "kill -{4} $pid\n"
          "wait $pid; echo rc=$?\n"
          "echo ms=$(( ($(date +%s%N) - start) / 1000000 ))\n",
          kBin, port, d.string(), roce, sig, transport);
      std::ofstream(d / "run.sh") << script;
      const auto r = run("timeout 30 bash " + (d / "run.sh").string() + " 2>&1");
      const std::string what = transport + " SIG" + sig + ": " + r.out + slurp(d / "peer.err");
      BOOST_TEST(r.out.find("rc=0") != std::string::npos, what);
      const auto ms = r.out.find("ms=");
      BOOST_TEST_REQUIRE(ms != std::string::npos, what);
      BOOST_TEST(std::stoi(r.out.substr(ms + 3)) < 5000, what);
      // The session's report says why it ended.
      const std::string jsonl = slurp(d / "peer.jsonl");
      BOOST_TEST(jsonl.find("stopped") != std::string::npos, what << jsonl);
      if (transport == "iwarp") {
        // Its recording is complete: a pcap the checker reads without a read error.
        const auto c = run(fmt::format("{} check --quiet {}/peer/peer-1.pcap; echo rc=$?", kBin, d.string()));
        BOOST_TEST(c.out.find("rc=2") == std::string::npos, what << c.out);
        BOOST_TEST(std::filesystem::file_size(d / "peer" / "peer-1.pcap") >= 24u, what);
      }
      std::filesystem::remove_all(d);
    }
}

BOOST_AUTO_TEST_CASE(live_usage_errors) {
  auto r = run(kBin + " interop --peer tcp://127.0.0.1:1 --scenario no-such 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("unknown scenario 'no-such'") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  r = run(kBin + " interop --scenario rping 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("--peer and --scenario are required") != std::string::npos, r.out);
  r = run(kBin + " interop --list");
  for (const char* s : {"rping", "write-bw", "read-bw", "send-lat", "write-lat", "terminate-ord", "terminate-crc"})
    BOOST_TEST(r.out.find(s) != std::string::npos, s);
  r = run(kBin + " peer --listen nowhere:1 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("numeric") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  // Nobody listening: a clear message and exit 1, no hang.
  r = run(fmt::format("timeout 20 {} interop --peer tcp://127.0.0.1:{} --scenario rping 2>&1; echo rc=$?", kBin,
                      free_port()));
  BOOST_TEST(r.out.find("refused") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=1") != std::string::npos, r.out);
  // More sessions than the descriptor limit can hold, in both families: status
  // 2 before the first accept, the numbers named (interop/sessions.hpp).
  for (const char* family : {"iwarp", "ib"}) {
    r = run(fmt::format("sh -c 'ulimit -n 1000 && ulimit -Hn 1000 && exec timeout 20 {} serve {} --listen 127.0.0.1:0 "
                        "--max-sessions 4096' 2>&1; echo rc=$?",
                        kBin, family));
    BOOST_TEST(r.out.find(fmt::format("rdmaconf serve {}: --max-sessions 4096 needs up to 16704 file descriptors", family)) !=
                   std::string::npos,
               r.out);
    BOOST_TEST(r.out.find("give --max-sessions 170 at most") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  }
}

// One command shape for every family with a live suite: each family under
// its one name and the spellings of earlier releases, the same scenarios
// listed either way, and usage errors that name the command.
BOOST_AUTO_TEST_CASE(one_command_shape_and_old_spellings) {
  const auto ib = run(kBin + " live ib --list");
  BOOST_TEST(ib.out.find("fault-psn-gap") != std::string::npos, ib.out);
  BOOST_TEST(run(kBin + " live roce --list").out == ib.out);
  BOOST_TEST(run(kBin + " interop --transport roce --list").out == ib.out);
  BOOST_TEST(run(kBin + " interop --transport=roce --list").out == ib.out);
  const auto iw = run(kBin + " live iwarp --list");
  BOOST_TEST(iw.out.find("terminate-crc") != std::string::npos, iw.out);
  BOOST_TEST(iw.out != ib.out);
  BOOST_TEST(run(kBin + " interop --list").out == iw.out);
  const auto fu = run(kBin + " live fastudp --list");
  BOOST_TEST(fu.out.find("fastudp.nic.match") != std::string::npos, fu.out);
  BOOST_TEST(fu.out.find("veth") != std::string::npos, fu.out);
  for (const char* old : {" nic check --list", " live nic --list", " live udp --list"}) BOOST_TEST(run(kBin + old).out == fu.out, old);
  BOOST_TEST(run(kBin + " unet live --list").out == run(kBin + " live unet --list").out);
  BOOST_TEST(run(kBin + " live unet --list").out.find("unet.live.spoof") != std::string::npos);

  auto r = run(kBin + " interop --transport tcp --list 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("--transport: expected iwarp or roce, got 'tcp'") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  r = run(kBin + " live nosuch --list 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  r = run(kBin + " live iwarp --peer tcp://127.0.0.1:1 --scenario rping --scenario write-bw 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("rdmaconf live iwarp: this family runs one scenario at a time") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  r = run(kBin + " live fastudp --plugin /nonexistent.so --scenario veth --scenario basic 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("the veth scenario runs alone") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  // A family's options belong to its own command.
  r = run(kBin + " live ib --peer 127.0.0.1:1 --scenario write --markers 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
  // serve exists only for the families that answer a peer.
  r = run(kBin + " serve unet --listen 127.0.0.1:1 2>&1; echo rc=$?");
  BOOST_TEST(r.out.find("rc=2") != std::string::npos, r.out);
}

// `rdmaconf cases` lists the live suites' cases beside the capture cases,
// each with the family whose live command judges it.
BOOST_AUTO_TEST_CASE(cases_lists_live_cases) {
  const auto text = run(kBin + " cases").out;
  for (const char* id : {"unet.live.spoof", "fastudp.nic.match", "iwarp.mpa.fpdu.crc"})
    BOOST_TEST(text.find(id) != std::string::npos, id);
  const auto j = nlohmann::json::parse(run(kBin + " cases --json").out);
  std::size_t live = 0;
  for (const auto& c : j)
    if (c.contains("live")) {
      ++live;
      BOOST_TEST((c["live"] == "unet" || c["live"] == "fastudp"), c.dump());
    }
  BOOST_TEST(live >= 20u);  // 8 U-Net live cases, 18 Fast UDP plug-in cases
}

BOOST_AUTO_TEST_SUITE_END()

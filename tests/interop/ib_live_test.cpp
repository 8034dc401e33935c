// Our RoCEv2 engine against a second instance of itself over loopback UDP
// (127.0.0.2 -> 127.0.0.1, both on one port, as RoCEv2 sends to the same
// destination port both ways; and over IPv6 on ::1 with two ports), through the socket adapter and the control
// exchange: every scenario passes (data verified by both sides; faults with
// the reaction the responder must show), and both ends' recordings are
// judged by the catalog: clean traffic FAILs nothing, a fault exactly the
// cases its broken rule belongs to.
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/checker.hpp"
#include "engines/common/socket.hpp"
#include "interop/ib/perftest.hpp"
#include "interop/ib/scenarios.hpp"
#include "tests/interop/serving_peer.hpp"

namespace ib = rdmaconf::interop::ib;
namespace fs = std::filesystem;
using rdmaconf::engine::Fd;

namespace {

std::set<std::string> fails_of(const fs::path& pcap, std::vector<std::uint16_t> ports, std::size_t& packets, std::string& error) {
  rdmaconf::conformance::CheckOptions o;
  o.strict = true;
  o.hash = false;
  o.family_options["--roce-port"] = std::vector<std::uint64_t>(ports.begin(), ports.end());
  o.family_options["--roce-mtu"] = {1024};
  const auto r = rdmaconf::conformance::Checker(o).check_file(pcap.string());
  error = r.error;
  packets = 0;
  for (const auto& c : r.stats.families)
    if (c.key == "ib_packets") packets = c.value;
  std::set<std::string> f;
  for (const auto& s : r.scopes)
    for (const auto& oc : s.outcomes)
      if (oc.tally.verdict() == rdmaconf::conformance::Verdict::fail) f.insert(std::string(oc.info->id));
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ib_live)

namespace {

// Every scenario, our initiator at `ours` against our peer at `theirs` (the
// ports are filled in); both ends' recordings judged by the catalog.
void every_scenario(const char* theirs, const char* ours, bool two_ports) {
  const auto port = static_cast<std::uint16_t>(20000 + getpid() % 20000 + (two_ports ? 7 : 0));
  const std::uint16_t our_port = two_ports ? port + 1 : port;  // one address: the ports tell the ends apart
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-roce-live-{}-{}", getpid(), two_ports);
  fs::remove_all(dir);
  fs::create_directories(dir);
  ib::PeerOptions po;
  po.udp_local = fmt::format("{}:{}", theirs, port);
  po.idle_timeout_ms = 10000;
  po.pcap_dir = dir.string();
  rdmaconf::test::ServingPeer peer([po](int fd, const auto& on, std::stop_token st) { ib::serve(fd, po, on, st); });

  std::size_t n = 0;
  for (const auto& s : ib::scenarios()) {
    BOOST_TEST_CONTEXT(s.name) {
      ib::RunOptions ro;
      ro.scenario = std::string(s.name);
      ro.udp_local = fmt::format("{}:{}", ours, our_port);
      ro.pcap = (dir / fmt::format("ours-{}.pcap", s.name)).string();
      ro.timeout_ms = 10000;
      const auto r = ib::run_initiator(peer.endpoint(), ro);
      BOOST_TEST(r.ok, r.message);
      // The responder's own account of the same connection.
      const nlohmann::json rep = peer.report(++n);
      BOOST_TEST(rep.value("ok", false), rep.dump());
      const std::set<std::string> want(s.failing_cases.begin(), s.failing_cases.end());
      for (const auto& f : {dir / fmt::format("ours-{}.pcap", s.name), dir / fmt::format("peer-roce-{}.pcap", n - 1)}) {
        std::size_t packets = 0;
        std::string error;
        const auto got = fails_of(f, {port, our_port}, packets, error);
        BOOST_TEST(error.empty(), error);
        BOOST_TEST(packets > 0u, f);  // not vacuous: RoCEv2 packets were decoded
        BOOST_TEST((got == want), f << ": FAIL " << fmt::format("{}", fmt::join(got, ", ")) << "; expected "
                                    << fmt::format("{}", fmt::join(want, ", ")));
      }
    }
  }
  peer.stop();
  fs::remove_all(dir);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_scenario_against_our_peer) { every_scenario("127.0.0.1", "127.0.0.2", false); }

// The same over IPv6 loopback: one address (::1), so two UDP ports, and the
// checker tells the two ends apart by port.
BOOST_AUTO_TEST_CASE(every_scenario_over_ipv6) { every_scenario("[::1]", "[::1]", true); }

// Our perftest server on 127.0.0.3:4791 for one client running `program`
// over `type`, recording into `dir`.
ib::PeerOptions one_perftest_client(std::string_view program, rdmaconf::engine::ib::QpType type, const fs::path& dir) {
  ib::PeerOptions po;
  po.udp_local = "127.0.0.3:4791";
  po.idle_timeout_ms = 10000;
  po.connections = 1;
  po.max_size = 1u << 20;
  po.perftest_program = std::string(program);
  po.qp.type = type;
  po.pcap_dir = dir.string();
  return po;
}

// The end of perftest's exchange both ways it is written: perftest before
// upstream commit dbf395e (2023) sends "done" and NUL, later ones (25.01)
// close the socket instead; anything else is an error that says what came.
BOOST_AUTO_TEST_CASE(perftest_done_takes_the_old_done_and_the_new_close) {
  const auto end_with = [](const std::string& peer_sends, bool close_after) {
    int sv[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    if (!peer_sends.empty()) BOOST_REQUIRE(::send(sv[1], peer_sends.data(), peer_sends.size(), 0) == static_cast<ssize_t>(peer_sends.size()));
    if (close_after) ::close(sv[1]);
    ib::PerftestSession ses(sv[0], true, 300);
    const bool ok = ses.done();
    const std::string err = ses.error();
    ::close(sv[0]);
    if (!close_after) ::close(sv[1]);
    return std::pair{ok, err};
  };
  BOOST_TEST(end_with(std::string("done", 5), false).first);  // perftest 4.5 / 6.06
  BOOST_TEST(end_with("", true).first);                       // perftest 25.01
  {  // ... whose close, met by our "done", comes back as a reset
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    BOOST_REQUIRE(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(l, 1) == 0);
    BOOST_REQUIRE(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    BOOST_REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const int s = ::accept(l, nullptr, nullptr);
    ::close(s);  // the peer has gone: our "done" reaches a closed socket, which answers with a reset
    ::usleep(50 * 1000);
    ib::PerftestSession ses(c, true, 300);
    BOOST_TEST(ses.done(), ses.error());
    ::close(c);
    ::close(l);
  }
  const auto partial = end_with("do", true);
  BOOST_TEST(!partial.first);
  BOOST_TEST(partial.second == "perftest done: the other side closed after 2 of 5 octets", partial.second);
  const auto other = end_with(std::string("nope", 5), false);
  BOOST_TEST(!other.first);
  BOOST_TEST(other.second.find("expected \"done\"") != std::string::npos, other.second);
  const auto silent = end_with("", false);
  BOOST_TEST(!silent.first);
  BOOST_TEST(silent.second.find("no \"done\" and no close within 300 ms") != std::string::npos, silent.second);
}

// perftest's own TCP exchange (interop/ib/perftest), our client against our
// server for each program (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw). The real peer is perftest on rxe in the lab
// (docs/lab.md); this keeps both sides' sequences in step with each other in
// every build, and the catalog judges both recordings.
BOOST_AUTO_TEST_CASE(perftest_exchange_our_client_against_our_server) {
  // perftest's keys carry a GID and no port: RoCEv2 goes to 4791, so the two
  // ends take loopback addresses of their own (the wire oracle test sniffs
  // 127.0.0.2).
  constexpr std::uint16_t port = 4791;
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-perftest-live-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  constexpr std::uint64_t kIters = 50;
  using rdmaconf::engine::ib::QpType;
  const std::pair<const char*, QpType> runs[] = {
      {"ib_write_bw", QpType::rc}, {"ib_read_bw", QpType::rc}, {"ib_send_bw", QpType::rc}, {"ib_atomic_bw", QpType::rc},
      {"ib_write_bw", QpType::uc}, {"ib_send_bw", QpType::uc}, {"ib_send_bw", QpType::ud}};
  for (const auto& [prog, type] : runs) {
    BOOST_TEST_CONTEXT(prog << " over " << rdmaconf::engine::ib::qp_type_name(type)) {
      // A UD message is one packet.
      const std::uint32_t kSize = type == QpType::ud ? 1024 : 4096;
      std::string err;
      Fd lfd = rdmaconf::engine::tcp_listen("127.0.0.3:0", err);
      BOOST_REQUIRE_MESSAGE(lfd, err);
      const ib::PeerOptions po = one_perftest_client(prog, type, dir);
      nlohmann::json rep;
      std::jthread peer([&](std::stop_token st) {
        ib::serve_perftest(lfd.get(), po, [&](const nlohmann::json& j) { rep = j; }, st);
      });
      ib::RunOptions ro;
      ro.udp_local = fmt::format("127.0.0.4:{}", port);
      ro.size = kSize;
      ro.iterations = kIters;
      ro.timeout_ms = 10000;
      ro.qp.type = type;
      const fs::path ours = dir / fmt::format("ours-{}-{}.pcap", prog, rdmaconf::engine::ib::qp_type_name(type));
      ro.pcap = ours.string();
      const auto r = ib::run_perftest_client(fmt::format("127.0.0.3:{}", rdmaconf::engine::local_port(lfd.get())), prog, ro);
      peer.join();
      BOOST_TEST(r.ok, r.message);
      BOOST_TEST(r.iterations == kIters);
      BOOST_TEST(r.peer.value("version", "") == "6.06");
      BOOST_REQUIRE_MESSAGE(rep.is_object(), "the server reported nothing");
      BOOST_TEST(rep.value("ok", false), rep.dump());
      BOOST_TEST(r.peer.value("connection_type", "") == rdmaconf::engine::ib::qp_type_name(type));
      if (std::string_view(prog) == "ib_send_bw") {
        BOOST_TEST(rep.value("received", 0u) == kIters, rep.dump());
        BOOST_TEST(rep.value("received_octets", 0u) == kIters * kSize, rep.dump());
      }
      for (const auto& f : {ours, dir / "peer-perftest-0.pcap"}) {
        std::size_t packets = 0;
        std::string error;
        const auto got = fails_of(f, {port}, packets, error);
        BOOST_TEST(error.empty(), error);
        // A WRITE or SEND of 4096 octets is 4 packets at MTU 1024, a READ 1
        // request and 4 responses, an atomic a request and its ACK, a UD
        // SEND one packet; each side records both directions.
        const std::uint64_t per = type == QpType::ud ? 1 : std::string_view(prog) == "ib_atomic_bw" ? 2 : 4;
        BOOST_TEST(packets >= kIters * per, f << ": " << packets << " RoCE packets");
        BOOST_TEST(got.empty(), f << ": FAIL " << fmt::format("{}", fmt::join(got, ", ")));
      }
      fs::remove(dir / "peer-perftest-0.pcap");
    }
  }
  fs::remove_all(dir);
}

// Every fault our client can plant against a perftest server, against our
// own perftest server (a conforming responder): each run passes, judged from
// the client's side alone as against rxe in the lab, and the server's own
// account shows the reaction (its NAKs, drops and duplicates); the
// recordings FAIL exactly the cases of the broken rule.
BOOST_AUTO_TEST_CASE(perftest_faults_against_our_server) {
  constexpr std::uint16_t port = 4791;
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-perftest-faults-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  using rdmaconf::engine::ib::QpType;
  BOOST_TEST(ib::perftest_faults().size() >= 14u);
  for (const auto& f : ib::perftest_faults()) {
    for (const auto program : f.programs) {
      BOOST_TEST_CONTEXT(f.name << " against " << program) {
        const std::uint32_t size = f.one_packet_messages || f.type == QpType::ud ? 1024 : 4096;
        std::string err;
        Fd lfd = rdmaconf::engine::tcp_listen("127.0.0.3:0", err);
        BOOST_REQUIRE_MESSAGE(lfd, err);
        const ib::PeerOptions po = one_perftest_client(program, f.type, dir);
        nlohmann::json rep;
        std::jthread peer([&](std::stop_token st) {
          ib::serve_perftest(lfd.get(), po, [&](const nlohmann::json& j) { rep = j; }, st);
        });
        ib::RunOptions ro;
        ro.udp_local = fmt::format("127.0.0.4:{}", port);
        ro.size = size;
        ro.iterations = 8;
        ro.timeout_ms = 10000;
        ro.qp.type = f.type;
        ro.fault = std::string(f.name);
        const fs::path ours = dir / fmt::format("ours-{}-{}.pcap", f.name, program);
        ro.pcap = ours.string();
        const auto r = ib::run_perftest_client(fmt::format("127.0.0.3:{}", rdmaconf::engine::local_port(lfd.get())), program, ro);
        peer.join();
        BOOST_TEST(r.ok, r.message);
        BOOST_REQUIRE_MESSAGE(rep.is_object(), "the server reported nothing");
        const auto& c = rep.value("counters", nlohmann::json::object());
        if (f.name.starts_with("fault-duplicate")) BOOST_TEST(c.value("duplicates", 0) == 1, rep.dump());
        if (f.name == "fault-pkey" || f.name == "fault-qp-type") BOOST_TEST(c.value("dropped_header", 0) == 1, rep.dump());
        if (f.name == "fault-qkey") {
          BOOST_TEST(c.value("dropped_uc_ud", 0) == 1, rep.dump());
          BOOST_TEST(rep.value("received", 0u) == 8u, rep.dump());
        }
        if (f.name == "fault-zero-length-rkey") BOOST_TEST(c.value("naks_sent", 0) == 0, rep.dump());
        const auto* s = ib::find_scenario(f.name);
        BOOST_REQUIRE(s);
        const std::set<std::string> want(s->failing_cases.begin(), s->failing_cases.end());
        std::size_t packets = 0;
        const auto got = fails_of(ours, {port}, packets, err);
        BOOST_TEST(err.empty(), err);
        BOOST_TEST(packets > 0u);
        BOOST_TEST((got == want), ours << ": FAIL " << fmt::format("{}", fmt::join(got, ", ")) << "; expected "
                                       << fmt::format("{}", fmt::join(want, ", ")));
        fs::remove(dir / "peer-perftest-0.pcap");
      }
    }
  }
  // What cannot be planted says why.
  ib::RunOptions ro;
  ro.fault = "fault-no-receive";
  BOOST_TEST(ib::run_perftest_client("127.0.0.1:1", "ib_send_bw", ro).message.find("cannot be planted against perftest") !=
             std::string::npos);
  ro.fault = "fault-opseq";
  ro.size = 4096;
  BOOST_TEST(ib::run_perftest_client("127.0.0.1:1", "ib_write_bw", ro).message.find("must not exceed the path MTU") !=
             std::string::npos);
  fs::remove_all(dir);
}

// The perftest server serves its clients at once: a silent connection
// delays no one, two clients (each from a loopback address of its own, as
// perftest's keys name no port) run side by side on QPNs drawn at random,
// and datagrams that name no live QPN are dropped and counted. Served one
// client at a time, the silent connection held the others for its whole
// idle timeout.
BOOST_AUTO_TEST_CASE(perftest_server_serves_clients_at_once) {
  constexpr std::uint16_t port = 4791;
  constexpr int kIdleMs = 4000;
  std::string err;
  ib::PeerOptions po;
  po.udp_local = fmt::format("127.0.0.3:{}", port);
  po.idle_timeout_ms = kIdleMs;
  po.connections = 3;
  po.max_size = 1u << 20;
  rdmaconf::test::ServingPeer peer([&](int lfd, const auto& report, std::stop_token st) {
    ib::serve_perftest(lfd, po, report, st);
  });
  const std::string control = peer.endpoint();
  // The silent client first: it connects and says nothing.
  const Fd silent = rdmaconf::engine::tcp_connect(control, 2000, err);
  BOOST_REQUIRE_MESSAGE(silent, err);
  const auto t0 = std::chrono::steady_clock::now();
  ib::RunResult got[2];
  {
    std::jthread clients[2];
    for (int i = 0; i < 2; ++i)
      clients[i] = std::jthread([&, i] {
        ib::RunOptions ro;
        ro.udp_local = fmt::format("127.0.0.{}:{}", 4 + i, port);
        ro.size = 4096;
        ro.iterations = 200;
        ro.timeout_ms = 10000;
        got[i] = ib::run_perftest_client(control, "ib_write_bw", ro);
      });
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& r : got) BOOST_TEST(r.ok, r.message);
  // Both were served while the silent connection still held its session.
  BOOST_TEST(ms < kIdleMs, "the clients took " << ms << " ms, the silent connection's timeout is " << kIdleMs << " ms");
  // Datagrams to QPNs of no session (QPN 2 to 201; a session's is drawn
  // from 16 million), from the RoCEv2 port of an address of their own,
  // while the silent connection still holds its session (whose report,
  // the last, counts them).
  {
    const Fd junk(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in from{}, to{};
    from.sin_family = to.sin_family = AF_INET;
    from.sin_port = to.sin_port = htons(port);
    from.sin_addr.s_addr = htonl(0x7f000006);
    to.sin_addr.s_addr = htonl(0x7f000003);
    BOOST_REQUIRE(::bind(junk.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
    std::uint8_t d[64] = {0x0A};  // an RDMA WRITE First opcode
    for (std::uint32_t q = 2; q < 202; ++q) {
      d[5] = static_cast<std::uint8_t>(q >> 16), d[6] = static_cast<std::uint8_t>(q >> 8), d[7] = static_cast<std::uint8_t>(q);
      ::sendto(junk.get(), d, sizeof d, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    }
  }
  // The silent session's report, the last, comes once its idle timeout ends it.
  BOOST_REQUIRE(!peer.report(3).is_null());
  const auto reps = peer.reports();
  std::set<std::uint32_t> qpns;
  std::uint64_t ok = 0, no_session = 0;
  for (const auto& j : reps) {
    ok += j.value("ok", false);
    no_session = std::max<std::uint64_t>(no_session, j.value("datagrams_for_no_session", 0u));
    if (j.value("ok", false)) qpns.insert(j.value("qpn", 0u));
  }
  BOOST_TEST(ok == 2u);
  BOOST_TEST(qpns.size() == 2u);
  // Not a count (the server used to number them 0x100 + n).
  BOOST_TEST(*qpns.rbegin() - *qpns.begin() != 1u);
  BOOST_TEST(no_session >= 200u);
  // The silent one ran into its deadline.
  BOOST_TEST(reps.back().value("ok", true) == false, reps.back().dump());
}

// What perftest cannot run is refused before anything is sent, with the reason.
BOOST_AUTO_TEST_CASE(perftest_refuses_what_perftest_cannot_run) {
  using rdmaconf::engine::ib::QpType;
  ib::RunOptions ro;
  ro.timeout_ms = 200;
  ro.qp.type = QpType::ud;
  auto r = ib::run_perftest_client("127.0.0.1:1", "ib_read_bw", ro);
  BOOST_TEST(!r.ok);
  BOOST_TEST(r.message.find("does not run over UD") != std::string::npos, r.message);
  ro.size = 2048;
  r = ib::run_perftest_client("127.0.0.1:1", "ib_send_bw", ro);
  BOOST_TEST(r.message.find("must not exceed the path MTU 1024") != std::string::npos, r.message);
  ro.qp.type = QpType::uc;
  ro.size = 64;
  ro.fault = "fault-psn-gap";
  r = ib::run_perftest_client("127.0.0.1:1", "ib_write_bw", ro);
  BOOST_TEST(r.message.find("RC only") != std::string::npos, r.message);
}

// What the kernel drops before the engine reads it is counted (SO_RXQ_OVFL):
// a flood bigger than the socket's receive buffer, sent over loopback while
// nobody reads, and the link must report at least the excess once it reads.
BOOST_AUTO_TEST_CASE(datagrams_the_kernel_dropped_are_counted) {
  namespace eng = rdmaconf::engine::ib;
  eng::UdpLink link;
  std::string err;
  BOOST_REQUIRE_MESSAGE(link.open("127.0.0.1:0", err), err);
  const rdmaconf::engine::Fd tx(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  BOOST_REQUIRE(tx);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(link.port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Enough octets to fill twice the largest buffer the link may have been given (4 MiB, doubled by the kernel).
  const std::vector<std::byte> d(1400);
  std::size_t sent = 0;
  for (std::size_t i = 0; i < 2 * (8u << 20) / d.size(); ++i)
    sent += ::sendto(tx.get(), d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0;
  rdmaconf::engine::ProtectionDomain pd;
  rdmaconf::engine::CompletionQueue scq, rcq;
  eng::QpConfig c;
  eng::QueuePair qp(pd, scq, rcq, c);
  // No peer is set, so every datagram read counts as foreign; read until the socket is empty.
  for (std::size_t before = ~std::size_t{0}; before != link.foreign_datagrams();) {
    before = link.foreign_datagrams();
    link.poll(qp);
  }
  BOOST_TEST_MESSAGE(fmt::format("sent {}, read {}, kernel dropped {}", sent, link.foreign_datagrams(), link.kernel_drops()));
  BOOST_CHECK_GT(link.kernel_drops(), 0u);
  BOOST_CHECK_EQUAL(link.foreign_datagrams() + link.kernel_drops(), sent);
}

// A session's mailbox (the perftest server's sessions read from one) holds
// what a socket's receive buffer would, 4 MiB; beyond, datagrams are dropped
// and counted, and the link reports them with what the kernel dropped.
BOOST_AUTO_TEST_CASE(mailbox_drops_beyond_its_capacity_and_counts_them) {
  namespace eng = rdmaconf::engine::ib;
  eng::Mailbox box;
  eng::UdpLink link;
  std::string err;
  BOOST_REQUIRE_MESSAGE(link.attach(box, "127.0.0.1:4791", -1, err), err);
  sockaddr_storage from{};
  auto& in = reinterpret_cast<sockaddr_in&>(from);
  in.sin_family = AF_INET;
  in.sin_port = htons(4791);
  in.sin_addr.s_addr = htonl(0x7f000002);
  const std::vector<std::byte> d(4096);
  std::size_t taken = 0;
  for (int i = 0; i < 2000; ++i) taken += box.put(d, from, 0);
  BOOST_TEST(taken == (4u << 20) / d.size());
  BOOST_TEST(box.dropped() == 2000 - taken);
  BOOST_TEST(link.kernel_drops() == box.dropped());
  rdmaconf::engine::ProtectionDomain pd;
  rdmaconf::engine::CompletionQueue scq, rcq;
  eng::QueuePair qp(pd, scq, rcq, eng::QpConfig{});
  // No peer is set: everything read is foreign, and the mailbox is empty again.
  BOOST_TEST(link.poll(qp) == 0u);
  BOOST_TEST(link.foreign_datagrams() == taken);
  BOOST_TEST(box.put(d, from, 0));
}

BOOST_AUTO_TEST_SUITE_END()

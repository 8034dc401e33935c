// A device under test (interop/lab/device.hpp, dut.sh): profiles and their
// refusals, which cells a profile runs, the DUT target, and the driver's
// promises run for real on this host: a program that hangs on the device is
// ended at its deadline with nothing of it left running, a connection
// that drops mid-cell turns the cell red with the cause named, and a device
// that stops answering is brought back by --dut-recover's command.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include "interop/lab/device.hpp"
#include "interop/lab/lab.hpp"
#include "interop/lab/peers.hpp"

namespace lab = rdmaconf::interop::lab;
namespace fs = std::filesystem;

namespace {

const fs::path kLabDir = RDMACONF_SOURCE_DIR "/interop/lab";

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The refusal of a profile, or "" when it parses.
std::string refusal(const std::string& text) {
  try {
    lab::parse_profile(text, "p.json");
    return {};
  } catch (const lab::ProfileError& e) {
    return e.what();
  }
}

// The shipped siw profile with one field replaced (or removed when VALUE is null).
std::string siw_with(const std::string& field, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(read_text(kLabDir / "profiles" / "siw.json"));
  if (value.is_null()) j.erase(field);
  else j[field] = value;
  return j.dump();
}

std::vector<lab::Cell> sweep() {
  return lab::select_cells(lab::read_cells(lab::default_cells_file(kLabDir)), true, {});
}

int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Runs DIR/plan.sh through dut.sh against "root@dut" reached by the fake ssh
// client FAKE, with `extra` environment assignments; the output in DIR/log.
int run_dut_plan(const fs::path& dir, const fs::path& fake, const std::string& extra = "") {
  return run_shell(fmt::format("env DUT=root@dut DUT_SSH={2} OUT={0}/cells DUT_INFO={0} ENGINE=/bin/true "
                               "DUT_ADDR=127.0.0.1 OUR_ADDR=127.0.0.1 OUR_IFACE=lo CELL_TIMEOUT=60 {3} sh {1} {0}/plan.sh "
                               ">{0}/log 2>&1",
                               dir.string(), (kLabDir / "dut.sh").string(), fake.string(), extra));
}

// Whether a process of process group G runs (zombies aside).
bool group_alive(const std::string& g) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string stat = read_text(e.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid, pgrp;
    rest >> state >> ppid >> pgrp;
    if (pgrp == g && state != "Z") return true;
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lab_dut)

// Every shipped profile parses; the untested ones name their sources.
BOOST_AUTO_TEST_CASE(shipped_profiles_parse) {
  const auto names = lab::profile_names(kLabDir);
  for (const char* want : {"siw", "rxe", "irdma-iwarp", "cxgb4", "mlx5", "bnxt_re", "qedr"})
    BOOST_TEST((std::find(names.begin(), names.end(), want) != names.end()), want);
  for (const auto& n : names) {
    const auto p = lab::read_profile(n, kLabDir);
    BOOST_TEST(p.name == n);
    BOOST_TEST((p.tested || !p.sources.empty()), n);
    BOOST_TEST((p.peer != nullptr && p.peer->family == p.family));
  }
  BOOST_TEST(lab::read_profile("siw", kLabDir).tested);
  BOOST_TEST(!lab::read_profile("mlx5", kLabDir).tested);
}

// A malformed profile is refused naming the file and the field.
BOOST_AUTO_TEST_CASE(malformed_profiles_name_the_field) {
  BOOST_TEST(refusal(siw_with("name", "siw")).empty());
  BOOST_TEST(refusal("{").find("p.json: not JSON") == 0u);
  BOOST_TEST(refusal("[]") == "p.json: must be a JSON object");
  const std::pair<std::string, nlohmann::json> cases[] = {
      {"device", nullptr}, {"device", 7}, {"device", "siw 0"}, {"address", "192.0.2"}, {"address", "192.0.2.300"},
      {"family", "fddi"}, {"tested", "yes"}, {"programs", nlohmann::json::array()}, {"gid_index", -1},
      {"format", "rdmaconf device profile 2"}, {"netdev", ""}};
  for (const auto& [field, value] : cases) {
    const std::string why = refusal(siw_with(field, value));
    BOOST_TEST(why.find("p.json: " + field) == 0u, field << " = " << value.dump() << ": " << why);
  }
  BOOST_TEST(refusal(siw_with("colour", "blue")).find("p.json: colour: not a field") == 0u);
  // The family's knobs, checked by the peer table, named under knobs.
  auto knobs = [](nlohmann::json k) { return refusal(siw_with("knobs", std::move(k))); };
  BOOST_TEST(knobs({{"crc", {"off", "sometimes"}}, {"mpa_revisions", {2}}, {"peer_to_peer", {false}}, {"markers", false}})
                 .find("p.json: knobs.crc[1]: \"sometimes\"") == 0u);
  BOOST_TEST(knobs({{"crc", {"off"}}, {"peer_to_peer", {false}}, {"markers", false}}).find("p.json: knobs.mpa_revisions: missing") ==
             0u);
  BOOST_TEST(knobs({{"crc", {"off"}}, {"mpa_revisions", {3}}, {"peer_to_peer", {false}}, {"markers", false}})
                 .find("p.json: knobs.mpa_revisions[0]") == 0u);
  BOOST_TEST(knobs({{"crc", {"off"}}, {"mpa_revisions", {2}}, {"peer_to_peer", {false}}, {"markers", "no"}})
                 .find("p.json: knobs.markers: must be true or false") == 0u);
  // Without a configure command a device has one setting per knob.
  auto fixed = nlohmann::json::parse(siw_with("configure", nullptr));
  BOOST_TEST(refusal(fixed.dump()).find("p.json: knobs.crc: 4 settings listed but the profile has no configure command") == 0u);
  // A RoCE profile: its MTU and transports.
  auto roce = nlohmann::json::parse(read_text(kLabDir / "profiles" / "rxe.json"));
  roce["knobs"]["roce_mtu"] = 1500;
  BOOST_TEST(refusal(roce.dump()).find("p.json: knobs.roce_mtu") == 0u);
  roce["knobs"]["roce_mtu"] = 1024;
  roce["knobs"]["transports"] = {"RC", "XRC"};
  BOOST_TEST(refusal(roce.dump()).find("p.json: knobs.transports[1]") == 0u);
  // A profile asked for by a name the lab does not have lists the names it has.
  try {
    lab::read_profile("nonesuch", kLabDir);
    BOOST_FAIL("read a profile that does not exist");
  } catch (const lab::ProfileError& e) {
    BOOST_TEST(std::string(e.what()).find("profiles by name: bnxt_re, cxgb4") != std::string::npos, e.what());
  }
}

// Which cells a profile runs, and why not the others.
BOOST_AUTO_TEST_CASE(profiles_select_cells) {
  const auto cells = sweep();
  const auto siw = lab::read_profile("siw", kLabDir);
  const auto irdma = lab::read_profile("irdma-iwarp", kLabDir);
  const auto bnxt = lab::read_profile("bnxt_re", kLabDir);
  unsigned siw_runs = 0, iwarp_cells = 0;
  for (const auto& c : cells) {
    const std::string why = lab::cannot_run(siw, c);
    if (c.peer->family != "iwarp") {
      BOOST_TEST(why == "a cell of the ib family; the device speaks iwarp");
      continue;
    }
    ++iwarp_cells;
    if (c.our_role == "none") BOOST_TEST(why.find("a kernel peer against itself") == 0u);
    else BOOST_TEST(why.empty(), c.id << ": " << why);  // siw's profile reaches every setting of the table
    siw_runs += why.empty();
    // irdma's settings are fixed: CRC required, MPA revision 2, peer-to-peer.
    const std::string on_irdma = lab::cannot_run(irdma, c);
    if (on_irdma.empty())
      BOOST_TEST((c.siw.crc_required && !c.siw.crc_strict && c.siw.mpa_version == 2 && c.siw.peer_to_peer), c.id);
  }
  BOOST_TEST(siw_runs > 50u);
  BOOST_TEST(siw_runs < iwarp_cells);
  const auto& uc = *std::find_if(cells.begin(), cells.end(), [](const lab::Cell& c) { return c.connection == "UC"; });
  BOOST_TEST(lab::cannot_run(bnxt, uc).find("the cell runs over UC; the profile's transports are [\"RC\",\"UD\"]") == 0u);
  const auto& atomic = *std::find_if(cells.begin(), cells.end(), [](const lab::Cell& c) { return c.scenario == "ib_atomic_bw" && c.our_role != "none"; });
  BOOST_TEST(lab::cannot_run(bnxt, atomic) == "the cell runs Atomics; the device has none (knobs.atomics)");
  // The plan against a device: its configure command with the cell's settings, our side's and the device's names.
  std::vector<lab::Cell> crc_required;
  for (const auto& c : cells)
    if (c.peer->family == "iwarp" && c.our_role != "none" && c.siw.crc_required && c.siw.mpa_version == 1) crc_required.push_back(c);
  BOOST_REQUIRE(!crc_required.empty());
  const std::string plan = lab::guest_plan(crc_required, &siw);
  BOOST_TEST(plan.find(fmt::format("configure 'lab-guest --call siw_load 1 {} 1 {} 0'", int(crc_required[0].siw.crc_strict),
                                   int(crc_required[0].siw.peer_to_peer))) != std::string::npos,
             plan.substr(0, 400));
}

BOOST_AUTO_TEST_CASE(dut_targets) {
  std::string err;
  BOOST_TEST((lab::parse_dut("guest", err)->kind == lab::Dut::Kind::guest));
  BOOST_TEST((lab::parse_dut("local", err)->kind == lab::Dut::Kind::local));
  const auto d = lab::parse_dut("ssh://root@192.0.2.1", err);
  BOOST_TEST((d && d->kind == lab::Dut::Kind::ssh && d->destination == "root@192.0.2.1" && d->port.empty()));
  const auto p = lab::parse_dut("ssh://lab-host:2222", err);
  BOOST_TEST((p && p->destination == "lab-host" && p->port == "2222" && p->text() == "ssh://lab-host:2222"));
  for (const char* bad : {"ssh://", "ssh://root@", "ssh://@host", "ssh://host:0", "ssh://host:99999", "ssh://-oProxyCommand=x",
                          "ssh://ro ot@host", "telnet://host", "192.0.2.1"}) {
    err.clear();
    BOOST_TEST(!lab::parse_dut(bad, err), bad);
    BOOST_TEST(err.find("--dut") == 0u, bad << ": " << err);
  }
}

// A cell whose device-side program hangs is ended at its deadline, killed by
// its process group, with nothing of it left running (the "device" is this
// host: --dut local).
BOOST_AUTO_TEST_CASE(a_hang_ends_at_the_deadline_with_nothing_left) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-dut-test-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "cells");
  std::ofstream(dir / "plan.sh") << "cell hang\n"
                                    "server peer dut sh -c 'sleep 300 & sleep 300'\n"
                                    "client our our sh -c 'sleep 1'\n"
                                    "finish 2\n"
                                    "cell next\n"
                                    "client peer dut sh -c 'echo after'\n"
                                    "finish 1\n";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = run_shell(fmt::format("env DUT=local OUT={0}/cells DUT_INFO={0} ENGINE=/bin/true DUT_ADDR=127.0.0.1 "
                                       "OUR_ADDR=127.0.0.1 OUR_IFACE=lo CELL_TIMEOUT=60 sh {1} {0}/plan.sh >{0}/log 2>&1",
                                       dir.string(), (kLabDir / "dut.sh").string()));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(rc == 0, read_text(dir / "log"));
  BOOST_TEST(s < 30.0);  // the grace of 2 s, not the program's 300 s
  const std::string pgid = read_text("/tmp/rdmaconf-dut/hang/peer.pgid");
  BOOST_REQUIRE(!pgid.empty());
  BOOST_TEST(!group_alive(pgid.substr(0, pgid.find('\n'))), "process group " << pgid << " still runs");
  BOOST_TEST(read_text(dir / "cells/hang/peer.err").find("killed after 2 s") != std::string::npos);
  BOOST_TEST(!fs::exists(dir / "cells/hang/dut-error"), read_text(dir / "cells/hang/dut-error"));
  BOOST_TEST(read_text(dir / "cells/next/peer.out") == "after\n");
  fs::remove_all(dir);
}

// A device whose SSH connection drops mid-cell: the cell names the cause,
// the run goes on to the next cell (which names the device as unreachable).
// The "ssh client" here runs its command on this host and drops the
// connection (status 255) once the drop file exists.
BOOST_AUTO_TEST_CASE(a_dropped_connection_names_the_cause) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-dut-drop-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "cells");
  const fs::path fake = dir / "fake-ssh";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "# fake ssh: [options] DESTINATION COMMAND; drops (255) once $DROP exists\n"
                         "for last; do :; done\n"
                         "[ -e " << (dir / "drop").string() << " ] && { echo 'Connection to dut closed by remote host.' >&2; exit 255; }\n"
                         "sh -c \"$last\" &\n"
                         "c=$!\n"
                         "while kill -0 $c 2>/dev/null; do\n"
                         "  [ -e " << (dir / "drop").string() << " ] && { echo 'client_loop: send disconnect: Broken pipe' >&2; exit 255; }\n"
                         "  sleep 0.1\n"
                         "done\n"
                         "wait $c\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::ofstream(dir / "plan.sh") << "cell dropped\n"
                                    "client peer dut sh -c 'touch " << (dir / "drop").string() << "; sleep 20'\n"
                                    "finish 1\n"
                                    "cell after\n"
                                    "client peer dut sh -c 'echo never'\n"
                                    "finish 1\n";
  const int rc = run_dut_plan(dir, fake);
  BOOST_TEST(rc == 0, read_text(dir / "log"));
  const std::string dropped = read_text(dir / "cells/dropped/dut-error");
  BOOST_TEST(dropped.find("the SSH connection to root@dut dropped while peer ran: client_loop: send disconnect: Broken pipe") !=
                 std::string::npos,
             dropped);
  BOOST_TEST(fs::exists(dir / "cells/dropped/finished"));
  BOOST_TEST(read_text(dir / "cells/after/dut-error").find("the device could not be reached when the cell began") == 0u);
  BOOST_TEST(fs::exists(dir / "cells/after/finished"));
  // The judge: red, the cause first, a regression whatever the cell's known finding.
  const auto cells = sweep();
  lab::Cell c = *std::find_if(cells.begin(), cells.end(), [](const lab::Cell& x) { return !x.known_finding.empty() && x.our_role == "initiator"; });
  lab::CellOutcome o;
  o.finished = true;
  o.dut_error = dropped.substr(0, dropped.find('\n'));
  o.ours = {{"verdict", "FAIL"}, {"message", "connection reset"}};
  const auto v = lab::judge(c, o);
  BOOST_TEST(v.color == "red");
  BOOST_TEST(v.regression);
  BOOST_TEST(v.reason.find("the device under test: the SSH connection to root@dut dropped") == 0u, v.reason);
  fs::remove_all(dir);
}

// A port-counter read that comes back empty is asked again: the fake ssh
// answers the first `ibv_devinfo` of the cell with nothing (as one CI run's
// read right after a fault cell's client did), the second with the counters.
BOOST_AUTO_TEST_CASE(an_empty_counter_read_is_asked_again) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-dut-counters-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "cells");
  const fs::path fake = dir / "fake-ssh", once = dir / "emptied";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "# fake ssh: [options] DESTINATION COMMAND; the device's ibv_devinfo stands in a function\n"
                         "for last; do :; done\n"
                         "case \"$last\" in *ibv_devinfo*)\n"
                         "  [ -e " << once.string() << " ] || { touch " << once.string() << "; exit 0; }\n"
                         "  printf 'hca_id:\\trxe0\\n\\t\\t\\tbad_pkey_cntr:\\t\\t0x1\\n'; exit 0;;\n"
                         "esac\n"
                         "exec sh -c \"$last\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::ofstream(dir / "plan.sh") << "cell read\n"
                                    "port_counters after rxe0\n"
                                    "finish 1\n";
  const int rc = run_dut_plan(dir, fake);
  BOOST_TEST(rc == 0, read_text(dir / "log"));
  BOOST_TEST(read_text(dir / "cells/read/counters-after.txt").find("bad_pkey_cntr:\t\t0x1") != std::string::npos,
             read_text(dir / "cells/read/counters-after.txt"));
  BOOST_TEST(read_text(dir / "cells/read/counters-after.err") == "try 1: nothing read (exit status 0)\n");
  fs::remove_all(dir);
}

// A device that stops answering in a cell (here: the fake ssh fails as an
// unreachable host once the "down" file exists; the cell's program writes a
// panic to the device's "console"): that cell names the loss and keeps the
// console's words; --dut-recover's command brings the device back before the
// next cell, which runs as usual, the device's setting made again. Recovery
// is tried at most DUT_RECOVER_MAX times, and a failed one leaves the next
// cells unreachable, named.
BOOST_AUTO_TEST_CASE(a_lost_device_is_recovered_and_its_console_kept) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-dut-lost-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "cells");
  const fs::path fake = dir / "fake-ssh", down = dir / "down", console = dir / "console.log";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "for last; do :; done\n"
                         "[ -e " << down.string() << " ] && { echo 'ssh: connect to host dut port 22: No route to host' >&2; exit 255; }\n"
                         "exec sh -c \"$last\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::ofstream(console) << "[    0.5] booted\n";
  std::ofstream(dir / "plan.sh") << "configure 'echo setting-A'\n"
                                    "cell lost\n"
                                    "server srv our sleep 3171\n"
                                    "client peer dut sh -c 'echo \"[   12.25] Kernel panic - not syncing: soft lockup\" >>"
                                 << console.string() << "; touch " << down.string() << "'\n"
                                    "finish 1\n"
                                    "cell after\n"
                                    "client peer dut sh -c 'echo after'\n"
                                    "finish 1\n";
  const auto run = [&](const std::string& recover, const std::string& max, const std::string& dev = "") {
    fs::remove_all(dir / "cells");
    fs::create_directories(dir / "cells");
    fs::remove(dir / "recover.log");
    fs::remove(dir / "configure.log");
    fs::remove(down);
    return run_dut_plan(dir, fake,
                        fmt::format("DUT_RECOVER='{}' DUT_RECOVER_MAX={} DUT_RECOVER_TIMEOUT=20 DUT_CONSOLE={} DUT_DEV={}",
                                    recover, max, console.string(), dev));
  };
  // Recovered.
  BOOST_TEST(run(fmt::format("rm {}; echo powered on", down.string()), "3") == 0, read_text(dir / "log"));
  const std::string lost = read_text(dir / "cells/lost/dut-error");
  BOOST_TEST(lost.find("the device stopped answering during the cell: ssh: connect to host dut port 22: No route to host; "
                       "its console: Kernel panic - not syncing: soft lockup") == 0u,
             lost);
  BOOST_TEST(read_text(dir / "cells/lost/console.txt") == "[   12.25] Kernel panic - not syncing: soft lockup\n");
  // Our side's server, waiting for a device that is gone, is killed with its deadline's timeout.
  BOOST_TEST(read_text(dir / "cells/lost/srv.err").find("killed after 1 s") != std::string::npos);
  for (const auto& e : fs::directory_iterator("/proc"))
    BOOST_TEST(read_text(e.path() / "cmdline") != std::string("sleep\0" "3171\0", 11), "our server outlived its cell");
  BOOST_TEST(!fs::exists(dir / "cells/after/dut-error"), read_text(dir / "cells/after/dut-error"));
  BOOST_TEST(read_text(dir / "cells/after/peer.out") == "after\n");
  const std::string log = read_text(dir / "recover.log");
  BOOST_TEST(log.find("== recovery 1 before cell after (the device does not answer): rm ") == 0u, log);
  BOOST_TEST(log.find("powered on\n") != std::string::npos, log);
  BOOST_TEST(log.find("\nrecovered after ") != std::string::npos, log);
  const std::string configured = read_text(dir / "configure.log");
  BOOST_TEST(configured == "setting-A\nsetting-A\n", configured);  // once by the plan, once after the recovery
  // The judge: the console's panic is the kernel trouble named, and the cell a regression.
  const auto cells = sweep();
  lab::Cell c = *std::find_if(cells.begin(), cells.end(), [](const lab::Cell& x) { return !x.known_finding.empty(); });
  lab::CellOutcome o;
  o.finished = true;
  o.dut_error = lost.substr(0, lost.find('\n'));
  const auto v = lab::judge(c, o);
  BOOST_TEST(v.regression);
  BOOST_TEST(v.reason.find("the device under test: the device stopped answering during the cell") == 0u, v.reason);

  // A recovery that fails: tried once (DUT_RECOVER_MAX=1), the next cell unreachable and named.
  BOOST_TEST(run("echo no power; exit 1", "1") == 0, read_text(dir / "log"));
  BOOST_TEST(read_text(dir / "cells/after/dut-error").find("the device could not be reached when the cell began: ssh: "
                                                           "connect to host dut port 22: No route to host") == 0u,
             read_text(dir / "cells/after/dut-error"));
  BOOST_TEST(read_text(dir / "log").find("recovering the device failed") != std::string::npos, read_text(dir / "log"));
  const std::string failed_log = read_text(dir / "recover.log");
  BOOST_TEST(failed_log.find("== recovery 1 ") == 0u);
  BOOST_TEST(failed_log.find("== recovery 2 ") == std::string::npos, failed_log);

  // A setting that leaves the device without its RDMA device (no
  // /sys/class/infiniband/rdmaconf-no-dev here): recovered and configured
  // once more, once, before the first cell.
  BOOST_TEST(run("echo powered on", "1", "rdmaconf-no-dev") == 0, read_text(dir / "log"));
  const std::string no_dev = read_text(dir / "recover.log");
  BOOST_TEST(no_dev.find("== recovery 1 before cell (none) (after configure the device has no RDMA device "
                         "rdmaconf-no-dev): echo powered on") == 0u,
             no_dev);
  BOOST_TEST(read_text(dir / "configure.log") == "setting-A\nsetting-A\n");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

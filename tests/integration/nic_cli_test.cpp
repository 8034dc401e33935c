// `rdmaconf nic check`: the Fast UDP model passes every case; each negative
// variant FAILs exactly the case its fault breaks (known from how it was
// built, not from a run); plug-ins that cannot load, refuse to start, crash,
// hang or misuse the shim give clear errors and never take the harness
// down; a plug-in built out of tree from the installed header passes; and
// tshark, not our code, judges the UDP checksums on the wire.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::test;

namespace {

#ifndef RDMACONF_SANITIZED
#define RDMACONF_SANITIZED false
#endif

const std::string kPlugins = RDMACONF_NIC_PLUGIN_DIR;
const std::string kTestPlugins = RDMACONF_TEST_NIC_DIR;

struct Report {
  int status = -1;
  std::string out;
  nlohmann::json json;
  std::map<std::string, std::set<std::string>> verdicts;  // case -> verdicts over the scopes
  std::set<std::string> failing() const {
    std::set<std::string> s;
    for (const auto& [c, v] : verdicts)
      if (v.count("FAIL")) s.insert(c);
    return s;
  }
  // The evidence of every FAIL, as text.
  std::string evidence() const {
    std::string t;
    for (const auto& in : json["inputs"])
      for (const auto& sc : in["scopes"])
        for (const auto& r : sc["results"])
          if (r["verdict"] == "FAIL") t += r.dump() + "\n";
    return t;
  }
};

Report nic_check(const std::string& plugin, const std::string& extra = "") {
  const auto dir = temp_dir("nic");
  Report r;
  const auto json = dir / "r.json";
  const auto run_ = run(fmt::format("{} nic check --quiet --plugin {} --json {} --junit {} {} 2>&1", kBin, plugin,
                                    json.string(), (dir / "r.xml").string(), extra));
  r.status = run_.status;
  r.out = run_.out;
  if (fs::exists(json)) {
    r.json = nlohmann::json::parse(slurp(json));
    for (const auto& in : r.json["inputs"])
      for (const auto& sc : in["scopes"])
        for (const auto& x : sc["results"]) r.verdicts[x["case"]].insert(x["verdict"].get<std::string>());
    const auto v = run("/usr/bin/python3 -c \"import json,jsonschema; s=json.load(open('" + kSource +
                       "/reports/schema/report-v1.schema.json')); jsonschema.validate(json.load(open('" + json.string() +
                       "')), s, cls=jsonschema.Draft202012Validator); import xml.etree.ElementTree as E; E.parse('" +
                       (dir / "r.xml").string() + "'); print('valid')\" 2>&1");
    BOOST_TEST(v.out.find("valid") != std::string::npos, plugin << ": " << v.out);
  }
  fs::remove_all(dir);
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nic)

BOOST_AUTO_TEST_CASE(model_passes_every_case) {
  const auto r = nic_check(kPlugins + "/fastudp-nic.so");
  BOOST_TEST(r.status == 0, r.out << r.evidence());
  BOOST_TEST(r.failing().empty(), r.evidence());
  // Every case of the catalog is judged somewhere (a scenario exercises it).
  const auto catalog = r.json["catalog"];
  BOOST_TEST(catalog.size() >= 25u);
  for (const auto& c : catalog) {
    const std::string id = c["id"];
    BOOST_TEST(r.verdicts.count(id) == 1u, id);
    if (r.verdicts.count(id)) BOOST_TEST(r.verdicts.at(id).count("PASS") == 1u, id << " never judged");
  }
}

// Each variant is the model built with one FUDP_FAULT_* define
// (engines/fastudp/CMakeLists.txt); the fault names the rule it breaks.
BOOST_AUTO_TEST_CASE(each_negative_variant_fails_exactly_its_case) {
  const std::map<std::string, std::string> expected{
      {"skip-csum", "fastudp.nic.csum.bad"},   // FUDP_FAULT_SKIP_CSUM: never verifies a non-zero checksum
      {"overrun", "fastudp.nic.memory"},       // FUDP_FAULT_OVERRUN: DMA in whole lines past a short buffer
      {"wrong-port", "fastudp.nic.match"},     // FUDP_FAULT_WRONG_PORT: matches the source port
      {"no-header", "fastudp.nic.splinter"},   // FUDP_FAULT_NO_HEADER: no ring entry for a splinter
      {"late-irq", "fastudp.nic.irq"},         // FUDP_FAULT_LATE_IRQ: a coalescing timer four times too long
      {"no-tx-done", "fastudp.nic.tx.done"},   // FUDP_FAULT_NO_TX_DONE: never writes a transmit completion
      {"swap-flags", "fastudp.nic.flags"},     // FUDP_FAULT_SWAP_FLAGS: CSUM_OK and NO_CSUM swapped
      {"stale-counters", "fastudp.nic.counters"},  // FUDP_FAULT_STALE_COUNTERS: six counters never move
      {"ignore-cancel", "fastudp.nic.rx_cancel"},  // FUDP_FAULT_IGNORE_CANCEL: RX_CANCEL has no effect
      {"ignore-reset", "fastudp.nic.ctrl"},        // FUDP_FAULT_IGNORE_RESET: CTRL_RESET has no effect
      {"whole-unflagged", "fastudp.nic.slow_path"},  // FUDP_FAULT_WHOLE_UNFLAGGED: a frame cut to its slot, unflagged
      {"hold-256", "fastudp.nic.posted_min"},  // FUDP_FAULT_HOLD_256: holds 256 posted receives, not 1024
      {"wide-only", "fastudp.nic.mmio"}};      // FUDP_FAULT_WIDE_ONLY: ignores the width of register accesses
  for (const auto& [variant, id] : expected) {
    const auto r = nic_check(kPlugins + "/fastudp-nic-fault-" + variant + ".so");
    BOOST_TEST(r.status == 1, variant << ": " << r.out);
    BOOST_TEST(r.failing() == std::set<std::string>{id}, variant << ":\n" << r.evidence());
  }
}

BOOST_AUTO_TEST_CASE(plugins_that_cannot_load_are_input_errors) {
  struct Bad {
    std::string plugin, message;
  };
  const std::vector<Bad> bad{
      {kTestPlugins + "/test-nic-bad-abi.so", "built for shim ABI version 99; this harness speaks version 2"},
      {kTestPlugins + "/test-nic-no-receive.so", "does not export fudp_plugin_receive"},
      {"/nonexistent/nic.so", "/nonexistent/nic.so: cannot open the plug-in"},
      {kSource + "/README.md", "cannot load the plug-in"}};
  for (const auto& b : bad) {
    const auto r = nic_check(b.plugin);
    BOOST_TEST(r.status == 2, b.plugin << ": " << r.out);
    BOOST_TEST(r.out.find(b.message) != std::string::npos, b.plugin << ": " << r.out);
  }
}

// The harness survives the plug-in: every misbehaviour is a FAIL of the
// case it breaks, with the report written.
BOOST_AUTO_TEST_CASE(plugins_that_misbehave_fail_and_the_harness_survives) {
  struct Mode {
    std::string args, id, evidence, extra;
  };
  const std::vector<Mode> modes{
      {"null", "fastudp.nic.shim", "fudp_plugin_init returned NULL", ""},
      // A plain build dies of the signal; under ASan its handler reports and exits.
      {"crash", "fastudp.nic.shim", RDMACONF_SANITIZED ? "exited with status" : "died of signal 11", ""},
      // ... and the frame it was handling is named.
      {"crash", "fastudp.nic.shim", "in fudp_plugin_receive with frame 1", "--scenario basic-ipv4"},
      {"hang", "fastudp.nic.shim", "did not finish within 300 ms", "--scenario basic-ipv4 --scenario not-udp --timeout 300"},
      {"misuse", "fastudp.nic.shim", "raise_interrupt on vector 7", ""},
      {"wild", "fastudp.nic.memory", "16 octet(s) outside every region the host registered, below every region", ""}};
  for (const auto& m : modes) {
    const auto r = nic_check(kTestPlugins + "/test-nic-ok.so", "--plugin-args " + m.args + " " + m.extra);
    BOOST_TEST(r.status == 1, m.args << ": " << r.out);
    BOOST_TEST(r.failing().count(m.id) == 1u, m.args << ":\n" << r.evidence());
    BOOST_TEST(r.evidence().find(m.evidence) != std::string::npos, m.args << ":\n" << r.evidence());
  }
}

// A plug-in that forks: the scenario ends when the plug-in's child process
// does (not at the timeout), the FAIL says it forked, and nothing of it
// runs afterwards.
BOOST_AUTO_TEST_CASE(a_plugin_that_forks_is_contained) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = nic_check(kTestPlugins + "/test-nic-ok.so", "--plugin-args fork --scenario basic-ipv4 --timeout 60000");
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(s < 30, "took " << s << " s");
  BOOST_TEST(r.status == 1, r.out);
  BOOST_TEST(r.failing().count("fastudp.nic.shim") == 1u, r.evidence());
  BOOST_TEST(r.evidence().find("forked: 1 process of its own still ran") != std::string::npos, r.evidence());
  const auto left = run("pgrep -f 'plugin-args fork' | grep -v $$ | wc -l");
  BOOST_TEST(std::stoi(left.out) == 0, "processes left: " << left.out);
}

// A plug-in that writes 10 MB to stdout: none of it in the harness's own
// output; the first 64 KiB in the scenario's params, the rest counted.
BOOST_AUTO_TEST_CASE(a_plugins_output_is_captured_and_bounded) {
  const auto r = nic_check(kTestPlugins + "/test-nic-ok.so", "--plugin-args spew --scenario basic-ipv4");
  BOOST_TEST(r.out.find("xxxxxxxxxx") == std::string::npos, r.out.substr(0, 300));
  BOOST_TEST(r.out.size() < 10000u);
  const auto& params = r.json["inputs"][0]["scopes"][0]["parameters"];
  const std::string log = params.value("plugin_output", "");
  BOOST_TEST(log.size() > 60000u);
  BOOST_TEST(log.size() < 70000u);
  BOOST_TEST(log.find("more octets not kept]") != std::string::npos, log.substr(log.size() - 100));
}

// A plug-in that allocates and touches 20 GiB is stopped by the harness's
// own limit, and the FAIL says so. (Not in a sanitizer build, which sets no
// limit; the shell's limit is a guard for the machine should ours fail.)
BOOST_AUTO_TEST_CASE(a_plugin_that_hogs_memory_is_stopped_by_the_limit) {
  if (RDMACONF_SANITIZED) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto dir = temp_dir("nic-hog");
  const auto res = run(fmt::format("ulimit -v 8000000; {} nic check --quiet --plugin {}/test-nic-ok.so --plugin-args hog "
                                   "--scenario basic-ipv4 --plugin-memory 256 --json {}/r.json 2>&1",
                                   kBin, kTestPlugins, dir.string()));
  BOOST_TEST(res.status == 1, res.out);
  const std::string report = slurp(dir / "r.json");
  BOOST_TEST(report.find("256 MiB --plugin-memory limit") != std::string::npos, report.substr(0, 3000));
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)));
  fs::remove_all(dir);
}

// A vendor's view: the SDK installed to a prefix, the model's source built
// there with the system's C compiler against the installed header alone
// (and the header compiled as C++), and the result passes the suite.
BOOST_AUTO_TEST_CASE(plugin_built_out_of_tree_passes) {
  const auto dir = temp_dir("nic-sdk");
  const auto prefix = dir / "prefix";
  auto r = run(fmt::format("cmake --install {} --prefix {} --component fastudp-sdk 2>&1", RDMACONF_BUILD_DIR, prefix.string()));
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto header = prefix / "include/rdmaconf/fastudp_shim.h";
  BOOST_REQUIRE(fs::exists(header));
  fs::copy_file(kSource + "/engines/fastudp/model/fastudp_nic.c", dir / "nic.c");
  r = run(fmt::format("cd {} && cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -shared -fPIC -I {}/include nic.c -o nic.so 2>&1",
                      dir.string(), prefix.string()));
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.out);
  r = run(fmt::format("echo '#include <rdmaconf/fastudp_shim.h>' | c++ -std=c++11 -x c++ -fsyntax-only -Wall -Wextra -Werror "
                      "-pedantic -I {}/include - 2>&1",
                      prefix.string()));
  BOOST_TEST(r.status == 0, r.out);
  const auto rep = nic_check((dir / "nic.so").string());
  BOOST_TEST(rep.status == 0, rep.out << rep.evidence());
  fs::remove_all(dir);
}

// tshark's UDP checksum validation is the oracle for the checksums on the
// wire: those the model filled in on transmit, and those the scenarios
// made wrong, zero or all ones on receive.
BOOST_AUTO_TEST_CASE(tshark_judges_the_checksums_on_the_wire) {
  if (run("command -v tshark").status != 0) {
    BOOST_TEST_MESSAGE("tshark not installed: skipped");
    return;
  }
  const auto dir = temp_dir("nic-pcap");
  auto r = run(fmt::format("{} nic check --quiet --plugin {}/fastudp-nic.so --pcap-dir {} 2>&1", kBin, kPlugins, dir.string()));
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.out);
  auto status = [&](const std::string& scenario) {
    const auto t = run(fmt::format("tshark -n -r {}/{}.pcap -o udp.check_checksum:TRUE -T fields -e udp.checksum.status 2>/dev/null",
                                   dir.string(), scenario));
    std::vector<std::string> v;
    std::istringstream in(t.out);
    for (std::string line; std::getline(in, line);) v.push_back(line);
    return v;
  };
  // tshark's checksum status: 0 bad, 1 good, 3 not present (IPv4 zero), 4 illegal (IPv6 zero).
  const std::vector<std::string> tx{"1", "1", "1", "1", "1"};
  BOOST_TEST(status("transmit") == tx, fmt::format("{}", fmt::join(status("transmit"), ",")));
  const std::vector<std::string> bad{"0", "0", "0"};
  BOOST_TEST(status("checksum-bad") == bad, fmt::format("{}", fmt::join(status("checksum-bad"), ",")));
  const auto zero = status("checksum-zero");
  BOOST_REQUIRE(zero.size() == 4u);
  BOOST_TEST(zero[0] == "3");  // IPv4, zero: none
  BOOST_TEST(zero[1] == "4");  // IPv6, zero: the datagram the model must discard
  BOOST_TEST(zero[2] == "3");
  BOOST_TEST(zero[3] == "1");  // a sum that computes to zero, sent as 0xffff
  fs::remove_all(dir);
}

// The harness's wire on a veth pair into a namespace of the test's own:
// kernel UDP sockets send to the model (every tenth datagram corrupted on
// the wire, which the model must drop) and receive from it; the kernel's
// counters judge the model's transmit checksums. The negative variant that
// skips the checksum check places the corrupted ones and fails.
BOOST_AUTO_TEST_CASE(live_with_the_kernel) {
  if (geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: the live test needs a namespace and a veth pair; skipped");
    return;
  }
  const auto namespaces = [] { return run("ip netns list | grep -c rdmaconf-fudp").out; };
  const auto before = namespaces();
  auto r = run(fmt::format("{} nic live --plugin {}/fastudp-nic.so --count 3000 2>&1", kBin, kPlugins));
  BOOST_TEST(r.status == 0, r.out);
  BOOST_TEST(r.out.find("300 corrupted on the wire; the model placed 2700 (2700 intact) and dropped 300") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("received 3000 intact; the kernel's counters: InDatagrams +3000, InErrors +0, InCsumErrors +0") !=
                 std::string::npos,
             r.out);
  // Interrupts were coalesced by the wall clock: every entry reached the
  // driver (2700 splinters and 3000 transmit completions), on fewer
  // interrupts than entries.
  const auto at = r.out.find("the driver took 5700 ring entries on ");
  BOOST_TEST(at != std::string::npos, r.out);
  if (at != std::string::npos) {
    const auto irqs = std::stoull(r.out.substr(at + 37));
    BOOST_TEST(irqs > 0u);
    BOOST_TEST(irqs < 5700u, r.out);
  }
  r = run(fmt::format("{} nic live --plugin {}/fastudp-nic-fault-skip-csum.so --count 500 2>&1", kBin, kPlugins));
  BOOST_TEST(r.status == 1, r.out);
  BOOST_TEST(r.out.find("dropped 0 for their checksum [WRONG]") != std::string::npos, r.out);
  // Nothing is left behind.
  BOOST_TEST(namespaces() == before);
}

BOOST_AUTO_TEST_SUITE_END()

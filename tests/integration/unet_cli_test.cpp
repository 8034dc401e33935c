// `rdmaconf unet live`: every data path runs every scenario and PASSes every
// case it can judge; each rule broken on purpose (--fault) FAILs exactly
// its case; on the xdp and packet paths (two namespaces, a veth pair,
// AF_XDP or AF_PACKET, root) the kernel's own UDP keeps working beside
// U-Net, the recording passes `rdmaconf check`, and nothing is left behind.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::test;

namespace {

// Debian's multiarch library folder name (x86_64-linux-gnu, ...).
const std::string kMultiarch = [] {
  const auto r = rdmaconf::test::run("dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch");
  auto s = r.out;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}();

struct Live {
  int status = -1;
  std::string out;
  std::map<std::string, std::set<std::string>> verdicts;  // case -> verdicts over the scenarios
  std::set<std::string> with(const std::string& v) const {
    std::set<std::string> s;
    for (const auto& [c, vs] : verdicts)
      if (vs.count(v)) s.insert(c);
    return s;
  }
};

Live unet_live(const std::string& args) {
  const auto dir = temp_dir("unet-live");
  const auto json = dir / "r.json";
  Live l;
  const auto r = run(fmt::format("{} unet live --quiet --json {} {} 2>&1", kBin, json.string(), args));
  l.status = r.status;
  l.out = r.out;
  if (fs::exists(json)) {
    const auto j = nlohmann::json::parse(slurp(json));
    for (const auto& in : j["inputs"])
      for (const auto& sc : in["scopes"])
        for (const auto& x : sc["results"]) l.verdicts[x["case"]].insert(x["verdict"].get<std::string>());
    const auto v = run("/usr/bin/python3 -c \"import json,jsonschema; s=json.load(open('" + kSource +
                       "/reports/schema/report-v1.schema.json')); jsonschema.validate(json.load(open('" + json.string() +
                       "')), s, cls=jsonschema.Draft202012Validator); print('valid')\" 2>&1");
    BOOST_TEST(v.out.find("valid") != std::string::npos, v.out);
  }
  fs::remove_all(dir);
  return l;
}

const std::set<std::string> kAllButKernel{"unet.live.data",     "unet.live.spoof",   "unet.live.unknown_tag",
                                          "unet.live.channel",  "unet.live.oversize", "unet.live.no_free",
                                          "unet.live.teardown"};

}  // namespace

BOOST_AUTO_TEST_SUITE(unet)

BOOST_AUTO_TEST_CASE(memory_path_passes_every_case_it_judges) {
  const auto l = unet_live("--path memory");
  BOOST_TEST(l.status == 0, l.out);
  BOOST_TEST(l.with("FAIL").empty());
  // Each case PASSes in some scenario; the kernel exchange needs the packet path.
  std::set<std::string> passed = l.with("PASS");
  BOOST_TEST(passed == kAllButKernel);
  BOOST_TEST(l.verdicts.at("unet.live.kernel") == std::set<std::string>{"NOT_APPLICABLE"});
}

// Each fault breaks one rule in our own engine (engines/unet: Faults); the
// case that judges the rule must see it, and no other case may.
BOOST_AUTO_TEST_CASE(each_fault_fails_exactly_its_case) {
  const std::map<std::string, std::string> expected{
      {"forge", "unet.live.spoof"}, {"ignore-channels", "unet.live.channel"}, {"overflow", "unet.live.oversize"}};
  for (const auto& [fault, id] : expected) {
    const auto l = unet_live("--path memory --fault " + fault);
    BOOST_TEST(l.status == 1, fault << ": " << l.out);
    BOOST_TEST(l.with("FAIL") == std::set<std::string>{id}, fault);
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_usage_errors) {
  auto r = run(fmt::format("{} unet live --path carrier-pigeon 2>&1", kBin));
  BOOST_TEST(r.status == 2, r.out);
  r = run(fmt::format("{} unet live --scenario nosuch 2>&1", kBin));
  BOOST_TEST(r.status == 2, r.out);
  BOOST_TEST(r.out.find("no U-Net scenario named 'nosuch'") != std::string::npos, r.out);
}

// Two namespaces, a veth pair, both sides on `path`: every case PASSes, the
// kernel's own UDP keeps working beside U-Net, the recording passes
// `rdmaconf check`, a broken rule is seen, nothing is left behind.
// Returns the report's data path and what the run printed.
std::pair<std::string, std::string> between_namespaces(const std::string& path) {
  const auto namespaces = [] { return run("ip netns list | grep -c rdmaconf-unet").out; };
  const auto before = namespaces();
  const auto dir = temp_dir("unet-" + path);
  const auto pcap = (dir / "live.pcap").string();
  const auto json = (dir / "r.json").string();
  const auto l = unet_live(fmt::format("--path {} --pcap {}", path, pcap));
  BOOST_TEST(l.status == 0, l.out);
  BOOST_TEST(l.with("FAIL").empty());
  auto all = kAllButKernel;
  all.insert("unet.live.kernel");
  BOOST_TEST(l.with("PASS") == all);
  // The recording passes the capture cases and holds every scenario's frames.
  const auto c = run(fmt::format("{} check --json {} {} >/dev/null 2>&1", kBin, (dir / "c.json").string(), pcap));
  BOOST_TEST(c.status == 0);
  const auto j = nlohmann::json::parse(slurp(dir / "c.json"));
  BOOST_TEST(j["summary"]["fail"] == 0);
  BOOST_TEST(j["summary"]["pass"].get<int>() >= 35);  // seven scenarios' channels, five cases each
  // A rule broken on this path is seen there too.
  const auto f = unet_live(fmt::format("--path {} --fault forge", path));
  BOOST_TEST(f.status == 1, f.out);
  BOOST_TEST(f.with("FAIL") == std::set<std::string>{"unet.live.spoof"});
  // The data path and the scenarios' accounts, from a run of the
  // scenarios that involve the kernel.
  const auto r = run(fmt::format("{} unet live --path {} --scenario pingpong --scenario unknown-tag --json {} 2>&1", kBin, path, json));
  BOOST_TEST(r.status == 0, r.out);
  const auto rj = nlohmann::json::parse(slurp(json));
  const std::string used = rj["inputs"][0]["scopes"][0]["parameters"]["path"];
  BOOST_TEST(namespaces() == before);
  fs::remove_all(dir);
  return {used, r.out};
}

BOOST_AUTO_TEST_CASE(packet_path_between_namespaces) {
  if (geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: the packet path needs namespaces, a veth pair and AF_PACKET sockets; the memory path ran instead");
    return;
  }
  BOOST_TEST(between_namespaces("packet").first == "af_packet");
}

// The AF_XDP path: where it cannot run, the run says why and the AF_PACKET
// fallback runs (and must pass); this test says so too, and fails when
// RDMACONF_REQUIRE_XDP is set (CI, where the machine can run it).
BOOST_AUTO_TEST_CASE(xdp_path_between_namespaces) {
  if (geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: the xdp path needs namespaces, a veth pair, CAP_BPF and CAP_NET_ADMIN; the memory path ran instead");
    return;
  }
  const auto [used, out] = between_namespaces("xdp");
  const bool required = std::getenv("RDMACONF_REQUIRE_XDP") != nullptr;
  if (used.rfind("af_xdp", 0) != 0) {
    BOOST_TEST_MESSAGE("AF_XDP did not run here; the AF_PACKET fallback ran and passed: " << out);
    BOOST_TEST(out.find("AF_XDP cannot run here") != std::string::npos, out);
    BOOST_TEST(!required, "RDMACONF_REQUIRE_XDP is set but AF_XDP did not run: " << out);
    return;
  }
  // The XDP program on B's side did the demultiplexing: the 5 unknown-tag
  // and 5 stranger frames died in the kernel, and the kernel's UDP (and
  // ARP) passed through it to the stack.
  BOOST_TEST(out.find("dropped for an unknown tag") != std::string::npos, out);
  BOOST_TEST(out.find("5 dropped for an unknown tag, 5 for no channel") != std::string::npos, out);
  BOOST_TEST(out.find("10 of 10 kernel UDP datagrams echoed") != std::string::npos, out);
  const auto ping = out.substr(out.find("pingpong "), out.find('\n', out.find("pingpong ")) - out.find("pingpong "));
  BOOST_TEST(ping.find("passed to the kernel") != std::string::npos, ping);
  BOOST_TEST(ping.find(" 0 passed to the kernel") == std::string::npos, ping);
  // Where AF_XDP cannot run (here: told so), the run says why, records it
  // as a warning, and the fallback runs and passes.
  const auto dir = temp_dir("unet-fallback");
  const auto r = run(fmt::format("RDMACONF_UNET_NO_XDP=1 {} unet live --path xdp --scenario pingpong --json {} 2>&1", kBin,
                                 (dir / "r.json").string()));
  BOOST_TEST(r.status == 0, r.out);
  BOOST_TEST(r.out.find("note: AF_XDP cannot run here (RDMACONF_UNET_NO_XDP is set); using the AF_PACKET fallback") !=
                 std::string::npos,
             r.out);
  const auto rj = nlohmann::json::parse(slurp(dir / "r.json"));
  BOOST_TEST(rj["inputs"][0]["scopes"][0]["parameters"]["path"] == "af_packet");
  // libxdp is loaded when AF_XDP is first used, not linked: where it is
  // missing (here hidden by a bind mount in a mount namespace of the run's
  // own) the command still runs, names the library and falls back.
  BOOST_TEST(run("ldd " + kBin + " | grep -E 'libxdp|libbpf'").status != 0);
  const auto libxdp = fs::path("/usr/lib") / kMultiarch / "libxdp.so.1";
  if (fs::exists(libxdp)) {
    const auto hidden = run(fmt::format("unshare -m sh -c 'mount --bind /dev/null {} && {} unet live --path xdp --scenario pingpong' 2>&1",
                                        libxdp.string(), kBin));
    BOOST_TEST(hidden.status == 0, hidden.out);
    BOOST_TEST(hidden.out.find("AF_XDP cannot run here (AF_XDP needs libxdp.so.1 (Debian: libbpf1 and libxdp1)") != std::string::npos,
               hidden.out);
    BOOST_TEST(hidden.out.find("data path: af_packet") != std::string::npos, hidden.out);
  }
  BOOST_TEST(rj.dump().find("AF_XDP cannot run here") != std::string::npos);
  fs::remove_all(dir);
  // With B's channel check off (a fault), the strangers reach the node.
  const auto f = unet_live("--path xdp --fault ignore-channels");
  BOOST_TEST(f.status == 1, f.out);
  BOOST_TEST(f.with("FAIL") == std::set<std::string>{"unet.live.channel"});
}

// A run killed mid-way: by SIGTERM, it removes its namespaces (and with
// them the veth pair and the XDP program) itself; by SIGKILL, they stay,
// and the next run, or `rdmaconf unet cleanup`, removes them and starts
// cleanly.
BOOST_AUTO_TEST_CASE(a_killed_run_leaves_nothing_behind) {
  if (geteuid() != 0) return;
  const auto dir = temp_dir("unet-kill");
  // Starts a long run; its pid once its namespaces exist.
  const auto start = [&] {
    const auto r = run(fmt::format("{} unet live --path xdp --scenario stream --messages 100000 --quiet > {}/out 2>&1 & echo $!; "
                                   "for i in $(seq 200); do ip netns list | grep -q \"rdmaconf-unet-$!-b\" && break; sleep 0.05; done",
                                   kBin, dir.string()));
    return std::stoi(r.out);
  };
  const auto ours = [](int pid) { return std::stoi(run(fmt::format("ip netns list | grep -c 'rdmaconf-unet-{}-' || true", pid)).out); };
  for (const std::string sig : {"KILL", "KILL", "TERM", "INT"}) {
    const int pid = start();
    BOOST_TEST_REQUIRE(ours(pid) == 2, sig << ": the run did not make its namespaces: " << slurp(dir / "out"));
    run(fmt::format("kill -{} {}; while kill -0 {} 2>/dev/null; do sleep 0.05; done", sig, pid, pid));
    if (sig != "KILL") {
      BOOST_TEST(ours(pid) == 0, "SIG" << sig << " left namespaces behind");
      continue;
    }
    BOOST_TEST(ours(pid) == 2);  // a SIGKILL cannot be caught
    if (fs::exists(dir / "cleaned")) {
      // The second: `rdmaconf unet cleanup` removes what the dead run left.
      const auto c = run(fmt::format("{} unet cleanup", kBin));
      BOOST_TEST(c.status == 0, c.out);
      BOOST_TEST(c.out.find(fmt::format("removed network namespace rdmaconf-unet-{}-a", pid)) != std::string::npos, c.out);
    } else {
      // The first: the next run starts cleanly, saying what it removed.
      const auto n = run(fmt::format("{} unet live --path xdp --scenario pingpong 2>&1", kBin));
      BOOST_TEST(n.status == 0, n.out);
      BOOST_TEST(n.out.find(fmt::format("removed rdmaconf-unet-{}-a, left by a run that died", pid)) != std::string::npos, n.out);
      std::ofstream(dir / "cleaned") << "";
    }
    BOOST_TEST(ours(pid) == 0);
  }
  BOOST_TEST(run("ip netns list | grep -c rdmaconf-unet || true").out == "0\n");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

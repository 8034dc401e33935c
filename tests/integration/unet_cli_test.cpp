// `rdmaconf unet live`: both data paths run every scenario and PASS every
// case they can judge; each rule broken on purpose (--fault) FAILs exactly
// its case; on the packet path (two namespaces, a veth pair, AF_PACKET,
// root) the kernel's own UDP keeps working beside U-Net, the recording
// passes `rdmaconf check`, and nothing is left behind.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::test;

namespace {

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

BOOST_AUTO_TEST_CASE(packet_path_between_namespaces) {
  if (geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: the packet path needs namespaces, a veth pair and AF_PACKET sockets; the memory path ran instead");
    return;
  }
  const auto namespaces = [] { return run("ip netns list | grep -c rdmaconf-unet").out; };
  const auto before = namespaces();
  const auto dir = temp_dir("unet-packet");
  const auto pcap = (dir / "live.pcap").string();
  const auto l = unet_live("--path packet --pcap " + pcap);
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
  // A rule broken on the packet path is seen there too.
  const auto f = unet_live("--path packet --fault forge");
  BOOST_TEST(f.status == 1, f.out);
  BOOST_TEST(f.with("FAIL") == std::set<std::string>{"unet.live.spoof"});
  BOOST_TEST(namespaces() == before);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

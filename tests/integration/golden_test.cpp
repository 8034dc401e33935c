// Golden captures: reproducible from the generator, and `rdmaconf check`
// reaches the verdicts their manifests state (taken from how each capture
// was made). A capture that violates one requirement fails that case only.
#include <boost/test/unit_test.hpp>

#include <map>
#include <tuple>
#include <set>

#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::test;

namespace {

// The verdict of a case over a whole capture: the worst over its scopes.
std::string aggregate(const std::vector<std::string>& vs) {
  for (const char* v : {"FAIL", "INCONCLUSIVE", "PASS"})
    for (const auto& x : vs)
      if (x == v) return v;
  return "NOT_APPLICABLE";
}

std::vector<fs::path> manifests() {
  std::vector<fs::path> v;
  for (auto& e : fs::directory_iterator(kGolden))
    if (e.path().string().ends_with(".manifest.json")) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(golden)

BOOST_AUTO_TEST_CASE(generator_reproduces_the_committed_captures) {
  const auto dir = temp_dir("gen");
  const auto r = run(kGen + " " + dir.string() + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto ms = manifests();
  BOOST_TEST_REQUIRE(ms.size() >= 18u);
  for (const auto& m : ms) {
    const std::string base = m.filename().string().substr(0, m.filename().string().size() - 14);
    BOOST_TEST_CONTEXT(base) {
      BOOST_TEST((slurp(dir / (base + ".pcap")) == slurp(fs::path(kGolden) / (base + ".pcap"))));
      BOOST_TEST((slurp(dir / (base + ".manifest.json")) == slurp(m)));
    }
  }
  fs::remove_all(dir);
}

// Each capture is checked as written and rewritten as ERF records (what
// Endace cards and many InfiniBand capture tools write; the rewrite is an
// independent script's), and as written with a RoCEv2 port added
// (--roce-port adds to 4791, it does not replace it): the same verdicts
// every way.
BOOST_AUTO_TEST_CASE(check_agrees_with_every_manifest) {
  const auto dir = temp_dir("golden");
  int negative = 0, erf = 0, port_added = 0;
  for (const auto& m : manifests()) {
    const auto manifest = nlohmann::json::parse(slurp(m));
    const std::string pcap = (fs::path(kGolden) / manifest["capture"].get<std::string>()).string();
    const std::string as_erf = (dir / "erf.pcap").string();
    const auto w = run("/usr/bin/python3 " + kSource + "/tests/oracles/to_erf.py " + pcap + " " + as_erf + " 2>&1");
    BOOST_TEST_REQUIRE(w.status == 0, w.out);
    for (const auto& [input, how, option] : {std::tuple{pcap, "as written", ""}, std::tuple{as_erf, "as ERF records", ""},
                                              std::tuple{pcap, "with --roce-port 4792", " --roce-port 4792"}}) {
      const auto json = dir / "r.json";
      // --strict: SHOULD-level cases run too, and the manifests state their verdicts.
      const auto r = run(kBin + " check --quiet --strict" + option + " --json " + json.string() + " " + input + " 2>&1");
      const auto report = nlohmann::json::parse(slurp(json));
      std::map<std::string, std::vector<std::string>> verdicts;
      for (const auto& in : report["inputs"])
        for (const auto& s : in["scopes"])
          for (const auto& res : s["results"]) verdicts[res["case"]].push_back(res["verdict"]);
      bool any_fail = false;
      BOOST_TEST_CONTEXT(m.filename().string() << " " << how) {
        for (const auto& [id, want] : manifest["expected"].items()) {
          // ANY: a case the capture's fault leaves to chance (FPDUs read misframed after it).
          // NOT_FAIL: what the fault's one FAIL makes unreadable, which must not FAIL on its own account.
          if (want == "NOT_FAIL") BOOST_TEST(aggregate(verdicts[id]) != "FAIL", id);
          else if (want != "ANY") BOOST_TEST(aggregate(verdicts[id]) == want.get<std::string>(), id);
          any_fail |= want == "FAIL";
        }
        // Nothing the capture was not built to violate may FAIL.
        for (const auto& [id, vs] : verdicts)
          if (!manifest["expected"].contains(id)) BOOST_TEST(aggregate(vs) != "FAIL", id);
        BOOST_TEST(r.status == (any_fail ? 1 : 0), r.out);
      }
      if (input != pcap) ++erf;
      else if (*option) ++port_added;
      else negative += any_fail;
    }
  }
  BOOST_TEST(negative >= 50);
  BOOST_TEST(erf >= 100);
  BOOST_TEST(port_added >= 100);
  fs::remove_all(dir);
}

// The marker capture puts markers in every part of an FPDU (as its generator recorded them).
BOOST_AUTO_TEST_CASE(markers_land_in_every_part_of_an_fpdu) {
  const auto m = nlohmann::json::parse(slurp(fs::path(kGolden) / "iwarp-markers-crc.manifest.json"));
  for (const char* part : {"fpdu_start", "ddp_header", "payload_or_pad", "before_crc"})
    BOOST_TEST(m["config"]["marker_landings"].value(part, 0) > 0, part);
}

// Each case of every family has a negative capture that makes it FAIL (one per requirement).
BOOST_AUTO_TEST_CASE(every_case_has_a_failing_capture) {
  std::set<std::string> failing;
  for (const auto& m : manifests()) {
    const auto manifest = nlohmann::json::parse(slurp(m));
    for (const auto& [id, want] : manifest["expected"].items())
      if (want == "FAIL") failing.insert(id);
  }
  const auto r = run(kBin + " cases --json");
  BOOST_TEST_REQUIRE(r.status == 0);
  // The capture cases of each family (the live suites' own cases are judged by `rdmaconf live`).
  std::map<std::string, int> by_family;
  for (const auto& c : nlohmann::json::parse(r.out)) {
    if (c.contains("live")) continue;
    const std::string id = c["id"];
    ++by_family[c["family"].get<std::string>()];
    BOOST_TEST(failing.count(id) == 1u, id << " has no capture that makes it FAIL");
  }
  const std::map<std::string, int> at_least = {{"iwarp", 45}, {"ib", 35}, {"fastudp", 3}, {"unet", 5}};
  BOOST_TEST(by_family.size() == at_least.size());
  for (const auto& [family, n] : at_least) BOOST_TEST(by_family[family] >= n, family);
}

// Captures of real kernel peers (siw against siw, and our engine against
// siw) from the lab, each with the manifest written when it was made: the
// cases its fault or a documented siw finding must FAIL; nothing else may.
BOOST_AUTO_TEST_CASE(real_peer_captures_have_no_false_fail) {
  const fs::path lab = fs::path(kSource) / "captures" / "lab";
  const auto dir = temp_dir("lab");
  int n = 0, siw_siw = 0, ours = 0, rxe_rxe = 0;
  for (auto& e : fs::directory_iterator(lab)) {
    if (!e.path().string().ends_with(".manifest.json")) continue;
    ++n;
    const auto m = nlohmann::json::parse(slurp(e.path()));
    const bool rxe = m.contains("rxe");
    (rxe ? rxe_rxe : m["our_role"] == "none" ? siw_siw : ours) += 1;
    const auto json = dir / "r.json";
    const auto r = run(kBin + " check --quiet --json " + json.string() + " " + (lab / m["capture"].get<std::string>()).string() + " 2>&1");
    BOOST_TEST_CONTEXT(e.path().filename().string()) {
      BOOST_TEST(r.status == (m["must_fail"].empty() ? 0 : 1), r.out);
      const auto report = nlohmann::json::parse(slurp(json));
      std::map<std::string, std::vector<std::string>> verdicts;
      for (const auto& in : report["inputs"]) {
        // the traffic is there: iWARP connections, or RoCE packets (rxe: each
        // cell runs 20 operations or more, over RC each a request and its
        // answer, over UC and UD at least one packet)
        const std::string cell = m.value("cell", "");
        const bool unacked = cell.ends_with(".uc") || cell.ends_with(".ud") || cell.ends_with("-ud-tcp");
        BOOST_TEST(in["stats"][rxe ? "ib_packets" : "iwarp_connections"].get<int>() >= (rxe ? (unacked ? 20 : 40) : 1));
        for (const auto& sc : in["scopes"])
          for (const auto& res : sc["results"]) verdicts[res["case"]].push_back(res["verdict"]);
      }
      for (const auto& [id, why] : m["must_fail"].items()) BOOST_TEST(aggregate(verdicts[id]) == "FAIL", id << ": " << why);
      for (const auto& [id, vs] : verdicts)
        if (!m["must_fail"].contains(id)) BOOST_TEST(aggregate(vs) != "FAIL", id);
    }
  }
  BOOST_TEST(siw_siw >= 4);
  BOOST_TEST(ours >= 6);
  BOOST_TEST(rxe_rxe >= 6);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

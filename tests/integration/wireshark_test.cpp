// The Wireshark plugin under tshark: it loads with its fields, its FAIL and
// INCONCLUSIVE expert items name exactly the (frame, case) pairs that
// `rdmaconf check --json` names for every golden and lab capture, the
// requirement's level sets the severity, clean MPA revision 2 captures carry
// no error from it, and damaged input never crashes tshark.
//
// tshark run as root ignores WIRESHARK_PLUGIN_DIR, so as root it runs here
// as the unprivileged user 65534.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "captures/io/pcap_reader.hpp"
#include "conformance/family.hpp"
#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::test;

namespace {

const std::string kPluginDir = RDMACONF_WIRESHARK_PLUGIN_DIR;

// A home tshark may write to, for the unprivileged user too.
const fs::path& home() {
  static const fs::path h = [] {
    auto d = temp_dir("wireshark-home");
    fs::permissions(d, fs::perms::all);
    return d;
  }();
  return h;
}

std::string tshark(const std::string& args) {
  const std::string env = "env HOME=" + home().string() + " WIRESHARK_PLUGIN_DIR=" + kPluginDir + " tshark ";
  return (geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "") + env + args;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, sep)) v.push_back(x);
  return v;
}

using Pairs = std::set<std::pair<std::uint64_t, std::string>>;  // (frame, case)

// What `rdmaconf check --strict --json` names for one input: the pairs of
// its FAIL and of its INCONCLUSIVE verdicts, every frame of each piece of
// evidence (the scope's first frame for evidence that names none).
void expected_pairs(const nlohmann::json& input, Pairs& fail, Pairs& inconclusive) {
  for (const auto& s : input["scopes"])
    for (const auto& c : s["results"]) {
      const auto v = c["verdict"].get<std::string>();
      if (v != "FAIL" && v != "INCONCLUSIVE") continue;
      Pairs& into = v == "FAIL" ? fail : inconclusive;
      for (const auto& e : c.value("evidence", nlohmann::json::array())) {
        if (!e.contains("frames") || e["frames"].empty()) into.emplace(s["frames"][0].get<std::uint64_t>(), c["case"]);
        else
          for (const auto& f : e["frames"]) into.emplace(f.get<std::uint64_t>(), c["case"]);
      }
    }
}

struct Shown {
  Pairs fail, inconclusive;
  std::map<std::string, std::set<std::string>> severity;  // "VERDICT case" -> expert severities seen
  bool internal_error = false;
};

// What tshark shows with the plugin, in two passes (the first feeds the
// checker; the second shows every frame with all verdicts known).
Shown shown(const fs::path& pcap, const std::string& options = "") {
  const auto r = run(tshark("-n -2 " + options + "-r " + pcap.string() +
                            " -Y 'rdmaconf.case || rdmaconf.internal' -T fields -E aggregator='|' -e frame.number"
                            " -e rdmaconf.case -e rdmaconf.verdict -e _ws.expert.message -e _ws.expert.severity 2>&1"));
  BOOST_TEST_REQUIRE(r.status == 0, pcap.string() << ": " << r.out);
  Shown s;
  for (const auto& line : split(r.out, '\n')) {
    const auto col = split(line, '\t');
    if (col.size() < 3) continue;
    const auto frame = std::stoull(col[0]);
    const auto cases = split(col[1], '|'), verdicts = split(col[2], '|');
    BOOST_TEST_REQUIRE(cases.size() == verdicts.size(), line);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (verdicts[i] == "FAIL") s.fail.emplace(frame, cases[i]);
      else if (verdicts[i] == "INCONCLUSIVE") s.inconclusive.emplace(frame, cases[i]);
    }
    // The expert items (Wireshark's own among them): ours start with the verdict and case.
    if (col.size() >= 5) {
      const auto msgs = split(col[3], '|'), sev = split(col[4], '|');
      for (std::size_t i = 0; i < msgs.size() && i < sev.size(); ++i) {
        if (msgs[i].starts_with("rdmaconf stopped")) s.internal_error = true;
        const auto colon = msgs[i].find(':');
        if ((msgs[i].starts_with("FAIL ") || msgs[i].starts_with("INCONCLUSIVE ")) && colon != std::string::npos)
          s.severity[msgs[i].substr(0, colon)].insert(sev[i]);
      }
    }
  }
  return s;
}

// Wireshark 4.0 reads no pcap file of link type INFINIBAND (247), so the
// native InfiniBand captures are left out (counted in `skipped`).
std::size_t skipped = 0;
bool wireshark_reads(const fs::path& pcap) {
  std::string err;
  const auto r = captures::io::PcapReader::open(pcap.string(), err, false);
  return r && r->linktype() != 247;
}

std::vector<fs::path> captures_in(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") {
      if (wireshark_reads(e.path())) v.push_back(e.path());
      else ++skipped;
    }
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(wireshark)

BOOST_AUTO_TEST_CASE(plugin_and_fields_load) {
  const auto plugins = run(tshark("-G plugins 2>&1"));
  BOOST_TEST_REQUIRE(plugins.status == 0, plugins.out);
  BOOST_TEST(plugins.out.find("rdmaconf.so") != std::string::npos, plugins.out);
  const auto fields = run(tshark("-G fields 2>&1"));
  BOOST_TEST_REQUIRE(fields.status == 0);
  std::set<std::string> names;
  for (const auto& line : split(fields.out, '\n')) {
    const auto col = split(line, '\t');
    if (col.size() > 2 && col[2].starts_with("rdmaconf.")) names.insert(col[2]);
  }
  for (const char* f : {"rdmaconf.case", "rdmaconf.verdict", "rdmaconf.fail", "rdmaconf.mpa.v2.ird", "rdmaconf.ib.bth.psn",
                        "rdmaconf.fpdu.crc_ok", "rdmaconf.packet.icrc_ok"})
    BOOST_TEST(names.count(f) == 1, f);
  // Every row of every family's header tables, and every declared unit value.
  std::size_t table_fields = 0;
  for (const auto* fam : conformance::Registry::get().families()) {
    for (const auto* h : fam->headers())
      for (const auto& f : h->fields) {
        BOOST_TEST(names.count("rdmaconf." + std::string(f.abbrev)) == 1, f.abbrev);
        ++table_fields;
      }
    for (const auto& l : fam->listings())
      for (const auto& f : l.fields)
        BOOST_TEST(names.count("rdmaconf." + std::string(l.unit) + "." + std::string(f.abbrev)) == 1, f.abbrev);
  }
  BOOST_TEST(table_fields > 100u);
  // Every case's FAIL and INCONCLUSIVE expert entries.
  for (const auto* c : conformance::Registry::get().all_cases()) {
    BOOST_TEST(names.count("rdmaconf.fail." + std::string(c->id)) == 1, c->id);
    BOOST_TEST(names.count("rdmaconf.inconclusive." + std::string(c->id)) == 1, c->id);
  }
}

// Every golden and lab capture: the (frame, case) pairs of FAIL and of
// INCONCLUSIVE items equal those of `rdmaconf check --strict --json`, and
// each FAIL is an error for a MUST case, a warning otherwise.
BOOST_AUTO_TEST_CASE(verdicts_agree_with_check) {
  std::map<std::string, std::string> level;  // case id -> MUST/SHOULD/MAY
  for (const auto* c : conformance::Registry::get().all_cases())
    level[std::string(c->id)] = c->level == conformance::Level::must ? "MUST" : "other";
  auto files = captures_in(kGolden);
  const auto lab = captures_in(fs::path(kSource) / "captures" / "lab");
  files.insert(files.end(), lab.begin(), lab.end());
  const auto dir = temp_dir("wireshark-agree");
  std::size_t fail_pairs = 0, inconclusive_pairs = 0, mismatches = 0, clean = 0;
  for (const auto& f : files) {
    const auto json = dir / "check.json";
    const auto c = run(kBin + " check --strict --quiet --json " + json.string() + " " + f.string() + " 2>&1");
    BOOST_TEST_REQUIRE(c.status <= 1, f << ": " << c.out);
    const auto report = nlohmann::json::parse(slurp(json));
    Pairs fail, inconclusive;
    expected_pairs(report["inputs"][0], fail, inconclusive);
    const Shown s = shown(f);
    BOOST_TEST_CONTEXT(f.filename().string()) {
      BOOST_TEST(!s.internal_error);
      std::vector<std::pair<std::uint64_t, std::string>> only_check, only_plugin;
      std::set_difference(fail.begin(), fail.end(), s.fail.begin(), s.fail.end(), std::back_inserter(only_check));
      std::set_difference(s.fail.begin(), s.fail.end(), fail.begin(), fail.end(), std::back_inserter(only_plugin));
      BOOST_TEST(only_check.empty(), "FAIL pairs only in the report: " << only_check.size());
      BOOST_TEST(only_plugin.empty(), "FAIL pairs only in tshark: " << only_plugin.size());
      BOOST_TEST((s.inconclusive == inconclusive), "INCONCLUSIVE pairs differ");
      mismatches += only_check.size() + only_plugin.size();
      for (const auto& [key, sevs] : s.severity) {
        const bool is_fail = key.starts_with("FAIL ");
        const auto id = key.substr(key.find(' ') + 1);
        // PI_ERROR, PI_WARN, PI_NOTE as tshark prints them.
        const std::string want = !is_fail ? "4194304" : level[id] == "MUST" ? "8388608" : "6291456";
        BOOST_TEST((sevs == std::set<std::string>{want}), key);
      }
    }
    fail_pairs += fail.size();
    inconclusive_pairs += inconclusive.size();
    clean += fail.empty();
  }
  BOOST_TEST_MESSAGE("captures " << files.size() << " (" << skipped << " native InfiniBand ones Wireshark cannot read left out; " << clean << " with no FAIL), FAIL pairs " << fail_pairs
                                 << ", INCONCLUSIVE pairs " << inconclusive_pairs << ", mismatches " << mismatches);
  BOOST_TEST(files.size() > 150u);
  BOOST_TEST(fail_pairs > 50u);
  fs::remove_all(dir);
}

// A family option is a preference (`--roce-port` is rdmaconf.roce_port): a
// RoCE capture moved to UDP port 4792 shows nothing from the plugin by
// default, and with the preference the same pairs as `rdmaconf check
// --roce-port 4792` (the move breaks every ICRC, which covers the ports).
// A value the option refuses is named on frame 1 and ignored.
BOOST_AUTO_TEST_CASE(family_options_are_preferences) {
  const auto dir = temp_dir("wireshark-port");
  fs::permissions(dir, fs::perms::all);
  std::string pcap = slurp(fs::path(kGolden) / "roce-fault-icrc.pcap");
  int moved = 0;
  for (std::size_t off = 24; off + 16 <= pcap.size();) {
    const auto u8 = [&](std::size_t i) { return static_cast<unsigned char>(pcap[i]); };
    const std::size_t caplen = u8(off + 8) | u8(off + 9) << 8 | u8(off + 10) << 16 | static_cast<std::size_t>(u8(off + 11)) << 24;
    const std::size_t f = off + 16, udp = f + 14 + (u8(f + 14) & 15u) * 4;
    if (u8(f + 12) == 0x08 && u8(f + 13) == 0x00 && udp + 4 <= f + caplen && u8(udp + 2) == 0x12 && u8(udp + 3) == 0xb7) {
      pcap[udp + 3] = static_cast<char>(0xb8);  // 4791 -> 4792
      ++moved;
    }
    off = f + caplen;
  }
  BOOST_TEST_REQUIRE(moved > 10);
  const auto moved_pcap = dir / "moved.pcap";
  std::ofstream(moved_pcap, std::ios::binary) << pcap;
  fs::permissions(moved_pcap, fs::perms::all);

  BOOST_TEST(shown(moved_pcap).fail.empty());
  const auto json = dir / "check.json";
  const auto c = run(kBin + " check --strict --quiet --roce-port 4792 --json " + json.string() + " " + moved_pcap.string() + " 2>&1");
  BOOST_TEST_REQUIRE(c.status == 1, c.out);
  Pairs fail, inconclusive;
  expected_pairs(nlohmann::json::parse(slurp(json))["inputs"][0], fail, inconclusive);
  const Shown s = shown(moved_pcap, "-o rdmaconf.roce_port:4792 ");
  BOOST_TEST(fail.size() >= conformance::Tally::kMaxEvidence);  // (evidence is kept up to this many per case)
  BOOST_TEST((s.fail == fail));
  BOOST_TEST((s.inconclusive == inconclusive));

  const auto bad = run(tshark("-n -2 -o 'rdmaconf.roce_port:47x' -r " + moved_pcap.string() +
                              " -Y frame.number==1 -T fields -e _ws.expert.message 2>&1"));
  BOOST_TEST(bad.out.find("--roce-port: '47x' is not a number") != std::string::npos, bad.out);
  fs::remove_all(dir);
}

// A verdict names the specification's statements its case judges: the pad
// case's FAIL in iwarp-fault-pad is found by filtering on RFC 5044 §4.1's
// pad statement, from the ledger (rdmaconf ledger list), not from the plugin.
BOOST_AUTO_TEST_CASE(verdicts_name_ledger_statements) {
  std::string pad;
  for (const auto& e : nlohmann::json::parse(run(kBin + " ledger list --json").out))
    if (e["section"] == "4.1" && e["spec"] == "RFC 5044" && e["judged"] == nlohmann::json{"iwarp.mpa.fpdu.pad"}) pad = e["id"];
  BOOST_TEST_REQUIRE(!pad.empty());
  const auto r = run(tshark("-n -2 -r " + kGolden + "/iwarp-fault-pad.pcap -Y 'rdmaconf.statement == \"" + pad +
                            "\" && rdmaconf.fail' -T fields -e rdmaconf.fail 2>&1"));
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  BOOST_TEST(r.out.find("iwarp.mpa.fpdu.pad") != std::string::npos, r.out);
}

// tshark without -2 shows each frame as it reads it, before the verdicts
// of its connection are known. The plugin then shows what it can: a verdict
// on the frame where its connection ended (under "verdicts of earlier
// frames"), each one also found by the two-pass run on the frames its
// evidence names; an expert note on frame 1 says that -2 is needed; and when
// verdicts of connections still open at the end were never shown, a warning
// on standard error says how many, so that a filtered run that printed
// nothing still says something. With -2 neither note nor warning appears.
BOOST_AUTO_TEST_CASE(one_pass_says_it_needs_two) {
  int compared = 0, warned = 0, late = 0;
  for (const auto& f : captures_in(kGolden)) {
    const auto m = nlohmann::json::parse(slurp(f.parent_path() / (f.stem().string() + ".manifest.json")));
    bool expects_fail = false;
    for (const auto& [id, v] : m["expected"].items()) expects_fail |= v == "FAIL";
    if (!expects_fail || f.filename().string().rfind("ib-native", 0) == 0) continue;  // tshark reads no native IB
    if (compared >= 16 && f.filename() != "roce-fault-icrc.pcap") continue;
    const std::string fields = " -Y rdmaconf.fail -T fields -e frame.number -e rdmaconf.fail -e rdmaconf.frames";
    const auto two = run(tshark("-n -2 -r " + f.string() + fields + " 2>&1"));
    const auto one = run(tshark("-n -r " + f.string() + fields + " 2>&1"));
    BOOST_TEST_REQUIRE(two.status == 0, two.out);
    BOOST_TEST_REQUIRE(one.status == 0, one.out);
    BOOST_TEST_CONTEXT(f.filename().string()) {
      BOOST_TEST(two.out.find("single pass") == std::string::npos, two.out);
      // The cases each run shows FAILing (a line's fields hold every verdict of its frame, comma-separated).
      const auto numbers = [](const std::string& text) {
        std::vector<std::uint64_t> v;
        for (const auto& part : split(text, ','))
          for (const auto& n : split(part, ' '))
            if (!n.empty()) v.push_back(std::stoull(n));
        return v;
      };
      std::set<std::string> shown_two, shown_one;
      for (const auto& line : split(two.out, '\n'))
        if (const auto c = split(line, '\t'); c.size() == 3)
          for (const auto& id : split(c[1], ',')) shown_two.insert(id);
      for (const auto& line : split(one.out, '\n')) {
        const auto c = split(line, '\t');
        if (c.size() != 3) continue;
        for (const auto& id : split(c[1], ',')) {
          BOOST_TEST(shown_two.count(id) == 1u, "one pass shows " << id << " at frame " << c[0] << ", two passes do not");
          shown_one.insert(id);
        }
        // Shown no earlier than the last frame its evidence names.
        const auto named = numbers(c[2]);
        BOOST_TEST_REQUIRE(!named.empty(), line);
        const auto last_named = *std::max_element(named.begin(), named.end());
        BOOST_TEST(std::stoull(c[0]) >= last_named, line);
        late += std::stoull(c[0]) > last_named;
      }
      // What one pass could not show is said on standard error.
      const bool said = one.out.find("read in a single pass") != std::string::npos &&
                        one.out.find("tshark -2") != std::string::npos;
      if (shown_one.size() < shown_two.size()) BOOST_TEST(said, one.out);
      warned += said;
    }
    ++compared;
  }
  BOOST_TEST(compared >= 10);
  BOOST_TEST(late >= 1);    // some verdict shown where its connection ended
  BOOST_TEST(warned >= 1);  // roce-fault-icrc's conversation is open at the end
  // The note on frame 1, in the expert summary of a single pass only.
  const auto crc = kGolden + "/iwarp-fault-crc.pcap";
  const auto one = run(tshark("-n -q -z expert -r " + crc + " 2>&1"));
  const auto two = run(tshark("-n -2 -q -z expert -r " + crc + " 2>&1"));
  BOOST_TEST(one.out.find("Run tshark -2 to see every verdict") != std::string::npos, one.out);
  BOOST_TEST(two.out.find("Run tshark -2") == std::string::npos, two.out);
  BOOST_TEST(two.out.find("verdict(s) of earlier frames") == std::string::npos, two.out);
}

// A second copy of the plugin (a personal one beside the installed one):
// Wireshark loads one and names only the folders; the plugin says which
// copy is running and where the other is, and says nothing when it is alone.
BOOST_AUTO_TEST_CASE(a_second_copy_is_named) {
  const auto dir = temp_dir("wireshark-second-copy");
  std::string version;
  for (const auto& e : fs::directory_iterator(kPluginDir)) version = e.path().filename().string();  // "4.0"
  BOOST_TEST_REQUIRE(!version.empty());
  const auto copy = dir / ".local/lib/wireshark/plugins" / version / "epan" / "rdmaconf.so";
  fs::create_directories(copy.parent_path());
  fs::copy_file(fs::path(kPluginDir) / version / "epan" / "rdmaconf.so", copy);
  run("chmod -R a+rX " + dir.string());
  fs::permissions(dir, fs::perms::all);
  const std::string as = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const auto with = run(as + "env HOME=" + dir.string() + " WIRESHARK_PLUGIN_DIR=" + kPluginDir + " tshark -n -2 -r " + kGolden +
                        "/iwarp-fault-crc.pcap -Y rdmaconf.fail 2>&1");
  BOOST_TEST(with.out.find("another copy at " + fs::weakly_canonical(copy).string() + " is not the one running") != std::string::npos,
             with.out);
  BOOST_TEST(with.out.find("[rdmaconf: 1 FAIL]") != std::string::npos, with.out);  // and one of them runs
  const auto alone = run(tshark("-n -2 -r " + kGolden + "/iwarp-fault-crc.pcap -Y rdmaconf.fail 2>&1"));
  BOOST_TEST(alone.out.find("another copy") == std::string::npos, alone.out);
  fs::remove_all(dir);
}

// Stock Wireshark 4.0 calls every MPA revision 2 frame an error; the
// plugin's expert items on the clean revision 2 captures (their manifests
// expect no FAIL) hold nothing at error or warning level.
BOOST_AUTO_TEST_CASE(mpa_revision_2_is_no_error) {
  int checked = 0;
  for (const auto& f : captures_in(kGolden)) {
    const auto m = nlohmann::json::parse(slurp(f.parent_path() / (f.stem().string() + ".manifest.json")));
    if (m["config"].value("mpa_revision", 0) != 2) continue;
    bool expects_fail = false;
    for (const auto& [id, v] : m["expected"].items()) expects_fail |= v == "FAIL";
    if (expects_fail) continue;
    const auto r = run(tshark("-n -2 -q -z expert -r " + f.string() + " 2>&1"));
    BOOST_TEST_REQUIRE(r.status == 0, r.out);
    BOOST_TEST_CONTEXT(f.filename().string()) {
      for (const auto& line : split(r.out, '\n'))
        BOOST_TEST((line.find("rdmaconf") == std::string::npos || line.find("INCONCLUSIVE") != std::string::npos), line);
    }
    ++checked;
  }
  BOOST_TEST(checked >= 5);
}

// Damaged copies of the golden captures (editcap -E, as Wireshark's own
// fuzz testing does it) and cut ones: tshark with the plugin exits normally
// on each, with the whole tree built, and the checker never stops on an
// internal error.
BOOST_AUTO_TEST_CASE(damaged_captures_never_crash) {
  const auto dir = temp_dir("wireshark-fuzz");
  fs::permissions(dir, fs::perms::all);
  int runs = 0;
  std::size_t i = 0;
  for (const auto& f : captures_in(kGolden)) {
    if (i++ % 3) continue;  // a third of them, each in three damaged forms
    for (const std::string& how : std::vector<std::string>{"-E 0.02 --seed " + std::to_string(i),
                                                           "-E 0.005 --seed " + std::to_string(i + 1000), "-s 60"}) {
      const auto out = dir / "damaged.pcap";
      const auto e = run("editcap " + how + " " + f.string() + " " + out.string() + " 2>&1");
      BOOST_TEST_REQUIRE(e.status == 0, e.out);
      fs::permissions(out, fs::perms::all);
      const auto text = dir / "tree.txt";
      const auto r = run(tshark("-n -2 -V -r " + out.string() + " > " + text.string() + " 2>&1"));
      BOOST_TEST_CONTEXT(f.filename().string() << " " << how) {
        BOOST_TEST(r.status == 0, slurp(text).substr(0, 2000));
        BOOST_TEST(slurp(text).find("rdmaconf stopped") == std::string::npos);
      }
      ++runs;
    }
  }
  BOOST_TEST(runs >= 90);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

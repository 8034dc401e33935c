// The Wireshark plugin's core without Wireshark: frames pushed one at a time
// reach the verdicts the golden manifests state (how each capture was made),
// the same frames carry the same verdicts as a file checked whole, and every
// key of every unit it stores is one the plugin registers a field for.
#include "dissectors/capture_checks.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "captures/io/pcap_reader.hpp"
#include "protocols/core/header.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::conformance;

namespace {

const fs::path kGolden = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden";

nlohmann::json manifest(const fs::path& pcap) {
  std::ifstream f(pcap.parent_path() / (pcap.stem().string() + ".manifest.json"));
  return nlohmann::json::parse(f);
}

// Pushes every frame of a capture, as the plugin does on Wireshark's first pass.
std::unique_ptr<dissectors::CaptureChecks> push(const fs::path& pcap, std::uint64_t& frames) {
  auto c = std::make_unique<dissectors::CaptureChecks>(true);
  std::string err;
  auto r = captures::io::PcapReader::open(pcap.string(), err, false);
  BOOST_TEST_REQUIRE(r != nullptr, err);
  frames = 0;
  while (auto f = r->next()) {
    c->frame(f->number, r->linktype(), f->ts_sec, f->ts_usec, f->orig_len, f->data);
    frames = f->number;
  }
  c->finish();
  return c;
}

using Pairs = std::set<std::tuple<std::uint64_t, std::string, std::string>>;  // frame, case, verdict

Pairs stored(const dissectors::CaptureChecks& c, std::uint64_t frames) {
  Pairs p;
  for (std::uint64_t f = 1; f <= frames; ++f)
    if (const auto* n = c.notes(f))
      for (const auto& v : n->verdicts) p.emplace(f, std::string(v.info->id), std::string(verdict_name(v.verdict)));
  return p;
}

// The options the plugin's checker runs with (CaptureChecks), for the same capture checked as a file.
CheckOptions file_check_options() {
  CheckOptions o;
  o.strict = true;
  o.hash = false;
  o.reassembly.idle_timeout_us = static_cast<std::int64_t>(kDefaultIdleTimeoutS) * 1000000;
  return o;
}

std::vector<fs::path> golden() {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(kGolden))
    if (e.path().extension() == ".pcap") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(capture_checks)

// A case the manifest expects to FAIL shows a FAIL on some frame; one it
// expects to PASS or to be NOT_APPLICABLE shows none.
BOOST_AUTO_TEST_CASE(pushed_frames_reach_the_manifest_verdicts) {
  int expected_fails = 0;
  for (const auto& pcap : golden()) {
    std::uint64_t frames = 0;
    const auto c = push(pcap, frames);
    std::set<std::string> failed;
    for (const auto& [f, id, v] : stored(*c, frames))
      if (v == "FAIL") failed.insert(id);
    BOOST_TEST_CONTEXT(pcap.filename().string()) {
      const auto m = manifest(pcap);
      for (const auto& [id, v] : m["expected"].items()) {
        if (v == "FAIL") {
          BOOST_TEST(failed.count(id) == 1, id << " should FAIL on a frame");
          ++expected_fails;
        } else if (v == "PASS" || v == "NOT_APPLICABLE") {
          BOOST_TEST(failed.count(id) == 0, id << " should not FAIL");
        }
      }
    }
  }
  BOOST_TEST(expected_fails > 50);
}

// The frames and verdicts stored from pushed frames are those of the same
// capture checked as a file, by the rule the plugin shows them with.
BOOST_AUTO_TEST_CASE(pushed_frames_match_the_file_check) {
  const Checker checker(file_check_options());
  std::size_t pairs = 0;
  for (const auto& pcap : golden()) {
    std::uint64_t frames = 0;
    const auto c = push(pcap, frames);
    const auto whole = checker.check_file(pcap.string());
    Pairs want;
    for (const auto& s : whole.scopes)
      dissectors::each_shown_verdict(s, [&](std::uint64_t f, const CaseOutcome& out, const Evidence&) {
        want.emplace(f, std::string(out.info->id), std::string(verdict_name(out.tally.verdict())));
      });
    BOOST_TEST((stored(*c, frames) == want), pcap.filename().string());
    BOOST_TEST(c->result().stats.frames == whole.stats.frames);
    pairs += want.size();
  }
  BOOST_TEST(pairs > 100u);
}

// A single pass: the verdicts made known by a frame whose evidence names
// only earlier frames are handed over once, at that frame, each naming
// frames before it; with the verdicts finish() made known, they account
// for every piece of shown evidence of the whole check (the file check's,
// counted independently).
BOOST_AUTO_TEST_CASE(a_single_pass_gets_late_verdicts_once) {
  const Checker checker(file_check_options());
  std::size_t late_total = 0, at_finish_total = 0;
  for (const auto& pcap : golden()) {
    dissectors::CaptureChecks c(true);
    std::string err;
    auto r = captures::io::PcapReader::open(pcap.string(), err, false);
    BOOST_TEST_REQUIRE(r != nullptr, err);
    std::size_t late = 0, current = 0;
    while (auto f = r->next()) {
      c.frame(f->number, r->linktype(), f->ts_sec, f->ts_usec, f->orig_len, f->data);
      const auto* here = c.notes(f->number);
      for (const auto& v : c.take_late()) {
        for (auto fr : v.evidence.frames) BOOST_TEST(fr < f->number, pcap.filename().string() << " frame " << f->number);
        ++late;
      }
      BOOST_TEST(c.take_late().empty());  // handed over once
      if (here)
        for (const auto& v : here->verdicts) current += v.evidence.frames.empty() || std::count(v.evidence.frames.begin(), v.evidence.frames.end(), f->number);
    }
    c.finish();
    BOOST_TEST(c.take_late().empty());
    // Every shown piece of evidence of the file check: late, shown on its own frame as it was read, or at the end.
    std::size_t evidence = 0;
    for (const auto& s : checker.check_file(pcap.string()).scopes) {
      const Evidence* last = nullptr;
      dissectors::each_shown_verdict(s, [&](std::uint64_t, const CaseOutcome&, const Evidence& e) {
        if (&e != last) ++evidence;
        last = &e;
      });
    }
    BOOST_TEST(late + c.verdicts_at_finish() <= evidence, pcap.filename().string());
    BOOST_TEST(late + c.verdicts_at_finish() + current >= evidence, pcap.filename().string());
    late_total += late;
    at_finish_total += c.verdicts_at_finish();
  }
  BOOST_TEST(late_total > 0u);
  BOOST_TEST(at_finish_total > 0u);
}

// Every key of every stored unit is declared: a value of its listing, or an
// object holding one of its family's header tables field for field.
BOOST_AUTO_TEST_CASE(every_unit_key_is_declared) {
  std::size_t units = 0;
  std::set<std::string> families_seen;
  std::map<std::string, std::size_t> units_by_kind;
  for (const auto& pcap : golden()) {
    std::uint64_t frames = 0;
    const auto c = push(pcap, frames);
    for (std::uint64_t f = 1; f <= frames; ++f) {
      const auto* n = c->notes(f);
      if (!n) continue;
      for (const auto& u : n->units) {
        BOOST_TEST_REQUIRE(u.listing != nullptr);
        ++units;
        ++units_by_kind[std::string(u.listing->unit)];
        const ProtocolFamily* fam = nullptr;
        for (const auto& [pf, ls] : dissectors::CaptureChecks::listings())
          for (const auto& l : ls)
            if (&l == u.listing) fam = pf;
        BOOST_TEST_REQUIRE(fam != nullptr);
        families_seen.insert(std::string(fam->name()));
        BOOST_TEST(u.unit.value("frame", std::uint64_t{0}) == f);
        auto is_table = [&](const nlohmann::json& v) {
          bool matched = false;
          for (const auto* h : fam->headers()) {
            if (h->fields.size() != v.size()) continue;
            bool all = true;
            for (const auto& fd : h->fields) all &= v.contains(std::string(fd.abbrev));
            matched |= all;
          }
          return matched;
        };
        for (const auto& [k, v] : u.unit.items()) {
          if (v.is_object()) {
            BOOST_TEST(is_table(v), pcap.filename().string() << " frame " << f << ": " << k << " is no header table");
          } else if (v.is_array()) {
            for (const auto& x : v) BOOST_TEST(is_table(x), pcap.filename().string() << ": " << k << " holds no header table");
          } else {
            bool declared = false;
            for (const auto& fd : u.listing->fields) declared |= fd.abbrev == k;
            BOOST_TEST(declared, pcap.filename().string() << ": " << k << " is not declared");
          }
        }
      }
    }
  }
  BOOST_TEST(units > 1000u);
  BOOST_TEST(families_seen.size() >= 2u);
  BOOST_TEST(units_by_kind["mpa"] > 50u);
  BOOST_TEST(units_by_kind["fpdu"] > 500u);
  BOOST_TEST(units_by_kind["packet"] > 500u);
}

// The checker's warnings land on their frames: a frame it cannot decode (an
// IPv4 header cut short), and a record whose captured length exceeds the
// original length.
BOOST_AUTO_TEST_CASE(warnings_land_on_their_frames) {
  dissectors::CaptureChecks c(false);
  std::byte eth[20] = {};
  eth[12] = std::byte{0x08};  // IPv4, and then too few octets for its header
  c.frame(1, 1, 0, 0, 20, eth);
  c.frame(2, 1, 0, 0, 10, eth);  // 20 octets captured of 10 sent
  c.finish();
  BOOST_TEST_REQUIRE(c.notes(1) != nullptr);
  BOOST_TEST_REQUIRE(c.notes(1)->warnings.size() == 1u);
  BOOST_TEST(c.notes(1)->warnings[0].undecodable);
  BOOST_TEST_REQUIRE(c.notes(2) != nullptr);
  bool oddity = false;
  for (const auto& w : c.notes(2)->warnings)
    oddity |= !w.undecodable && w.message.find("greater than the original length") != std::string::npos;
  BOOST_TEST(oddity);
  BOOST_TEST(c.result().stats.undecodable_frames >= 1u);
  BOOST_TEST(c.result().stats.capture_anomalies == 1u);
}

// Frames of another link type than the first frame's, and frames after
// the pass ended, are counted and left out.
BOOST_AUTO_TEST_CASE(frames_it_cannot_take_are_counted) {
  dissectors::CaptureChecks c(false);
  const std::byte junk[20] = {};
  c.frame(1, 1, 0, 0, 20, junk);
  c.frame(2, 113, 0, 0, 20, junk);
  c.finish();
  c.frame(3, 1, 0, 0, 20, junk);
  BOOST_TEST(c.skipped_frames() == 2u);
  BOOST_TEST(c.result().stats.frames == 1u);
  BOOST_TEST(c.finished());
}

BOOST_AUTO_TEST_SUITE_END()

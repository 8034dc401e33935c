// A protocol family that lives only in this file proves that a family is the
// unit of extension: it is registered with one line, and the checker, the
// catalog, the JSON report, JUnit and the text summary take it up without an
// edit anywhere else.
//
// The toy wire format: Ethernet frames of EtherType 0x88B6 (IEEE 802 local
// experimental) and UDP datagrams to port 9, each payload a one-octet count
// followed by that many octets. Case toy.length: the count matches.
#include <boost/test/unit_test.hpp>

#include <pcap/dlt.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "captures/io/pcap_writer.hpp"
#include "conformance/checker.hpp"
#include "conformance/iwarp/case.hpp"
#include "captures/io/pcap_reader.hpp"
#include "protocols/ib/packet.hpp"
#include "conformance/scope.hpp"
#include "reports/report.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::conformance;

namespace {

constexpr std::uint16_t kToyEthertype = 0x88B6, kToyPort = 9;

const CaseInfo kLength{"toy.length", "toy spec", "§1", Level::must,
                       "The first octet of a toy message counts the octets that follow it.", "toy"};
const CaseInfo kNonEmpty{"toy.nonempty", "toy spec", "§2", Level::should, "A toy message should carry at least one octet.",
                         "toy"};

class ToyRun final : public FamilyRun {
 public:
  explicit ToyRun(RunContext& ctx, const std::vector<const CaseInfo*>& all) : ctx_(ctx) {
    for (std::size_t i : ctx.active()) infos_.push_back(all[i]);
  }
  void packet(const captures::io::Packet& p) override {
    const bool udp = p.protocol == 17;
    const protocols::Bytes msg = udp ? p.payload : p.l3;
    ++frames_;
    auto& s = scopes_.try_emplace(udp ? 1 : 0, infos_.size()).first->second;
    s.sides[0] = udp ? "UDP sender" : "Ethernet sender";
    if (ctx_.on_unit) ctx_.on_unit("message", {{"frame", p.frame}, {"octets", msg.size()}});
    if (msg.empty()) return ctx_.undecodable(p.frame, fmt::format("frame {}: toy message without its count octet", p.frame));
    for (std::size_t i = 0; i < infos_.size(); ++i) {
      CaseCtx c = s.ctx(i);
      const bool ok = infos_[i] == &kLength ? std::to_integer<std::size_t>(msg[0]) == msg.size() - 1 : msg.size() > 1;
      if (ok) {
        c.tally.pass();
      } else {
        Evidence e;
        e.frames = {p.frame};
        e.side = c.side(0);
        e.expected = fmt::format("{}", std::to_integer<unsigned>(msg[0]));
        e.actual = fmt::format("{}", msg.size() - 1);
        c.tally.fail(std::move(e));
      }
    }
  }
  void finish(std::vector<ScopeResult>& scopes, std::vector<FamilyCount>& counts) override {
    for (auto& [id, s] : scopes_) {
      ScopeResult r;
      r.family = "toy";
      r.id = fmt::format("toy/{}", id);
      r.label = id ? "UDP port 9" : "EtherType 0x88b6";
      r.outcomes = s.outcomes(infos_);
      scopes.push_back(std::move(r));
    }
    counts.push_back({"toy_messages", "toy messages", frames_});
  }

 private:
  RunContext& ctx_;
  std::vector<const CaseInfo*> infos_;
  std::map<int, ScopeState> scopes_;
  std::uint64_t frames_ = 0;
};

class ToyFamily final : public ProtocolFamily {
 public:
  std::string_view name() const override { return "toy"; }
  std::string_view title() const override { return "the toy family of the tests"; }
  const std::vector<const CaseInfo*>& cases() const override { return cases_; }
  Claims claims(const FamilyOptions&) const override {
    Claims c;
    c.udp_ports = {kToyPort};
    c.ethertypes = {kToyEthertype};
    return c;
  }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override { return std::make_unique<ToyRun>(ctx, cases_); }

 private:
  std::vector<const CaseInfo*> cases_{&kLength, &kNonEmpty};
};

const ToyFamily kToy;

// The one registration line.
const bool kRegistered = (Registry::get().add(kToy), true);

std::vector<std::byte> msg(std::initializer_list<int> l) {
  std::vector<std::byte> b;
  for (int x : l) b.push_back(std::byte(x));
  return b;
}

// Frames 1-2: good toy Ethernet frames; 3: a wrong count; 4: a good toy
// datagram; 5: a datagram to another port (not the family's).
fs::path write_toy_capture() {
  const fs::path path = fs::temp_directory_path() / fmt::format("rdmaconf-toy-{}.pcap", ::getpid());
  captures::io::PcapWriter w(path.string());
  auto eth = [&](std::vector<std::byte> payload) {
    auto f = msg({2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, kToyEthertype >> 8, kToyEthertype & 0xff});
    f.insert(f.end(), payload.begin(), payload.end());
    w.frame(protocols::Bytes(f));
  };
  eth(msg({3, 7, 7, 7}));
  eth(msg({1, 9}));
  eth(msg({5, 1, 2}));
  const auto a = captures::io::host_v4(10, 0, 0, 1, 4000), b = captures::io::host_v4(10, 0, 0, 2, kToyPort);
  const auto good = msg({2, 1, 1});
  w.ip_packet(a, b, protocols::Bytes(captures::io::ip_udp(a, b, protocols::Bytes(good), false)));
  auto other = b;
  other.port = 10;
  w.ip_packet(a, other, protocols::Bytes(captures::io::ip_udp(a, other, protocols::Bytes(good), false)));
  return path;
}

const ScopeResult* scope(const InputResult& r, std::string_view id) {
  for (const auto& s : r.scopes)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(family)

BOOST_AUTO_TEST_CASE(a_family_registered_in_one_line_joins_the_catalog) {
  BOOST_TEST(kRegistered);
  const auto& reg = Registry::get();
  BOOST_TEST(reg.find("toy") == &kToy);
  BOOST_TEST_REQUIRE(reg.families().size() >= 3u);
  BOOST_TEST(reg.families()[0]->name() == "iwarp");  // built-in ones first, in their order
  BOOST_TEST(reg.families()[1]->name() == "ib");
  const auto all = reg.all_cases();
  BOOST_TEST(all.back() == &kNonEmpty);
  for (const auto* c : all) BOOST_TEST(!c->family.empty(), c->id << " names no family");
  // every case names the family that registered it
  for (const auto* f : reg.families())
    for (const auto* c : f->cases()) BOOST_TEST(c->family == f->name(), c->id);
}

BOOST_AUTO_TEST_CASE(the_checker_gives_a_family_what_it_claims) {
  const auto path = write_toy_capture();
  CheckOptions o;
  o.hash = false;
  o.strict = true;
  const auto r = Checker(o).check_file(path.string());
  BOOST_TEST_REQUIRE(r.error.empty(), r.error);
  BOOST_TEST(r.stats.frames == 5u);
  const auto* eth = scope(r, "toy/0");
  const auto* udp = scope(r, "toy/1");
  BOOST_TEST_REQUIRE(eth);
  BOOST_TEST_REQUIRE(udp);
  BOOST_TEST(eth->family == "toy");
  BOOST_TEST_REQUIRE(eth->outcomes.size() == 2u);
  const auto& length = eth->outcomes[0].tally;
  BOOST_TEST((length.verdict() == Verdict::fail));
  BOOST_TEST(length.checked() == 3u);
  BOOST_TEST_REQUIRE(length.evidence().size() == 1u);
  BOOST_TEST(length.evidence()[0].frames == std::vector<std::uint64_t>{3});
  BOOST_TEST(length.evidence()[0].expected == "5");
  BOOST_TEST((udp->outcomes[0].tally.verdict() == Verdict::pass));
  BOOST_TEST(udp->outcomes[0].tally.checked() == 1u);  // frame 5 went to port 10: not claimed
  // the family's count, beside the built-in families' counts
  std::map<std::string, std::uint64_t> counts;
  for (const auto& c : r.stats.families) counts[c.key] = c.value;
  BOOST_TEST(counts["toy_messages"] == 4u);
  BOOST_TEST(counts.count("iwarp_connections") == 1u);
  BOOST_TEST(counts["ib_packets"] == 0u);

  // --cases selects within the family; SHOULD cases need --strict
  o.case_patterns = {"toy.*"};
  o.strict = false;
  Checker only(o);
  BOOST_TEST_REQUIRE(only.active_cases().size() == 1u);
  BOOST_TEST(only.active_cases()[0] == &kLength);
  const auto r2 = only.check_file(path.string());
  BOOST_TEST_REQUIRE(scope(r2, "toy/0"));
  BOOST_TEST(scope(r2, "toy/0")->outcomes.size() == 1u);

  // the family's listing
  o.case_patterns = {"-"};
  o.listing_family = "toy";
  std::vector<std::uint64_t> listed;
  o.on_unit = [&](const conformance::ProtocolFamily&, std::string_view, const nlohmann::json& j) { listed.push_back(j["frame"].get<std::uint64_t>()); };
  (void)Checker(o).check_file(path.string());
  BOOST_TEST(listed == (std::vector<std::uint64_t>{1, 2, 3, 4}));
  fs::remove(path);
}

// A TCP connection with data that is not iWARP is counted and named with
// the reason, not skipped silently; a connection without data is neither.
BOOST_AUTO_TEST_CASE(tcp_not_read_as_iwarp_is_named) {
  const fs::path path = fs::temp_directory_path() / fmt::format("rdmaconf-not-iwarp-{}.pcap", ::getpid());
  {
    captures::io::PcapWriter w(path.string());
    const auto a = captures::io::host_v4(10, 0, 0, 1, 40000), b = captures::io::host_v4(10, 0, 0, 2, 80);
    captures::io::TcpConversation http(w, a, b);
    http.handshake();
    const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    http.send(0, protocols::Bytes(reinterpret_cast<const std::byte*>(get.data()), get.size()));
    http.close();
    auto c = a;
    c.port = 40001;
    captures::io::TcpConversation empty(w, c, b);
    empty.handshake();
    empty.close();
  }
  CheckOptions o;
  o.hash = false;
  const auto r = Checker(o).check_file(path.string());
  fs::remove(path);
  BOOST_TEST_REQUIRE(r.error.empty(), r.error);
  std::map<std::string, std::uint64_t> counts;
  for (const auto& c : r.stats.families) counts[c.key] = c.value;
  BOOST_TEST(counts["iwarp_connections"] == 0u);
  BOOST_TEST(counts["tcp_not_iwarp"] == 1u);
  BOOST_TEST_REQUIRE(r.warnings.size() == 1u);
  BOOST_TEST(r.warnings[0].find("TCP connection 10.0.0.1:40000 <-> 10.0.0.2:80 (data in frames 4 to 4)") != std::string::npos, r.warnings[0]);
  BOOST_TEST(r.warnings[0].find("not read as iWARP: neither side's first octets") != std::string::npos, r.warnings[0]);
}

BOOST_AUTO_TEST_CASE(reports_carry_the_family_without_knowing_it) {
  const auto path = write_toy_capture();
  CheckOptions o;
  o.hash = false;
  Checker checker(o);
  const std::vector<InputResult> inputs{checker.check_file(path.string())};
  const reports::RunInfo run{"test", {}, false, {}, checker.active_cases()};
  const auto j = reports::to_json(run, inputs);
  bool in_catalog = false;
  for (const auto& c : j["catalog"]) in_catalog |= c["id"] == "toy.length" && c["family"] == "toy";
  BOOST_TEST(in_catalog);
  BOOST_TEST(j["inputs"][0]["stats"]["toy_messages"] == 4);
  BOOST_TEST(j["summary"]["fail"] == 1);
  std::ostringstream junit, text;
  reports::write_junit(junit, run, inputs);
  reports::write_summary(text, inputs, false);
  BOOST_TEST(junit.str().find("toy.length") != std::string::npos);
  BOOST_TEST(text.str().find("4 toy messages") != std::string::npos, text.str());
  BOOST_TEST(text.str().find("toy/0 EtherType 0x88b6: 0 pass, 1 fail") != std::string::npos, text.str());
  fs::remove(path);
}

// The built-in families judge a capture the same with the toy family beside them.
BOOST_AUTO_TEST_CASE(a_new_family_changes_no_other_verdict) {
  for (const char* name : {"roce-v4.pcap", "iwarp-rev2-crc.pcap", "ib-native-fault-vcrc.pcap"}) {
    const auto cap = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden" / name;
    BOOST_TEST_REQUIRE(fs::exists(cap), cap);
    CheckOptions with, without;
    with.hash = without.hash = false;
    with.strict = without.strict = true;
    for (const auto* f : Registry::get().families())
      if (f->name() != "toy") without.families.push_back(f);
    const auto a = Checker(with).check_file(cap.string()), b = Checker(without).check_file(cap.string());
    const reports::RunInfo run{"test", {}, true, {}, {}};
    auto ja = reports::to_json(run, {a})["inputs"][0], jb = reports::to_json(run, {b})["inputs"][0];
    ja["stats"].erase("toy_messages");
    BOOST_TEST(ja == jb, name);
    BOOST_TEST(!a.scopes.empty(), name);
  }
}

// A streamed check hands each scope on as it ends and keeps none; the
// verdict counts, and the scopes themselves, are those of a check that
// keeps them (in the families' order: iWARP connections by number).
BOOST_AUTO_TEST_CASE(streamed_scopes_are_the_kept_ones) {
  const auto cap = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "lab" / "lab-our-initiator.ib_write_bw.crc-off.v2.no-crc.pcap";
  BOOST_TEST_REQUIRE(fs::exists(cap), cap);
  CheckOptions kept;
  kept.hash = false;
  kept.strict = true;
  const InputResult a = Checker(kept).check_file(cap.string());
  BOOST_TEST_REQUIRE(a.scopes.size() >= 2u);
  for (std::size_t i = 1; i < a.scopes.size(); ++i) BOOST_TEST(a.scopes[i - 1].order < a.scopes[i].order);
  CheckOptions streamed = kept;
  std::vector<ScopeResult> got;
  streamed.on_scope = [&](const std::string& p, ScopeResult&& r) {
    BOOST_TEST(p == cap.string());
    got.push_back(std::move(r));
  };
  const InputResult b = Checker(streamed).check_file(cap.string());
  BOOST_TEST(b.scopes.empty());
  BOOST_TEST(b.verdicts.pass == a.verdicts.pass);
  BOOST_TEST(b.verdicts.fail == a.verdicts.fail);
  BOOST_TEST(b.verdicts.not_applicable == a.verdicts.not_applicable);
  BOOST_TEST(b.verdicts.pass + b.verdicts.not_applicable > 0u);
  BOOST_TEST_REQUIRE(got.size() == a.scopes.size());
  std::sort(got.begin(), got.end(), [](const ScopeResult& x, const ScopeResult& y) { return x.order < y.order; });
  const reports::RunInfo run{"test", {}, true, {}, {}};
  InputResult c = b;
  c.scopes = std::move(got);
  BOOST_TEST(reports::to_json(run, {a}) == reports::to_json(run, {c}));
}

// The JSON report, streamed or in the background, is JSON whatever strings
// the run and the capture put into it: the scope's label, the input's path,
// error and warnings, the command line. They are escaped, and bytes that are
// not UTF-8 become U+FFFD (a path that was not UTF-8 ended the process with
// an uncaught exception while the run header and the input's stats were
// nlohmann::json documents). Every member is compared with what it came from.
BOOST_AUTO_TEST_CASE(streamed_reports_are_json_whatever_the_strings) {
  const auto cap = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden" / "iwarp-fault-crc.pcap";
  CheckOptions o;
  o.hash = false;
  Checker checker(o);
  std::vector<InputResult> inputs{checker.check_file(cap.string())};
  BOOST_TEST_REQUIRE(!inputs[0].scopes.empty());
  // Stray bytes, a surrogate and an overlong '/' (RFC 3629 section 4 forbids
  // both), a sequence cut short, and a four-octet character that is fine.
  const std::string hostile("a \"quoted\" \\ text\n\x01 caf\xc3\xa9 \xff\xfe \xed\xa0\x80 \xc0\xaf \xe2\x82 \xf0\x9f\x98\x80 end");
  const std::string fffd("\xef\xbf\xbd");
  const std::string replaced("a \"quoted\" \\ text\n\x01 caf\xc3\xa9 " + fffd + fffd + " " + fffd + fffd + fffd + " " + fffd + fffd +
                             " " + fffd + fffd + " \xf0\x9f\x98\x80 end");
  auto& in = inputs[0];
  in.scopes[0].label = hostile;
  in.path = "/tmp/" + hostile + ".pcap";
  in.error = "error: " + hostile;
  in.warnings.push_back("warning: " + hostile);
  in.sha256 = "00ff";
  const reports::RunInfo run{"test \xff", {"check", hostile}, false, {"iwarp.*", hostile}, checker.active_cases(), reports::Shard{1, 3}, 7};
  std::ostringstream direct, background, junit, junit_bg;
  reports::replay(*reports::json_writer(direct, run), inputs);
  {
    std::vector<std::unique_ptr<reports::ReportWriter>> w;
    w.push_back(reports::json_writer(background, run));
    w.push_back(reports::junit_writer(junit_bg, run));
    reports::replay(*reports::in_background(std::move(w), 4), inputs);
  }
  reports::write_junit(junit, run, inputs);
  const auto doc = nlohmann::json::parse(direct.str(), nullptr, false);
  BOOST_TEST_REQUIRE(!doc.is_discarded(), direct.str().substr(0, 400));
  BOOST_TEST(nlohmann::json::parse(background.str(), nullptr, false) == doc);
  BOOST_TEST(reports::to_json(run, inputs) == doc);
  BOOST_TEST(junit.str() == junit_bg.str());
  // The run header.
  BOOST_TEST(doc["$schema"] == reports::kSchemaId);
  BOOST_TEST(doc["schema_version"] == reports::kSchemaVersion);
  BOOST_TEST(doc["tool"] == (nlohmann::json{{"name", "rdmaconf"}, {"version", "test \xef\xbf\xbd"}}));
  BOOST_TEST(doc["options"]["arguments"] == (nlohmann::json{"check", replaced}));
  BOOST_TEST(doc["options"]["cases"] == (nlohmann::json{"iwarp.*", replaced}));
  BOOST_TEST(doc["options"]["strict"] == false);
  BOOST_TEST(doc["shard"] == (nlohmann::json{{"index", 1}, {"count", 3}, {"inputs_in_all_shards", 7}}));
  BOOST_TEST_REQUIRE(doc["catalog"].size() == checker.active_cases().size());
  for (std::size_t i = 0; i < doc["catalog"].size(); ++i) {
    const auto& c = *checker.active_cases()[i];
    const auto& j = doc["catalog"][i];
    // The six fields, and the ledger statements the case judges where its family has a ledger.
    const auto statements = statements_of(c);
    BOOST_TEST(j.size() == (statements.empty() ? 6u : 7u));
    for (std::size_t k = 0; k < statements.size(); ++k) BOOST_TEST(j["statements"][k] == statements[k]->id);
    BOOST_TEST(j["id"] == c.id);
    BOOST_TEST(j["family"] == c.family);
    BOOST_TEST(j["spec"] == c.spec);
    BOOST_TEST(j["section"] == c.section);
    BOOST_TEST(j["level"] == level_name(c.level));
    BOOST_TEST(j["requirement"] == c.requirement);
    BOOST_TEST(reports::case_json(c) == j);
  }
  // The input.
  BOOST_TEST_REQUIRE(doc["inputs"].size() == 1u);
  const auto& ji = doc["inputs"][0];
  BOOST_TEST(ji["path"] == "/tmp/" + replaced + ".pcap");
  BOOST_TEST(ji["error"] == "error: " + replaced);
  BOOST_TEST(ji["warnings"].back() == "warning: " + replaced);
  BOOST_TEST(ji["warnings"].size() == in.warnings.size());
  BOOST_TEST(ji["warnings_total"] == in.warnings_total);
  BOOST_TEST(ji["sha256"] == "00ff");
  BOOST_TEST(ji["linktype"] == in.linktype);
  BOOST_TEST(ji["stats"]["frames"] == in.stats.frames);
  BOOST_TEST(ji["stats"]["octets"] == in.stats.octets);
  BOOST_TEST(ji["stats"]["tcp_connections"] == in.stats.tcp_connections);
  BOOST_TEST(ji["stats"]["undecodable_frames"] == in.stats.undecodable_frames);
  BOOST_TEST(ji["stats"]["capture_anomalies"] == in.stats.capture_anomalies);
  BOOST_TEST(ji["stats"].size() == 5 + in.stats.families.size());
  for (const auto& f : in.stats.families) BOOST_TEST(ji["stats"][f.key] == f.value);
  BOOST_TEST(ji["scopes"].size() == in.scopes.size());
  BOOST_TEST(ji["scopes"][0]["label"] == replaced);
  // The summary.
  const auto t = reports::totals(inputs);
  BOOST_TEST(doc["summary"] == (nlohmann::json{{"pass", t.pass},
                                               {"fail", t.fail},
                                               {"not_applicable", t.not_applicable},
                                               {"inconclusive", t.inconclusive},
                                               {"input_errors", 1}}));
  BOOST_TEST(t.fail > 0u);
  BOOST_TEST(junit.str().find("<testsuites name=\"rdmaconf test " + fffd + "\"") != std::string::npos);
  BOOST_TEST(junit.str().find("name=\"/tmp/a &quot;quoted&quot; \\ text\n? caf\xc3\xa9 " + fffd + fffd + " ") != std::string::npos);
  BOOST_TEST(junit.str().find("iwarp.mpa.fpdu.crc") != std::string::npos);
}

// A RoCE conversation with no packet for the idle time ends then, and the
// same addresses later start a new one: the capture twice over, the second
// copy 1000 s later, gives two scopes judged as the single copy is.
BOOST_AUTO_TEST_CASE(idle_conversations_end_in_capture_time) {
  const auto golden = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden" / "roce-v4.pcap";
  const auto twice = fs::temp_directory_path() / fmt::format("rdmaconf-twice-{}.pcap", getpid());
  {
    std::string err;
    captures::io::PcapWriter w(twice.string());
    for (const std::int64_t shift : {std::int64_t{0}, std::int64_t{1000} * 1000000}) {
      auto r = captures::io::PcapReader::open(golden.string(), err, false);
      BOOST_TEST_REQUIRE(r, err);
      while (auto f = r->next()) {
        w.set_time_us(f->ts_sec * 1000000 + f->ts_usec + shift);
        w.frame(f->data);
      }
    }
  }
  CheckOptions o;
  o.hash = false;
  o.strict = true;
  o.families = {Registry::get().find("ib")};  // the UDP family's conversations end the same way
  const InputResult once = Checker(o).check_file(golden.string());
  BOOST_TEST_REQUIRE(once.scopes.size() == 1u);
  o.reassembly.idle_timeout_us = 600 * 1000000ll;
  const InputResult two = Checker(o).check_file(twice.string());
  BOOST_TEST_REQUIRE(two.scopes.size() == 2u);
  const reports::RunInfo run{"test", {}, true, {}, {}};
  auto results = [&](const ScopeResult& s) {
    InputResult in;
    in.scopes.push_back(s);
    return reports::to_json(run, {in})["inputs"][0]["scopes"][0]["results"];
  };
  BOOST_TEST(results(two.scopes[0]) == results(once.scopes[0]));
  BOOST_TEST(two.scopes[1].first_frame > two.scopes[0].last_frame);
  o.reassembly.idle_timeout_us = 0;  // no timeout: one conversation, which sees every packet twice
  BOOST_TEST(Checker(o).check_file(twice.string()).scopes.size() == 1u);
  fs::remove(twice);
}

// The open state is bounded: a golden capture (all PASS) with, after each
// of its frames, packets of other conversations (RoCE: a request each from
// its own address; TCP: a SYN each) that push the golden one past a tiny
// --state-memory bound again and again. Closed early and begun anew, it
// gives no FAIL; what the early close hid is INCONCLUSIVE naming the bound;
// the run warns. Without the bound, the same file is judged as the golden.
BOOST_AUTO_TEST_CASE(open_state_beyond_its_bound_closes_early_and_never_fails) {
  for (const std::string name : {"roce-v4", "iwarp-rev2-crc"}) {
    BOOST_TEST_CONTEXT(name) {
      const bool roce = name == "roce-v4";
      const auto golden = fs::path(RDMACONF_SOURCE_DIR) / "captures" / "golden" / (name + ".pcap");
      const auto crowded = fs::temp_directory_path() / fmt::format("rdmaconf-crowded-{}.pcap", getpid());
      {
        std::string err;
        captures::io::PcapWriter w(crowded.string());
        auto r = captures::io::PcapReader::open(golden.string(), err, false);
        BOOST_TEST_REQUIRE(r, err);
        std::uint32_t other = 0;
        std::optional<std::int64_t> t0;
        while (auto f = r->next()) {
          // The golden frames 100 times as far apart, the others between them.
          const std::int64_t t = f->ts_sec * 1000000 + f->ts_usec;
          if (!t0) t0 = t;
          const std::int64_t at = *t0 + (t - *t0) * 100;
          w.set_time_us(at);
          w.frame(f->data);
          for (int k = 0; k < 12; ++k, ++other) {
            w.set_time_us(at + 1 + k);
            const auto a = captures::io::host_v4(10, 9, static_cast<std::uint8_t>(other >> 8), static_cast<std::uint8_t>(other), 49152);
            if (roce) {
              // A RoCEv2 RC SEND Only (BTH opcode 0x04, P_Key 0xFFFF, QP 0x11, PSN = other), 16 octets, ICRC.
              std::vector<std::byte> tr(12 + 16 + 4);
              tr[0] = std::byte{0x04};
              tr[2] = tr[3] = std::byte{0xff};
              tr[7] = std::byte{0x11};
              tr[11] = static_cast<std::byte>(other);
              const auto b = captures::io::host_v4(192, 0, 2, 2, 4791);
              auto l3 = captures::io::ip_udp(a, b, tr, false);
              const std::uint32_t icrc = protocols::ib::roce_icrc(l3, false, 20);
              for (int i = 0; i < 4; ++i) l3[l3.size() - 4 + i] = static_cast<std::byte>(icrc >> (8 * i));
              w.ip_packet(a, b, l3);
            } else {
              const auto b = captures::io::host_v4(192, 0, 2, 2, 7174);
              w.ip_packet(a, b, captures::io::ip_tcp(a, b, 1000, 0, captures::io::tcpflag::syn, {}, 1460));
            }
          }
        }
      }
      CheckOptions o;
      o.hash = false;
      o.strict = true;
      o.state_memory = 0;
      const InputResult free_run = Checker(o).check_file(crowded.string());
      BOOST_TEST(free_run.verdicts.fail == 0u);
      BOOST_TEST(free_run.warnings_total == 0u);
      o.state_memory = 3 * 7 * 1024 * 4;  // four open RoCE conversations, or four TCP connections
      const InputResult bounded = Checker(o).check_file(crowded.string());
      BOOST_TEST(bounded.verdicts.fail == 0u);
      std::string inconclusive;
      for (const auto& sc : bounded.scopes)
        for (const auto& out : sc.outcomes)
          for (const auto& ev : out.tally.evidence())
            if (out.tally.verdict() == Verdict::inconclusive) inconclusive += ev.actual + " " + ev.detail + "\n";
      if (roce) BOOST_TEST(inconclusive.find("share of --state-memory") != std::string::npos, inconclusive);
      std::string warnings;
      for (const auto& w : bounded.warnings) warnings += w + "\n";
      BOOST_TEST(warnings.find("share of --state-memory") != std::string::npos, warnings);
      // The golden conversation was cut into several scopes.
      std::size_t golden_scopes = 0;
      for (const auto& sc : bounded.scopes) golden_scopes += sc.label.find("10.9.") == std::string::npos;
      BOOST_TEST(golden_scopes > 1u);
      fs::remove(crowded);
    }
  }
}

// A family option given as text (the Wireshark plugin's preferences): lists,
// limits and allowed values, each refusal naming the option and the value.
// Engines hand their frames to a tap (engines/common/tap.hpp) and know
// nothing of capture files: no engine source includes from captures/.
BOOST_AUTO_TEST_CASE(engines_include_nothing_from_captures) {
  std::size_t read = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(RDMACONF_SOURCE_DIR) / "engines")) {
    if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp" && e.path().extension() != ".h") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    ++read;
    BOOST_TEST(text.str().find("#include \"captures/") == std::string::npos, e.path().string());
  }
  BOOST_TEST(read > 10u);
}

// No code outside a family's own folders (protocols/F, engines/F,
// conformance/F, interop/F, ...) and the lab's peer table switches on a
// family's or a kernel peer's name: the registries (conformance/families.def,
// the live suites, interop/lab/peers.cpp) answer for them. Names of the
// families and peers as they stand (and the spellings of earlier releases);
// a comparison, a member list or a prefix test with one of them is a switch.
BOOST_AUTO_TEST_CASE(no_family_or_peer_name_switched_on_outside_its_folders) {
  const std::string names = "iwarp|ib|roce|fastudp|udp|nic|unet|siw|rxe";
  const std::regex switched("[=!]=\\s*\"(" + names + ")\"|\"(" + names + ")\"\\s*[=!]=|IsMember\\(\\{[^)]*\"(" + names +
                            ")\"|starts_with\\(\"(" + names + ")\"\\)");
  const std::regex own_folder("^(protocols|engines|conformance|interop|captures/gen|fuzz|bench)/(iwarp|ib|fastudp|unet)/.*");
  const fs::path root(RDMACONF_SOURCE_DIR);
  std::size_t read = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory() && (rel.starts_with("build") || rel == "tests" || rel.starts_with(".") || rel == "out")) {
      it.disable_recursion_pending();
      continue;
    }
    const auto ext = it->path().extension();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c") continue;
    if (std::regex_match(rel, own_folder) || rel == "interop/lab/peers.cpp") continue;
    std::ifstream in(it->path());
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      BOOST_TEST(!std::regex_search(line, switched), rel << ":" << line_no << ": " << line);
    }
    ++read;
  }
  BOOST_TEST(read > 100u);
  // The check itself: it sees a switch where there is one.
  for (const char* bad : {R"(if (c.kernel == "rxe") {)", R"(t != "iwarp")", R"(->check(CLI::IsMember({"siw", "rxe"}))",
                          R"(if (p.starts_with("siw")))"})
    BOOST_TEST(std::regex_search(std::string(bad), switched), bad);
  BOOST_TEST(!std::regex_search(std::string(R"(id.starts_with("iwarp.mpa.rr."))"), switched));
}

// --roce-port adds UDP ports to 4791, as README says; --roce-port-only
// takes its ports in place of 4791.
BOOST_AUTO_TEST_CASE(roce_port_options_add_or_replace) {
  const ProtocolFamily* ib = Registry::get().find("ib");
  BOOST_TEST_REQUIRE(ib != nullptr);
  const auto ports = [&](const FamilyOptions& o) {
    const auto p = ib->claims(o).udp_ports;
    return std::set<std::uint16_t>(p.begin(), p.end());
  };
  BOOST_TEST((ports({}) == std::set<std::uint16_t>{4791}));
  BOOST_TEST((ports({{"--roce-port", {4792, 5000}}}) == std::set<std::uint16_t>{4791, 4792, 5000}));
  BOOST_TEST((ports({{"--roce-port", {4791}}}) == std::set<std::uint16_t>{4791}));
  BOOST_TEST((ports({{"--roce-port-only", {4792}}}) == std::set<std::uint16_t>{4792}));
  BOOST_TEST((ports({{"--roce-port-only", {4792}}, {"--roce-port", {5000}}}) == std::set<std::uint16_t>{4792}));
}

BOOST_AUTO_TEST_CASE(options_parse_from_text) {
  const OptionSpec ports{"--roce-port", "", true, {}, 65535};
  const OptionSpec mtu{"--roce-mtu", "", false, {256, 1024}};
  std::vector<std::uint64_t> v;
  BOOST_TEST(!parse_option(ports, "4791, 4792 5000", v));
  BOOST_TEST((v == std::vector<std::uint64_t>{4791, 4792, 5000}));
  BOOST_TEST(!parse_option(ports, "", v));
  BOOST_TEST(v.empty());
  BOOST_TEST(!parse_option(mtu, "1024", v));
  BOOST_TEST((v == std::vector<std::uint64_t>{1024}));
  BOOST_TEST(*parse_option(ports, "47x", v) == "--roce-port: '47x' is not a number");
  BOOST_TEST(*parse_option(ports, "70000", v) == "--roce-port: 70000 is above 65535");
  BOOST_TEST(*parse_option(ports, "-1", v) == "--roce-port: '-1' is not a number");
  BOOST_TEST(*parse_option(ports, "99999999999999999999999", v) == "--roce-port: '99999999999999999999999' is not a number");
  BOOST_TEST(*parse_option(mtu, "512", v) == "--roce-mtu: 512 is not one of 256, 1024");
  BOOST_TEST(*parse_option(mtu, "256,1024", v) == "--roce-mtu takes one value, not 2");
}

// Every iWARP case that narrows the FPDUs its handler is called for
// (fpdu_kinds; the checker no longer calls it for the others) does nothing
// for the kinds it leaves out: handed a segment of each of them, it records
// no verdict and keeps no state. A narrowing that left out a kind the case
// judges would fail here.
BOOST_AUTO_TEST_CASE(iwarp_cases_narrowed_to_fpdu_kinds_ignore_the_rest) {
  namespace pi = rdmaconf::protocols::iwarp;
  IwarpCases cases;
  add_iwarp_mpa_setup_cases(cases);
  add_iwarp_mpa_order_cases(cases);
  add_iwarp_mpa_enhanced_cases(cases);
  add_iwarp_mpa_fpdu_cases(cases);
  add_iwarp_ddp_cases(cases);
  add_iwarp_rdmap_cases(cases);
  const std::vector<std::byte> rest(64);  // room for any RDMAP header the opcode calls for
  const std::string sides[2] = {"endpoint a", "endpoint b"};
  std::size_t narrowed = 0, handed = 0;
  for (const auto& c : cases) {
    const std::uint64_t kinds = c->fpdu_kinds();
    if (!(c->events() & IwarpCase::fpdu) || kinds == kAnyFpdu) continue;
    ++narrowed;
    for (unsigned kind = 0; kind < kFpduKinds; ++kind) {
      if (kinds >> kind & 1) continue;
      std::vector<std::byte> ulpdu;
      const auto op = static_cast<std::uint8_t>(kind & 15);
      if (kind == 32) ulpdu = {std::byte{0x41}};  // a ULPDU too short for any DDP header
      else if (kind >= 16) pi::encode_ddp_tagged(ulpdu, op, 0x77, 0, true, rest);
      else pi::encode_ddp_untagged(ulpdu, op, 0, 1, 0, true, rest);
      const auto seg = pi::decode_ddp(ulpdu);
      pi::FpduView view;
      view.ulpdu_len = static_cast<std::uint16_t>(ulpdu.size());
      view.ulpdu = ulpdu;
      iwarp::FpduEvent e;
      e.fpdu = &view;
      e.ddp = &seg;
      e.first_frame = e.last_frame = 1;
      BOOST_REQUIRE_EQUAL(fpdu_kind(e), kind);
      Tally t;
      std::unique_ptr<CaseState> slot;
      CaseCtx ctx{t, slot, sides};
      c->on_fpdu(ctx, IwarpConn{}, e);
      ++handed;
      BOOST_TEST((t.checked() == 0 && t.failed() == 0 && !t.unsettled() && t.inconclusive_count() == 0 && !slot),
                 c->info().id << " judged an FPDU of kind " << kind << ", which its fpdu_kinds leave out");
    }
  }
  BOOST_TEST(narrowed >= 11u);
  BOOST_TEST(handed > 200u);
}

BOOST_AUTO_TEST_SUITE_END()

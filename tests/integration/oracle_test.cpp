// Independent oracles: scapy's RoCE layer for the ICRC, tshark's MPA
// dissector for the FPDU framing and CRC.
#include <boost/test/unit_test.hpp>

#include "conformance/capture/packet.hpp"
#include "conformance/capture/pcap_reader.hpp"
#include "protocols/ib/packet.hpp"
#include "tests/integration/support.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::test;

BOOST_AUTO_TEST_SUITE(oracles)

BOOST_AUTO_TEST_CASE(icrc_matches_scapy_on_scapy_made_packets) {
  const auto dir = temp_dir("scapy");
  const auto pcap = (dir / "scapy.pcap").string();
  const auto r = run("/usr/bin/python3 " + kSource + "/tests/oracles/scapy_roce.py make " + pcap + " 300 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  std::string err;
  auto reader = conformance::capture::PcapReader::open(pcap, err);
  BOOST_TEST_REQUIRE(reader != nullptr, err);
  int n = 0;
  while (auto f = reader->next()) {
    auto d = conformance::capture::dissect(reader->linktype(), *f);
    BOOST_TEST_REQUIRE((d.status == conformance::capture::DissectStatus::ok));
    const auto& p = d.pkt;
    BOOST_TEST(protocols::ib::roce_icrc(p.l3, false, p.ip_header_len) == protocols::ib::read_icrc(p.l3), "frame " << f->number);
    ++n;
  }
  BOOST_TEST(n == 300);
  fs::remove_all(dir);
}

// Every IPv4 golden RoCE capture: scapy's ICRC equals ours on every packet,
// except the one packet whose ICRC roce-fault-icrc alters.
BOOST_AUTO_TEST_CASE(scapy_agrees_with_our_golden_icrcs) {
  int checked = 0;
  for (auto& e : fs::directory_iterator(kGolden)) {
    const auto name = e.path().filename().string();
    if (!name.starts_with("roce-") || e.path().extension() != ".pcap" || name == "roce-v6.pcap") continue;
    const auto m = nlohmann::json::parse(slurp(fs::path(kGolden) / (e.path().stem().string() + ".manifest.json")));
    const auto ok = run("/usr/bin/python3 " + kSource + "/tests/oracles/scapy_roce.py verify " + e.path().string());
    BOOST_TEST_REQUIRE(ok.status == 0, ok.out);
    const auto j = nlohmann::json::parse(ok.out);
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(j["checked"].get<int>() == m["config"]["packets"].get<int>());
      if (name != "roce-fault-icrc.pcap") BOOST_TEST(j["mismatched_frames"].empty());
    }
    checked += j["checked"].get<int>();
  }
  BOOST_TEST(checked >= 1000);
  // The fault capture alters the fifth packet's ICRC (its manifest): scapy must see exactly that one.
  const auto bad = run("/usr/bin/python3 " + kSource + "/tests/oracles/scapy_roce.py verify " + kGolden + "/roce-fault-icrc.pcap");
  const auto j = nlohmann::json::parse(bad.out);
  BOOST_TEST(j["mismatched_frames"].dump() == "[5]");
}

// tshark decodes InfiniBand transport over RoCEv2: for every packet it
// decodes in the golden RoCE captures, the BTH, extension header and ICRC
// fields must equal ours; what tshark does not show is counted by reason.
BOOST_AUTO_TEST_CASE(tshark_agrees_on_every_roce_packet) {
  std::string caps;
  int n = 0;
  for (auto& e : fs::directory_iterator(kGolden))
    if (e.path().filename().string().starts_with("roce-") && e.path().extension() == ".pcap") caps += " " + e.path().string(), ++n;
  // and real rxe traffic from the lab (rxe against rxe: rping, perftest)
  int rxe = 0;
  for (auto& e : fs::directory_iterator(fs::path(kSource) / "captures" / "lab"))
    if (e.path().filename().string().starts_with("lab-rxe-") && e.path().extension() == ".pcap") caps += " " + e.path().string(), ++n, ++rxe;
  BOOST_TEST(rxe >= 6);
  const auto r = run("/usr/bin/python3 " + kSource + "/tests/oracles/tshark_roce.py " + kBin + caps + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  int packets = 0, fields = 0, not_shown = 0;
  for (const auto& c : j["results"]) {
    packets += c["packets_compared"].get<int>();
    fields += c["fields_compared"].get<int>();
    for (const auto& [why, k] : c["not_compared"].items()) not_shown += k.get<int>();
  }
  BOOST_TEST(j["results"].size() == static_cast<std::size_t>(n));
  BOOST_TEST(packets >= 1000);
  BOOST_TEST(fields >= 10000);
  BOOST_TEST(not_shown <= packets / 10);
}

// tshark decodes MPA/DDP/RDMAP and checks the CRC: for every FPDU it decodes
// in the golden captures, ULPDU length, CRC value, CRC verdict and the DDP and
// RDMAP fields must equal ours. The captures it cannot follow are listed in
// the script with the reason.
BOOST_AUTO_TEST_CASE(tshark_agrees_on_every_fpdu_it_decodes) {
  std::string caps;
  for (auto& e : fs::directory_iterator(kGolden))
    if (e.path().filename().string().starts_with("iwarp") && e.path().extension() == ".pcap") caps += " " + e.path().string();
  const auto r = run("/usr/bin/python3 " + kSource + "/tests/oracles/tshark_iwarp.py " + kBin + caps + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  int compared = 0;
  for (const auto& c : j["results"]) compared += c["fpdus_compared"].get<int>();
  BOOST_TEST(compared >= 500);
  BOOST_TEST(j["skipped"].size() <= 10u);
  // The CRC fault is seen by both: the script compares the bad-CRC counts too.
  bool crc_fault_compared = false;
  for (const auto& c : j["results"]) crc_fault_compared |= c["capture"] == "iwarp-fault-crc.pcap" && c["fpdus_compared"] > 0;
  BOOST_TEST(crc_fault_compared);
}

// The same cross-check on real traffic: siw against siw, and our engine
// against siw (captures/lab, made by rdmaconf lab run).
BOOST_AUTO_TEST_CASE(tshark_agrees_on_real_siw_captures) {
  std::string caps;
  for (auto& e : fs::directory_iterator(fs::path(kSource) / "captures" / "lab"))
    if (e.path().extension() == ".pcap" && !e.path().filename().string().starts_with("lab-rxe-")) caps += " " + e.path().string();
  const auto r = run("/usr/bin/python3 " + kSource + "/tests/oracles/tshark_iwarp.py " + kBin + caps + " 2>&1");
  BOOST_TEST_REQUIRE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  int compared = 0, siw_siw = 0;
  for (const auto& c : j["results"]) {
    compared += c["fpdus_compared"].get<int>();
    if (c["capture"].get<std::string>().starts_with("lab-siw-siw")) siw_siw += c["fpdus_compared"].get<int>();
  }
  BOOST_TEST(compared >= 500);
  BOOST_TEST(siw_siw >= 300);
}

BOOST_AUTO_TEST_SUITE_END()

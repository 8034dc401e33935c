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

BOOST_AUTO_TEST_CASE(scapy_agrees_with_our_golden_icrcs) {
  const auto ok = run("/usr/bin/python3 " + kSource + "/tests/oracles/scapy_roce.py verify " + kGolden + "/roce-v4.pcap");
  BOOST_TEST_REQUIRE(ok.status == 0, ok.out);
  auto j = nlohmann::json::parse(ok.out);
  BOOST_TEST(j["checked"].get<int>() == 17);
  BOOST_TEST(j["mismatched_frames"].empty());
  // The fault capture alters the fifth packet's ICRC (its manifest): scapy must see exactly that one.
  const auto bad = run("/usr/bin/python3 " + kSource + "/tests/oracles/scapy_roce.py verify " + kGolden + "/roce-fault-icrc.pcap");
  j = nlohmann::json::parse(bad.out);
  BOOST_TEST(j["mismatched_frames"].dump() == "[5]");
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
    if (e.path().extension() == ".pcap") caps += " " + e.path().string();
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

// The lab's matrix, guest plan and verdicts, without booting anything: the
// verdict logic must turn each way a cell can end into the right color.
#include <algorithm>
#include <set>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include "interop/lab/lab.hpp"

namespace lab = rdmaconf::interop::lab;

namespace {

const lab::Cell& find(const std::vector<lab::Cell>& cells, const std::string& id) {
  const auto it = std::find_if(cells.begin(), cells.end(), [&](const lab::Cell& c) { return c.id == id; });
  BOOST_REQUIRE_MESSAGE(it != cells.end(), "no cell " << id);
  return *it;
}

lab::CellOutcome clean_initiator(bool crc) {
  lab::CellOutcome o;
  o.finished = true;
  o.ours = {{"verdict", "PASS"}, {"message", "10 pings"}, {"negotiated", {{"crc", crc}}}};
  o.program_rc = 0;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lab_plan)

BOOST_AUTO_TEST_CASE(matrix_has_unique_ids_and_ports_and_covers_the_sweep) {
  const auto cells = lab::siw_matrix(true, {});
  std::set<std::string> ids;
  std::set<unsigned> ports;
  std::set<std::string> configs;
  for (const auto& c : cells) {
    BOOST_CHECK_MESSAGE(ids.insert(c.id).second, "duplicate cell " << c.id);
    BOOST_CHECK_MESSAGE(ports.insert(c.port).second, "duplicate port " << c.port);
    BOOST_CHECK(!c.why.empty());
    configs.insert(c.siw.label());
  }
  // CRC off / required / strict x (v2, v2 with p2p, v1), and siw's GSO experiment.
  BOOST_CHECK_EQUAL(configs.size(), 10u);
  BOOST_CHECK(configs.count("crc-off.v2.gso"));
  BOOST_CHECK(configs.count("crc-strict.v1"));
  BOOST_CHECK(configs.count("crc-required.v2.p2p"));
  // Both roles against every configuration.
  for (const auto& cfg : configs) {
    BOOST_CHECK(ids.count("siw.our-initiator.rping." + cfg + ".no-crc"));
    BOOST_CHECK(ids.count("siw.our-responder.rping." + cfg + ".crc"));
  }
  BOOST_CHECK_LT(lab::siw_matrix(false, {}).size(), cells.size());
}

BOOST_AUTO_TEST_CASE(expectations_follow_the_crc_rule) {
  const auto cells = lab::siw_matrix(true, {});
  // We ask for CRC and siw does not: CRC must be on.
  const auto& alone = find(cells, "siw.our-initiator.rping.crc-off.v2.crc");
  BOOST_CHECK(alone.expect == lab::Expect::data);
  BOOST_CHECK(alone.expect_crc);
  // siw (initiator) requires it and we ask too: on. We do not ask: siw refuses our Reply without C.
  BOOST_CHECK(find(cells, "siw.our-responder.rping.crc-required.v2.crc").expect_crc);
  BOOST_CHECK(find(cells, "siw.our-responder.rping.crc-required.v2.no-crc").expect == lab::Expect::reject);
  BOOST_CHECK(!find(cells, "siw.our-responder.rping.crc-off.v2.no-crc").expect_crc);
  // As responder siw asks for CRC only when the Request did.
  BOOST_CHECK(!find(cells, "siw.our-initiator.rping.crc-required.v2.no-crc").expect_crc);
  // siw refuses CRC outright: asking for it must end in a refusal, not in a connection without CRC.
  BOOST_CHECK(find(cells, "siw.our-initiator.rping.crc-strict.v2.crc").expect == lab::Expect::reject);
  BOOST_CHECK(find(cells, "siw.our-initiator.rping.crc-off.v2.markers").expect == lab::Expect::reject);
}

BOOST_AUTO_TEST_CASE(cells_that_upset_the_kernel_run_last) {
  const auto cells = lab::siw_matrix(true, {});
  const auto first_last = std::find_if(cells.begin(), cells.end(), [](const lab::Cell& c) { return c.run_last; });
  BOOST_REQUIRE(first_last != cells.end());
  BOOST_CHECK(std::all_of(first_last, cells.end(), [](const lab::Cell& c) { return c.run_last; }));
}

BOOST_AUTO_TEST_CASE(scenario_filter_and_plan) {
  const auto cells = lab::siw_matrix(false, {"terminate-crc", "rping"});
  for (const auto& c : cells) BOOST_CHECK(c.scenario == "terminate-crc" || c.scenario == "rping");
  const auto plan = lab::guest_plan(cells);
  // siw is (re)loaded only where the configuration changes or after rxe
  // cells, first with the first cell's; rxe once per run of rxe cells.
  BOOST_CHECK_EQUAL(plan.find("siw_load " + cells.front().siw.load_args() + "\n"), plan.find("siw_load"));
  std::size_t changes = 0, loads = 0, rxe_runs = 0, rxe_loads = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const bool after_other = i == 0 || cells[i - 1].kernel != cells[i].kernel;
    if (cells[i].kernel == "rxe") rxe_runs += after_other;
    else changes += after_other || !(cells[i].siw == cells[i - 1].siw);
  }
  for (auto at = plan.find("siw_load"); at != std::string::npos; at = plan.find("siw_load", at + 1)) ++loads;
  for (auto at = plan.find("rxe_load"); at != std::string::npos; at = plan.find("rxe_load", at + 1)) ++rxe_loads;
  BOOST_CHECK_EQUAL(loads, changes);
  BOOST_CHECK_EQUAL(rxe_loads, rxe_runs);
  BOOST_CHECK_EQUAL(rxe_runs, 1u);  // the rxe rping cell
  BOOST_CHECK_LT(changes, cells.size());
  for (const auto& c : cells) {
    const std::string capture = c.kernel == "rxe" ? " veth2 udp\n" : c.our_role == "none" ? " veth2\n" : "\n";
    BOOST_CHECK(plan.find("cell " + c.id + capture) != std::string::npos);
    BOOST_CHECK(plan.find(std::to_string(c.port)) != std::string::npos);
  }
  BOOST_CHECK(plan.find("'--peer-program' 'rping'") != std::string::npos);
  BOOST_CHECK(plan.find("rping -c -a 192.0.2.2") != std::string::npos);
}

// The "data right after the MPA Reply" cell opens twenty connections, each to
// a server of its own, each with its own result file.
BOOST_AUTO_TEST_CASE(early_data_cell_runs_twenty_connections) {
  const auto cells = lab::siw_matrix(false, {"rping"});
  const auto& e = find(cells, "siw.our-initiator.rping.crc-off.v2.early-data");
  BOOST_CHECK_EQUAL(e.connections, 20u);
  const auto plan = lab::guest_plan({e});
  std::size_t clients = 0;
  for (auto at = plan.find("client our"); at != std::string::npos; at = plan.find("client our", at + 1)) ++clients;
  BOOST_CHECK_EQUAL(clients, 20u);
  BOOST_CHECK(plan.find("$DIR/our20.json") != std::string::npos);
  BOOST_CHECK(plan.find("-p " + std::to_string(e.port + 19000) + " ") != std::string::npos);
}

// perftest over UC and UD: both programs get the connection type (-c on
// perftest's side, --connection-type on ours); a UD message fits the MTU;
// our server must have taken every SEND.
BOOST_AUTO_TEST_CASE(rxe_connection_type_cells) {
  const auto cells = lab::siw_matrix(false, {"ib_send_bw", "ib_write_bw"});
  for (const char* id : {"rxe.rxe-our-initiator.ib_send_bw.ud", "rxe.rxe-our-responder.ib_send_bw.ud",
                         "rxe.rxe-our-initiator.ib_write_bw.uc", "rxe.rxe-our-responder.ib_send_bw.uc"}) {
    BOOST_TEST_CONTEXT(id) {
      const auto& c = find(cells, id);
      const std::string conn = std::string_view(id).ends_with(".ud") ? "UD" : "UC";
      BOOST_CHECK_EQUAL(c.connection, conn);
      const auto plan = lab::guest_plan({c});
      BOOST_CHECK(plan.find(" -c " + conn) != std::string::npos);
      BOOST_CHECK(plan.find("--connection-type " + conn) != std::string::npos);
      if (conn == "UD") BOOST_CHECK(plan.find("-s 1024") != std::string::npos && c.size == 1024);
    }
  }
  const auto rc = lab::guest_plan({find(cells, "rxe.rxe-our-initiator.ib_send_bw")});
  BOOST_CHECK(rc.find(" -c ") == std::string::npos && rc.find("--connection-type") == std::string::npos);

  const auto& r = find(cells, "rxe.rxe-our-responder.ib_send_bw.ud");
  lab::CellOutcome o;
  o.finished = true;
  o.program_rc = 0;
  o.ours = {{"ok", true}, {"received", 20}, {"received_octets", 20 * 1024}};
  BOOST_CHECK_EQUAL(lab::judge(r, o).color, "green");
  o.ours["received"] = 19;  // one UD SEND lost: nothing but the count shows it
  o.ours["received_octets"] = 19 * 1024;
  const auto v = lab::judge(r, o);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.reason.find("received 19 SENDs") != std::string::npos);
}

// Our iWARP engine against perftest -R servers on siw: perftest gets -R and
// the cell's size and count, our client the same program; siw's short-FPDU
// pad (perftest's 2-octet MTU message) is the known finding.
BOOST_AUTO_TEST_CASE(siw_perftest_cells) {
  const auto cells = lab::siw_matrix(false, {"ib_write_bw", "ib_read_bw", "ib_send_bw"});
  for (const char* prog : {"ib_write_bw", "ib_read_bw", "ib_send_bw"}) {
    BOOST_TEST_CONTEXT(prog) {
      const auto& c = find(cells, fmt::format("siw.our-initiator.{}.crc-off.v2.no-crc", prog));
      const auto plan = lab::guest_plan({c});
      BOOST_CHECK(plan.find(fmt::format("{} -R -F -d siw0 -p {} -n 20 -s 4096", prog, c.port)) != std::string::npos);
      BOOST_CHECK(plan.find(fmt::format("--peer 192.0.2.1:{} --peer-program {} --size 4096 --iterations 20", c.port,
                                        prog)) != std::string::npos);
      BOOST_CHECK(c.finding_cases == std::vector<std::string>{"iwarp.mpa.fpdu.pad"});
      const auto& r = find(cells, fmt::format("siw.our-responder.{}.crc-off.v2.no-crc", prog));
      const auto rplan = lab::guest_plan({r});
      BOOST_CHECK(rplan.find(fmt::format("peer --perftest --peer-program {} --listen 192.0.2.2:{}", prog, r.port)) !=
                  std::string::npos);
      BOOST_CHECK(rplan.find(fmt::format("{} -R -F -d siw0 -p {} -n 20 -s 4096 192.0.2.2", prog, r.port)) !=
                  std::string::npos);
      // The pad finding shows only in the capture: with both programs
      // done it explains the red; when our side failed it does not.
      lab::CellOutcome o;
      o.finished = true;
      o.program_rc = 0;
      o.ours = {{"ok", true}, {"received", 20}, {"received_octets", 20 * 4096}};
      o.check_fail = 1;
      o.failed_cases = {"iwarp.mpa.fpdu.pad"};
      auto v = lab::judge(r, o);
      BOOST_CHECK_EQUAL(v.color, "red");
      BOOST_CHECK(!v.regression);
      o.ours = {{"ok", false}, {"error", "the test connection: the client did not connect"}};
      o.program_rc = 137;
      v = lab::judge(r, o);
      BOOST_CHECK(v.regression);
    }
  }
}

BOOST_AUTO_TEST_CASE(data_cell_verdicts) {
  const auto cells = lab::siw_matrix(true, {});
  const auto& c = find(cells, "siw.our-initiator.rping.crc-off.v2.crc");
  BOOST_CHECK_EQUAL(lab::judge(c, clean_initiator(true)).color, "green");

  auto v = lab::judge(c, clean_initiator(false));  // connected without the CRC we asked for
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.regression);
  BOOST_CHECK(v.reason.find("RFC 5044 §7.1") != std::string::npos);

  auto o = clean_initiator(true);
  o.program_rc = 255;
  o.program_err = "rping server failed: -1";
  v = lab::judge(c, o);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.reason.find("rping server failed") != std::string::npos);

  o = clean_initiator(true);
  o.check_fail = 2;
  o.failed_cases = {"iwarp.mpa.fpdu.crc"};
  v = lab::judge(c, o);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.reason.find("iwarp.mpa.fpdu.crc") != std::string::npos);

  o = clean_initiator(true);
  o.finished = false;
  BOOST_CHECK_EQUAL(lab::judge(c, o).color, "red");

  // Everything passed, but the guest kernel complained: red, and the line is quoted.
  o = clean_initiator(true);
  o.kernel_trouble = "kernel BUG at drivers/infiniband/core/iwcm.c:964!";
  v = lab::judge(c, o);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.regression);
  BOOST_CHECK(v.reason.find("iwcm.c:964") != std::string::npos);

  // Responder cells read the peer's JSON line.
  const auto& r = find(cells, "siw.our-responder.rping.crc-required.v2.crc");
  lab::CellOutcome ro;
  ro.finished = true;
  ro.ours = {{"ok", true}, {"negotiated", {{"crc", true}}}};
  ro.program_rc = 0;
  BOOST_CHECK_EQUAL(lab::judge(r, ro).color, "green");
  ro.ours["ok"] = false;
  BOOST_CHECK_EQUAL(lab::judge(r, ro).color, "red");
}

BOOST_AUTO_TEST_CASE(reject_and_fault_verdicts) {
  const auto cells = lab::siw_matrix(false, {});
  const auto& m = find(cells, "siw.our-initiator.rping.crc-off.v2.markers");
  lab::CellOutcome o;
  o.finished = true;
  o.ours = {{"verdict", "FAIL"}, {"message", "MPA setup: the responder rejected the connection"}};
  BOOST_CHECK_EQUAL(lab::judge(m, o).color, "green");
  BOOST_CHECK_EQUAL(lab::judge(m, clean_initiator(false)).color, "red");  // markers accepted, none sent

  // A fault cell: our run judged the Terminate; the checker must find the
  // planted fault (whichever cases the scenario names; one is made up here).
  const auto& f = find(cells, "siw.our-initiator.terminate-stag.crc-off.v2");
  lab::CellOutcome t;
  t.finished = true;
  t.ours = {{"verdict", "PASS"}, {"message", "the responder sent Terminate 1/1/0x00 and closed, as required"}};
  t.required_failures = {"iwarp.ddp.stag"};
  t.failed_cases = {"iwarp.ddp.stag"};
  t.check_fail = 1;
  BOOST_CHECK_EQUAL(lab::judge(f, t).color, "green");
  t.failed_cases = {};
  t.check_fail = 0;
  auto v = lab::judge(f, t);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(v.reason.find("did not find the planted fault") != std::string::npos);

  // A known siw finding stays red but is not a regression, and says why.
  const auto& crc = find(cells, "siw.our-initiator.terminate-crc.crc-off.v2");
  lab::CellOutcome k;
  k.finished = true;
  k.ours = {{"verdict", "FAIL"},
            {"message", "the responder sent Terminate 0/2/0x02; expected 2/0/0x02"},
            {"terminate_received", {{"layer", 0}, {"type", 2}, {"code", 2}}}};
  v = lab::judge(crc, k);
  BOOST_CHECK_EQUAL(v.color, "red");
  BOOST_CHECK(!v.regression);
  BOOST_CHECK(v.reason.find("Layer and EType exchanged") != std::string::npos);
  BOOST_CHECK(v.reason.find("siw finding") != std::string::npos);
  // The finding explains the Terminate case FAILing; anything else FAILing is new.
  k.failed_cases = {"iwarp.rdmap.terminate.code"};
  BOOST_CHECK(!lab::judge(crc, k).regression);
  k.failed_cases = {"iwarp.rdmap.terminate.code", "iwarp.ddp.msn"};
  BOOST_CHECK(lab::judge(crc, k).regression);

  // Skipped stays skipped.
  lab::CellOutcome s;
  s.finished = true;
  s.ours = {{"verdict", "SKIP"}, {"message", "not applicable"}};
  BOOST_CHECK_EQUAL(lab::judge(f, s).color, "skipped");
}

BOOST_AUTO_TEST_SUITE_END()

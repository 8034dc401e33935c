// The lab's matrix, guest plan and verdicts, without booting anything: the
// verdict logic must turn each way a cell can end into the right color.
#include <algorithm>
#include <set>
#include <string_view>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include "interop/iwarp/scenarios.hpp"
#include "interop/lab/lab.hpp"

namespace lab = rdmaconf::interop::lab;

namespace {

// (The id by value: a reference to a temporary string there made GCC 14's
// -Wdangling-reference take the returned cell for a part of that string.)
const lab::Cell& find(const std::vector<lab::Cell>& cells, std::string_view id) {
  const auto it = std::find_if(cells.begin(), cells.end(), [&](const lab::Cell& c) { return c.id == id; });
  BOOST_REQUIRE_MESSAGE(it != cells.end(), "no cell " << id);
  return *it;
}

// The shipped table of cells, selected as `lab run` selects.
const lab::CellTable& shipped() {
  static const lab::CellTable t = lab::read_cells(lab::default_cells_file(RDMACONF_SOURCE_DIR "/interop/lab"));
  return t;
}
std::vector<lab::Cell> matrix(bool sweep, const std::vector<std::string>& scenarios) {
  return lab::select_cells(shipped(), sweep, scenarios);
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
  const auto cells = matrix(true, {});
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
  BOOST_CHECK_LT(matrix(false, {}).size(), cells.size());
}

BOOST_AUTO_TEST_CASE(expectations_follow_the_crc_rule) {
  const auto cells = matrix(true, {});
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
  const auto cells = matrix(true, {});
  const auto first_last = std::find_if(cells.begin(), cells.end(), [](const lab::Cell& c) { return c.run_last; });
  BOOST_REQUIRE(first_last != cells.end());
  BOOST_CHECK(std::all_of(first_last, cells.end(), [](const lab::Cell& c) { return c.run_last; }));
}

BOOST_AUTO_TEST_CASE(scenario_filter_and_plan) {
  const auto cells = matrix(false, {"terminate-crc", "rping"});
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
  BOOST_CHECK(plan.find("rping -c -a $OUR_ADDR") != std::string::npos);
}

// --findings (what the second kernel runs in CI): every default cell that
// reproduces a finding, none that does not but those --cell names, no sweep
// cell without --sweep; an unknown --cell is an error still.
BOOST_AUTO_TEST_CASE(findings_selection) {
  lab::LabOptions o;
  o.lab_dir = RDMACONF_SOURCE_DIR "/interop/lab";
  o.findings = true;
  const auto all = matrix(false, {});
  const auto sweep = matrix(true, {});
  const auto picked = lab::cells_to_run(o);
  std::size_t with_finding = 0;
  for (const auto& c : all) with_finding += !c.finding.empty();
  BOOST_CHECK_GT(with_finding, 10u);
  BOOST_CHECK_EQUAL(picked.size(), with_finding);
  for (const auto& c : picked) {
    BOOST_CHECK_MESSAGE(!c.finding.empty(), c.id);
    BOOST_CHECK_MESSAGE(!c.sweep, c.id);
  }
  const auto plain = std::find_if(all.begin(), all.end(), [](const lab::Cell& c) { return c.finding.empty(); });
  BOOST_REQUIRE(plain != all.end());
  o.cell_ids = {plain->id};
  const auto with_plain = lab::cells_to_run(o);
  BOOST_CHECK_EQUAL(with_plain.size(), with_finding + 1);
  BOOST_CHECK(std::any_of(with_plain.begin(), with_plain.end(), [&](const lab::Cell& c) { return c.id == plain->id; }));
  o.cell_ids = {};
  o.sweep = true;
  std::size_t sweep_findings = 0;
  for (const auto& c : sweep) sweep_findings += !c.finding.empty();
  BOOST_CHECK_EQUAL(lab::cells_to_run(o).size(), sweep_findings);
  BOOST_CHECK_GT(sweep_findings, with_finding);
  o.cell_ids = {"siw.no-such-cell"};
  BOOST_CHECK_THROW(lab::cells_to_run(o), lab::CellsError);
}

// The "data right after the MPA Reply" cell opens twenty connections, each to
// a server of its own, each with its own result file.
BOOST_AUTO_TEST_CASE(early_data_cell_runs_twenty_connections) {
  const auto cells = matrix(false, {"rping"});
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
  const auto cells = matrix(false, {"ib_send_bw", "ib_write_bw"});
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
  BOOST_CHECK(v.reason.find("our engine counted") == std::string::npos);  // nothing counted: nothing said

  // A red cell says what our engine saw of a loaded host: the losses and
  // repeats it counted and what it refused (zero counts are left out).
  o.ours["counters"] = {{"kernel_dropped_datagrams", 7}, {"duplicates", 3}, {"naks_sent", 0}};
  o.ours["refusals"] = {{{"what", "silent drop"}, {"psn", 42}, {"why", "repeated Read/Atomic PSN 42 is older than what we remember"}}};
  const auto w = lab::judge(r, o);
  BOOST_CHECK_EQUAL(w.color, "red");
  BOOST_CHECK_MESSAGE(w.reason.find("our engine counted 7 datagrams dropped by the kernel (socket buffer full), 3 repeated "
                                    "requests; first refusal: silent drop at PSN 42") != std::string::npos,
                      w.reason);
  BOOST_CHECK(w.reason.find("NAKs") == std::string::npos);
  o.ours["received"] = 20;  // green cells say why they are green, not what was counted
  o.ours["received_octets"] = 20 * 1024;
  BOOST_CHECK(lab::judge(r, o).reason.find("our engine counted") == std::string::npos);
}

// Our iWARP engine against perftest -R servers on siw: perftest gets -R and
// the cell's size and count, our client the same program; siw's short-FPDU
// pad (perftest's 2-octet MTU message) is the known finding.
BOOST_AUTO_TEST_CASE(siw_perftest_cells) {
  const auto cells = matrix(false, {"ib_write_bw", "ib_read_bw", "ib_send_bw"});
  for (const char* prog : {"ib_write_bw", "ib_read_bw", "ib_send_bw"}) {
    BOOST_TEST_CONTEXT(prog) {
      const auto& c = find(cells, fmt::format("siw.our-initiator.{}.crc-off.v2.no-crc", prog));
      const auto plan = lab::guest_plan({c});
      BOOST_CHECK(plan.find(fmt::format("{} -R -F -d $DUT_DEV -p {} -n 20 -s 4096", prog, c.port)) != std::string::npos);
      BOOST_CHECK(plan.find(fmt::format("--peer $DUT_ADDR:{} --peer-program {} --size 4096 --iterations 20", c.port,
                                        prog)) != std::string::npos);
      BOOST_CHECK(c.finding_cases == std::vector<std::string>{"iwarp.mpa.fpdu.pad"});
      const auto& r = find(cells, fmt::format("siw.our-responder.{}.crc-off.v2.no-crc", prog));
      const auto rplan = lab::guest_plan({r});
      BOOST_CHECK(rplan.find(fmt::format("serve iwarp --perftest --peer-program {} --listen $OUR_ADDR:{}", prog, r.port)) !=
                  std::string::npos);
      BOOST_CHECK(rplan.find(fmt::format("{} -R -F -d $DUT_DEV -p {} -n 20 -s 4096 $OUR_ADDR", prog, r.port)) !=
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
  const auto cells = matrix(true, {});
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
  const auto cells = matrix(false, {});
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

// The table's own rules: every iWARP fault scenario meets siw in a cell (our
// initiator's, or our responder's planting it in rping -c's buffers) or is
// listed as not run, with a reason; never both.
BOOST_AUTO_TEST_CASE(every_fault_scenario_has_a_cell_or_a_reason) {
  std::set<std::string> with_cell;
  for (const auto& c : shipped().cells)
    if (c.kernel == "siw" && c.our_role != "none") with_cell.insert(c.scenario);
  for (const auto& s : rdmaconf::interop::iwarp::scenarios()) {
    if (!s.expect && !s.close_only) continue;
    const std::string name(s.name);
    const bool listed = shipped().not_run.count(name) > 0;
    BOOST_CHECK_MESSAGE(with_cell.count(name) != listed, name << (listed ? " has a cell and a not_run reason"
                                                                         : " has neither a cell nor a not_run reason"));
  }
}

// Knob labels read back as the knobs they name; anything else is refused.
BOOST_AUTO_TEST_CASE(siw_knob_labels_round_trip) {
  for (unsigned bits = 0; bits < 32; ++bits) {
    lab::SiwKnobs k{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) ? 1u : 2u, (bits & 8) != 0, (bits & 16) != 0};
    const auto back = lab::SiwKnobs::parse(k.label());
    BOOST_REQUIRE_MESSAGE(back, k.label());
    BOOST_CHECK(*back == k);
  }
  for (const char* bad : {"", "crc-off", "crc-off.v3", "crc-on.v2", "crc-off.v2.gso.p2p", "crc-off.v2.", "crc-off.v2.p2p.x"})
    BOOST_CHECK_MESSAGE(!lab::SiwKnobs::parse(bad), bad);
}

// Placeholders come from the catalog and the cell: the Terminate a fault
// cell requires, the rule the fault breaks, the port select_cells assigned.
BOOST_AUTO_TEST_CASE(templates_are_filled_from_the_catalog_and_the_cell) {
  const auto cells = matrix(true, {});
  const auto& t = find(cells, "siw.our-initiator.terminate-crc.crc-off.v2");
  const auto* s = rdmaconf::interop::iwarp::find_scenario("terminate-crc");
  BOOST_REQUIRE(s && s->expect);
  BOOST_CHECK_EQUAL(t.why, fmt::format("Terminate {}/{}/{:#04x}: {}", s->expect->layer, s->expect->etype, s->expect->code,
                                       s->rule));
  const auto& r = find(cells, "rxe.rxe-rxe.rping");
  BOOST_CHECK_EQUAL(r.server_cmd, fmt::format("rping -s -a 192.0.2.3 -p {} -C {} -S {}", r.port, r.iterations, r.size));
  for (const auto& c : cells)
    for (const auto* text : {&c.why, &c.program, &c.server_cmd, &c.client_cmd})
      BOOST_CHECK_MESSAGE(text->find('{') == std::string::npos, c.id << ": unfilled " << *text);
}

namespace {

// A one-group table around `cell` (JSON object members), with `extra` at the top level.
std::string table_with(const std::string& cell, const std::string& extra = "") {
  return R"({"format": "rdmaconf lab cells 1", )" + extra +
         R"("findings": {"f1": {"title": "a finding", "text": "a known finding", "cases": ["iwarp.mpa.fpdu.pad"],
  "source": ["siw_qp_tx.c: the short-FPDU path"]}},
  "groups": [{"name": "g", "defaults": {"role": "initiator", "program": "rping -s", "scenario": "rping",
  "why": "RFC 5044 §7.1"}, "cells": [{"id": "siw.one", )" +
         cell + "}]}]}";
}

std::string swapped(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    lab::parse_cells(text, "cells.json");
  } catch (const lab::CellsError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_good_small_table_reads_with_defaults_and_overrides) {
  const auto t = lab::parse_cells(table_with(R"("size": 128, "finding": "f1", "siw": "crc-required.v1")"), "cells.json");
  BOOST_REQUIRE_EQUAL(t.cells.size(), 1u);
  const auto& c = t.cells.front();
  BOOST_CHECK_EQUAL(c.our_role, "initiator");
  BOOST_CHECK_EQUAL(c.size, 128u);
  BOOST_CHECK_EQUAL(c.iterations, 10u);
  BOOST_CHECK(c.siw.crc_required && c.siw.mpa_version == 1);
  BOOST_CHECK_EQUAL(c.known_finding, "a known finding");
  BOOST_CHECK(c.finding_cases == std::vector<std::string>{"iwarp.mpa.fpdu.pad"});
  BOOST_CHECK_EQUAL(c.finding, "f1");
  // The table keeps the finding whole, for the records of report findings.
  BOOST_REQUIRE(t.findings.count("f1"));
  const auto& f = t.findings.at("f1");
  BOOST_CHECK_EQUAL(f.title, "a finding");
  BOOST_REQUIRE_EQUAL(f.source.size(), 1u);  // (a citation written as text: a note, shown, never held)
  BOOST_CHECK(f.source[0].note() && f.source[0].what == "siw_qp_tx.c: the short-FPDU path");
  BOOST_CHECK_EQUAL(f.to_json()["name"], "f1");
}

// A broken table is refused with the file, the cell and the field named.
BOOST_AUTO_TEST_CASE(a_broken_table_gets_a_precise_error) {
  const std::pair<std::string, std::string> cases[] = {
      {"{\n  \"format\": \"rdmaconf lab cells 1\",\n  \"groups\": [,]\n}", "cells.json: not JSON at line 3, column 14"},
      {table_with(R"("sise": 128)"), "cells.json: groups[0].cells[0] (siw.one): unknown field \"sise\""},
      {table_with(R"("role": "observer")"), "(siw.one): role: expected initiator, responder or none, got \"observer\""},
      {table_with(R"("size": 0)"), "(siw.one): size: expected an integer in 1..67108864, got 0"},
      {table_with(R"("size": "64")"), "(siw.one): size: expected an integer"},
      {table_with(R"("finding": "f2")"), "(siw.one): finding: \"f2\" is not in findings"},
      {swapped(table_with(R"("size": 64)"), R"("title": "a finding", )", ""), "cells.json: findings.f1: title is missing"},
      {swapped(table_with(R"("size": 64)"), R"("source": [)", R"("source": [3, )"), "cells.json: findings.f1: source"},
      {table_with(R"("siw": "crc-off.v3")"), "(siw.one): siw: \"crc-off.v3\" is not a configuration"},
      {table_with(R"("why": "see {rfc}")"), "(siw.one): a template (program, why, server or client) does not fill"},
      {table_with(R"("why": "{terminate}")"), "does not fill"},  // rping has no Terminate to require
      {table_with(R"("why": "")"), "(siw.one): why: empty"},
      {table_with(R"("expect": "terminate")"), "(siw.one): expect: terminate is for our iWARP initiator's terminate-*"},
      {table_with(R"("scenario": "terminate-crc")"), "(siw.one): expect: scenario terminate-crc requires terminate, the cell says data"},
      {table_with(R"("role": "none")"), "(siw.one): server, client: a kernel-against-kernel cell (role none) has both"},
      {table_with(R"("connection": "UD")"), "(siw.one): connection: only cells of our RoCE engine against rxe"},
      {table_with(R"("fault": "fault-icrc")"), "(siw.one): fault: \"fault-icrc\" is not a fault-* scenario of our RoCE initiator"},
      {table_with(R"("id": "../x")"), "id: \"../x\" is not a folder name"},
      {table_with(R"("kernel": "irdma")"), "(siw.one): kernel: expected one of siw, rxe, got \"irdma\""},
      {table_with(R"("kernel": "rxe", "siw": "crc-off.v2")"), "(siw.one): siw: the configuration of another kernel peer, in a rxe cell"},
      {table_with(R"("kernel": "rxe", "expect": "close")"), "(siw.one): expect: close is for our iWARP initiator's terminate-*"},
      {table_with(R"("iterations": 10)", R"("not_run": {"terminate-nope": "?"}, )"), "cells.json: not_run.terminate-nope: not a scenario"},
      {swapped(table_with(R"("size": 64)"), "cells 1", "cells 2"), "cells.json: format: expected \"rdmaconf lab cells 1\", got \"rdmaconf lab cells 2\""},
      {swapped(table_with(R"("size": 64)"), R"("size": 64})", R"("size": 64}, {"id": "siw.one"})"),
       "cells.json: groups[0].cells[1] (siw.one): id: siw.one appears twice"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = error_of(text);
    BOOST_CHECK_MESSAGE(got.find(want) != std::string::npos, "expected \"" << want << "\", got \"" << got << "\"");
  }
  BOOST_CHECK_THROW(lab::read_cells("/nonexistent/cells.json"), lab::CellsError);
}

BOOST_AUTO_TEST_SUITE_END()

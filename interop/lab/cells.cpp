// The lab's cells: which configurations of siw and rxe meet which of our
// engine's options and scenarios, what the RFCs and IBTA require of each, and
// what siw is known to do instead (docs/lab.md). The orchestration, the
// guest's plan and the judging are in lab.cpp.
#include <algorithm>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "interop/ib/scenarios.hpp"
#include "interop/iwarp/scenarios.hpp"
#include "interop/lab/lab.hpp"
#include "interop/lab/network.hpp"

namespace rdmaconf::interop::lab {

namespace {

// Known siw findings, each in the spec's terms.

// siw's iwarp.h declares the Terminate Control word as little-endian bitfields.
constexpr const char* kSiwTermLayout =
    "siw lays out the Terminate Control field as little-endian bitfields (its iwarp.h): Layer and EType trade "
    "places and the M, D and R flags land in the reserved bits, where RFC 5040 §7.1 puts Layer in the four most "
    "significant bits and the flags right after the error code";

constexpr const char* kSiwPad =
    "siw sends the pad octets of short FPDUs unzeroed: its short-FPDU path (siw_qp_tx.c, payloads up to "
    "MAX_HDR_INLINE) rounds the length up to a multiple of 4 without clearing the octets it adds (0x0040 seen "
    "after a 2-octet Send), where RFC 5044 §4 has the pad sent as zeros";

constexpr const char* kSiwGso =
    "with try_gso siw sets flag 0x0800 (MPA_RR_FLAG_GSO_EXP, its own experiment) in its MPA Request or Reply, "
    "a bit RFC 5044 §7.1.1 reserves and has sent as zero";

}  // namespace

std::string SiwKnobs::label() const {
  std::string s = crc_required && crc_strict ? "crc-required-strict"
                  : crc_required             ? "crc-required"
                  : crc_strict               ? "crc-strict"
                                             : "crc-off";
  s += fmt::format(".v{}", mpa_version);
  if (peer_to_peer) s += ".p2p";
  if (try_gso) s += ".gso";
  return s;
}

std::string SiwKnobs::load_args() const {
  return fmt::format("{} {} {} {} {}", int(crc_required), int(crc_strict), mpa_version, int(peer_to_peer), int(try_gso));
}

nlohmann::json SiwKnobs::to_json() const {
  return {{"mpa_crc_required", crc_required},
          {"mpa_crc_strict", crc_strict},
          {"mpa_version", mpa_version},
          {"peer_to_peer", peer_to_peer},
          {"try_gso", try_gso}};
}

const char* expect_name(Expect e) {
  switch (e) {
    case Expect::data: return "data";
    case Expect::reject: return "reject";
    case Expect::terminate: return "terminate";
    case Expect::close: return "close";
  }
  return "?";
}

std::vector<Cell> siw_matrix(bool sweep, const std::vector<std::string>& scenarios) {
  std::vector<Cell> cells;
  std::vector<SiwKnobs> configs;
  for (unsigned crc = 0; crc < (sweep ? 3u : 1u); ++crc)
    for (unsigned mode = 0; mode < (sweep ? 3u : 1u); ++mode) {
      SiwKnobs k;
      k.crc_required = crc == 1;
      k.crc_strict = crc == 2;
      k.mpa_version = mode == 2 ? 1 : 2;
      k.peer_to_peer = mode == 1;
      configs.push_back(k);
    }
  const SiwKnobs base;
  SiwKnobs gso;  // siw's experimental GSO flag, a bit RFC 5044 reserves
  gso.try_gso = true;
  if (sweep) configs.push_back(gso);

  auto add = [&](const SiwKnobs& k, bool initiator, std::string label, std::vector<std::string> args) -> Cell& {
    Cell c;
    c.siw = k;
    c.our_role = initiator ? "initiator" : "responder";
    c.program = initiator ? "rping -s" : "rping -c";
    c.scenario = "rping";
    c.ours_label = std::move(label);
    c.our_args = std::move(args);
    c.id = fmt::format("siw.{}.{}.{}.{}", initiator ? "our-initiator" : "our-responder", c.scenario, k.label(),
                       c.ours_label);
    cells.push_back(std::move(c));
    return cells.back();
  };

  for (const auto& k : configs) {
    // Our engine with CRC off and on, in both roles. What siw's knobs do
    // (siw_cm.c): mpa_crc_required makes siw set C in its Request, and, as
    // initiator, refuse a Reply without C; as responder siw sets C only when
    // the Request did. mpa_crc_strict (without required) makes siw refuse any
    // peer that sets C. Refusing is a party's right; running without CRC when
    // either side set C is not.
    for (bool initiator : {true, false})
      for (bool crc : {false, true}) {
        Cell& c = add(k, initiator, crc ? "crc" : "no-crc", {crc ? "--crc" : "--no-crc"});
        const bool strict_refuses = crc && k.crc_strict && !k.crc_required;
        const bool required_refuses = !initiator && k.crc_required && !crc;
        if (strict_refuses || required_refuses) {
          c.expect = Expect::reject;
          c.why = fmt::format(
              "{}; refusing is its right ({}), using the connection without CRC would not be",
              strict_refuses ? "siw's mpa_crc_strict refuses a peer that sets C"
                             : "siw's mpa_crc_required refuses a Reply without C (CRC would be used anyway: siw's "
                               "Request set C)",
              initiator ? "RFC 5044 §7.1.1: a responder may reject a Request"
                        : "RFC 5044 §7.1.1: an initiator may close instead of going on");
        } else {
          c.expect_crc = crc || (!initiator && k.crc_required);
          c.why = fmt::format("{}{}; rping's exchange completes with its data intact", kCrcRule,
                              initiator && k.crc_required && !crc
                                  ? " (as responder siw sets C only when the Request did, whatever mpa_crc_required says)"
                                  : "");
        }
      }
  }

  // On siw's default configuration: the rest of our knobs, and the faults.
  Cell& mk = add(base, true, "markers", {"--no-crc", "--markers"});
  mk.expect = Expect::reject;
  mk.why = "RFC 5044 §7.1: M=1 asks the peer for markers; siw cannot send them, so a conforming siw rejects the Request";
  Cell& mr = add(base, false, "markers", {"--no-crc", "--markers"});
  mr.expect = Expect::reject;
  mr.why = "RFC 5044 §7.1: a Reply with M=1 asks the initiator for markers; siw cannot send them and must close";
  Cell& v1 = add(base, true, "mpa-rev1", {"--no-crc", "--mpa-rev", "1"});
  v1.why = "RFC 6581 §4: a revision 2 responder answers a revision 1 Request with revision 1; IRD/ORD then come "
           "from the application, and rping asks for one outstanding Read";
  v1.known_finding = "siw as responder to an MPA revision 1 Request leaves its IRD and ORD at 0, so rping -s cannot "
                     "issue the RDMA Read its exchange needs";
  for (const char* rtr : {"write", "read", "send"}) {
    Cell& p = add(base, true, fmt::format("p2p-{}", rtr), {"--no-crc", "--p2p", rtr});
    p.why = fmt::format("RFC 6581 §9.2: in peer-to-peer mode the responder echoes P2P and selects an RTR type the "
                        "initiator offered (here only {}), which the initiator sends first; then rping runs",
                        rtr);
    if (std::string_view(rtr) == "send") {
      p.known_finding = "siw answers an offer of the Send RTR alone by selecting the Write RTR, which was not offered "
                        "(siw_cm.c falls back to Write whenever Write and Read were not offered); when our initiator "
                        "then gives up with a Terminate, the guest kernel hits BUG() in iw_cm's close handler "
                        "(iwcm.c:964): a peer that leaves during the RTR exchange crashes a Linux iWARP responder";
      p.run_last = true;
      p.finding_cases = {"iwarp.mpa.v2.rtr_type"};
    }
  }
  // siw was seen to leave data that arrives right after its MPA Reply (before
  // it has attached the socket to the QP) unprocessed until the connection
  // closed. Our initiator sends its first FPDU the moment the Reply is in, so
  // every initiator cell tries it; this one tries it twenty times in a row.
  Cell& early = add(base, true, "early-data", {"--no-crc"});
  early.connections = 20;
  early.iterations = 1;
  early.why = "RFC 5044 §7.1.2: once the initiator has the Reply it may send FPDUs at once; the responder must "
              "process them (twenty connections, each sending its first FPDU right behind the Reply)";

  for (const auto& s : iwarp::scenarios()) {
    if (!s.expect && !s.close_only) continue;
    if (s.name == "terminate-marker" || s.name == "terminate-bounds" || s.name == "terminate-access" ||
        s.name == "terminate-read-bounds" || s.name == "terminate-ord" || s.name == "terminate-oversize" ||
        s.name == "terminate-msn-repeat")
      continue;  // they need a buffer the responder advertises (rping -s advertises none) or two posted receives (it posts one)
    Cell& f = add(base, true, "no-crc", {"--no-crc", "--peer-program", "rping"});
    f.scenario = std::string(s.name);
    f.id = fmt::format("siw.our-initiator.{}.{}", f.scenario, base.label());
    f.expect = s.close_only ? Expect::close : Expect::terminate;
    f.iterations = 1;
    if (s.close_only)
      f.why = std::string(s.rule);
    else
      f.why = fmt::format("Terminate {}/{}/{:#04x}: {}", s.expect->layer, s.expect->etype, s.expect->code, s.rule);
  }
  // Our engine against perftest started with -R (rdma_cm over iWARP; the
  // exchange is in docs/lab.md), as the client of its server and as the
  // server of its client.
  for (const char* prog : {"ib_write_bw", "ib_read_bw", "ib_send_bw"})
    for (const bool initiator : {true, false}) {
      Cell& c = add(base, initiator, "no-crc", {"--no-crc"});
      c.scenario = prog;
      c.program = initiator ? fmt::format("{} -R (server)", prog) : fmt::format("{} -R {} (client)", prog, kOurAddr);
      c.id = fmt::format("siw.our-{}.{}.{}.no-crc", initiator ? "initiator" : "responder", prog, base.label());
      c.size = 4096;
      c.iterations = 20;
      c.why = fmt::format("perftest's exchange over rdma_cm (Sends on a first connection), then 20 {}s of 4096 octets on "
                          "a second: every work request completes, perftest on siw finishes and the capture FAILs no case "
                          "(RFC 5040, 5041, 5044)",
                          std::string_view(prog) == "ib_write_bw"  ? "RDMA Write"
                          : std::string_view(prog) == "ib_read_bw" ? "RDMA Read"
                                                                   : "Send");
      c.known_finding = kSiwPad;  // perftest's 2-octet MTU message goes through siw's short-FPDU path
      c.finding_capture_only = true;
      c.finding_cases = {"iwarp.mpa.fpdu.pad"};
    }

  // siw against siw (no engine of ours): the reference traffic of the two
  // kernel peers, without and with CRC.
  for (const SiwKnobs& k : {SiwKnobs{}, SiwKnobs{true, false, 2, false, false}, gso}) {
    if (k.try_gso && !sweep) continue;
    for (const char* prog : {"rping", "ib_write_bw", "ib_read_bw", "ib_send_bw"}) {
      if (k.try_gso && std::string_view(prog) != "rping") continue;
      Cell c;
      c.siw = k;
      c.our_role = "none";
      c.scenario = prog;
      c.program = std::string(prog) == "rping" ? "rping -s / rping -c" : fmt::format("{} -R (server / client)", prog);
      c.ours_label = "siw-siw";
      c.id = fmt::format("siw.siw-siw.{}.{}", prog, k.label());
      c.why = fmt::format("two conforming peers: both programs succeed and the capture FAILs no case ({})", kCrcRule);
      if (c.scenario != "rping") {  // perftest's small Sends go through siw's short-FPDU path
        c.known_finding = kSiwPad;
        c.finding_capture_only = true;
        c.finding_cases = {"iwarp.mpa.fpdu.pad"};
      }
      cells.push_back(std::move(c));
    }
  }

  // rxe against rxe on the same veth pair (RoCEv2): rdma_cm connections (CM
  // MADs over QP1, then RC), perftest with rdma_cm and with its own TCP
  // parameter exchange (port 18515 style, on the cell's port).
  for (const char* prog :
       {"rping", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_write_bw-tcp", "ib_send_bw-tcp",
        "ib_atomic_bw-tcp", "ib_send_bw-ud-tcp"}) {
    Cell c;
    c.kernel = "rxe";
    c.our_role = "none";
    c.scenario = prog;
    c.ours_label = "rxe-rxe";
    c.id = fmt::format("rxe.rxe-rxe.{}", prog);
    c.why = "two conforming peers: both programs succeed and the capture FAILs no case (IBTA Vol.1 ch. 9, Annex A17)";
    c.program = std::string(prog) == "rping" ? "rping -s / rping -c" : fmt::format("{} (server / client)", prog);
    cells.push_back(std::move(c));
  }

  // Our RoCEv2 engine against rxe (rxe0 on veth0, our engine in namespace
  // eng behind veth1) through perftest's own TCP exchange, in both roles:
  // every program over RC, ib_write_bw and ib_send_bw over UC, ib_send_bw
  // over UD (one packet per message).
  const std::pair<const char*, const char*> runs[] = {
      {"ib_write_bw", "RC"}, {"ib_read_bw", "RC"}, {"ib_send_bw", "RC"}, {"ib_atomic_bw", "RC"},
      {"ib_write_bw", "UC"}, {"ib_send_bw", "UC"}, {"ib_send_bw", "UD"}};
  for (const auto& [prog, conn] : runs)
    for (const bool initiator : {true, false}) {
      Cell c;
      c.kernel = "rxe";
      c.our_role = initiator ? "initiator" : "responder";
      c.scenario = prog;
      c.connection = conn;
      const std::string_view p = prog, ct = conn;
      const std::string dashc = ct == "RC" ? "" : fmt::format(" -c {}", conn);
      c.program = initiator ? fmt::format("{}{} (server)", prog, dashc) : fmt::format("{}{} {} (client)", prog, dashc, kOurAddr);
      c.ours_label = ct == "RC" ? "roce" : fmt::format("roce-{}", ct == "UC" ? "uc" : "ud");
      c.id = fmt::format("rxe.rxe-our-{}.{}{}", c.our_role, prog, ct == "RC" ? "" : ct == "UC" ? ".uc" : ".ud");
      c.size = p == "ib_atomic_bw" ? 8 : ct == "UD" ? 1024 : 4096;  // a UD message fits one packet (MTU 1024)
      c.iterations = 20;
      c.why = fmt::format("perftest's TCP exchange, then {} {}s of {} octets over {}: {} and the capture FAILs no "
                          "case (IBTA Vol.1 ch. 9, Annex A17)",
                          c.iterations,
                          p == "ib_read_bw"     ? "RDMA READ"
                          : p == "ib_send_bw"   ? "SEND"
                          : p == "ib_atomic_bw" ? "ATOMIC Fetch and Add"
                                                : "RDMA WRITE",
                          c.size, conn,
                          ct == "RC" ? "every work request completes on both sides"
                                     : "every work request completes (over UC and UD, once sent), perftest's "
                                       "side finishes");
      cells.push_back(std::move(c));
    }

  // Faults we plant in perftest's traffic against rxe: a conforming responder
  // recovers (one sequence-error NAK for a gap; a silent drop for a wrong
  // ICRC, then the NAK for the hole it leaves) and every WRITE completes.
  for (const char* fault : {"fault-psn-gap", "fault-icrc"}) {
    const auto* info = ib::find_scenario(fault);
    Cell c;
    c.kernel = "rxe";
    c.our_role = "initiator";
    c.scenario = "ib_write_bw";
    c.fault = fault;
    c.program = "ib_write_bw (server)";
    c.ours_label = fault;
    c.id = fmt::format("rxe.rxe-our-initiator.ib_write_bw.{}", fault);
    c.size = 4096;
    c.iterations = 20;
    c.why = fmt::format("perftest's TCP exchange, then 20 RDMA WRITEs of 4096 octets with our fault planted: {}; every "
                        "WRITE completes",
                        info ? info->rule : std::string_view("?"));
    cells.push_back(std::move(c));
  }

  for (auto& c : cells)
    if (c.siw.try_gso) {
      c.known_finding = kSiwGso;
      c.finding_capture_only = true;
      c.finding_cases = {"iwarp.mpa.rr.reserved"};
    }

  // What siw was seen to do against these faults (see docs/lab.md).
  const std::map<std::string, std::string> term_findings = {
      {"terminate-crc", kSiwTermLayout},
      {"terminate-msn-skip", kSiwTermLayout},
      {"terminate-no-buffer", kSiwTermLayout},
      {"terminate-read-stag", kSiwTermLayout},
      {"terminate-invalidate", kSiwTermLayout},
      {"terminate-too-long", std::string("siw reports a Send longer than the posted buffer as DDP untagged 0x02 (no "
                                         "buffer) instead of 0x05 (message too long); and ") + kSiwTermLayout},
      {"terminate-stag", kSiwTermLayout},
  };
  for (auto& c : cells)
    if (const auto it = term_findings.find(c.scenario); it != term_findings.end()) {
      c.known_finding = it->second;
      c.finding_cases = {"iwarp.rdmap.terminate.code"};  // siw's Terminate as the checker reads it
    }

  if (!scenarios.empty())
    std::erase_if(cells, [&](const Cell& c) {
      return std::find(scenarios.begin(), scenarios.end(), c.scenario) == scenarios.end();
    });
  std::stable_partition(cells.begin(), cells.end(), [](const Cell& c) { return !c.run_last; });
  unsigned port = kFirstPort;
  for (auto& c : cells) {
    c.port = port++;
    if (c.our_role != "none") continue;
    if (c.kernel == "rxe") {
      const std::string prog = c.scenario.substr(0, c.scenario.find('-'));
      const bool tcp = c.scenario.ends_with("-tcp");
      if (prog == "rping") {
        c.server_cmd = fmt::format("rping -s -a {} -p {} -C {} -S {}", kSiwPairServer, c.port, c.iterations, c.size);
        c.client_cmd = fmt::format("rping -c -a {} -I {} -p {} -C {} -S {} -V", kSiwPairServer, kSiwPairClient, c.port,
                                   c.iterations, c.size);
      } else {
        // Atomics are 8 octets; a UD message fits one packet (rxe's MTU on veth is 1024).
        const bool ud = c.scenario.find("-ud") != std::string::npos;
        const std::string size = prog == "ib_atomic_bw" ? "" : ud ? " -c UD -s 1024" : " -s 4096";
        c.server_cmd = fmt::format("{}{} -F -d rxe1 -p {} -n 20{}", prog, tcp ? "" : " -R", c.port, size);
        c.client_cmd = fmt::format("{}{} -F -d rxe2 -p {} -n 20{} {}", prog, tcp ? "" : " -R", c.port, size,
                                   kSiwPairServer);
      }
      continue;
    }
    if (c.scenario == "rping") {
      c.server_cmd = fmt::format("rping -s -a {} -p {} -C {} -S {}", kSiwPairServer, c.port, c.iterations, c.size);
      c.client_cmd = fmt::format("rping -c -a {} -I {} -p {} -C {} -S {} -V", kSiwPairServer, kSiwPairClient, c.port,
                                 c.iterations, c.size);
    } else {
      c.server_cmd = fmt::format("{} -R -F -d siw1 -p {} -n 20 -s 4096", c.scenario, c.port);
      c.client_cmd = fmt::format("{} -R -F -d siw2 -p {} -n 20 -s 4096 {}", c.scenario, c.port, kSiwPairServer);
    }
  }
  return cells;
}

}  // namespace rdmaconf::interop::lab

// The lab's kernel peers (peers.hpp): siw (iWARP) and rxe (InfiniBand
// transport over RoCEv2).
#include "interop/lab/peers.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/ib/scenarios.hpp"
#include "interop/iwarp/scenarios.hpp"
#include "interop/lab/network.hpp"

namespace rdmaconf::interop::lab {

namespace {

// ---- siw: the kernel's iWARP, against our iWARP engine ----

const iwarp::ScenarioInfo* siw_fault(const Cell& c) {
  const auto* s = c.our_role != "none" ? iwarp::find_scenario(c.scenario) : nullptr;
  return s && (s->expect || s->close_only) ? s : nullptr;
}

// The fault a cell of our responder plants in its MPA Reply (--reply-fault).
const iwarp::ReplyFault* siw_reply_fault(const Cell& c) {
  if (c.our_role != "responder") return nullptr;
  const auto at = std::find(c.our_args.begin(), c.our_args.end(), "--reply-fault");
  return at != c.our_args.end() && at + 1 != c.our_args.end() ? iwarp::find_reply_fault(*(at + 1)) : nullptr;
}

std::string siw_configure(Cell& c, const std::string& config) {
  if (const auto k = SiwKnobs::parse(config.empty() ? "crc-off.v2" : config)) {
    c.siw = *k;
    return {};
  }
  return fmt::format("siw: \"{}\" is not a configuration like crc-off.v2 or crc-required.v1.p2p", config);
}

std::string siw_rules(const Cell& c, std::string_view expect) {
  if (c.connection != "RC") return "connection: only cells of our RoCE engine against rxe choose UC or UD";
  if (!c.fault.empty()) return fmt::format("fault: \"{}\" is not a fault-* scenario of our RoCE initiator", c.fault);
  // Our iWARP fault scenarios carry the reaction they require; our
  // responder plants only those it can put in rping -c's buffers.
  if (const auto* s = siw_fault(c); s && c.our_role == "responder") {
    const auto planted = iwarp::rping_faults();
    if (std::find(planted.begin(), planted.end(), c.scenario) == planted.end())
      return fmt::format("scenario: our responder plants {} in rping's buffers, not {}", fmt::join(planted, ", "), c.scenario);
  }
  if (const auto* s = siw_fault(c)) {
    const Expect want = s->expect ? Expect::terminate : Expect::close;
    if (c.expect != want) return fmt::format("expect: scenario {} requires {}, the cell says {}", c.scenario, expect_name(want), expect);
  } else if (siw_reply_fault(c)) {
    if (c.expect != Expect::close) return fmt::format("expect: a Reply fault requires close, the cell says {}", expect);
  } else if (c.expect == Expect::terminate || c.expect == Expect::close) {
    return fmt::format("expect: {} is for our iWARP initiator's terminate-* scenarios and our responder's Reply faults", expect);
  }
  return {};
}

bool siw_knows(std::string_view scenario) { return iwarp::find_scenario(scenario) != nullptr; }

std::optional<std::string> siw_rule(const Cell& c) {
  if (const auto* f = siw_reply_fault(c)) return std::string(f->rule);
  const auto* s = iwarp::find_scenario(c.scenario);
  return s && !s->rule.empty() ? std::optional<std::string>(s->rule) : std::nullopt;
}

std::optional<std::string> siw_terminate(const Cell& c) {
  const auto* s = iwarp::find_scenario(c.scenario);
  if (!s || !s->expect) return std::nullopt;
  return s->expect->text();
}

std::string siw_provoked(const Cell& c) {
  if (const auto* f = siw_reply_fault(c)) return fmt::format("reply-fault-{}", f->name);
  return c.scenario;
}

std::vector<std::string> siw_planted_failures(const Cell& c) {
  if (const auto* f = siw_reply_fault(c)) return {f->failing_cases.begin(), f->failing_cases.end()};
  const auto* s = iwarp::find_scenario(c.scenario);
  if (!s) return {};
  return {s->failing_cases.begin(), s->failing_cases.end()};
}

bool siw_framing_lost(const Cell& c) {
  const auto* s = iwarp::find_scenario(c.scenario);
  return s && (s->expect || s->close_only) && s->framing_lost;
}

std::optional<std::pair<unsigned, unsigned>> siw_required_terminate(const Cell& c) {
  const auto* s = iwarp::find_scenario(c.scenario);
  if (!s || !s->expect) return std::nullopt;
  return std::pair{s->expect->layer, s->expect->etype};
}

std::optional<std::string> no_port_counter(const Cell&) { return std::nullopt; }

std::string siw_load(const Cell& c) { return fmt::format("siw_load {}", c.siw.load_args()); }

void siw_plan(const Cell& c, std::string& plan) {
  std::string ours;
  for (const auto& a : c.our_args) {
    ours += ' ';  // two steps: GCC 12 at -O3 reports a false -Wrestrict on " " + std::string
    ours += shell_quote(a);
  }
  if (c.our_role == "none") {
    plan += fmt::format("cell {} veth2\n", c.id);
    plan += fmt::format("server srv dut {}\n", c.server_cmd);
    plan += fmt::format("wait_listen dut {}\n", c.port);
    plan += fmt::format("client peer dut {}\n", c.client_cmd);
    plan += fmt::format("finish {}\n", kGraceS);
    return;
  }
  plan += fmt::format("cell {}\n", c.id);
  if (c.our_role == "initiator" && c.scenario.starts_with("ib_")) {
    plan += fmt::format("server peer dut {} -R -F -d $DUT_DEV -p {} -n {} -s {}\n", c.scenario, c.port, c.iterations, c.size);
    plan += fmt::format("wait_listen dut {}\n", c.port);
    plan += fmt::format(
        "client our our $ENGINE live iwarp --peer $DUT_ADDR:{} --peer-program {} --size {} --iterations {} --timeout {}{} "
        "--json \"$DIR/our.json\"\n",
        c.port, c.scenario, c.size, c.iterations, kStepTimeoutMs, ours);
    plan += fmt::format("finish {}\n", kGraceS);
  } else if (c.scenario.starts_with("ib_")) {
    plan += fmt::format(
        "server our our $ENGINE serve iwarp --perftest --peer-program {} --listen $OUR_ADDR:{} --connections 1 --max-size {} "
        "--timeout {}{}\n",
        c.scenario, c.port, c.size, kStepTimeoutMs, ours);
    plan += fmt::format("wait_listen our {}\n", c.port);
    plan += fmt::format("client peer dut {} -R -F -d $DUT_DEV -p {} -n {} -s {} $OUR_ADDR\n", c.scenario, c.port,
                        c.iterations, c.size);
    plan += fmt::format("finish {}\n", kGraceS);
  } else if (c.our_role == "initiator") {
    for (unsigned k = 0; k < c.connections; ++k) {
      const std::string n = connection_suffix(k);
      const unsigned port = c.port + 1000 * k;
      plan += fmt::format("server peer{} dut rping -s -a $DUT_ADDR -p {} -C {} -S {}\n", n, port, c.iterations, c.size);
      plan += fmt::format("wait_listen dut {}\n", port);
      plan += fmt::format(
          "client our{} our $ENGINE live iwarp --peer $DUT_ADDR:{} --scenario {} --size {} --iterations {} --timeout {}{} "
          "--json \"$DIR/our{}.json\"\n",
          n, port, c.scenario, c.size, c.iterations, kStepTimeoutMs, ours, n);
    }
    // rping -s waits for another client when a connection failed: give it a moment, no more.
    plan += fmt::format("finish {}\n", c.expect == Expect::data ? kGraceS : 3);
  } else {
    // A terminate-* scenario on our responder's side: its fault, planted in
    // the buffers rping -c advertises.
    const std::string fault = siw_fault(c) ? " --rping-fault " + c.scenario : "";
    plan += fmt::format("server our our $ENGINE serve iwarp --listen $OUR_ADDR:{} --connections 1 --timeout {}{}{}\n",
                        c.port, kStepTimeoutMs, fault, ours);
    plan += fmt::format("wait_listen our {}\n", c.port);
    plan += fmt::format("client peer dut rping -c -a $OUR_ADDR -p {} -C {} -S {} -V\n", c.port, c.iterations, c.size);
    plan += fmt::format("finish {}\n", c.expect == Expect::data ? kGraceS : 3);
  }
}

nlohmann::json siw_configuration(const Cell& c) {
  return {{"siw", c.siw.to_json()}, {"ours", c.our_args}, {"label", c.siw.label() + "/" + c.ours_label}};
}

std::pair<std::string, nlohmann::json> siw_manifest_setup(const Cell& c) { return {"siw_module_parameters", c.siw.to_json()}; }


// A device profile's list of settings (knobs.KEY): every element one of
// ALLOWED, at least one; without a configure command exactly one (the
// device's setting). Missing: DEFAULT when there is one.
std::string knob_list(const nlohmann::json& k, const char* key, const std::vector<nlohmann::json>& allowed, bool configurable,
                      const std::optional<nlohmann::json>& fallback = std::nullopt) {
  if (!k.contains(key)) return fallback ? std::string() : fmt::format("{}: missing (a list of {})", key, nlohmann::json(allowed).dump());
  const auto& v = k[key];
  if (!v.is_array() || v.empty()) return fmt::format("{}: must be a non-empty list of {}", key, nlohmann::json(allowed).dump());
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::find(allowed.begin(), allowed.end(), v[i]) == allowed.end())
      return fmt::format("{}[{}]: {} is not one of {}", key, i, v[i].dump(), nlohmann::json(allowed).dump());
  if (!configurable && v.size() != 1)
    return fmt::format("{}: {} settings listed but the profile has no configure command to choose one", key, v.size());
  return {};
}

bool knob_has(const nlohmann::json& k, const char* key, const nlohmann::json& value, const nlohmann::json& fallback) {
  const auto& v = k.contains(key) ? k[key] : fallback;
  return std::find(v.begin(), v.end(), value) != v.end();
}

std::string knob_bool(const nlohmann::json& k, const char* key, bool required) {
  if (!k.contains(key)) return required ? fmt::format("{}: missing (true or false)", key) : std::string();
  return k[key].is_boolean() ? std::string() : fmt::format("{}: must be true or false, not {}", key, k[key].dump());
}

std::string unknown_knob(const nlohmann::json& k, std::initializer_list<const char*> known) {
  for (const auto& item : k.items()) {
    const std::string& key = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* n) { return key == n; }))
      return fmt::format("{}: not a knob of this family ({})", key, fmt::join(known, ", "));
  }
  return {};
}

// The CRC setting of siw's knobs as a profile names it ("off", "required", "strict", "required-strict").
std::string siw_crc_setting(const SiwKnobs& k) {
  const std::string label = k.label();
  return label.substr(4, label.find('.') - 4);
}

std::string siw_check_knobs(const nlohmann::json& k, bool configurable) {
  for (auto bad : {unknown_knob(k, {"crc", "mpa_revisions", "peer_to_peer", "gso", "markers", "rtr"}),
                   knob_list(k, "crc", {"off", "required", "strict", "required-strict"}, configurable),
                   knob_list(k, "mpa_revisions", {1, 2}, configurable),
                   knob_list(k, "peer_to_peer", {false, true}, configurable),
                   knob_list(k, "gso", {false, true}, configurable, nlohmann::json::array({false})),
                   knob_bool(k, "markers", true),
                   knob_list(k, "rtr", {"write", "read", "send"}, true, nlohmann::json::array())})
    if (!bad.empty()) return bad;
  return {};
}

std::string siw_device_refuses(const Cell& c, const nlohmann::json& k) {
  const std::string crc = siw_crc_setting(c.siw);
  if (!knob_has(k, "crc", crc, {}))
    return fmt::format("the cell needs the device's CRC setting {}; the profile has {} (knobs.crc)", crc, k["crc"].dump());
  if (!knob_has(k, "mpa_revisions", c.siw.mpa_version, {}))
    return fmt::format("the cell needs MPA revision {}; the profile has {} (knobs.mpa_revisions)", c.siw.mpa_version,
                       k["mpa_revisions"].dump());
  if (!knob_has(k, "peer_to_peer", c.siw.peer_to_peer, {}))
    return fmt::format("the cell needs peer-to-peer mode {}; the profile has {} (knobs.peer_to_peer)",
                       c.siw.peer_to_peer ? "on" : "off", k["peer_to_peer"].dump());
  if (!knob_has(k, "gso", c.siw.try_gso, nlohmann::json::array({false})))
    return fmt::format("the cell needs siw's GSO experiment {}; the profile has none (knobs.gso)", c.siw.try_gso ? "on" : "off");
  // Our markers option: the cell's expectation is that of a device that
  // cannot send markers (it must refuse a peer that asks for them).
  if (std::find(c.our_args.begin(), c.our_args.end(), "--markers") != c.our_args.end() && k.value("markers", false))
    return "the cell requires the refusal of a device that cannot send markers; this one can (knobs.markers)";
  return {};
}

std::string replace_all(std::string s, std::string_view what, std::string_view with) {
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) s.replace(at, what.size(), with);
  return s;
}

std::string siw_fill_configure(const Cell& c, std::string command) {
  for (const auto& [what, value] : {std::pair{"{crc_required}", std::to_string(int(c.siw.crc_required))},
                                    std::pair{"{crc_strict}", std::to_string(int(c.siw.crc_strict))},
                                    std::pair{"{crc_enabled}", std::to_string(int(c.siw.crc_required))},
                                    std::pair{"{mpa_version}", std::to_string(c.siw.mpa_version)},
                                    std::pair{"{peer_to_peer}", std::to_string(int(c.siw.peer_to_peer))},
                                    std::pair{"{try_gso}", std::to_string(int(c.siw.try_gso))},
                                    std::pair{"{crc}", siw_crc_setting(c.siw)}})
    command = replace_all(std::move(command), what, value);
  return command;
}

// ---- rxe: the kernel's RoCEv2, against our InfiniBand engine ----

std::string rxe_configure(Cell&, const std::string&) { return {}; }

engine::ib::QpType qp_type_of(const Cell& c) {
  return c.connection == "UC" ? engine::ib::QpType::uc : c.connection == "UD" ? engine::ib::QpType::ud : engine::ib::QpType::rc;
}

std::string rxe_rules(const Cell& c, std::string_view expect) {
  if (c.connection != "RC" && c.our_role == "none") return "connection: only cells of our RoCE engine against rxe choose UC or UD";
  if (!c.fault.empty() && !(c.fault.starts_with("fault-") && ib::find_scenario(c.fault) && c.our_role == "initiator"))
    return fmt::format("fault: \"{}\" is not a fault-* scenario of our RoCE initiator", c.fault);
  if (!c.fault.empty())
    if (auto bad = ib::perftest_fault_problem(c.fault, c.scenario, qp_type_of(c), c.size, 1024); !bad.empty())
      return "fault: " + bad;
  if (c.expect == Expect::terminate || c.expect == Expect::close)
    return fmt::format("expect: {} is for our iWARP initiator's terminate-* scenarios", expect);
  return {};
}

bool rxe_knows(std::string_view scenario) { return ib::find_scenario(scenario) != nullptr; }

std::optional<std::string> rxe_rule(const Cell& c) {
  const auto* f = c.fault.empty() ? nullptr : ib::find_scenario(c.fault);
  return f ? std::optional<std::string>(f->rule) : std::nullopt;
}

std::optional<std::string> no_terminate(const Cell&) { return std::nullopt; }

// A perftest data cell runs the operations of our own data scenario of the
// same verb and transport against rxe (every work request's completion
// checked, Fetch and Add originals consecutive; perftest's buffer holds
// nothing to compare), so the ledger counts it as that scenario.
std::string rxe_provoked(const Cell& c) {
  if (!c.fault.empty()) return c.fault;
  if (c.our_role == "none") return c.scenario;
  static const std::pair<std::string_view, std::string_view> kSame[] = {
      {"ib_write_bw/RC", "write"}, {"ib_read_bw/RC", "read"}, {"ib_send_bw/RC", "send"},
      {"ib_atomic_bw/RC", "atomic"}, {"ib_write_bw/UC", "uc-write"}, {"ib_send_bw/UD", "ud-send"}};
  const std::string key = c.scenario + "/" + c.connection;
  for (const auto& [cell, scenario] : kSame)
    if (cell == key) return std::string(scenario);
  return c.scenario;
}

std::vector<std::string> rxe_planted_failures(const Cell& c) {
  const auto* f = ib::find_scenario(c.fault);
  if (!f) return {};
  return {f->failing_cases.begin(), f->failing_cases.end()};
}

bool rxe_framing_lost(const Cell&) { return false; }

std::optional<std::pair<unsigned, unsigned>> rxe_required_terminate(const Cell&) { return std::nullopt; }

std::optional<std::string> rxe_port_counter(const Cell& c) {
  const auto* f = c.fault.empty() ? nullptr : ib::find_perftest_fault(c.fault);
  return f && !f->port_counter.empty() ? std::optional<std::string>(f->port_counter) : std::nullopt;
}


std::string rxe_check_knobs(const nlohmann::json& k, bool configurable) {
  for (auto bad : {unknown_knob(k, {"transports", "atomics", "port_counters", "roce_mtu"}),
                   knob_list(k, "transports", {"RC", "UC", "UD"}, true), knob_bool(k, "atomics", true),
                   knob_bool(k, "port_counters", false)})
    if (!bad.empty()) return bad;
  (void)configurable;
  static const std::vector<std::uint64_t> kMtus = {256, 512, 1024, 2048, 4096};
  if (!k.contains("roce_mtu") || !k["roce_mtu"].is_number_unsigned() ||
      std::find(kMtus.begin(), kMtus.end(), k["roce_mtu"].get<std::uint64_t>()) == kMtus.end())
    return "roce_mtu: missing or not one of 256, 512, 1024, 2048, 4096 (the device's active path MTU)";
  return {};
}

std::string rxe_device_refuses(const Cell& c, const nlohmann::json& k) {
  if (!knob_has(k, "transports", c.connection, {}))
    return fmt::format("the cell runs over {}; the profile's transports are {} (knobs.transports)", c.connection,
                       k["transports"].dump());
  if ((c.scenario == "ib_atomic_bw" || c.fault.find("atomic") != std::string::npos) && !k.value("atomics", false))
    return "the cell runs Atomics; the device has none (knobs.atomics)";
  if (const auto counter = rxe_port_counter(c); counter && !k.value("port_counters", false))
    return fmt::format("the cell reads the port counter {}, which the device does not report (knobs.port_counters)", *counter);
  if (!c.fault.empty())
    if (auto bad = ib::perftest_fault_problem(c.fault, c.scenario, qp_type_of(c), c.size, k.value("roce_mtu", 1024u)); !bad.empty())
      return fmt::format("at the device's MTU of {}: {}", k.value("roce_mtu", 1024u), bad);
  return {};
}

std::string rxe_fill_configure(const Cell&, std::string command) { return command; }

std::string rxe_load(const Cell&) { return "rxe_load"; }

void rxe_plan(const Cell& c, std::string& plan) {
  // perftest's -c and -s; ib_atomic_bw's operations are always 8 octets.
  const std::string psize = (c.connection == "RC" ? "" : " -c " + c.connection) +
                            (c.scenario == "ib_atomic_bw" ? "" : fmt::format(" -s {}", c.size));
  const std::string our_conn = c.connection == "RC" ? "" : " --connection-type " + c.connection;
  if (c.our_role == "initiator") {
    plan += fmt::format("cell {} veth0 udp\n", c.id);
    plan += fmt::format("server peer dut {} -F -d $DUT_DEV $DUT_GID_OPT -p {} -n {}{}\n", c.scenario, c.port, c.iterations, psize);
    plan += fmt::format("wait_listen dut {}\n", c.port);
    const bool counters = rxe_port_counter(c).has_value();
    if (counters) plan += "port_counters before $DUT_DEV\n";
    plan += fmt::format(
        "client our our $ENGINE live ib --peer-program {} --peer $DUT_ADDR:{} --udp $OUR_ADDR:4791 --size {} "
        "--iterations {} --raw-receive --timeout {}{}{} --json \"$DIR/our.json\"\n",
        c.scenario, c.port, c.size, c.iterations, kStepTimeoutMs,
        c.fault.empty() ? "" : " --fault " + c.fault, our_conn);
    if (counters) plan += "port_counters after $DUT_DEV\n";
    plan += fmt::format("finish {}\n", kGraceS);
    return;
  }
  if (c.our_role == "responder") {
    plan += fmt::format("cell {} veth0 udp\n", c.id);
    plan += fmt::format(
        "server our our $ENGINE serve ib --perftest --peer-program {} --listen $OUR_ADDR:{} --udp $OUR_ADDR:4791 "
        "--connections 1 --raw-receive --timeout {}{}\n",
        c.scenario, c.port, kStepTimeoutMs, our_conn);
    plan += fmt::format("wait_listen our {}\n", c.port);
    plan += fmt::format("client peer dut {} -F -d $DUT_DEV $DUT_GID_OPT -p {} -n {}{} $OUR_ADDR\n", c.scenario, c.port,
                        c.iterations, psize);
    plan += fmt::format("finish {}\n", kGraceS);
    return;
  }
  plan += fmt::format("cell {} veth2 udp\n", c.id);
  plan += fmt::format("server srv dut {}\n", c.server_cmd);
  plan += fmt::format("wait_{} dut {}\n", c.scenario.ends_with("-tcp") ? "listen" : "rdma", c.port);
  plan += fmt::format("client peer dut {}\n", c.client_cmd);
  plan += fmt::format("finish {}\n", kGraceS);
  return;
}

nlohmann::json rxe_configuration(const Cell& c) {
  return {{"rxe", {{"connection", c.connection}}}, {"ours", c.our_args}, {"label", c.connection + "/" + c.ours_label}};
}

std::pair<std::string, nlohmann::json> rxe_manifest_setup(const Cell& c) {
  return {"rxe", c.our_role == "none"
                     ? nlohmann::json("rdma_rxe of the kernel: rxe1 on veth2 (192.0.2.3), rxe2 on veth3 (192.0.2.4)")
                     : nlohmann::json(fmt::format("rdma_rxe of the kernel: rxe0 on veth0 ({}); our engine in namespace "
                                                  "eng on veth1 ({})",
                                                  kSiwAddr, kOurAddr))};
}

}  // namespace

const std::vector<KernelPeer>& kernel_peers() {
  static const std::vector<KernelPeer> peers = {
      {"siw", "iwarp", "siw", siw_configure, siw_rules, siw_knows, siw_rule, siw_terminate, siw_provoked, siw_planted_failures, siw_framing_lost,
       siw_required_terminate, no_port_counter, siw_load, siw_plan, siw_configuration, siw_manifest_setup,
       siw_check_knobs, siw_device_refuses, siw_fill_configure},
      {"rxe", "ib", "", rxe_configure, rxe_rules, rxe_knows, rxe_rule, no_terminate, rxe_provoked, rxe_planted_failures, rxe_framing_lost,
       rxe_required_terminate, rxe_port_counter, rxe_load, rxe_plan, rxe_configuration, rxe_manifest_setup,
       rxe_check_knobs, rxe_device_refuses, rxe_fill_configure},
  };
  return peers;
}

const KernelPeer* find_peer(std::string_view name) {
  for (const auto& p : kernel_peers())
    if (p.name == name) return &p;
  return nullptr;
}

const KernelPeer* find_peer_by_family(std::string_view family) {
  for (const auto& p : kernel_peers())
    if (p.family == family) return &p;
  return nullptr;
}

std::string family_names() {
  std::string s;
  for (const auto& p : kernel_peers()) s += (s.empty() ? "" : ", ") + std::string(p.family);
  return s;
}

bool known_scenario(std::string_view scenario) {
  for (const auto& p : kernel_peers())
    if (p.knows_scenario(scenario)) return true;
  return false;
}

std::string peer_names() {
  std::string s;
  for (const auto& p : kernel_peers()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

}  // namespace rdmaconf::interop::lab

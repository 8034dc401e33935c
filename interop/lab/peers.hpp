#pragma once
// The lab's kernel peers: each Linux driver the guest can load (siw, rxe,
// and those to come), the family whose traffic it speaks, and everything
// the lab does differently for it: the configuration a cell gives it, the
// rules its cells must keep, the guest plan of a cell, the faults our engine
// plants against it and their required reactions, and how its set-up is
// described in reports and manifests. This table is the only place in the
// lab that names a peer or a family; cells.cpp and lab.cpp ask it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "interop/lab/lab.hpp"

namespace rdmaconf::interop::lab {

struct KernelPeer {
  std::string_view name;    // as cells.json's "kernel" names it
  std::string_view family;  // the family whose cases judge its captures
  // The cells.json field that configures it (empty: none), and that field's
  // text (empty when not given) taken into the cell; a message naming the
  // field when it is wrong.
  std::string_view config_field;
  std::string (*configure)(Cell& c, const std::string& config);
  // A message when the cell's fault, connection type or expected reaction
  // does not fit this peer and our engine's scenarios; empty when they do.
  std::string (*rules)(const Cell& c, std::string_view expect_text);
  // Whether our engine's live suite for this peer has the scenario (for the
  // table's not_run list).
  bool (*knows_scenario)(std::string_view scenario);
  // The catalog rule the cell's scenario or fault breaks, and the
  // Terminate it requires ("layer/etype/code"), for the cell's templates.
  std::optional<std::string> (*rule)(const Cell& c);
  std::optional<std::string> (*terminate)(const Cell& c);
  // The live scenario the cell provokes, as the ledger's "provoked" lists
  // name it (a scenario, a fault, or our responder's "reply-fault-NAME").
  std::string (*provoked)(const Cell& c);
  // The checker cases the cell's planted fault must FAIL, and whether the
  // fault breaks framing (what follows on that direction may FAIL too).
  std::vector<std::string> (*planted_failures)(const Cell& c);
  bool (*framing_lost)(const Cell& c);
  // The Terminate the cell's scenario requires as {layer, etype}, to name a
  // reply whose nibbles are exchanged; nothing when none is required.
  std::optional<std::pair<unsigned, unsigned>> (*required_terminate)(const Cell& c);
  // The port counter of the peer's device (as `ibv_devinfo -v` names it)
  // that the cell's planted fault must raise by exactly one, read before and
  // after our engine's run; nothing when the cell reads none.
  std::optional<std::string> (*port_counter)(const Cell& c);
  // The guest line that loads the peer in the cell's configuration (the plan
  // loads again only when it changes), and the cell's own lines.
  std::string (*load)(const Cell& c);
  void (*plan)(const Cell& c, std::string& plan);
  // The cell's configuration in the lab report ({"label": ...} and the
  // peer's own), and the set-up line of an exported capture's manifest.
  nlohmann::json (*configuration)(const Cell& c);
  std::pair<std::string, nlohmann::json> (*manifest_setup)(const Cell& c);
  // Device profiles of the family (device.hpp): a check of the profile's
  // knobs ("FIELD: what is wrong", "" when right; without a configure
  // command every setting a list names must be the device's one), why a
  // device with those knobs cannot run a cell ("" when it can), and the
  // profile's configure command filled in for a cell.
  std::string (*check_knobs)(const nlohmann::json& knobs, bool configurable);
  std::string (*device_refuses)(const Cell& c, const nlohmann::json& knobs);
  std::string (*fill_configure)(const Cell& c, std::string command);
};

const std::vector<KernelPeer>& kernel_peers();
// By name; null when the table has none.
const KernelPeer* find_peer(std::string_view name);
// The peer whose cells a device of this family runs; null when none.
const KernelPeer* find_peer_by_family(std::string_view family);
// The families the peers speak, "iwarp, ib" (for messages).
std::string family_names();
// Whether any peer's scenarios include this one.
bool known_scenario(std::string_view scenario);
// The peers' names, "siw, rxe" (for messages and --help).
std::string peer_names();

}  // namespace rdmaconf::interop::lab

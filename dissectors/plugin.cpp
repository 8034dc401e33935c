// The rdmaconf Wireshark plugin: a postdissector that hands every frame of
// Wireshark's first, sequential pass to the checker `rdmaconf check` runs,
// and shows on each frame the units our decoders found there and the
// verdicts whose evidence names it, as filterable fields and expert info.
//
// Why a postdissector: the checker reads the frame as captured (its own
// link, IP and TCP decoding and reassembly), so it needs every frame once,
// in order, whatever Wireshark's dissectors made of it; and being called
// last, it leaves Wireshark's own iWARP and InfiniBand dissectors intact for
// a user to compare.
//
// Every header field is registered from the FieldDef tables of the
// families' headers (`rdmaconf.<field abbrev>`, as the JSON reports name
// them) and every unit value from the families' listing declarations
// (`rdmaconf.<unit>.<key>`); every case gets its expert entries from the
// case catalog. Nothing here names a family.
#define WS_BUILD_DLL
#include <arpa/inet.h>
#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

// Wireshark's headers: 4.0's need an extern "C" block around them; from 4.2
// on they carry their own and hold C++ templates as well (wsutil's
// jtckdint.h), which a C block refuses.
#include <ws_version.h>
#if WIRESHARK_VERSION_MAJOR > 4 || (WIRESHARK_VERSION_MAJOR == 4 && WIRESHARK_VERSION_MINOR >= 2)
#include "dissectors/wireshark_headers.h"
#include <wsutil/plugins.h>
#else
extern "C" {
#include "dissectors/wireshark_headers.h"
}
#endif

#include "conformance/family.hpp"
#include "dissectors/capture_checks.hpp"
#include "protocols/core/header.hpp"

#ifndef RDMACONF_VERSION
#define RDMACONF_VERSION "0.0.0"
#endif

extern "C" {
WS_DLL_PUBLIC_DEF extern const char plugin_version[];
WS_DLL_PUBLIC_DEF extern const int plugin_want_major;
WS_DLL_PUBLIC_DEF extern const int plugin_want_minor;
WS_DLL_PUBLIC_DEF void plugin_register(void);
const char plugin_version[] = RDMACONF_VERSION;
const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
const int plugin_want_minor = WIRESHARK_VERSION_MINOR;
#if WIRESHARK_VERSION_MAJOR > 4 || (WIRESHARK_VERSION_MAJOR == 4 && WIRESHARK_VERSION_MINOR >= 2)
// 4.2 asks a plugin what it is; 4.0 has no such export.
WS_DLL_PUBLIC_DEF uint32_t plugin_describe(void);
uint32_t plugin_describe(void) { return WS_PLUGIN_DESC_DISSECTOR; }
#endif
}

namespace {

using namespace rdmaconf;
using conformance::Level;
using conformance::Verdict;
using protocols::Display;
using protocols::FieldDef;
using protocols::HeaderDef;

int proto_rdmaconf = -1;
dissector_handle_t handle;
// The type a boolean preference is held in: gboolean up to 4.2, bool from
// 4.4 on, read from prefs_register_bool_preference's last parameter.
template <class>
struct PointeeOfLast;
template <class R, class... A>
struct PointeeOfLast<R(A...)> {
  using type = std::remove_pointer_t<std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>>;
};
using PrefBool = PointeeOfLast<decltype(prefs_register_bool_preference)>::type;
PrefBool pref_strict = true;
// The families' own options (`rdmaconf check --roce-port` ...) as text
// preferences, by option; empty: the family's default.
struct OptionPref {
  const conformance::OptionSpec* spec;
  const char* value = "";
};
std::deque<conformance::OptionSpec> option_specs;
std::deque<OptionPref> option_prefs;

// ---- Registered fields -------------------------------------------------

struct Field {
  int id = -1;
  ftenum type = FT_NONE;
};

// Everything registration hands Wireshark must live as long as the process.
struct Registered {
  std::deque<std::string> strings;
  std::deque<Field> fields;
  std::deque<std::vector<value_string>> vals;
  std::deque<std::vector<val64_string>> vals64;
  std::vector<hf_register_info> hf;
  std::map<std::string, Field*, std::less<>> by_abbrev;
  std::deque<int> etts;
  std::vector<gint*> ett_ptrs;
  std::deque<expert_field> experts;
  std::vector<ei_register_info> ei;
  // Per case (by id): its FAIL and INCONCLUSIVE expert entries.
  std::map<std::string_view, std::pair<expert_field*, expert_field*>, std::less<>> case_experts;
  // The header tables, for finding which a unit's object holds.
  std::vector<const HeaderDef*> headers;

  const char* keep(std::string s) { return strings.emplace_back(std::move(s)).c_str(); }
  gint* ett() {
    ett_ptrs.push_back(&etts.emplace_back(-1));
    return ett_ptrs.back();
  }
  const Field* find(std::string_view abbrev) const {
    auto it = by_abbrev.find(abbrev);
    return it == by_abbrev.end() ? nullptr : it->second;
  }
  // Adds a field unless one of the same name is there; the same name must
  // mean the same type (DDP's tagged and untagged tables share their first word).
  Field* add(std::string abbrev, std::string_view name, ftenum type, int display, const void* strs, std::string_view blurb) {
    if (auto it = by_abbrev.find(abbrev); it != by_abbrev.end()) {
      if (it->second->type != type)
        throw std::logic_error(fmt::format("field {} is declared with two types", abbrev));
      return it->second;
    }
    Field* f = &fields.emplace_back();
    f->type = type;
    const char* a = keep(abbrev);
    hf.push_back(hf_register_info{&f->id,
                                  {keep(std::string(name)), a, type, display, strs, 0, blurb.empty() ? nullptr : keep(std::string(blurb)),
                                   HFILL}});
    by_abbrev.emplace(std::string(a), f);
    return f;
  }
  // A table row as a field: its width picks the integer type, its display the base.
  void add_table_field(std::string abbrev, const FieldDef& d) {
    if (protocols::json_as_text(d)) {
      add(std::move(abbrev), d.name, FT_STRING, BASE_NONE, nullptr, d.ref);
      return;
    }
    if (d.display == Display::flag) {
      add(std::move(abbrev), d.name, FT_BOOLEAN, BASE_NONE, nullptr, d.ref);
      return;
    }
    const ftenum type = d.bit_width <= 8 ? FT_UINT8 : d.bit_width <= 16 ? FT_UINT16 : d.bit_width <= 24 ? FT_UINT24
                        : d.bit_width <= 32 ? FT_UINT32 : FT_UINT64;
    int base = d.display == Display::hex || d.display == Display::bytes ? BASE_HEX : BASE_DEC;
    const void* strs = nullptr;
    if (!d.values.empty()) {
      if (type == FT_UINT64) {
        auto& v = vals64.emplace_back();
        for (const auto& vn : d.values) v.push_back({vn.value, keep(std::string(vn.name))});
        v.push_back({0, nullptr});
        strs = v.data();
        base |= BASE_VAL64_STRING;
      } else {
        auto& v = vals.emplace_back();
        for (const auto& vn : d.values) v.push_back({static_cast<guint32>(vn.value), keep(std::string(vn.name))});
        v.push_back({0, nullptr});
        strs = v.data();
      }
    }
    add(std::move(abbrev), d.name, type, base, strs, d.ref);
  }
};

Registered& reg() {
  static Registered r;
  return r;
}

// The verdict record's own fields.
struct VerdictFields {
  const Field *record, *case_id, *verdict, *fail, *level, *spec, *requirement, *statement, *scope, *side, *offset, *expected, *actual,
      *detail, *frames, *caused_by;
} vf;
gint* ett_root;
gint* ett_unit;
gint* ett_header;
gint* ett_verdict;
expert_field* ei_internal;
expert_field* ei_preference;
expert_field* ei_undecodable;
expert_field* ei_anomaly;
expert_field* ei_one_pass;
expert_field* ei_late;

// ---- Showing what is stored ----------------------------------------------

void add_value(proto_tree* t, tvbuff_t* tvb, const Field& f, const nlohmann::json& v) {
  proto_item* it = nullptr;
  if (f.type == FT_STRING) {
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    it = proto_tree_add_string(t, f.id, tvb, 0, 0, s.c_str());
  } else {
    std::uint64_t n = 0;
    if (v.is_boolean()) n = v.get<bool>() ? 1 : 0;
    else if (v.is_number_unsigned()) n = v.get<std::uint64_t>();
    else if (v.is_number_integer()) n = static_cast<std::uint64_t>(v.get<std::int64_t>());
    else return;
    if (f.type == FT_BOOLEAN) it = proto_tree_add_boolean(t, f.id, tvb, 0, 0, n != 0);
    else if (f.type == FT_UINT64) it = proto_tree_add_uint64(t, f.id, tvb, 0, 0, n);
    else it = proto_tree_add_uint(t, f.id, tvb, 0, 0, static_cast<guint32>(n));
  }
  proto_item_set_generated(it);
}

// The header table an object of a unit holds: the one whose fields are its keys.
const HeaderDef* header_of(const nlohmann::json& obj) {
  for (const auto* h : reg().headers) {
    if (h->fields.size() != obj.size()) continue;
    bool all = true;
    for (const auto& f : h->fields)
      if (!obj.contains(std::string(f.abbrev))) {
        all = false;
        break;
      }
    if (all) return h;
  }
  return nullptr;
}

void add_header(proto_tree* t, tvbuff_t* tvb, const std::string& key, const nlohmann::json& obj) {
  const HeaderDef* h = header_of(obj);
  proto_tree* sub = proto_tree_add_subtree(t, tvb, 0, 0, *ett_header, nullptr, h ? std::string(h->name).c_str() : key.c_str());
  if (h) {
    // In the table's (the wire's) order.
    for (const auto& f : h->fields)
      if (const Field* rf = reg().find("rdmaconf." + std::string(f.abbrev))) add_value(sub, tvb, *rf, obj[std::string(f.abbrev)]);
    return;
  }
  for (const auto& [k, v] : obj.items())
    if (const Field* rf = reg().find("rdmaconf." + k)) add_value(sub, tvb, *rf, v);
}

void show_unit(proto_tree* t, tvbuff_t* tvb, const dissectors::FrameUnit& u) {
  std::string title(u.listing ? u.listing->unit_title : "unit");
  if (u.unit.contains("offset")) title += fmt::format(" at stream offset {}", u.unit["offset"].dump());
  if (u.unit.contains("first_frame") && u.unit["first_frame"] != u.unit["frame"])
    title += fmt::format(", from frame {}", u.unit["first_frame"].dump());
  if (u.listing)
    for (const auto& d : u.listing->fields)
      if (d.display == Display::flag && u.unit.contains(std::string(d.abbrev)) && u.unit[std::string(d.abbrev)] == false)
        title += fmt::format(" [{}: no]", d.name);
  if (u.unit.contains("error")) title += " [not decoded]";
  proto_tree* sub = proto_tree_add_subtree(t, tvb, 0, 0, *ett_unit, nullptr, title.c_str());
  const std::string prefix = u.listing ? fmt::format("rdmaconf.{}.", u.listing->unit) : std::string("rdmaconf.");
  // The unit's own values first, in their declared order, then its headers.
  if (u.listing)
    for (const auto& d : u.listing->fields)
      if (auto it = u.unit.find(std::string(d.abbrev)); it != u.unit.end())
        if (const Field* f = reg().find(prefix + std::string(d.abbrev))) add_value(sub, tvb, *f, *it);
  for (const auto& [k, v] : u.unit.items()) {
    if (v.is_object()) add_header(sub, tvb, k, v);
    if (v.is_array())
      for (const auto& x : v)
        if (x.is_object()) add_header(sub, tvb, k, x);
  }
}

std::string_view verdict_word(Verdict v) { return conformance::verdict_name(v); }

void show_verdict(proto_tree* t, packet_info* pinfo, tvbuff_t* tvb, const dissectors::FrameVerdict& fv) {
  const auto& c = *fv.info;
  const auto& e = fv.evidence;
  proto_item* top = nullptr;
  proto_tree* sub = proto_tree_add_subtree_format(t, tvb, 0, 0, *ett_verdict, &top, "%s %s (%s, %s %s)",
                                                  std::string(verdict_word(fv.verdict)).c_str(), std::string(c.id).c_str(),
                                                  std::string(conformance::level_name(c.level)).c_str(),
                                                  std::string(c.spec).c_str(), std::string(c.section).c_str());
  auto str = [&](const Field* f, std::string_view s) {
    if (!s.empty()) proto_item_set_generated(proto_tree_add_string(sub, f->id, tvb, 0, 0, std::string(s).c_str()));
  };
  str(vf.case_id, c.id);
  str(vf.verdict, verdict_word(fv.verdict));
  if (fv.verdict == Verdict::fail) str(vf.fail, c.id);
  str(vf.level, conformance::level_name(c.level));
  str(vf.spec, fmt::format("{} {}", c.spec, c.section));
  str(vf.requirement, c.requirement);
  // The specification's statements the case judges (its family's requirement ledger).
  for (const auto* st : conformance::statements_of(c))
    proto_item_set_generated(proto_tree_add_string_format_value(sub, vf.statement->id, tvb, 0, 0, st->id.c_str(), "%s (%s, %s): %s",
                                                                st->id.c_str(), st->cite().c_str(),
                                                                std::string(conformance::level_name(st->level())).c_str(),
                                                                st->says.c_str()));
  str(vf.scope, fv.scope);
  str(vf.side, e.side);
  if (e.stream_offset) proto_item_set_generated(proto_tree_add_uint64(sub, vf.offset->id, tvb, 0, 0, *e.stream_offset));
  str(vf.expected, e.expected);
  str(vf.actual, e.actual);
  str(vf.detail, e.detail);
  if (e.caused_by) str(vf.caused_by, fmt::format("{} at frame {}", e.caused_by->case_id, e.caused_by->frame));
  if (!e.frames.empty()) str(vf.frames, fmt::format("{}", fmt::join(e.frames, ", ")));

  // The expert entry, at the requirement's level.
  const auto ce = reg().case_experts.find(c.id);
  if (ce == reg().case_experts.end()) return;
  // What was found first (the item is cut at 240 characters), then the requirement.
  std::string msg = fmt::format("{} {}: ", verdict_word(fv.verdict), c.id);
  if (!e.expected.empty() || !e.actual.empty()) msg += fmt::format("expected {}, actual {}. ", e.expected, e.actual);
  else if (!e.detail.empty()) msg += fmt::format("{}. ", e.detail);
  if (e.caused_by) msg += fmt::format("Consequence of {} at frame {}. ", e.caused_by->case_id, e.caused_by->frame);
  msg += fmt::format("{} {}: {}", c.spec, c.section, c.requirement);
  expert_add_info_format(pinfo, top, fv.verdict == Verdict::fail ? ce->second.first : ce->second.second, "%s", msg.c_str());
}

// ---- Per capture ---------------------------------------------------------

std::unique_ptr<dissectors::CaptureChecks> checks;
bool broken = false;  // the checker stopped (an internal error); shown once per frame after
std::vector<std::string> preference_errors;  // shown on the first frame

void capture_init() {
  conformance::FamilyOptions options;
  preference_errors.clear();
  for (const auto& p : option_prefs) {
    std::vector<std::uint64_t> values;
    if (auto err = conformance::parse_option(*p.spec, p.value ? p.value : "", values))
      preference_errors.push_back(*err + " (preference ignored)");
    else if (!values.empty())
      options[p.spec->name] = std::move(values);
  }
  checks = std::make_unique<dissectors::CaptureChecks>(static_cast<bool>(pref_strict), std::move(options));
  broken = false;
}
void capture_cleanup() {
  // A file read once through and never again (tshark without -2): what the
  // pass could not show is said on standard error, where a filtered run
  // that printed nothing still says something.
  if (checks && !broken && !checks->finished() && checks->last_frame() > 0) {
    try {
      checks->finish();
      if (const auto n = checks->verdicts_at_finish(); n > 0)
        ws_log("rdmaconf", LOG_LEVEL_WARNING,
               "rdmaconf: the capture was read in a single pass: %" PRIu64
               " FAIL or INCONCLUSIVE verdict(s) of connections still open at its end were never shown, and the others "
               "only on the frame where their connection ended. Run tshark -2 to see every verdict on the frames it names.",
               n);
    } catch (const std::exception&) {
    }
  }
  checks.reset();
}
void first_pass_done() {
  if (!checks || broken) return;
  try {
    checks->finish();
  } catch (const std::exception&) {
    broken = true;
  }
}

// A frame's pcap link type from Wireshark's encapsulation (wiretap maps the
// other way only, so the pcap values are tried once each and remembered).
int pcap_linktype(int encap) {
  static std::map<int, int> known;
  if (auto it = known.find(encap); it != known.end()) return it->second;
  int found = -1;
  for (int lt = 0; lt < 300 && found < 0; ++lt)
    if (wtap_pcap_encap_to_wtap_encap(lt) == encap) found = lt;
  known[encap] = found;
  return found;
}

int dissect_rdmaconf(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void*) {
  if (!checks) capture_init();
  const bool first_pass = !PINFO_FD_VISITED(pinfo);
  std::vector<dissectors::FrameVerdict> late;
  try {
    if (first_pass) {
      if (!broken && pinfo->rec && pinfo->rec->rec_type == REC_TYPE_PACKET) {
        const guint len = tvb_captured_length(tvb);
        const auto* data = reinterpret_cast<const std::byte*>(tvb_get_ptr(tvb, 0, static_cast<gint>(len)));
        checks->frame(pinfo->num, pcap_linktype(pinfo->rec->rec_header.packet_header.pkt_encap), pinfo->abs_ts.secs,
                      pinfo->abs_ts.nsecs / 1000, pinfo->fd->pkt_len, protocols::Bytes(data, len));
        late = checks->take_late();
      }
    } else if (!checks->finished()) {
      // A later pass without the end of the first announced: the first is over.
      first_pass_done();
    }
  } catch (const std::exception& ex) {
    broken = true;
    expert_add_info_format(pinfo, nullptr, ei_internal, "rdmaconf stopped checking at this frame: %s", ex.what());
    return 0;
  }
  if (pinfo->num == 1 && (!preference_errors.empty() || first_pass)) {
    proto_item* pi = proto_tree_add_item(tree, proto_rdmaconf, tvb, 0, 0, ENC_NA);
    for (const auto& e : preference_errors) expert_add_info_format(pinfo, pi, ei_preference, "rdmaconf: %s", e.c_str());
    // Only a pass whose frames are shown as they are read sees this: tshark
    // without -2 (its second pass, the GUI's later dissections do not).
    if (first_pass)
      expert_add_info_format(pinfo, pi, ei_one_pass,
                             "rdmaconf judges a connection once it has seen all of it: in a single pass (tshark without "
                             "-2) a verdict shows only on the frame where its connection ended, and the connections open "
                             "at the end show none. Run tshark -2 to see every verdict on the frames it names.");
  }
  const dissectors::FrameNotes* notes = checks->notes(pinfo->num);
  if (!notes && late.empty()) return 0;
  std::size_t fails = 0;
  if (notes)
    for (const auto& v : notes->verdicts) fails += v.verdict == Verdict::fail;
  for (const auto& v : late) fails += v.verdict == Verdict::fail;
  if (fails) col_append_fstr(pinfo->cinfo, COL_INFO, " [rdmaconf: %zu FAIL]", fails);
  proto_item* ti = proto_tree_add_item(tree, proto_rdmaconf, tvb, 0, 0, ENC_NA);
  proto_tree* root = proto_item_add_subtree(ti, *ett_root);
  if (notes) {
    proto_item_append_text(ti, ", %zu unit(s), %zu verdict(s)", notes->units.size(), notes->verdicts.size());
    if (!notes->warnings.empty()) proto_item_append_text(ti, ", %zu warning(s)", notes->warnings.size());
    for (const auto& w : notes->warnings)
      expert_add_info_format(pinfo, ti, w.undecodable ? ei_undecodable : ei_anomaly, "rdmaconf: %s", w.message.c_str());
    for (const auto& v : notes->verdicts) show_verdict(root, pinfo, tvb, v);
  }
  if (!late.empty()) {
    // A single pass: verdicts of frames already shown, here where they became known.
    proto_item* li = nullptr;
    proto_tree* lt = proto_tree_add_subtree_format(root, tvb, 0, 0, *ett_root, &li,
                                                   "%zu verdict(s) of earlier frames, known at this frame", late.size());
    expert_add_info_format(pinfo, li, ei_late,
                           "rdmaconf: %zu verdict(s) of earlier frames became known here (their connection ended); a "
                           "single pass shows them here, tshark -2 on the frames they name",
                           late.size());
    for (const auto& v : late) show_verdict(lt, pinfo, tvb, v);
  }
  if (tree && notes)
    for (const auto& u : notes->units) show_unit(root, tvb, u);
  return static_cast<int>(tvb_captured_length(tvb));
}

// ---- Registration --------------------------------------------------------

void register_fields() {
  Registered& r = reg();
  // Header fields: every family's tables.
  for (const auto* fam : conformance::Registry::get().families())
    for (const auto* h : fam->headers()) {
      r.headers.push_back(h);
      for (const auto& f : h->fields) r.add_table_field("rdmaconf." + std::string(f.abbrev), f);
    }
  // Unit values: every family's listing declarations.
  for (const auto& [fam, listings] : dissectors::CaptureChecks::listings())
    for (const auto& l : listings)
      for (const auto& f : l.fields) r.add_table_field(fmt::format("rdmaconf.{}.{}", l.unit, f.abbrev), f);
  // The verdict record.
  auto text = [&](const char* abbrev, const char* name, const char* blurb) {
    return r.add(abbrev, name, FT_STRING, BASE_NONE, nullptr, blurb ? blurb : "");
  };
  vf.case_id = text("rdmaconf.case", "Case", "The conformance case's stable ID");
  vf.verdict = text("rdmaconf.verdict", "Verdict", "PASS, FAIL, NOT_APPLICABLE or INCONCLUSIVE");
  vf.fail = text("rdmaconf.fail", "Failed case", "The ID of a case that FAILs on this frame");
  vf.level = text("rdmaconf.level", "Level", "MUST, SHOULD or MAY");
  vf.spec = text("rdmaconf.spec", "Specification", "The specification and section the case checks");
  vf.requirement = text("rdmaconf.requirement", "Requirement", "What the specification requires, in our words");
  vf.statement = text("rdmaconf.statement", "Statement",
                      "A normative statement of the specification the case judges (its requirement ledger id, section, level, our words)");
  vf.scope = text("rdmaconf.scope", "Scope", "The connection or conversation judged");
  vf.side = text("rdmaconf.side", "Side", "The endpoint that sent the octets judged");
  vf.offset = r.add("rdmaconf.stream_offset", "Stream offset", FT_UINT64, BASE_DEC, nullptr, "Offset in the sender's byte stream");
  vf.expected = text("rdmaconf.expected", "Expected", nullptr);
  vf.actual = text("rdmaconf.actual", "Actual", nullptr);
  vf.detail = text("rdmaconf.detail", "Detail", nullptr);
  vf.frames = text("rdmaconf.frames", "Evidence frames", "Every frame the evidence names");
  vf.caused_by = text("rdmaconf.caused_by", "Consequence of",
                      "The violation (case and frame) this follows from: what it made unreadable is not judged on its own");
  proto_register_field_array(proto_rdmaconf, r.hf.data(), static_cast<int>(r.hf.size()));

  ett_root = r.ett();
  ett_unit = r.ett();
  ett_header = r.ett();
  ett_verdict = r.ett();
  proto_register_subtree_array(r.ett_ptrs.data(), static_cast<int>(r.ett_ptrs.size()));

  // Expert entries: per case, a FAIL at its level (MUST: error; SHOULD,
  // MAY: warning) and an INCONCLUSIVE note.
  auto expert = [&](std::string abbrev, int group, int severity, std::string summary) {
    expert_field* e = &r.experts.emplace_back(expert_field{EI_INIT_EI, EI_INIT_HF});
    r.ei.push_back(ei_register_info{e, {r.keep(std::move(abbrev)), group, severity, r.keep(std::move(summary)), EXPFILL}});
    return e;
  };
  for (const auto* c : conformance::Registry::get().all_cases()) {
    const std::string id(c->id);
    auto* fail = expert(fmt::format("rdmaconf.fail.{}", id), PI_PROTOCOL, c->level == Level::must ? PI_ERROR : PI_WARN,
                        fmt::format("FAIL {}: {}", id, c->requirement));
    auto* inc = expert(fmt::format("rdmaconf.inconclusive.{}", id), PI_SEQUENCE, PI_NOTE,
                       fmt::format("INCONCLUSIVE {}: {}", id, c->requirement));
    r.case_experts.emplace(c->id, std::make_pair(fail, inc));
  }
  ei_internal = expert("rdmaconf.internal", PI_MALFORMED, PI_ERROR, "rdmaconf stopped checking");
  ei_undecodable = expert("rdmaconf.undecodable", PI_MALFORMED, PI_WARN, "rdmaconf could not decode this frame");
  ei_anomaly = expert("rdmaconf.anomaly", PI_PROTOCOL, PI_WARN, "The capture file describes this frame oddly");
  ei_preference = expert("rdmaconf.preference", PI_PROTOCOL, PI_WARN, "rdmaconf preference not understood");
  ei_one_pass = expert("rdmaconf.one_pass", PI_COMMENTS_GROUP, PI_NOTE, "rdmaconf's verdicts need two passes (tshark -2)");
  ei_late = expert("rdmaconf.late", PI_SEQUENCE, PI_NOTE, "rdmaconf verdicts of earlier frames, known at this frame");
  expert_module_t* em = expert_register_protocol(proto_rdmaconf);
  expert_register_field_array(em, r.ei.data(), static_cast<int>(r.ei.size()));
}

// Wireshark loads one copy of a plugin found in several of its folders
// (its own message names only the folders); say which copy runs and where
// the other is, once.
void warn_of_other_copies() {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&warn_of_other_copies), &self) || !self.dli_fname) return;
  std::error_code ec;
  const auto ours = std::filesystem::weakly_canonical(self.dli_fname, ec);
  for (const char* dir : {get_plugins_pers_dir_with_version(), get_plugins_dir_with_version()}) {
    if (!dir) continue;
    const auto other = std::filesystem::path(dir) / "epan" / "rdmaconf.so";
    if (!std::filesystem::exists(other, ec)) continue;
    const auto canon = std::filesystem::weakly_canonical(other, ec);
    if (ec || canon == ours) continue;
    ws_log("rdmaconf", LOG_LEVEL_WARNING,
           "rdmaconf: this is the plugin at %s (rdmaconf %s); another copy at %s is not the one running. Remove one, "
           "or the verdicts may come from a version you did not expect.",
           ours.c_str(), RDMACONF_VERSION, canon.c_str());
  }
}

void proto_register_rdmaconf() {
  warn_of_other_copies();
  proto_rdmaconf = proto_register_protocol("rdmaconf conformance verdicts", "rdmaconf", "rdmaconf");
  register_fields();
  module_t* m = prefs_register_protocol(proto_rdmaconf, nullptr);
  prefs_register_bool_preference(m, "strict", "Judge SHOULD and MAY cases too",
                                 "As rdmaconf check --strict: SHOULD-level FAILs are warnings, MUST-level ones errors",
                                 &pref_strict);
  // "--roce-port" becomes the preference rdmaconf.roce_port.
  for (const auto* fam : conformance::Registry::get().families())
    for (auto spec : fam->options()) {
      const auto* s = &option_specs.emplace_back(std::move(spec));
      std::string name = s->name.substr(s->name.find_first_not_of('-'));
      std::replace(name.begin(), name.end(), '-', '_');
      auto& p = option_prefs.emplace_back(OptionPref{s});
      prefs_register_string_preference(m, reg().keep(name), reg().keep(fmt::format("{} ({})", s->name, fam->title())),
                                       reg().keep(s->help + (s->repeatable ? "; several separated by commas" : "") +
                                                  ". Empty: the default"),
                                       &p.value);
    }
  register_init_routine(capture_init);
  register_cleanup_routine(capture_cleanup);
  register_postseq_cleanup_routine(first_pass_done);
}

void proto_reg_handoff_rdmaconf() {
  handle = create_dissector_handle(dissect_rdmaconf, proto_rdmaconf);
  register_postdissector(handle);
}

}  // namespace

extern "C" void plugin_register(void) {
  static proto_plugin plug;
  plug.register_protoinfo = proto_register_rdmaconf;
  plug.register_handoff = proto_reg_handoff_rdmaconf;
  proto_register_plugin(&plug);
}

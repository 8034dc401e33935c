// `rdmaconf live fastudp`: the plug-in loaded and every scenario run in a
// child process of its own (interop/child.hpp), its scope sent back to the
// parent as JSON.
#include "interop/fastudp/nic_suite.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "interop/child.hpp"
#include "interop/control.hpp"
#include "interop/fastudp/script.hpp"
#include "captures/io/pcap_reader.hpp"

namespace rdmaconf::interop::fastudp {

namespace eng = engine::fastudp;
namespace conf = conformance;

// ---- Child processes ----

nlohmann::json scope_to_wire(const conf::ScopeResult& s) {
  nlohmann::json out = {{"id", s.id}, {"order", s.order}, {"label", s.label}, {"params", s.params},
                        {"first", s.first_frame}, {"last", s.last_frame}, {"outcomes", nlohmann::json::array()}};
  for (const auto& o : s.outcomes) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : o.tally.evidence())
      ev.push_back({{"frames", e.frames}, {"side", e.side}, {"expected", e.expected}, {"actual", e.actual}, {"detail", e.detail}});
    out["outcomes"].push_back({{"case", o.info->id}, {"checked", o.tally.checked()}, {"failed", o.tally.failed()}, {"evidence", ev}});
  }
  return out;
}

conf::ScopeResult scope_from_wire(const nlohmann::json& j, const std::vector<const conf::CaseInfo*>& cases) {
  conf::ScopeResult s;
  s.family = conformance::fastudp::kFamily;
  s.id = j.at("id").get<std::string>();
  s.order = j.at("order").get<std::uint64_t>();
  s.label = j.at("label").get<std::string>();
  s.params = j.at("params").get<std::string>();  // the object's text
  s.first_frame = j.at("first").get<std::uint64_t>();
  s.last_frame = j.at("last").get<std::uint64_t>();
  for (const auto& o : j.at("outcomes")) {
    const auto id = o.at("case").get<std::string>();
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const conf::CaseInfo* x) { return x->id == id; });
    if (c == cases.end()) continue;
    conf::CaseOutcome out{*c, {}};
    const auto checked = o.at("checked").get<std::uint64_t>(), failed = o.at("failed").get<std::uint64_t>();
    std::uint64_t fails = 0;
    for (const auto& e : o.at("evidence")) {
      conf::Evidence ev;
      ev.frames = e.at("frames").get<std::vector<std::uint64_t>>();
      ev.side = e.at("side").get<std::string>();
      ev.expected = e.at("expected").get<std::string>();
      ev.actual = e.at("actual").get<std::string>();
      ev.detail = e.at("detail").get<std::string>();
      if (fails < failed) {
        out.tally.fail(std::move(ev));
        ++fails;
      }
    }
    // Failures beyond the evidence kept, then the passes.
    for (; fails < failed; ++fails) out.tally.fail(conf::Evidence{});
    for (std::uint64_t n = failed; n < checked; ++n) out.tally.pass();
    s.outcomes.push_back(std::move(out));
  }
  return s;
}


conf::InputResult nic_check(const NicCheckOptions& opt) {
  conf::InputResult in;
  in.path = opt.plugin;
  in.linktype = "fastudp-nic-plugin";
  {
    std::ifstream f(opt.plugin, std::ios::binary);
    if (!f) {
      in.error = fmt::format("{}: cannot open the plug-in: {}", opt.plugin, std::strerror(errno));
      return in;
    }
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    in.sha256 = captures::io::sha256_hex({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
    in.stats.octets = bytes.size();
  }
  std::vector<std::string> names = opt.scenarios;
  if (names.empty())
    for (const auto& s : nic_scenarios()) names.emplace_back(s.name);
  for (const auto& n : names) {
    if (std::none_of(scenario_defs().begin(), scenario_defs().end(), [&](const ScenarioDef& d) { return d.info.name == n; })) {
      in.error = fmt::format("no NIC scenario named '{}' (rdmaconf nic check --list shows them)", n);
      return in;
    }
  }

  // Each scenario's child: the plug-in with the harness.
  ChildLimits limits;
  limits.timeout_ms = opt.timeout_ms;
  limits.memory = opt.plugin_memory;
  limits.memory_name = "--plugin-memory limit";
  limits.timeout_hint = "a hang, or a NIC that never goes idle";

  // Loading first, on its own: a plug-in that cannot be loaded is an input
  // error, whatever scenario runs.
  const auto load = [&](std::string& err) { return eng::Plugin::open(opt.plugin, err); };
  if (opt.isolate) {
    auto end = run_in_child(
        [&] {
          std::string err;
          load(err);
          return err;
        },
        limits);
    if (!end.failure.empty())
      in.error = fmt::format("{}: loading the plug-in {}", opt.plugin, end.failure);
    else if (!end.result.empty())
      in.error = end.result;
    if (!in.error.empty()) return in;
  }
  std::unique_ptr<eng::Plugin> here;
  if (!opt.isolate) {
    std::string err;
    here = load(err);
    if (!here) {
      in.error = err;
      return in;
    }
  }

  for (const auto& n : names) {
    conf::ScopeResult scope;
    const std::string pcap = opt.pcap_dir.empty() ? std::string() : opt.pcap_dir + "/" + n + ".pcap";
    std::string plugin_log;  // what the plug-in wrote to stdout and stderr
    if (!opt.isolate) {
      scope = run_scenario(*here, n, opt.cases, opt.plugin_args, pcap);
    } else {
      auto end = run_in_child(
          [&] {
            std::string err;
            auto p = load(err);
            if (!p) return nlohmann::json{{"harness_error", err}}.dump();
            try {
              return scope_to_wire(run_scenario(*p, n, opt.cases, opt.plugin_args, pcap)).dump();
            } catch (const std::exception& e) {  // ours (the recording), not the plug-in's
              return nlohmann::json{{"harness_error", e.what()}}.dump();
            }
          },
          limits);
      plugin_log = interop::as_utf8(end.output);
      if (end.output_dropped) plugin_log += fmt::format("\n[{} more octets not kept]", end.output_dropped);
      nlohmann::json j;
      if (end.failure.empty()) j = nlohmann::json::parse(end.result, nullptr, false);
      if (end.failure.empty() && j.is_object() && j.contains("harness_error")) {
        in.error = fmt::format("scenario {}: {}", n, j["harness_error"].get<std::string>());
        return in;
      }
      if (end.failure.empty() && !j.is_discarded() && j.is_object()) {
        try {
          scope = scope_from_wire(j, opt.cases);
        } catch (const nlohmann::json::exception& e) {
          end.failure = fmt::format("answered with a malformed result ({})", e.what());
        }
      } else if (end.failure.empty()) {
        end.failure = "answered with no result";
      }
      if (!end.failure.empty()) {
        // The scenario's only verdict: the shim contract, broken.
        const auto& d = *std::find_if(scenario_defs().begin(), scenario_defs().end(), [&](const ScenarioDef& x) { return x.info.name == n; });
        scope = conf::ScopeResult{};
        scope.family = conformance::fastudp::kFamily;
        scope.order = static_cast<std::uint64_t>(&d - scenario_defs().data());
        scope.id = fmt::format("nic/{}", scope.order);
        scope.label = fmt::format("{}: {}", d.info.name, d.info.summary);
        scope.params = conf::params_text({{"scenario", d.info.name}});
        for (const auto* c : opt.cases) {
          conf::CaseOutcome o{c, {}};
          if (c->id == cid::shim) {
            conf::Evidence e;
            e.side = "nic";
            e.expected = "the scenario runs to its end";
            e.actual = fmt::format("the plug-in {}", end.failure);
            e.detail = fmt::format("scenario {}; its other cases were not judged", n);
            o.tally.fail(std::move(e));
          }
          scope.outcomes.push_back(std::move(o));
        }
      }
    }
    if (opt.isolate && !plugin_log.empty()) {
      auto params = nlohmann::json::parse(scope.params, nullptr, false);
      if (!params.is_object()) params = nlohmann::json::object();
      params["plugin_output"] = plugin_log;
      scope.params = conf::params_text(params);
    }
    for (const auto& o : scope.outcomes) in.verdicts.add(o.tally.verdict());
    in.stats.frames += scope.last_frame;
    in.scopes.push_back(std::move(scope));
  }
  return in;
}


}  // namespace rdmaconf::interop::fastudp

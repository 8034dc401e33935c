// `rdmaconf live fastudp`: the plug-in loaded and every scenario run in a
// child process of its own (interop/child.hpp), its scope sent back to the
// parent as JSON.
#include "interop/fastudp/nic_suite.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "conformance/fastudp/nic_cases.hpp"
#include "conformance/judge.hpp"
#include "interop/child.hpp"
#include "interop/control.hpp"
#include "reports/compare.hpp"
#include "reports/report.hpp"
#include "interop/fastudp/script.hpp"
#include "captures/io/pcap_reader.hpp"

namespace rdmaconf::interop::fastudp {

namespace eng = engine::fastudp;
namespace conf = conformance;

namespace {
const ScenarioDef& scenario_def(std::string_view name) {
  return *std::find_if(scenario_defs().begin(), scenario_defs().end(), [&](const ScenarioDef& x) { return x.info.name == name; });
}
}  // namespace

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
      in.error = fmt::format("no NIC scenario named '{}' (rdmaconf live fastudp --list shows them)", n);
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

  // Where the harness in a scenario's child says what the NIC is doing
  // (eng::HarnessOptions::progress), shared with this process, so that a
  // crash or a hang names the frame.
  auto* progress = static_cast<std::uint64_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (progress == MAP_FAILED) progress = nullptr;
  struct Unmap {
    void* p;
    ~Unmap() {
      if (p) munmap(p, 4096);
    }
  } unmap{progress};
  const auto doing = [&] {
    if (!progress) return std::string();
    const std::uint64_t frame = progress[0], detail = progress[2];
    switch (static_cast<eng::Progress>(progress[1])) {
      case eng::Progress::receive: return fmt::format(" in fudp_plugin_receive with frame {}", frame);
      case eng::Progress::register_write:
        return fmt::format(" in its register write handler (offset 0x{:x}), after frame {}", detail, frame);
      case eng::Progress::register_read:
        return fmt::format(" in its register read handler (offset 0x{:x}), after frame {}", detail, frame);
      case eng::Progress::job: return fmt::format(" in a scheduled job, after frame {}", frame);
      case eng::Progress::transmit: return fmt::format(" sending transmit {}, after frame {}", detail, frame);
      default: return frame ? fmt::format(" after frame {}", frame) : std::string(" before any frame");
    }
  };

  for (const auto& n : names) {
    conf::ScopeResult scope;
    if (progress) std::fill(progress, progress + 3, 0);
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
              return reports::scope_json(run_scenario(*p, n, opt.cases, opt.plugin_args, pcap, progress));
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
          scope = reports::scope_from_json(j, opt.cases);
          scope.order = static_cast<std::uint64_t>(&scenario_def(n) - scenario_defs().data());
        } catch (const std::exception& e) {
          end.failure = fmt::format("answered with a malformed result ({})", e.what());
        }
      } else if (end.failure.empty()) {
        end.failure = "answered with no result";
      }
      if (!end.failure.empty()) {
        // The scenario's only verdict: the shim contract, broken.
        const auto& d = scenario_def(n);
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
            e.actual = fmt::format("the plug-in {}{}", end.failure, doing());
            if (progress && progress[0]) e.frames.push_back(progress[0]);
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

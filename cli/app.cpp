// rdmaconf: conformance checking for RDMA-family wire protocols.
//   rdmaconf check PATH... [--json FILE] [--junit FILE] [--cases PATTERN] [--strict] [--quiet] [--verbose]
//   rdmaconf cases [--json]
//   rdmaconf fpdus PATH | packets PATH   (each family's decoded listing)
//   rdmaconf live FAMILY [--scenario NAME]... [options]   (cli/live.cpp; each family's live suite)
//   rdmaconf serve FAMILY --listen ADDR:PORT [options]
//   rdmaconf lab run [--peer siw] [--scenario NAME]... [--sweep] [--out DIR]   (interop/lab)
// Exit status: 0 no case FAILed, 1 some case FAILed, 2 usage error or unreadable input.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <list>
#include <thread>
#include <tuple>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/app.hpp"
#include "cli/check_inputs.hpp"
#include "cli/ledger_cmd.hpp"
#include "cli/live.hpp"
#include "cli/report_cmd.hpp"
#include "cli/suite_report.hpp"
#include "captures/io/hash_cache.hpp"
#include "conformance/checker.hpp"
#include "interop/lab/device.hpp"
#include "interop/lab/lab.hpp"
#include "interop/lab/peers.hpp"
#include "interop/live_suite.hpp"
#include "reports/report.hpp"
#include "reports/report_file.hpp"
#include "reports/terminal.hpp"

#ifndef RDMACONF_VERSION
#define RDMACONF_VERSION "0.0.0"
#endif

namespace fs = std::filesystem;
using namespace rdmaconf;

namespace {

constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;

bool is_capture_name(const fs::path& p) {
  const auto e = p.extension().string();
  return e == ".pcap" || e == ".pcapng" || e == ".cap";
}

// Files given directly are taken whatever their name; directories are
// searched recursively for *.pcap, *.pcapng and *.cap, in sorted order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths, std::string& error) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      error = fmt::format("{}: no such file or directory", p);
      return {};
    }
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        if (it->is_regular_file() && is_capture_name(it->path())) found.push_back(it->path().string());
      if (ec) {
        error = fmt::format("{}: {}", p, ec.message());
        return {};
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

// A report's file, its folder made if needed; a message when it cannot be opened.
bool open_report(reports::ReportFile& os, const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  os.open(path);
  if (!os) std::cerr << fmt::format("rdmaconf: cannot write {} report to {}\n", what, path);
  return static_cast<bool>(os);
}

// The lab's scripts: where the user points, else those installed beside the
// binary (PREFIX/bin/rdmaconf -> PREFIX/share/rdmaconf/lab), else the source tree's.
std::string default_lab_dir() {
  if (const char* env = std::getenv("RDMACONF_LAB_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "rdmaconf" / "lab";
    if (fs::exists(installed / "build.sh", ec)) return installed.string();
  }
  return RDMACONF_SOURCE_DIR "/interop/lab";
}

}  // namespace

int rdmaconf::cli::run_main(int argc, char** argv) {
  const auto& families = conformance::Registry::get().families();
  std::string about = "rdmaconf: conformance checks for";
  for (std::size_t i = 0; i < families.size(); ++i)
    about += fmt::format("{} {}", i == 0 ? "" : i + 1 == families.size() ? " and" : ",", families[i]->title());
  CLI::App app{about, "rdmaconf"};
  app.set_version_flag("--version", RDMACONF_VERSION);
  app.require_subcommand(1);

  auto* check = app.add_subcommand("check", "check captures (pcap/pcapng files or directories of them)");
  std::vector<std::string> paths, patterns;
  std::string json_out, junit_out;
  bool no_hash_cache = false;
  bool strict = false, quiet = false, verbose = false;
  check->add_option("paths", paths, "capture files or directories")->required();
  check->add_option("--json", json_out, "write the JSON report (reports/schema/report-v1.schema.json) to FILE");
  check->add_flag("--no-hash-cache", no_hash_cache,
                  "hash every input for the report, even one hashed before and unchanged since (by default a file's "
                  "SHA-256 is kept in $RDMACONF_HASH_CACHE, else $XDG_CACHE_HOME/rdmaconf/sha256 or "
                  "~/.cache/rdmaconf/sha256, keyed by device, inode, size, modification and change times)");
  check->add_option("--junit", junit_out,
                    "write a JUnit XML report to FILE (a testsuite per input, named relative to the folder the paths "
                    "share; a testcase per scope and case)");
  std::string junit_inconclusive = "skipped";
  check->add_option("--junit-inconclusive", junit_inconclusive,
                    "how the JUnit report shows an INCONCLUSIVE case: skipped (default) or failure; either way its "
                    "type is INCONCLUSIVE and its output says why")
      ->check(CLI::IsMember({"skipped", "failure"}));
  check->add_option("--cases", patterns, "only cases whose ID matches the glob PATTERN (comma-separated; repeatable)");
  check->add_flag("--strict", strict, "also run SHOULD- and MAY-level cases");
  std::uint64_t idle_timeout_s = conformance::kDefaultIdleTimeoutS, reassembly_mib = 256,
                state_mib = conformance::kDefaultStateMemory >> 20;
  std::string shard_flag;
  bool list_inputs = false;
  check->add_option("--shard", shard_flag,
                    "check shard I of N (from 0) of the input files, balanced by size (default: from TEST_SHARD_INDEX/"
                    "TEST_TOTAL_SHARDS, JOB_COMPLETION_INDEX/RDMACONF_SHARDS, SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT or CI_NODE_INDEX/CI_NODE_TOTAL)");
  check->add_flag("--list", list_inputs, "list the input files this run (or shard) would check, and exit");
  check->add_option("--idle-timeout", idle_timeout_s,
                    "end a TCP connection or RoCE conversation with no traffic for this many seconds of capture time (default 600; 0: never)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 32));
  check->add_option("--reassembly-memory", reassembly_mib,
                    "MiB that out-of-order and waiting TCP octets of all connections of an input may take together (default 256)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  check->add_option("--state-memory", state_mib,
                    "MiB the open state may take: a third each for TCP connections, RoCE conversations and UDP "
                    "conversations (default 192; 0: no bound); beyond, the least recently active are closed early, and "
                    "what they would have shown later is INCONCLUSIVE")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 20));
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  check->add_option("--jobs,-j", jobs,
                    "threads (default: the number of cores): inputs are checked at once, each on a thread of its own; "
                    "with fewer inputs than threads, an input's TCP connections are spread over the threads left (less "
                    "one when --json or --junit is written). The verdicts and the reports are the same as with 1, in the "
                    "same order")
      ->check(CLI::Range(1u, 1024u));
  // Each family's own options (--roce-port, ...).
  conformance::FamilyOptions family_options;
  for (const auto* f : families)
    for (const auto& spec : f->options()) {
      auto* o = check->add_option(spec.name, family_options[spec.name], spec.help)->check(CLI::Range(std::uint64_t{0}, spec.max));
      if (!spec.allowed.empty()) o->check(CLI::IsMember(spec.allowed));
      if (!spec.repeatable) o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    }
  auto* q = check->add_flag("--quiet", quiet, "print nothing but errors");
  check->add_flag("--verbose", verbose, "list every verdict, not only failures")->excludes(q);

  auto* cases = app.add_subcommand("cases", "list the conformance case catalog");
  bool cases_json = false;
  cases->add_flag("--json", cases_json, "print the catalog as JSON");

  // Each family's decoded listing (`rdmaconf fpdus PATH`, ...).
  struct ListingCommand {
    CLI::App* cmd;
    std::string family, unit;
    std::string path;
  };
  std::vector<ListingCommand> listings;
  listings.reserve(families.size() * 4);
  for (const auto* f : families)
    for (const auto& l : f->listings()) {
      listings.push_back({app.add_subcommand(std::string(l.command), std::string(l.help)), std::string(f->name()),
                          std::string(l.unit), {}});
      listings.back().cmd->add_option("path", listings.back().path, "capture file")->required();
    }

  const cli::LiveCommands live_cmds(app);
  const cli::ReportCommands reports_cmd(app, default_lab_dir());
  const cli::LedgerCommands ledger_cmd(app, default_lab_dir());

  auto* lab = app.add_subcommand("lab", "the soft-RNIC lab: our engine against the Linux kernel's siw in a qemu guest");
  lab->require_subcommand(1);
  auto* lab_run = lab->add_subcommand(
      "run", "build the lab if needed, boot it once, run the cells, check every capture, write OUT/lab-report.json");
  interop::lab::LabOptions lab_opt;
  lab_opt.lab_dir = default_lab_dir();
  bool lab_list = false;
  lab_run->add_option("--peer", lab_opt.peer, "the kernel peer: " + interop::lab::peer_names() + " or all (default)")
      ->check([](const std::string& p) { return p == "all" || interop::lab::find_peer(p) ? std::string() : "expected all or one of " + interop::lab::peer_names(); });
  lab_run->add_option("--kernel", lab_opt.kernel,
                      "the guest's kernel: a kernel file's name in LAB_DIR/kernels (" + interop::lab::kernel_names(lab_opt.lab_dir) +
                          "; default: the one that says default: yes) or a path to one (format in docs/lab.md, \"Kernels\")");
  lab_run->add_option("--cell", lab_opt.cell_ids, "only this cell, by its id (repeatable; see --sweep --list): a finding's reproducer");
  lab_run->add_flag("--findings", lab_opt.findings,
                    "only the cells that reproduce a finding (cells.json), with those --cell names: does each finding "
                    "still happen on this kernel");
  lab_run->add_option("--scenario", lab_opt.scenarios, "only cells running this scenario (repeatable; see --list)");
  lab_run->add_flag("--sweep", lab_opt.sweep, "every siw knob combination (CRC off/required/strict x MPA v1/v2/p2p)");
  lab_run->add_option("--out", lab_opt.out_dir, "folder for the report, captures and logs (default out/lab)");
  lab_run->add_option("--lab-dir", lab_opt.lab_dir, "the lab scripts (default: $RDMACONF_LAB_DIR, else share/rdmaconf/lab beside the installed binary, else interop/lab of the source tree)");
  lab_run->add_option("--cells", lab_opt.cells_file, "the table of cells (default: cells.json in the lab scripts' folder; format in docs/lab.md)");
  lab_run->add_flag("--list", lab_list, "list the cells (of the shard) and exit");
  lab_run->add_flag("--judge-only", lab_opt.judge_only,
                    "judge the cells a run left in --out again with this build (its checker and judge): no build, no boot");
  bool lab_plan = false;
  lab_run->add_flag("--plan", lab_plan, "print the plan the guest would run for the cells (of the shard), and exit");
  std::string lab_shard;
  lab_run->add_option("--shard", lab_shard, "run shard I of N (from 0) of the cells (default: from the environment, as check)");
  lab_run->add_option("--export", lab_opt.export_dir, "copy the captures of the --export-cell cells here, with manifests");
  lab_run->add_option("--export-cell", lab_opt.export_cells, "a cell whose capture --export copies (repeatable)");
  // A device under test (docs/lab.md, "A device under test over SSH").
  lab_run->add_option("--dut", lab_opt.dut,
                      "where the device's side of each cell runs: guest (the lab's qemu guest, default), local (this host) "
                      "or ssh://USER@HOST[:PORT] (key authentication, your ssh client and configuration)");
  lab_run->add_option("--profile", lab_opt.profile,
                      "the device under test's profile: a name in LAB_DIR/profiles (siw, rxe, irdma-iwarp, ...) or a file "
                      "(format in docs/lab.md)");
  lab_run->add_option("--our-iface", lab_opt.our_iface, "with --dut: this host's interface that faces the device (captured)");
  lab_run->add_option("--our-addr", lab_opt.our_addr, "with --dut: that interface's IPv4 address, where our engine listens");
  lab_run->add_option("--ssh", lab_opt.ssh, "with --dut ssh://: the ssh client (default ssh)");
  lab_run->add_option("--ssh-config", lab_opt.ssh_config, "with --dut ssh://: an ssh configuration file (ssh -F)");
  lab_run->add_option("--ssh-identity", lab_opt.ssh_identity, "with --dut ssh://: the private key (ssh -i)");
  lab_run->add_option("--ssh-option", lab_opt.ssh_options, "with --dut ssh://: an ssh option NAME=VALUE (ssh -o; repeatable)");
  lab_run->add_option("--dut-recover", lab_opt.dut_recover,
                      "with --dut ssh://: a command on this host that brings the device back when it stops answering "
                      "(a power cycle, a restart; run at most 3 times a plan, within 600 s each)");
  lab_run->add_option("--dut-console", lab_opt.dut_console,
                      "with --dut ssh://: a file on this host that the device's console is written to; a cell that "
                      "lost the device keeps what it printed (console.txt)");

  // The live commands of earlier releases (`interop`, `peer`, `nic check`,
  // ...) are rewritten to `live FAMILY` and `serve FAMILY`.
  std::string alias_error;
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  std::vector<std::string> args = cli::rewrite_live_aliases(arguments, alias_error);
  if (!alias_error.empty()) {
    std::cerr << alias_error << "\n";
    return kExitUsage;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }

  if (live_cmds.selected()) return live_cmds.run(arguments);
  if (reports_cmd.selected()) return reports_cmd.run();
  if (ledger_cmd.selected()) return ledger_cmd.run();

  if (*lab_run) {
    std::string err;
    lab_opt.shard = reports::shard_from(lab_shard, err);
    if (!err.empty()) {
      std::cerr << "rdmaconf lab: " << err << "\n";
      return kExitUsage;
    }
    if (lab_list || lab_plan) {
      try {
        std::optional<interop::lab::DeviceProfile> device;
        if (!lab_opt.profile.empty()) device = interop::lab::read_profile(lab_opt.profile, lab_opt.lab_dir);
        std::vector<std::pair<std::string, std::string>> not_run;
        const auto cells = interop::lab::cells_to_run(lab_opt, nullptr, device ? &*device : nullptr, &not_run);
        if (lab_plan) std::cout << interop::lab::guest_plan(cells, device ? &*device : nullptr);
        else {
          for (const auto& c : cells)
            std::cout << fmt::format("{:<64} expect {:<9} {}\n", c.id, interop::lab::expect_name(c.expect), c.why);
          for (const auto& [id, why] : not_run) std::cout << fmt::format("{:<64} not run: {}\n", id, why);
        }
      } catch (const interop::lab::CellsError& e) {
        std::cerr << "rdmaconf lab: " << e.what() << "\n";
        return kExitUsage;
      } catch (const interop::lab::ProfileError& e) {
        std::cerr << "rdmaconf lab: " << e.what() << "\n";
        return kExitUsage;
      }
      return 0;
    }
    return interop::lab::run(lab_opt, std::cerr);
  }

  for (const auto& l : listings) {
    if (!*l.cmd) continue;
    conformance::CheckOptions o;
    o.case_patterns = {"-"};  // no case runs: decoding only
    o.hash = false;
    o.listing_family = l.family;
    o.listing_unit = l.unit;
    o.on_unit = [](const conformance::ProtocolFamily&, std::string_view, const nlohmann::json& j) { std::cout << j.dump() << "\n"; };
    const auto r = conformance::Checker(o).check_file(l.path);
    if (!r.error.empty()) {
      std::cerr << "rdmaconf: " << reports::term_text(r.error) << "\n";
      return kExitUsage;
    }
    return 0;
  }

  if (*cases) {
    // The capture cases (judged by `rdmaconf check`), then each live
    // suite's own (judged by `rdmaconf live FAMILY`).
    std::vector<std::pair<const conformance::CaseInfo*, std::string_view>> all;
    for (const auto* c : conformance::Registry::get().all_cases()) all.emplace_back(c, std::string_view());
    for (const auto& s : interop::LiveSuites::get().all())
      for (const auto* c : s->cases()) all.emplace_back(c, s->family());
    std::size_t w = 0;
    for (const auto& [c, live] : all) w = std::max(w, c->id.size());
    if (cases_json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& [c, live] : all) {
        j.push_back(reports::case_json(*c));
        if (!live.empty()) j.back()["live"] = live;
      }
      std::cout << j.dump(2) << "\n";
    } else {
      std::string_view shown;
      for (const auto& [c, live] : all) {
        if (live != shown) std::cout << fmt::format("\nLive cases of rdmaconf live {}:\n", live);
        shown = live;
        std::cout << fmt::format("{:<{}} {:<6} {:<10} {:<22} {}\n", c->id, w, conformance::level_name(c->level), c->spec,
                                 c->section, c->requirement);
        std::vector<std::string> ids;
        for (const auto* e : conformance::statements_of(*c)) ids.push_back(e->id);
        if (!ids.empty()) std::cout << fmt::format("{:<{}} judges {}\n", "", w, fmt::join(ids, " "));
      }
    }
    return 0;
  }

  std::string err;
  auto inputs = expand_inputs(paths, err);
  if (!err.empty()) {
    std::cerr << "rdmaconf: " << reports::term_text(err) << "\n";
    return kExitUsage;
  }
  if (inputs.empty()) {
    std::cerr << "rdmaconf: no capture files (*.pcap, *.pcapng, *.cap) under the given paths\n";
    return kExitUsage;
  }
  // One shard of a run split over machines: its share of the input files, balanced by size.
  const auto shard = reports::shard_from(shard_flag, err);
  if (!err.empty()) {
    std::cerr << "rdmaconf: " << reports::term_text(err) << "\n";
    return kExitUsage;
  }
  const std::uint64_t all_inputs = inputs.size();
  if (shard) {
    std::vector<std::uint64_t> sizes;
    for (const auto& in : inputs) {
      std::error_code ec;
      const auto n = fs::file_size(in, ec);
      sizes.push_back(ec ? 0 : n);
    }
    std::vector<std::string> mine;
    for (std::size_t k : reports::shard_items(sizes, inputs, *shard)) mine.push_back(inputs[k]);
    inputs = std::move(mine);
  }
  if (list_inputs) {
    for (const auto& in : inputs) std::cout << in << "\n";
    return 0;
  }

  conformance::CheckOptions opt;
  opt.case_patterns = cli::split_patterns(patterns);
  opt.strict = strict;
  opt.hash = !json_out.empty();  // only the JSON report carries it
  if (!no_hash_cache) opt.hash_cache = captures::io::HashCache::default_dir();
  opt.family_options = family_options;
  opt.reassembly.idle_timeout_us = static_cast<std::int64_t>(idle_timeout_s) * 1000000;
  opt.reassembly.max_total_bytes = static_cast<std::size_t>(reassembly_mib) << 20;
  opt.state_memory = state_mib << 20;
  const bool tty = isatty(STDERR_FILENO) && !quiet;
  std::string current;
  if (tty && jobs == 1) {  // several inputs at once would fight over one bar
    opt.progress = [&](std::uint64_t done, std::uint64_t total) {
      if (total < (64u << 20)) return;  // only large inputs get a bar
      const int pct = total ? static_cast<int>(100 * done / total) : 100;
      const int bar = pct / 4;
      std::cerr << fmt::format("\r{} [{:<25}] {:3}%", current, std::string(static_cast<std::size_t>(bar), '#'), pct)
                << (done >= total ? "\n" : "") << std::flush;
    };
  }
  // The reports are written as the check goes, each scope as it ends, so
  // that memory follows the open connections and not the capture's history.
  // They run on a thread of their own, so that writing overlaps checking.
  std::list<std::pair<reports::ReportFile, std::string>> files;  // each report's stream (writers hold it), and what it is
  std::unique_ptr<reports::ReportWriter> report;
  opt.on_scope = [&](const std::string&, conformance::ScopeResult&& s) {
    if (report) report->take(std::move(s));
  };
  conformance::Checker checker(opt);
  if (checker.active_cases().empty()) {
    std::cerr << "rdmaconf: no case matches --cases " << fmt::format("{}", fmt::join(opt.case_patterns, ",")) << "\n";
    return kExitUsage;
  }

  reports::RunInfo run{RDMACONF_VERSION, std::vector<std::string>(argv + 1, argv + argc), strict,
                       opt.case_patterns, checker.active_cases(), shard, all_inputs};
  run.base = reports::run_base(paths);
  run.junit_inconclusive_fails = junit_inconclusive == "failure";
  std::vector<std::unique_ptr<reports::ReportWriter>> writers;
  for (const auto& [path, what] : {std::pair{json_out, "JSON"}, std::pair{junit_out, "JUnit"}}) {
    if (path.empty()) continue;
    files.emplace_back(std::piecewise_construct, std::forward_as_tuple(),
                       std::forward_as_tuple(fmt::format("{} report {}", what, path)));
    if (!open_report(files.back().first, path, what)) return kExitUsage;
    writers.push_back(what == std::string_view("JSON") ? reports::json_writer(files.back().first, run)
                                                      : reports::junit_writer(files.back().first, run));
  }
  if (!quiet) writers.push_back(reports::summary_writer(std::cout, verbose));
  if (!writers.empty()) report = reports::in_background(std::move(writers));

  reports::Totals t;
  try {
    rdmaconf::cli::CheckInputsOptions how;
    how.jobs = jobs;
    how.heavy_reports = !json_out.empty() || !junit_out.empty();
    if (jobs == 1) how.on_start = [&](const std::string& in) { current = in; };
    t = rdmaconf::cli::check_inputs(opt, inputs, how, report.get(), std::cerr);
    if (report) report->end(t);
  } catch (const std::exception& e) {  // a report's temporary file could not be made
    std::cerr << "rdmaconf: " << reports::term_text(e.what()) << "\n";
    return kExitUsage;
  }
  bool ok = true;
  for (auto& [f, what] : files) {
    f.close();
    if (!f) {
      std::cerr << fmt::format("rdmaconf: writing the {} failed\n", what);
      ok = false;
    }
  }
  if (t.input_errors || !ok) return kExitUsage;
  return t.fail ? kExitFail : 0;
}

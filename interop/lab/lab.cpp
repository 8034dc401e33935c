#include "interop/lab/lab.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/checker.hpp"
#include "interop/lab/device.hpp"
#include "interop/lab/network.hpp"
#include "interop/lab/peers.hpp"
#include "reports/report.hpp"

namespace rdmaconf::interop::lab {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

}  // namespace


std::string connection_suffix(unsigned k) { return k ? std::to_string(k + 1) : std::string(); }

std::string guest_plan(const std::vector<Cell>& cells, const DeviceProfile* device) {
  std::string plan = device ? "# written by rdmaconf lab run; executed on the test host by lab-dut (interop/lab/dut.sh)\n"
                            : "# written by rdmaconf lab run; executed by lab-guest (interop/lab/guest.sh)\n";
  std::string loaded;  // the line that loaded the kernel peer the guest has now (the device's configuration)
  for (const auto& c : cells) {
    if (std::string load = device ? configure_line(*device, c) : c.peer->load(c); load != loaded) {
      plan += load + "\n";
      loaded = std::move(load);
    }
    c.peer->plan(c, plan);
  }
  return plan;
}

namespace {
// A cell with a planted fault: each case the fault must FAIL that passed is
// a problem; returns the cases that FAIL beyond those.
std::vector<std::string> planted_fault_problems(const CellOutcome& o, std::vector<std::string>& problems) {
  for (const auto& want : o.required_failures)
    if (std::find(o.failed_cases.begin(), o.failed_cases.end(), want) == o.failed_cases.end())
      problems.push_back(fmt::format("the checker did not find the planted fault ({} passes)", want));
  std::vector<std::string> extra;
  for (const auto& f : o.failed_cases)
    if (std::find(o.required_failures.begin(), o.required_failures.end(), f) == o.required_failures.end())
      extra.push_back(f);
  return extra;
}
}  // namespace

namespace {
// What our RoCE engine counted of losses and repeats, for the reason of a
// red cell: a loaded host shows there first (datagrams the guest kernel
// dropped, requests seen twice, gaps, what it refused).
std::string our_account(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("counters") || !j["counters"].is_object()) return {};
  const auto& k = j["counters"];
  std::vector<std::string> seen;
  for (const auto& [key, words] : {std::pair{"kernel_dropped_datagrams", "datagrams dropped by the kernel (socket buffer full)"},
                                   std::pair{"duplicates", "repeated requests"},
                                   std::pair{"dropped_sequence", "packets out of sequence"},
                                   std::pair{"naks_sent", "NAKs sent"}, std::pair{"timeouts", "timeouts"},
                                   std::pair{"retransmitted", "packets retransmitted"}})
    if (const auto n = k.value(key, std::uint64_t{0}); n != 0) seen.push_back(fmt::format("{} {}", n, words));
  std::string out = seen.empty() ? std::string() : fmt::format("; our engine counted {}", fmt::join(seen, ", "));
  if (const auto& r = j.value("refusals", nlohmann::json::array()); r.is_array() && !r.empty() && r[0].is_object())
    out += fmt::format("; first refusal: {} at PSN {} ({})", r[0].value("what", std::string()),
                       r[0].value("psn", std::uint64_t{0}), r[0].value("why", std::string()));
  return out;
}
}  // namespace

Verdict judge(const Cell& c, const CellOutcome& o) {
  std::vector<std::string> problems;
  const bool initiator = c.our_role == "initiator";
  const auto& j = o.ours;
  const std::string our_msg = j.is_object() ? j.value("message", std::string()) : std::string();
  const bool ours_ok = j.is_object() && (initiator ? j.value("verdict", "") == "PASS" : j.value("ok", false));
  const auto fails = fmt::format("{}", fmt::join(o.failed_cases, ", "));

  Verdict v;
  if (c.our_role == "none") {
    if (!o.finished) problems.push_back("the cell did not finish within the lab's time limit");
    if (!o.check_error.empty()) problems.push_back(fmt::format("the capture could not be checked: {}", o.check_error));
    for (const auto& [who, rc] : {std::pair{"server", o.server_rc}, std::pair{"client", o.program_rc}})
      if (rc.value_or(-1) != 0)
        problems.push_back(fmt::format("the {} exited with status {}", who, rc ? std::to_string(*rc) : "unknown"));
    if (o.check_fail) problems.push_back(fmt::format("the capture FAILs {}", fails));
    v.color = problems.empty() ? "green" : "red";
    v.reason = problems.empty() ? c.why : fmt::format("{}", fmt::join(problems, "; "));
  } else if (!o.finished) {
    v.color = "red";
    v.reason = "the cell did not finish within the lab's time limit";
  } else if (!o.check_error.empty()) {
    v.color = "red";
    v.reason = fmt::format("the capture could not be checked: {}", o.check_error);
  } else if (j.is_null()) {
    v.color = "red";
    v.reason = "our engine left no result";
  } else if (initiator && j.value("verdict", "") == "SKIP") {
    v.color = "skipped";
    v.reason = our_msg;
  } else {
    switch (c.expect) {
      case Expect::data: {
        if (!ours_ok)
          problems.push_back(fmt::format("our {}: {}", c.our_role, our_msg.empty() ? "failed" : our_msg));
        if (o.program_rc.value_or(-1) != 0)
          problems.push_back(fmt::format("{}'s {} exited with status {}{}", c.kernel, c.program,
                                         o.program_rc ? std::to_string(*o.program_rc) : "unknown",
                                         o.program_err.empty() ? "" : ": " + o.program_err));
        if (ours_ok && j.contains("negotiated") && j["negotiated"].value("crc", false) != c.expect_crc)
          problems.push_back(fmt::format("CRC {} but it must be {} ({})", j["negotiated"].value("crc", false) ? "on" : "off",
                                         c.expect_crc ? "on" : "off", kCrcRule));
        // Our responder to perftest's SENDs counts them: every one must land
        // (over UD a lost SEND shows only here).
        if (!initiator && j.contains("received") &&
            (j.value("received", 0ull) != c.iterations ||
             j.value("received_octets", 0ull) != std::uint64_t{c.iterations} * c.size))
          problems.push_back(fmt::format("our responder received {} SENDs ({} octets) of {} x {}",
                                         j.value("received", 0ull), j.value("received_octets", 0ull), c.iterations,
                                         c.size));
        // A fault whose drop only the peer's device counts: its counter must
        // rise by exactly one during our run.
        if (const auto counter = c.peer->port_counter(c)) {
          if (!o.port_counter_rise)
            problems.push_back(fmt::format("{}'s port counter {} could not be read before and after our run", c.kernel, *counter));
          else if (*o.port_counter_rise != 1)
            problems.push_back(fmt::format("{}'s port counter {} rose by {} during our run; the one packet it must drop "
                                           "raises it by one", c.kernel, *counter, *o.port_counter_rise));
        }
        // A planted fault (rxe cells) must FAIL its cases and nothing else.
        if (const auto extra = planted_fault_problems(o, problems); !extra.empty())
          problems.push_back(fmt::format("the capture FAILs {}", fmt::join(extra, ", ")));
        break;
      }
      case Expect::reject: {
        const bool refused = initiator ? our_msg.find("rejected the connection") != std::string::npos
                                       : !ours_ok && o.program_rc.value_or(0) != 0;
        if (!refused)
          problems.push_back(ours_ok ? "the connection was accepted and used"
                                     : fmt::format("the connection failed otherwise: {}", our_msg));
        if (o.check_fail) problems.push_back(fmt::format("the capture FAILs {}", fails));
        break;
      }
      case Expect::terminate:
      case Expect::close: {
        if (!ours_ok) problems.push_back(our_msg.empty() ? "no reaction seen" : our_msg);
        const auto extra = planted_fault_problems(o, problems);
        if (!extra.empty() && !o.framing_lost)
          problems.push_back(fmt::format("the capture also FAILs {}", fmt::join(extra, ", ")));
        // A Terminate whose nibbles read the other way round is worth naming.
        if (const auto want = c.peer->required_terminate(c);
            want && j.contains("terminate_received") && j["terminate_received"].is_object()) {
          const auto& t = j["terminate_received"];
          const unsigned layer = t.value("layer", 99u), type = t.value("type", 99u);
          if (layer != type && layer == want->second && type == want->first)
            problems.push_back("read with Layer and EType exchanged it would be the required one");
        }
        break;
      }
    }
    v.color = problems.empty() ? "green" : "red";
    v.reason = problems.empty() ? c.why : fmt::format("{}", fmt::join(problems, "; "));
  }
  if (v.color == "red") v.reason += our_account(j);
  if (!o.kernel_trouble.empty()) {
    v.color = "red";
    v.reason = fmt::format("the guest kernel logged \"{}\"; {}", o.kernel_trouble, v.reason);
  }
  // The device under test could not be reached, or something the cell
  // started there outlived it: nothing of the device's own conduct explains that.
  if (!o.dut_error.empty()) {
    v.color = "red";
    v.reason = fmt::format("the device under test: {}; {}", o.dut_error, v.reason);
    // A process the device's kernel left stuck after the BUG it logged is
    // that kernel's doing: the cell is judged on the rest.
    if (o.kernel_trouble.empty() || o.dut_error.find("still running on the device") != 0) {
      v.regression = true;
      return v;
    }
  }
  if (v.color == "red") {
    bool explained = !c.known_finding.empty();
    for (const auto& f : o.failed_cases)
      explained &= o.framing_lost || std::count(c.finding_cases.begin(), c.finding_cases.end(), f) ||
                   std::count(o.required_failures.begin(), o.required_failures.end(), f);
    if (c.our_role == "none") explained &= o.server_rc == 0 && o.program_rc == 0;
    if (c.finding_capture_only) explained &= (c.our_role == "none" || ours_ok) && o.program_rc == 0;
    explained &= o.finished && o.check_error.empty();
    if (explained)
      v.reason = fmt::format("{} finding: {} (seen: {}; required: {})", c.kernel, c.known_finding, v.reason, c.why);
    else
      v.regression = true;
  }
  return v;
}

namespace {

// Our own executable and the shared libraries it loads, for the guest.
bool stage_engine(const fs::path& dir, std::ostream& log) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return log << "lab: cannot find our own executable\n", false;
  fs::copy_file(self, dir / "rdmaconf", fs::copy_options::overwrite_existing, ec);
  if (ec) return log << fmt::format("lab: cannot copy {}: {}\n", self.string(), ec.message()), false;
  FILE* p = ::popen(fmt::format("ldd {}", shell_quote(self.string())).c_str(), "r");
  if (!p) return log << "lab: cannot run ldd\n", false;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    std::string l(line);
    const auto slash = l.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = l.substr(slash, l.find_first_of(" \n", slash) - slash);
    fs::copy_file(path, dir / fs::path(path).filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) {
      ::pclose(p);
      return log << fmt::format("lab: cannot copy {}: {}\n", path, ec.message()), false;
    }
  }
  ::pclose(p);
  return fs::exists(dir / "ld-linux-x86-64.so.2") || (log << "lab: ldd named no ld-linux-x86-64.so.2\n", false);
}

// A cell's command line as a capture's manifest shows it: our engine, run
// through the loader it was staged with (the guest's copy in /tmp/engine,
// or the shared folder's), as plain "rdmaconf ARGS".
std::string engine_command(const std::string& cmd) {
  for (const std::string_view dir : {"/tmp/engine/", "/share/engine/"}) {
    const std::string self = fmt::format(" {}rdmaconf", dir);
    if (cmd.starts_with(dir) && cmd.find(self) != std::string::npos)
      return "rdmaconf" + cmd.substr(cmd.find(self) + self.size());
  }
  return cmd;
}

// Runs a shell command; its exit status (or -1).
int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

// A counter's value in `ibv_devinfo -v` output ("\t\t\tbad_pkey_cntr:\t\t0x0").
std::optional<std::uint64_t> port_counter_value(const std::string& devinfo, const std::string& counter) {
  const auto at = devinfo.find(counter + ":");
  if (at == std::string::npos) return std::nullopt;
  const char* p = devinfo.c_str() + at + counter.size() + 1;
  char* end = nullptr;
  const auto v = std::strtoull(p, &end, 0);
  return end == p ? std::nullopt : std::optional<std::uint64_t>(v);
}

CellOutcome collect(const Cell& c, const fs::path& dir, const conformance::Checker& checker,
                    const reports::RunInfo& run) {
  CellOutcome o;
  o.finished = fs::exists(dir / "finished");
  const bool initiator = c.our_role == "initiator";
  if (c.our_role == "none") {
    o.ours = nullptr;
  } else if (initiator) {
    // Several connections: the first that failed speaks for the cell.
    for (unsigned k = 0; k < c.connections; ++k) {
      const std::string n = connection_suffix(k);
      auto j = nlohmann::json::parse(read_text(dir / ("our" + n + ".json")), nullptr, false);
      if (const std::string rc = read_text(dir / ("peer" + n + ".rc")); !rc.empty() && o.program_rc.value_or(0) == 0) {
        o.program_rc = std::atoi(rc.c_str());
        o.program_err = last_line(read_text(dir / ("peer" + n + ".err")));
      }
      const bool passed = !j.is_discarded() && j.value("verdict", "") == "PASS";
      if (c.connections > 1 && !j.is_discarded())
        j["message"] = fmt::format("connection {} of {}: {}", k + 1, c.connections, j.value("message", ""));
      if (k == 0 || !passed) o.ours = j;
      if (!passed) break;
    }
  } else {
    const std::string first = read_text(dir / "our.out");
    o.ours = nlohmann::json::parse(first.substr(0, first.find('\n')), nullptr, false);
  }
  if (o.ours.is_discarded()) o.ours = nullptr;
  // The kernel peer's program is "peer" in the plan, whichever role it has.
  if (!initiator) {
    if (const std::string rc = read_text(dir / "peer.rc"); !rc.empty()) o.program_rc = std::atoi(rc.c_str());
    o.program_err = last_line(read_text(dir / "peer.err"));
  }
  if (const std::string rc = read_text(dir / "srv.rc"); !rc.empty()) o.server_rc = std::atoi(rc.c_str());
  // The kernel log the cell collected, or what the console printed when the
  // device stopped answering (dut.sh's console.txt).
  for (const char* log_file : {"dmesg.txt", "console.txt"}) {
    std::istringstream kernel_log(read_text(dir / log_file));
    for (std::string line; o.kernel_trouble.empty() && std::getline(kernel_log, line);)
      for (const char* bad : {"kernel BUG", "Oops", "general protection fault", "WARNING: CPU", "BUG: ", "Kernel panic"})
        if (line.find(bad) != std::string::npos) {
          o.kernel_trouble = line.substr(line.find(']') == std::string::npos ? 0 : line.find(']') + 2);
          break;
        }
  }
  {
    std::istringstream dut(read_text(dir / "dut-error"));
    for (std::string line; std::getline(dut, line);)
      if (!line.empty()) o.dut_error += (o.dut_error.empty() ? "" : "; ") + line;
  }
  o.required_failures = planted_failures(c);
  o.framing_lost = c.peer->framing_lost(c);
  if (const auto counter = c.peer->port_counter(c)) {
    const auto before = port_counter_value(read_text(dir / "counters-before.txt"), *counter);
    const auto after = port_counter_value(read_text(dir / "counters-after.txt"), *counter);
    if (before && after) o.port_counter_rise = static_cast<std::int64_t>(*after) - static_cast<std::int64_t>(*before);
  }
  const fs::path pcap = dir / "wire.pcap";
  if (!fs::exists(pcap)) {
    o.check_error = "no capture";
    return o;
  }
  const auto r = checker.check_file(pcap.string());
  if (!r.error.empty()) o.check_error = r.error;
  std::set<std::string> failed;
  for (const auto& s : r.scopes)
    for (const auto& oc : s.outcomes) {
      if (oc.tally.failed()) failed.insert(std::string(oc.info->id));
      o.check_pass += oc.tally.checked() - oc.tally.failed();
      o.check_fail += oc.tally.failed();
      o.check_inconclusive += oc.tally.inconclusive_count();
    }
  o.failed_cases.assign(failed.begin(), failed.end());
  std::ofstream(dir / "check.json") << reports::to_json(run, {r}).dump(2) << "\n";
  return o;
}

// A cell's capture with a manifest: how it was made, and what the checker
// must find in it. The expected FAILs come from the cell's definition (the
// planted fault, the siw finding), not from the check of the capture.
void export_capture(const Cell& c, const CellOutcome& oc, const Verdict& v, const fs::path& dir, const fs::path& to,
                    const std::string& kernel, std::ostream& log) {
  std::error_code ec;
  fs::create_directories(to, ec);
  const std::string name = "lab-" + c.id.substr(c.id.find('.') + 1);  // drop the "siw." / "rxe." prefix
  fs::copy_file(dir / "wire.pcap", to / (name + ".pcap"), fs::copy_options::overwrite_existing, ec);
  if (ec) {
    log << fmt::format("lab: cannot export {}: {}\n", c.id, ec.message());
    return;
  }
  nlohmann::json must_fail = nlohmann::json::object();
  for (const auto& f : oc.required_failures)
    must_fail[f] = fmt::format("the planted fault ({})", c.fault.empty() ? c.scenario : c.fault);
  for (const auto& f : c.finding_cases) must_fail[f] = fmt::format("{} finding: {}", c.kernel, c.known_finding);
  nlohmann::json programs = nlohmann::json::object();
  for (const char* p : {"peer", "srv", "our"})
    if (const std::string cmd = last_line(read_text(dir / (std::string(p) + ".cmd"))); !cmd.empty())
      programs[p] = engine_command(cmd);
  const auto [setup_key, setup] = c.peer->manifest_setup(c);
  const nlohmann::json m = {
      {"capture", name + ".pcap"},
      {"made_by", fmt::format("rdmaconf lab run (interop/lab, docs/lab.md): a qemu guest, tcpdump on the veth {} is attached to", c.kernel)},
      {"cell", c.id},
      {"kernel", kernel},
      {setup_key, setup},
      {"our_role", c.our_role},
      {"programs", programs},
      {"description", c.why},
      {"lab_verdict", v.color},
      {"must_fail", must_fail},
      {"others", "no other case may FAIL"}};
  std::ofstream(to / (name + ".manifest.json")) << m.dump(2) << "\n";
}

}  // namespace

std::string_view family_of(const Cell& c) { return c.peer->family; }

std::string provoked_scenario(const Cell& c) { return c.peer->provoked(c); }

std::vector<std::string> planted_failures(const Cell& c) { return c.peer->planted_failures(c); }

std::vector<Cell> cells_to_run(const LabOptions& o, std::uint64_t* in_all_shards, const DeviceProfile* device,
                               std::vector<std::pair<std::string, std::string>>* not_run) {
  // Cells named by id (--cell) are taken whether or not they belong to the sweep.
  auto cells = select_cells(read_cells(o.cells_file.empty() ? default_cells_file(o.lab_dir) : fs::path(o.cells_file)),
                            o.sweep || !o.cell_ids.empty(), o.scenarios);
  for (const auto& id : o.cell_ids)
    if (std::none_of(cells.begin(), cells.end(), [&](const Cell& c) { return c.id == id; }))
      throw CellsError(fmt::format("--cell {}: no such cell{} (rdmaconf lab run --sweep --list lists them)", id,
                                   o.scenarios.empty() ? "" : " among the --scenario cells"));
  // --findings: the cells that reproduce a finding (the sweep's only with
  // --sweep), with those --cell names.
  if (!o.cell_ids.empty() || o.findings)
    std::erase_if(cells, [&](const Cell& c) {
      const bool named = std::find(o.cell_ids.begin(), o.cell_ids.end(), c.id) != o.cell_ids.end();
      return !named && !(o.findings && !c.finding.empty() && (o.sweep || !c.sweep));
    });
  if (o.peer != "all") std::erase_if(cells, [&](const Cell& c) { return c.kernel != o.peer; });
  if (device)
    std::erase_if(cells, [&](const Cell& c) {
      const std::string why = cannot_run(*device, c);
      if (!why.empty() && not_run) not_run->emplace_back(c.id, why);
      return !why.empty();
    });
  if (in_all_shards) *in_all_shards = cells.size();
  if (!o.shard) return cells;
  std::vector<std::string> ids;
  for (const auto& c : cells) ids.push_back(c.id);
  std::vector<Cell> mine;
  for (std::size_t k : reports::shard_items(std::vector<std::uint64_t>(cells.size(), 1), ids, *o.shard))
    mine.push_back(std::move(cells[k]));
  return mine;
}

namespace {

// Boots the guest once for CELLS (their plan in OUT/plan.sh; the guest
// writes OUT/cells/<id>/ and OUT/guest.log) and adds the time it took to
// SECONDS. False when the guest never ran its plan.
bool run_guest(const fs::path& lab, const fs::path& out, const std::vector<Cell>& cells, double& seconds,
               std::ostream& log) {
  std::error_code ec;
  std::ofstream(out / "plan.sh") << guest_plan(cells);
  fs::remove(out / "guest.log", ec);

  // One boot for every cell; the guest has no network device at all.
  // tsc=reliable: under TCG on a busy host the clocksource watchdog may call
  // the TSC unstable mid-run, and the kernel's live code patching that
  // follows was seen to panic the guest (int3 Oops in sched_clock_cpu). The
  // emulated TSC comes from the host's clock on every vCPU alike.
  const unsigned limit = 120 + kCellBudgetS * static_cast<unsigned>(cells.size());
  log << fmt::format("lab: booting the guest for {} cells (at most {} s)\n", cells.size(), limit);
  // Under TCG the guest kernel now and then dies while it boots or soon
  // after (an int3 Oops from its live code patching: before init runs, or
  // when the random generator becomes ready some 8 s in and flips its static
  // keys while the first cell starts). When no cell has finished, nothing of
  // the plan is lost: the boot is tried again, at most twice more.
  constexpr int kBootAttempts = 3;
  const auto boot0 = std::chrono::steady_clock::now();
  for (int attempt = 1; attempt <= kBootAttempts; ++attempt) {
    const int qrc = shell(fmt::format(
        "timeout -k 10 {} qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nographic -no-reboot -serial stdio "
        "-monitor none -nic none -kernel {} -initrd {} -append 'console=ttyS0 quiet panic=-1 tsc=reliable' "
        "-fsdev local,id=share,path={},security_model=none -device virtio-9p-pci,fsdev=share,mount_tag=share "
        "> {} 2>&1",
        limit, shell_quote((lab / "vmlinuz").string()), shell_quote((lab / "initrd.img").string()),
        shell_quote(out.string()), shell_quote((out / "console.log").string())));
    if (qrc != 0) log << fmt::format("lab: qemu exited with status {} (console: {})\n", qrc, (out / "console.log").string());
    if (attempt == kBootAttempts) break;
    const bool ran_plan = fs::exists(out / "guest.log");
    bool cell_finished = false;
    for (const auto& c : cells) cell_finished = cell_finished || fs::exists(out / "cells" / c.id / "finished");
    if (cell_finished || (ran_plan && read_text(out / "console.log").find("Kernel panic") == std::string::npos)) break;
    const fs::path kept = out / fmt::format("console-boot{}.log", attempt);
    fs::rename(out / "console.log", kept, ec);
    if (ran_plan) fs::rename(out / "guest.log", out / fmt::format("guest-boot{}.log", attempt), ec);
    fs::remove_all(out / "cells", ec);
    log << fmt::format("lab: the guest died before {} (boot {} of {}, console kept as {}); booting again\n",
                       ran_plan ? "any cell finished" : "it ran its plan", attempt, kBootAttempts, kept.string());
  }
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - boot0).count();
  return fs::exists(out / "guest.log");
}

// Runs CELLS' plan on this host against the device under test (OUT/plan.sh,
// executed by interop/lab/dut.sh; the cells' folders in OUT/cells, its log in
// OUT/guest.log) and adds the time it took to SECONDS. False when the device
// could not be reached at all.
bool run_dut(const fs::path& lab_dir, const fs::path& out, const Dut& dut, const DeviceProfile& p, const LabOptions& o,
             const std::vector<Cell>& cells, double& seconds, std::ostream& log) {
  std::error_code ec;
  std::ofstream(out / "plan.sh") << guest_plan(cells, &p);
  fs::create_directories(out / "cells", ec);
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  // dut.sh gives these words to ssh as they are (run_dut's caller refused
  // any with a space or a quote).
  std::vector<std::string> words;
  if (!o.ssh_config.empty()) words.insert(words.end(), {"-F", fs::absolute(o.ssh_config).string()});
  if (!o.ssh_identity.empty()) words.insert(words.end(), {"-i", fs::absolute(o.ssh_identity).string()});
  for (const auto& opt : o.ssh_options) words.insert(words.end(), {"-o", opt});
  if (!dut.port.empty()) words.insert(words.end(), {"-p", dut.port});
  const std::string ssh_opts = fmt::format("{}", fmt::join(words, " "));
  const std::pair<const char*, std::string> env[] = {
      {"DUT", dut.kind == Dut::Kind::local ? "local" : dut.destination},
      {"DUT_SSH", o.ssh},
      {"DUT_SSH_OPTS", ssh_opts},
      {"OUT", (out / "cells").string()},
      {"DUT_INFO", out.string()},
      {"ENGINE", self.string()},
      {"DUT_ADDR", p.address},
      {"OUR_ADDR", o.our_addr},
      {"OUR_IFACE", o.our_iface},
      {"DUT_DEV", p.device},
      {"DUT_GID_OPT", p.gid_index ? fmt::format("-x {}", *p.gid_index) : std::string()},
      {"CELL_TIMEOUT", std::to_string(kDutCellTimeoutS)},
      {"DUT_KERNEL_LOG", p.kernel_log},
      {"DUT_RECOVER", o.dut_recover},
      {"DUT_CONSOLE", o.dut_console.empty() ? std::string() : fs::absolute(o.dut_console).string()}};
  std::string cmd = "env";
  for (const auto& [k, v] : env) cmd += fmt::format(" {}={}", k, shell_quote(v));
  // Every cell is bounded on its own (its programs' deadline, the grace of
  // finish, each SSH exchange); this bounds the whole on top.
  unsigned connections = 0;
  for (const auto& c : cells) connections += c.connections;
  const unsigned limit = 300 + (kDutCellTimeoutS + 120) * connections;
  log << fmt::format("lab: running {} cells against {} ({}, profile {}) from {} on {} (at most {} s)\n", cells.size(),
                     dut.text(), p.device, p.name, o.our_addr, o.our_iface, limit);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = shell(fmt::format("timeout -k 10 {} {} sh {} {} >> {} 2>&1", limit, cmd,
                                   shell_quote((lab_dir / "dut.sh").string()), shell_quote((out / "plan.sh").string()),
                                   shell_quote((out / "guest.log").string())));
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc == 3) log << fmt::format("lab: {}\n", last_line(read_text(out / "guest.log")));
  else if (rc != 0) log << fmt::format("lab: the plan ended with status {} (log: {})\n", rc, (out / "guest.log").string());
  return rc != 3;
}

// What the device under test said of itself (OUT/device.txt, written by
// dut.sh: "key value" lines), with the profile's description.
nlohmann::json describe_device(const fs::path& out, const Dut& dut, const DeviceProfile& p) {
  nlohmann::json d = {{"dut", dut.text()},        {"profile", p.name},     {"profile_file", p.file},
                      {"title", p.title},         {"tested_profile", p.tested}, {"driver", p.driver},
                      {"device", p.device},       {"netdev", p.netdev},    {"address", p.address},
                      {"firmware", nullptr},      {"kernel", nullptr}};
  std::istringstream in(read_text(out / "device.txt"));
  for (std::string line; std::getline(in, line);) {
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp + 1 >= line.size()) continue;
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    if (key == "kernel" || key == "host" || key == "hca_type" || key == "node_desc") d[key] = value;
    else if (key == "fw_ver") d["firmware"] = value;
    else if (key == "driver") d["driver_bound"] = value;
  }
  // Each time the device stopped answering and --dut-recover brought it back (dut.sh's recover.log).
  const std::string recoveries = read_text(out / "recover.log");
  const auto lines = [&](std::string_view start) {
    unsigned n = 0;
    for (std::size_t at = 0; (at = recoveries.find(start, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  d["recoveries"] = {{"tried", lines("== recovery ")}, {"recovered", lines("\nrecovered after ")}};
  return d;
}

}  // namespace

int run(const LabOptions& o, std::ostream& log) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!find_peer(o.peer) && o.peer != "all") {
    log << fmt::format("lab: unknown peer '{}' ({} or all)\n", o.peer, peer_names());
    return 2;
  }
  // A device under test: its driver and its profile.
  std::string dut_err;
  const auto dut = parse_dut(o.dut, dut_err);
  if (!dut) return log << "lab: " << dut_err << "\n", 2;
  const bool on_device = dut->kind != Dut::Kind::guest;
  std::optional<DeviceProfile> profile;
  if (on_device || !o.profile.empty()) {
    if (!on_device) return log << "lab: --profile describes a device under test; give --dut local or ssh://USER@HOST\n", 2;
    if (o.profile.empty()) return log << "lab: --dut needs --profile (a name in LAB_DIR/profiles or a file)\n", 2;
    // dut.sh hands these to ssh as single words.
    std::vector<std::string> ssh_words = o.ssh_options;
    ssh_words.insert(ssh_words.end(), {o.ssh_config, o.ssh_identity});
    for (const auto& w : ssh_words)
      if (w.find_first_of(" \t\n'\"\\$`") != std::string::npos)
        return log << fmt::format("lab: ssh argument \"{}\": no spaces, quotes or shell characters\n", w), 2;
    if (o.our_iface.empty() || o.our_addr.empty())
      return log << "lab: --dut needs --our-iface and --our-addr: the test host's interface that faces the device, and its "
                    "address\n",
             2;
    try {
      profile = read_profile(o.profile, o.lab_dir);
    } catch (const ProfileError& e) {
      return log << "lab: " << e.what() << "\n", 2;
    }
  }
  std::vector<Cell> cells;
  std::vector<std::pair<std::string, std::string>> not_run;
  std::uint64_t in_all_shards = 0;
  try {
    cells = cells_to_run(o, &in_all_shards, profile ? &*profile : nullptr, &not_run);
  } catch (const CellsError& e) {
    log << "lab: " << e.what() << "\n";
    return 2;
  }
  if (!not_run.empty()) {
    std::map<std::string, unsigned> why;
    for (const auto& [id, reason] : not_run) ++why[reason];
    log << fmt::format("lab: {} cells the device cannot run (listed in the report):\n", not_run.size());
    for (const auto& [reason, n] : why) log << fmt::format("  {:>3} {}\n", n, reason);
  }
  if (cells.empty()) {
    log << (profile ? "lab: the profile allows none of the requested cells\n" : "lab: no cell matches the requested scenarios\n");
    return 2;
  }
  const fs::path lab_dir = o.lab_dir;
  const fs::path out = fs::absolute(o.out_dir);
  std::error_code ec;
  if (!fs::exists(lab_dir / (on_device ? "dut.sh" : "build.sh"), ec))
    return log << fmt::format("lab: the lab scripts are not in {} (no {}); give --lab-dir or set RDMACONF_LAB_DIR "
                              "to interop/lab of the source tree or share/rdmaconf/lab of an installation\n",
                              lab_dir.string(), on_device ? "dut.sh" : "build.sh"),
           2;
  double boot_s = 0;
  fs::path lab;
  // Runs cells' plan where their device side lives: the guest (one boot) or the device under test.
  const auto run_cells = [&](const std::vector<Cell>& which) {
    return on_device ? run_dut(lab_dir, out, *dut, *profile, o, which, boot_s, log) : run_guest(lab, out, which, boot_s, log);
  };
  // A device under test is not booted afresh for a second attempt: the
  // cells known to upset a kernel (run_last) run after the second attempts
  // of the rest, and get none themselves.
  std::vector<Cell> first_pass, deferred;
  for (const auto& c : cells) (on_device && c.run_last && !o.judge_only ? deferred : first_pass).push_back(c);
  const auto is_deferred = [&](const Cell& c) {
    return std::any_of(deferred.begin(), deferred.end(), [&](const Cell& d) { return d.id == c.id; });
  };
  if (o.judge_only) {
    lab = last_line(read_text(out / "lab-path.txt"));
    for (const auto& c : cells)
      if (!fs::is_directory(out / "cells" / c.id, ec))
        return log << fmt::format("lab: {} holds no cell {} to judge\n", (out / "cells").string(), c.id), 2;
  } else {
    fs::remove_all(out / "cells", ec);
    fs::remove_all(out / "first-attempt", ec);
    fs::create_directories(out, ec);
    if (ec) return log << fmt::format("lab: cannot create {}: {}\n", out.string(), ec.message()), 2;
    if (on_device) {
      fs::remove(out / "guest.log", ec);
      fs::remove(out / "recover.log", ec);
      if (!first_pass.empty() && !run_cells(first_pass))
        return log << fmt::format("lab: the device under test ({}) could not be reached\n", dut->text()), 2;
    } else {
      // Build (or reuse) the lab for the kernel asked for.
      const fs::path kfile = kernel_file(lab_dir, o.kernel);
      if (kfile.empty())
        return log << fmt::format("lab: no kernel file for --kernel {} (a name in {}: {}; or a path to a .kernel file; "
                                  "without --kernel, exactly one file there says default: yes)\n",
                                  o.kernel.empty() ? "(default)" : o.kernel, (lab_dir / "kernels").string(), kernel_names(lab_dir)),
               2;
      const fs::path lab_path_file = out / "lab-path.txt";
      if (shell(fmt::format("bash {} {} > {}", shell_quote((lab_dir / "build.sh").string()), shell_quote(kfile.string()),
                            shell_quote(lab_path_file.string()))) != 0)
        return log << "lab: building the lab failed (see above)\n", 2;
      lab = last_line(read_text(lab_path_file));
      if (!fs::exists(lab / "vmlinuz")) return log << fmt::format("lab: {} holds no kernel\n", lab.string()), 2;
      if (!stage_engine(out / "engine", log)) return 2;
      if (!run_cells(cells)) {
        fs::remove_all(out / "engine", ec);
        return log << "lab: the guest never ran its plan\n", 2;
      }
    }
  }

  conformance::CheckOptions co;
  co.hash = true;
  // Every RoCE device of the guest sits on a veth of MTU 1500, so rxe's
  // active path MTU is 1024 (what perftest and rdma_cm use there); a device
  // under test's profile names its own.
  co.family_options["--roce-mtu"] = {profile && profile->knobs.contains("roce_mtu")
                                         ? profile->knobs["roce_mtu"].get<std::uint64_t>()
                                         : kLabRoceMtu};
  const conformance::Checker checker(co);
  const reports::RunInfo run{"lab", {"lab", "run"}, false, {}, checker.active_cases()};
  std::vector<CellOutcome> outcomes;
  std::vector<Verdict> verdicts;
  std::vector<Cell> again;
  for (const auto& c : cells) {
    if (is_deferred(c)) {
      outcomes.emplace_back();
      verdicts.emplace_back();
      continue;
    }
    outcomes.push_back(collect(c, out / "cells" / c.id, checker, run));
    verdicts.push_back(judge(c, outcomes.back()));
    if (verdicts.back().regression) again.push_back(c);
  }
  // A red cell with no known cause runs once more in a fresh boot before it
  // counts as a regression: siw and perftest between two kernel peers now and
  // then hang or die on their own (seen in CI: ib_write_bw between two siw
  // devices, its server exiting 1 and its client killed, green before and
  // after). The
  // first attempt stays in DIR/first-attempt/<id> and in the cell's report;
  // a cell red on both attempts is a regression. Many red cells are no
  // flake, and are not run again.
  if (!o.judge_only && !again.empty() && again.size() <= kMaxCellsRunAgain) {
    log << fmt::format("lab: {} cell(s) red with no known cause; running them once more {}\n", again.size(),
                       on_device ? "against the device" : "in a fresh boot");
    const fs::path first = out / "first-attempt";
    fs::remove_all(first, ec);
    fs::create_directories(first, ec);
    for (const char* f : {"guest.log", "console.log"}) fs::rename(out / f, first / f, ec);
    fs::rename(out / "cells", out / "cells-all", ec);
    const bool ran_again = run_cells(again);
    for (const auto& c : again) {
      fs::rename(out / "cells-all" / c.id, first / c.id, ec);
      if (ran_again) fs::rename(out / "cells" / c.id, out / "cells-all" / c.id, ec);
    }
    fs::remove_all(out / "cells", ec);
    fs::rename(out / "cells-all", out / "cells", ec);
    for (std::size_t k = 0; k < cells.size(); ++k) {
      if (!verdicts[k].regression) continue;
      const std::string first_reason = verdicts[k].reason;
      outcomes[k] = collect(cells[k], out / "cells" / cells[k].id, checker, run);
      verdicts[k] = judge(cells[k], outcomes[k]);
      verdicts[k].first_attempt = first_reason;
    }
  }
  if (!deferred.empty()) {
    log << fmt::format("lab: {} cell(s) known to upset a kernel, last\n", deferred.size());
    run_cells(deferred);
    for (std::size_t k = 0; k < cells.size(); ++k)
      if (is_deferred(cells[k])) {
        outcomes[k] = collect(cells[k], out / "cells" / cells[k].id, checker, run);
        verdicts[k] = judge(cells[k], outcomes[k]);
      }
  }
  fs::remove_all(out / "engine", ec);

  // The device each cell ran against: the device under test as it described
  // itself, or the guest's kernel peer.
  const std::string kernel = on_device ? std::string() : last_line(read_text(out / "kernel.txt"));
  nlohmann::json device = profile ? describe_device(out, *dut, *profile) : nlohmann::json(nullptr);
  const auto device_of = [&](const Cell& c) {
    if (profile) return device;
    return nlohmann::json{{"dut", "guest"}, {"profile", nullptr}, {"driver", c.kernel}, {"kernel", kernel},
                          {"firmware", nullptr}};
  };

  nlohmann::json jcells = nlohmann::json::array();
  std::map<std::string, unsigned> count;
  unsigned regressions = 0, flaky = 0;
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const Cell& c = cells[k];
    const fs::path dir = out / "cells" / c.id;
    const auto& oc = outcomes[k];
    const auto& v = verdicts[k];
    ++count[v.color];
    flaky += !v.first_attempt.empty() && !v.regression;
    regressions += v.regression;
    jcells.push_back({{"id", c.id},
                      {"peer", c.kernel},
                      {"family", family_of(c)},
                      {"our_role", c.our_role},
                      {"peer_program", c.program},
                      {"scenario", c.scenario},
                      {"configuration", c.peer->configuration(c)},
                      {"device", device_of(c)},
                      {"expect", expect_name(c.expect)},
                      {"verdict", v.color},
                      {"reason", v.reason},
                      {"known_finding", c.known_finding.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.known_finding)},
                      {"finding", c.finding.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.finding)},
                      {"regression", v.regression},
                      {"first_attempt", v.first_attempt.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.first_attempt)},
                      {"capture", fs::exists(dir / "wire.pcap") ? (dir / "wire.pcap").string() : ""},
                      {"check_report", fs::exists(dir / "check.json") ? (dir / "check.json").string() : ""},
                      {"check", {{"pass", oc.check_pass}, {"fail", oc.check_fail}, {"inconclusive", oc.check_inconclusive},
                                 {"failed_cases", oc.failed_cases}}},
                      {"ours", oc.ours},
                      {"peer_exit", oc.program_rc ? nlohmann::json(*oc.program_rc) : nlohmann::json(nullptr)}});
    log << fmt::format("{:<8} {:<64} {}{}\n", v.color, c.id, v.color == "green" ? "" : v.reason,
                       v.first_attempt.empty() ? ""
                       : v.regression          ? fmt::format(" (red on both attempts; the first: {})", v.first_attempt)
                                               : fmt::format(" (run twice: the first attempt was red: {})", v.first_attempt));
    if (!o.export_dir.empty() && std::count(o.export_cells.begin(), o.export_cells.end(), c.id))
      export_capture(c, oc, v, dir, o.export_dir, profile ? device.value("kernel", std::string()) : kernel, log);
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json report = {
      {"lab", profile ? nlohmann::json{{"kernel", device.value("kernel", std::string())},
                                       {"topology", fmt::format("the device under test {} ({} on {}, {}) reached by {}; our "
                                                                "engine on the test host, {} on {}, captured there",
                                                                profile->name, profile->device, profile->netdev,
                                                                profile->address, dut->text(), o.our_addr, o.our_iface)}}
                      : nlohmann::json{{"kernel", kernel},
                                       {"kernel_file", last_line(read_text(lab / "kernel-name"))},
                                       {"gate", last_line(read_text(lab / "gate")) != "no"},
                                       {"manifest", read_text(lab / "manifest.txt")},
                                       {"topology", fmt::format("the kernel peer (siw0 or rxe0) on veth0 ({}), our engine in "
                                                                "namespace eng on veth1 ({}); the guest has no network device",
                                                                kSiwAddr, kOurAddr)}}},
      {"device", device},
      {"sweep", o.sweep},
      {"seconds", {{"total", total_s}, {"guest", boot_s}}},
      {"summary", {{"cells", cells.size()}, {"green", count["green"]}, {"red", count["red"]}, {"skipped", count["skipped"]},
                   {"regressions", regressions}, {"flaky", flaky}}},
      {"cells", jcells}};
  // The findings the cells name, whole: what a bug report upstream needs
  // beyond the cells (rdmaconf report findings).
  // Every finding's citations held against the source of the guest's kernel
  // (the lab keeps it in LAB/src/linux): a citation that no longer holds
  // fails the run as a regression would (docs/lab.md, "Findings per kernel").
  std::size_t citation_problems = 0;
  {
    CellTable table;
    try {
      table = read_cells(o.cells_file.empty() ? default_cells_file(o.lab_dir) : fs::path(o.cells_file));
    } catch (const CellsError& e) {
      // (Read at the start as well: a table edited while the cells ran.)
      return log << fmt::format("lab: the table of cells no longer reads: {}; the cells' results stay in {} (judge them "
                                "again with --judge-only)\n",
                                e.what(), (out / "cells").string()),
             2;
    }
    nlohmann::json findings = nlohmann::json::object();
    for (const auto& c : cells)
      if (const auto it = table.findings.find(c.finding); it != table.findings.end()) findings[c.finding] = it->second.to_json();
    report["findings"] = findings;
    if (!profile) {
      const std::string kernel_name = last_line(read_text(lab / "kernel-name"));
      const fs::path top = lab / "src" / "linux";
      nlohmann::json problems = nlohmann::json::array();
      if (!fs::is_directory(top, ec)) {
        problems.push_back(fmt::format("the lab {} holds no kernel source (src/linux): build it again", lab.string()));
      } else {
        std::map<std::string, std::vector<Citation>> by_finding;
        for (const auto& [name, f] : table.findings) by_finding[name] = f.source;
        for (const auto& p : check_citations(by_finding, kernel_name, top)) problems.push_back(p.problem);
      }
      for (const auto& p : problems) log << "lab: citation: " << p.get<std::string>() << "\n";
      citation_problems = problems.size();
      report["citations"] = {{"kernel", kernel_name}, {"source", top.string()}, {"problems", problems}};
    }
  }
  if (profile) {
    nlohmann::json nr = nlohmann::json::array();
    for (const auto& [id, why] : not_run) nr.push_back({{"id", id}, {"reason", why}});
    report["not_run"] = nr;
  }
  if (o.shard)
    report["shard"] = {{"index", o.shard->index}, {"count", o.shard->count}, {"cells_in_all_shards", in_all_shards}};
  std::ofstream(out / "lab-report.json") << report.dump(2) << "\n";
  log << fmt::format("lab: {} cells: {} green, {} red ({} of them known findings of the kernel peers), {} skipped{}; {:.0f} s ({:.0f} s "
                     "in the guest); report {}\n",
                     cells.size(), count["green"], count["red"], count["red"] - regressions, count["skipped"],
                     flaky ? fmt::format(", {} red only on a first attempt", flaky) : std::string(), total_s, boot_s,
                     (out / "lab-report.json").string());
  return regressions || citation_problems ? 1 : 0;
}

}  // namespace rdmaconf::interop::lab

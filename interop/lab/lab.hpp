#pragma once
// The soft-RNIC lab (`rdmaconf lab run`): our engine against the Linux
// kernel's siw inside a qemu guest (docs/lab.md).
//
// The host builds the lab (interop/lab/build.sh), writes a plan of cells for
// the guest (interop/lab/guest.sh runs it), boots the guest with no network
// device, and reads back each cell's capture, logs and our engine's result.
// Every capture goes through `rdmaconf check`; each cell then gets a verdict
// against what the RFCs require of that configuration.
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "interop/lab/citations.hpp"
#include "reports/shard.hpp"

namespace rdmaconf::interop::lab {

// siw's MPA knobs (module parameters of the lab's siw.ko).
struct SiwKnobs {
  bool crc_required = false;
  bool crc_strict = false;
  unsigned mpa_version = 2;
  bool peer_to_peer = false;
  bool try_gso = false;
  std::string label() const;      // "crc-off.v2", "crc-required.v2.p2p", ...
  static std::optional<SiwKnobs> parse(std::string_view label);  // label()'s inverse
  std::string load_args() const;  // the arguments of the guest's siw_load
  nlohmann::json to_json() const;
  bool operator==(const SiwKnobs&) const = default;
};

enum class Expect {
  data,       // the exchange completes and the data verifies on both ends
  reject,     // a conforming responder refuses the connection (MPA Reply with R set)
  terminate,  // a conforming responder answers our fault with the scenario's Terminate and closes
  close,      // a conforming responder closes without a Terminate
};
const char* expect_name(Expect e);
std::optional<Expect> parse_expect(std::string_view name);

struct KernelPeer;  // peers.hpp

struct Cell {
  std::string id;          // stable; also the cell's folder name
  std::string our_role;    // "initiator", "responder", or "none" (kernel peer against kernel peer)
  std::string kernel;          // the kernel peer, by its name in the peer table (peers.hpp)
  const KernelPeer* peer = nullptr;  // that peer's entry
  std::string program;     // siw's side: "rping -s" or "rping -c" (siw against siw: the program pair)
  std::string server_cmd, client_cmd;  // siw against siw: the two command lines
  std::string scenario;    // our engine's scenario (rping or terminate-*; rxe: the perftest program)
  std::string fault;       // rxe, our initiator: the fault-* scenario whose fault we plant (interop --fault)
  std::string connection = "RC";  // rxe with our engine: perftest's -c (RC, UC or UD)
  SiwKnobs siw;
  std::vector<std::string> our_args;  // engine options
  std::string ours_label;             // short name of our options ("crc", "no-crc", "markers", ...)
  Expect expect = Expect::data;
  bool expect_crc = false;  // data: whether CRC must be in use
  std::string why;          // what the RFCs require here
  // Non-empty: siw is known to differ from `why` here, for this reason. Such a
  // cell is red in the matrix, but a known red does not fail the run.
  std::string known_finding;
  std::string finding;  // the finding's name in the table (empty: none)
  // The checker cases the finding makes FAIL. A red cell counts as the known
  // finding only when nothing else FAILs (and, siw against siw, both programs
  // succeed): anything more is a regression.
  std::vector<std::string> finding_cases;
  // The finding only shows in the capture (siw's pad octets, its GSO flag):
  // both programs must still succeed for the red to count as the finding.
  bool finding_capture_only = false;
  bool run_last = false;  // known to upset the guest kernel: run after every other cell
  bool sweep = false;     // only in the sweep (`lab run --sweep`)
  unsigned port = 0;
  unsigned connections = 1;  // our-initiator cells: this many connections, one after the other
  unsigned iterations = 10;
  unsigned size = 64;
};

// The cells are data: interop/lab/cells.json (installed beside the lab
// scripts) lists every cell with its configuration, what the RFCs and IBTA
// require of it and the kernel peer's known findings. In a CellTable the
// text fields (program, why, the kernel-against-kernel command lines) are
// still templates; select_cells fills them in.
// A kernel peer's documented departure from a requirement (cells.json
// "findings"): what a bug report upstream needs beyond the cells that show it.
struct Finding {
  std::string name;
  std::string title;                 // one line
  std::string text;                  // what the peer does, and why where known
  std::vector<std::string> cases;    // the checker cases it makes FAIL
  std::vector<Citation> source;      // where in the peer's source it comes from, per kernel (citations.hpp)
  bool capture_only = false;         // shows only in the capture: both programs still succeed
  // How much it matters: "security" (a remote peer can crash or hang the
  // kernel), "interop" (a connection or its data fails), "conformance" (the
  // wire departs from the text, both programs still succeed). A security
  // finding's report is written for a security contact, from these:
  std::string severity;
  std::string impact;      // what a remote peer can do with it
  std::string trigger;     // exactly what the peer sends, and when
  std::string root_cause;  // the pointer or state, set or cleared where
  std::string fix;         // the direction of a fix
  nlohmann::json to_json() const;
};

struct CellTable {
  std::vector<Cell> cells;                     // in file order
  std::map<std::string, std::string> not_run;  // a fault scenario with no cell -> why
  std::map<std::string, Finding> findings;     // by name
};

// A cells file that cannot be read, parsed or that breaks a rule: the
// message names the file, the cell and the field.
struct CellsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

CellTable parse_cells(std::string_view text, std::string_view file_name);
CellTable read_cells(const std::filesystem::path& file);
std::filesystem::path default_cells_file(const std::filesystem::path& lab_dir);  // LAB_DIR/cells.json
// The guest's kernels are data (docs/lab.md, "Kernels"): LAB_DIR/kernels/NAME.kernel.
std::string kernel_names(const std::filesystem::path& lab_dir);  // "6.12, sid": the kernel files there
// The kernel file a --kernel value names (a name there, or a path; empty: the
// one that says "default: yes"); empty when there is none.
std::filesystem::path kernel_file(const std::filesystem::path& lab_dir, const std::string& kernel);

// The cells to run: without `sweep` those not marked sweep; `scenarios` (if
// not empty) keeps only cells whose scenario is listed. run_last cells go
// last, ports are assigned in order from kFirstPort, templates are filled.
std::vector<Cell> select_cells(const CellTable& table, bool sweep, const std::vector<std::string>& scenarios);

struct DeviceProfile;  // device.hpp

// The shell plan the guest runs (interop/lab/guest.sh), or with a device
// profile the one the test host runs against a device under test
// (interop/lab/dut.sh): the profile's configure command in place of the
// guest's loading of siw or rxe.
std::string guest_plan(const std::vector<Cell>& cells, const DeviceProfile* device = nullptr);
// A word for the guest's shell, quoted.
std::string shell_quote(const std::string& s);
// Connection k of a cell names its files our{k+1}.json, peer{k+1}.rc, ... from the second on.
std::string connection_suffix(unsigned k);

// What a cell left behind.
struct CellOutcome {
  bool finished = false;
  nlohmann::json ours;               // our engine's result (interop --json, or the peer's JSON line)
  std::optional<int> program_rc;     // exit status of siw's program (siw against siw: the client's)
  std::optional<int> server_rc;      // siw against siw: the server's exit status
  std::string program_err;           // its last stderr line
  std::string check_error;           // the capture could not be checked
  std::uint64_t check_fail = 0, check_pass = 0, check_inconclusive = 0;
  std::vector<std::string> failed_cases;  // case IDs the capture FAILs
  std::vector<std::string> required_failures;  // terminate cells: cases the fault must FAIL
  bool framing_lost = false;
  std::string kernel_trouble;  // the first BUG/Oops/WARNING line the guest kernel logged during the cell
  // The peer's port counter the cell reads (KernelPeer::port_counter): how
  // far it rose during our run; nothing when it could not be read.
  std::optional<std::int64_t> port_counter_rise;
  // A device under test: what went wrong with reaching it or ending what the
  // cell started there (the SSH connection dropped, something still runs).
  std::string dut_error;
};

struct Verdict {
  std::string color;   // "green", "red" or "skipped"
  std::string reason;  // why (a spec reason for red)
  bool regression = false;  // red and not a known finding
  std::string first_attempt;  // run twice: the first attempt's reason (it was a regression)
};

// The checker family whose cases judge a cell's capture: rxe speaks RoCE,
// siw iWARP.
std::string_view family_of(const Cell& c);
// The live scenario a cell provokes, as the ledger names it (its peer says:
// the fault it plants, else its scenario; our responder's Reply fault).
std::string provoked_scenario(const Cell& c);

// The cases a cell's planted fault must make FAIL (its iWARP terminate-*
// scenario's, or its RoCE fault-* scenario's); none for other cells.
std::vector<std::string> planted_failures(const Cell& c);

// Pure: the verdict of one cell from what it left behind.
Verdict judge(const Cell& cell, const CellOutcome& out);

struct LabOptions {
  std::string lab_dir;   // interop/lab of the source tree
  std::string cells_file;  // empty: default_cells_file(lab_dir)
  std::string out_dir = "out/lab";
  std::string peer = "all";  // "siw", "rxe" or "all"
  // The guest's kernel: a kernel file LAB_DIR/kernels/NAME.kernel (the
  // Debian archive, the kernel packages and the user space; docs/lab.md,
  // "Kernels") or a path to one; empty: the kernel file that says "default: yes".
  std::string kernel;
  std::vector<std::string> scenarios;
  std::vector<std::string> cell_ids;  // only these cells (by id), sweep or not
  bool findings = false;  // only the cells that reproduce a finding (and cell_ids)
  bool sweep = false;
  // Copy these cells' captures to export_dir with a manifest each (how the
  // capture was made and which cases it must FAIL), for captures/lab.
  std::string export_dir;
  std::vector<std::string> export_cells;
  // One shard of the cells (balanced by count); the report says which.
  std::optional<reports::Shard> shard;
  // Judge the cells a run left in out_dir again, with this build's checker
  // and judge: no build, no boot, no second attempt.
  bool judge_only = false;
  // A device under test (device.hpp): where its side of the cells runs
  // ("guest": the lab's guest, as without it; "local"; "ssh://USER@HOST"),
  // its profile (a name in LAB_DIR/profiles or a file), and our side: the
  // test host's interface that faces the device (captured) and its address.
  std::string dut = "guest";
  std::string profile;
  std::string our_iface, our_addr;
  std::string ssh = "ssh";               // the ssh client
  std::string ssh_config, ssh_identity;  // its -F and -i
  std::vector<std::string> ssh_options;  // its -o options (NAME=VALUE)
  // A device that stops answering: a command on this host that brings it
  // back (run by dut.sh, at most three times a plan), and a file on this
  // host that its console is written to (a lost cell keeps what it printed).
  std::string dut_recover, dut_console;
};

// The cells a run takes: the table read and selected (sweep, scenarios),
// the peer's, the shard's. Throws CellsError.
// With a device profile, the cells it cannot run go to NOT_RUN (id, why).
std::vector<Cell> cells_to_run(const LabOptions& o, std::uint64_t* in_all_shards = nullptr,
                               const DeviceProfile* device = nullptr,
                               std::vector<std::pair<std::string, std::string>>* not_run = nullptr);

// Builds the lab, runs the cells in one boot, checks every capture and writes
// OUT/lab-report.json. Returns 0 when no cell regressed, 1 when one did, 2
// when the lab could not be built or booted.
int run(const LabOptions& o, std::ostream& log);

}  // namespace rdmaconf::interop::lab

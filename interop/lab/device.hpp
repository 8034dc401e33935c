#pragma once
// A device under test (docs/lab.md, "A device under test over SSH"): an RNIC
// on a host of its own, reached by a DUT driver, described by a profile.
//
// The driver runs the device's side of each cell: the lab's guest as before
// (no --dut), this host (`--dut local`), or SSH to a host (`--dut
// ssh://user@host`, the user's ssh client and configuration). Our engine and
// the capture run on the test host, on the interface that faces the device.
//
// The profile (a JSON file, interop/lab/profiles/*.json for the devices we
// know) says what the device is and what it can do: its RDMA device, netdev
// and address, perftest's GID index, its family's knobs (which the lab's
// peer table checks and matches against each cell), the programs it has,
// and the command that sets a knob where one exists. Cells a profile cannot
// run are listed with the reason.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmaconf::interop::lab {

struct Cell;
struct KernelPeer;

struct DeviceProfile {
  std::string file;     // where it was read from
  std::string name;     // "siw", "irdma-e810-iwarp", ...
  std::string title;    // one line: what the device is
  std::string driver;   // the kernel driver ("siw", "irdma", "mlx5_ib", ...)
  bool tested = false;  // run by us against the device (false: written from public sources only)
  std::vector<std::string> sources;  // the public documentation and driver sources it was written from
  std::string family;   // whose cells it runs ("iwarp" or "ib", as the peer table names them)
  const KernelPeer* peer = nullptr;  // the lab peer whose cells those are
  std::string device;   // its RDMA device (siw0, irdma0, mlx5_0)
  std::string netdev;   // the netdev that device sits on (on the device's host)
  std::string address;  // that netdev's IPv4 address, which our engine reaches
  std::optional<unsigned> gid_index;  // perftest's -x (RoCE); none: perftest chooses
  std::vector<std::string> programs;  // the programs the device's host has (rping, ib_write_bw, ...)
  std::string configure;   // a command template that sets the knobs a cell needs (empty: the device's settings are fixed)
  std::string kernel_log;  // a command whose output is the kernel's log since the last call (empty: none is read)
  nlohmann::json knobs = nlohmann::json::object();  // the family's; checked by the peer table
};

// A profile that cannot be read or breaks a rule: the message names the file and the field.
struct ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

DeviceProfile parse_profile(std::string_view text, std::string_view file);
// NAME_OR_FILE: a path (it has a '/' or ends in .json), else a profile of
// LAB_DIR/profiles by name.
DeviceProfile read_profile(const std::string& name_or_file, const std::filesystem::path& lab_dir);
// The names of the profiles in LAB_DIR/profiles.
std::vector<std::string> profile_names(const std::filesystem::path& lab_dir);

// Why the device cannot run a cell ("" when it can).
std::string cannot_run(const DeviceProfile& p, const Cell& c);
// The plan line that sets the device's knobs for a cell ("" when the
// profile has no configure command).
std::string configure_line(const DeviceProfile& p, const Cell& c);

// Where the device's side of the cells runs.
struct Dut {
  enum class Kind { guest, local, ssh } kind = Kind::guest;
  std::string destination;  // ssh: [user@]host, as ssh takes it (a port as ssh://user@host:port)
  std::string port;         // ssh: the port, if the URL named one
  std::string text() const;  // as given: "guest", "local", "ssh://root@192.0.2.1"
};
// "guest", "local", "ssh://[user@]host[:port]"; nothing, with ERROR set, otherwise.
std::optional<Dut> parse_dut(std::string_view text, std::string& error);

}  // namespace rdmaconf::interop::lab

#include "interop/netns.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

namespace rdmaconf::interop {

namespace {

constexpr const char* kNetnsDir = "/var/run/netns/";

// What the signal handler removes: fixed arrays, written before the
// handler is installed and read only by it.
constexpr std::size_t kSlots = 8;
std::array<std::array<char, 128>, kSlots> g_paths{};
std::array<std::atomic<pid_t>, kSlots> g_children{};
std::atomic<bool> g_handlers{false};

void remove_path(const char* path) {
  (void)umount2(path, MNT_DETACH);
  (void)unlink(path);
}

extern "C" void on_fatal_signal(int sig) {
  for (auto& c : g_children)
    if (const pid_t p = c.load(); p > 0) (void)kill(p, SIGKILL);
  for (const auto& p : g_paths)
    if (p[0]) remove_path(p.data());
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_handlers() {
  if (g_handlers.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &sa, nullptr);
}

}  // namespace

std::vector<std::string> RunNamespaces::remove_stale() {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kNetnsDir, ec)) {
    const std::string name = e.path().filename().string();
    // rdmaconf-<tool>-<pid>-<part>
    if (!name.starts_with("rdmaconf-")) continue;
    const auto a = name.find('-', 9), b = a == std::string::npos ? a : name.find('-', a + 1);
    if (b == std::string::npos) continue;
    const std::string pid_text = name.substr(a + 1, b - a - 1);
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == getpid() || (kill(pid, 0) == 0 || errno == EPERM)) continue;  // its run goes on
    remove_path(e.path().c_str());
    removed.push_back(name);
  }
  return removed;
}

std::string RunNamespaces::add(const std::string& tool, const std::string& part) {
  std::string name = fmt::format("rdmaconf-{}-{}-{}", tool, getpid(), part);
  const std::string path = kNetnsDir + name;
  for (auto& p : g_paths)
    if (!p[0] && path.size() < p.size()) {
      std::memcpy(p.data(), path.c_str(), path.size() + 1);
      break;
    }
  install_handlers();
  names_.push_back(name);
  return name;
}

void RunNamespaces::add_child(pid_t pid) {
  for (auto& c : g_children) {
    pid_t none = 0;
    if (c.compare_exchange_strong(none, pid)) return;
  }
}

RunNamespaces::~RunNamespaces() {
  for (const auto& n : names_) {
    const std::string path = kNetnsDir + n;
    for (auto& p : g_paths)
      if (path == p.data()) p[0] = 0;
    remove_path(path.c_str());
  }
  for (auto& c : g_children) c = 0;
}

std::string make_veth_pair(const VethEnd& a, const VethEnd& b, bool tx_checksum_off) {
  std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", a.ns},
      {"ip", "netns", "add", b.ns},
      {"ip", "-n", a.ns, "link", "add", a.ifname, "address", a.mac, "type", "veth", "peer", "name", b.ifname, "address", b.mac,
       "netns", b.ns}};
  for (const VethEnd* e : {&a, &b}) {
    steps.push_back({"ip", "netns", "exec", e->ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"});
    for (const auto& addr : e->addresses) steps.push_back({"ip", "-n", e->ns, "addr", "add", addr, "dev", e->ifname});
    steps.push_back({"ip", "-n", e->ns, "link", "set", "lo", "up"});
    steps.push_back({"ip", "-n", e->ns, "link", "set", e->ifname, "up"});
    for (const auto& n : e->neighbours)
      steps.push_back({"ip", "-n", e->ns, "neigh", "replace", n.ip, "lladdr", n.mac, "dev", e->ifname, "nud", "permanent"});
    if (tx_checksum_off) steps.push_back({"ip", "netns", "exec", e->ns, "ethtool", "-K", e->ifname, "tx", "off"});
  }
  for (const auto& s : steps)
    if (std::string e = run_command(s); !e.empty()) return e;
  return {};
}

}  // namespace rdmaconf::interop

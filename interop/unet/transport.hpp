#pragma once
// The U-Net live suite's two sides and the wire between them (internal to
// interop/unet): side B's responder as a spec tells it, in this process
// (the memory path) or in a child process in a network namespace of its own
// across a veth pair (AF_XDP or AF_PACKET), reached over the shared control
// channel. The scenarios (scenarios.cpp) and the benchmark (bench.cpp) drive
// side A through a Transport.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engines/unet/ports.hpp"
#include "engines/unet/unet.hpp"
#include "interop/channel.hpp"
#include "interop/netns.hpp"
#include "protocols/core/bits.hpp"

namespace rdmaconf::interop::unet {

namespace u = engine::unet;
using json = nlohmann::json;

inline const u::Mac kMacA{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x01}, kMacB{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x02};
inline const u::Mac kForeign{0x02, 0x00, 0x0a, 0x4e, 0x00, 0x03};
inline constexpr std::byte kCanary{0xcc};

// A message's octets: the sequence number in the first four (when there is
// room), then a pattern of it.
inline void fill(std::span<std::byte> b, std::uint32_t size, std::uint32_t seq) {
  for (std::uint32_t i = 0; i < size; ++i) b[i] = std::byte(static_cast<std::uint8_t>(seq * 7 + i * 13));
  if (size >= 4) protocols::put_be32(b, 0, seq);
}
inline bool intact(std::span<const std::byte> b, std::uint32_t size, std::uint32_t seq) {
  for (std::uint32_t i = size >= 4 ? 4 : 0; i < size; ++i)
    if (b[i] != std::byte(static_cast<std::uint8_t>(seq * 7 + i * 13))) return false;
  return size < 4 || protocols::be32(b, 0) == seq;
}

// What side B does with what it receives.
enum class Behaviour { echo, sink, hold, teardown };
struct PeerSpec {
  Behaviour behaviour = Behaviour::sink;
  std::uint32_t buffer_size = 2048, give = 64, teardown_after = 0;
  std::uint16_t a = 0, b = 0;  // the tags: A's endpoint, B's (B's second endpoint is b + 1)
};

u::Faults faults(const std::string& name);
json spec_json(const PeerSpec& s);
PeerSpec spec_from(const json& j);

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string setup(const PeerSpec& spec, const std::string& fault) = 0;  // empty, or what went wrong
  // Side A's node for the scenario, before its endpoints are made.
  virtual void adopt(u::Node&, const std::string& /*fault*/) {}
  // The data path, as the report names it.
  virtual std::string path() const = 0;
  // A's node sends what it queued; frames move both ways until `quiet_ms`
  // pass without one (or `max_ms` in all).
  // Moves frames both ways until the wire has been quiet for quiet_ms, or
  // `done` holds (what was waited for has come), or max_ms have passed.
  virtual void pump(u::Node& a, int quiet_ms, int max_ms, const std::function<bool()>& done = {}) = 0;
  virtual void inject(u::Bytes frame) = 0;  // raw onto the wire from A's side (a hostile host)
  virtual json report() = 0;
  // A kernel UDP exchange across the same interfaces: datagrams echoed of `n` (none: not this path).
  virtual std::optional<int> kernel_exchange(int) { return std::nullopt; }
  std::function<void(u::Bytes)> record;  // every frame on the wire, seen from A
};


// Both sides in this process.
std::unique_ptr<Transport> memory_transport();

// Side A's node made ready for a scenario: the transport adopts it, then
// its endpoint (tag spec.a) with a channel to B's endpoint (`ch`) and
// buffers 32 on given (0-31 are for sending).
u::Endpoint* open_side_a(Transport& t, u::Node& a, const PeerSpec& spec, const std::string& fault, std::uint32_t& ch);

class WireTransport final : public Transport {
 public:
  ~WireTransport() override;
  // Makes the namespaces and starts side B; empty, or what went wrong.
  // With `xdp`, AF_XDP where it can run; where it cannot, `notice` says why
  // and the AF_PACKET fallback runs.
  std::string start(bool xdp, std::string& notice);
  std::string path() const override;
  std::string setup(const PeerSpec& spec, const std::string& fault) override { return setup(spec, fault, false); }
  std::string setup(const PeerSpec& spec, const std::string& fault, bool busy);
  void adopt(u::Node& a, const std::string& fault) override;
  void pump(u::Node& a, int quiet_ms, int max_ms, const std::function<bool()>& done) override;
  void inject(u::Bytes f) override;
  json report() override;
  // One message from A's endpoint and its echo back, waiting in poll() or
  // spinning on the port (`busy`): false when none came within `max_ms`.
  bool round_trip(u::Node& a, u::Endpoint& ea, int max_ms, bool busy);
  // A kernel UDP socket in A's namespace, connected to B's echo (7000) or
  // sink (7001).
  int kernel_socket(std::uint16_t port = 7000);
  std::optional<int> kernel_exchange(int n) override;
  u::Port& port() { return *port_; }

 private:
  std::string ns_a_, ns_b_;
  RunNamespaces namespaces_;
  pid_t child_ = -1;
  int control_ = -1;
  std::optional<ControlChannel> channel_;
  std::unique_ptr<u::Port> port_;
};

}  // namespace rdmaconf::interop::unet

// Golden captures of the U-Net family: two hosts with two channels each way
// (ping-pong of messages from 1 to 1492 octets, short ones padded to the
// 60-octet minimum frame, and a one-way stream), each side closing its
// channels at the end; then one fault per case.
#include "captures/gen/scenarios.hpp"
#include "protocols/core/header.hpp"
#include "protocols/unet/headers.hpp"

namespace rdmaconf::captures::gen {

namespace {

namespace pu = protocols::unet;
using pu::Unet;

using Mac = std::array<std::uint8_t, 6>;
constexpr Mac kHostA{0x02, 0x00, 0x0a, 0x55, 0x00, 0x01}, kHostB{0x02, 0x00, 0x0a, 0x55, 0x00, 0x02};

struct Message {
  bool from_a = true;
  std::uint16_t sport = 0, dport = 0;
  std::size_t size = 0;
  bool close = false;
  std::function<void(Buf& frame)> edit;  // after the frame is built
};

Buf unet_frame(const Mac& from, const Mac& to, const Message& m, unsigned seed) {
  Buf f;
  for (auto x : to) f.push_back(std::byte{x});
  for (auto x : from) f.push_back(std::byte{x});
  f.push_back(std::byte{pu::kEthertype >> 8});
  f.push_back(std::byte{pu::kEthertype & 0xff});
  const auto h = Header::with(pu::kUnet, {{Unet::version, pu::kVersion},
                                          {Unet::close, m.close ? 1u : 0u},
                                          {Unet::dst_port, m.dport},
                                          {Unet::src_port, m.sport},
                                          {Unet::length, m.size}});
  const std::size_t at = f.size();
  f.resize(at + pu::kHeaderSize);
  h.encode(MutBytes(f).subspan(at));
  const Buf data = pattern(m.size, seed);
  f.insert(f.end(), data.begin(), data.end());
  if (f.size() < pu::kMinFrame) f.resize(pu::kMinFrame, std::byte{0});
  if (m.edit) m.edit(f);
  return f;
}

nlohmann::json unet_capture(const std::string& path, const std::vector<Message>& msgs) {
  PcapWriter w(path);
  unsigned n = 0;
  std::int64_t t = 1700000000000000;
  for (const auto& m : msgs) {
    w.set_time_us(t += 20);
    const Buf f = unet_frame(m.from_a ? kHostA : kHostB, m.from_a ? kHostB : kHostA, m, n++);
    w.frame(B(f));
  }
  return {{"frames", msgs.size()}, {"host_a", "02:00:0a:55:00:01"}, {"host_b", "02:00:0a:55:00:02"}};
}

// Channel 1: A/7 <-> B/9, ping-pong; channel 2: A/1000 -> B/2000, a stream.
// Both sides close both channels at the end.
std::vector<Message> traffic() {
  std::vector<Message> v;
  for (std::size_t size : {1u, 37u, 38u, 39u, 64u, 700u, 1491u, 1492u}) {
    v.push_back(Message{true, 7, 9, size, false, {}});
    v.push_back(Message{false, 9, 7, size, false, {}});
  }
  for (int i = 0; i < 12; ++i) v.push_back(Message{true, 1000, 2000, 1472, false, {}});
  v.push_back(Message{true, 7, 9, 4, true, {}});
  v.push_back(Message{false, 9, 7, 4, true, {}});
  v.push_back(Message{true, 1000, 2000, 0, true, {}});
  v.push_back(Message{false, 2000, 1000, 0, true, {}});
  return v;
}

void add_unet_scenarios(std::vector<Scenario>& v) {
  const std::string P = "PASS", F = "FAIL";
  const Expect clean{{"unet.header", P}, {"unet.tag", P}, {"unet.length", P}, {"unet.channel.unicast", P}, {"unet.channel.closed", P}};
  auto add = [&v](std::string name, std::string desc, std::vector<Message> m, Expect e) {
    v.push_back({std::move(name), std::move(desc), [m](const std::string& p) { return unet_capture(p, m); }, std::move(e)});
  };
  add("unet", "two hosts, a ping-pong channel (1 to 1492 octets, short frames padded) and a stream channel, each closed by both sides",
      traffic(), clean);
  auto fault = [&](std::string name, std::string desc, std::string id, std::function<void(std::vector<Message>&)> edit) {
    auto m = traffic();
    edit(m);
    Expect e = clean;
    e[id] = F;
    add(std::move(name), "as unet; fault: " + desc, std::move(m), std::move(e));
  };
  fault("unet-fault-version", "the fifth message carries version 2", "unet.header", [](auto& m) {
    m[4].edit = [](Buf& f) { f[14] = std::byte{static_cast<std::uint8_t>((2u << 4) | (static_cast<unsigned>(f[14]) & 15u))}; };
  });
  fault("unet-fault-reserved", "the sixth message's reserved octet is 0x40", "unet.header",
        [](auto& m) { m[5].edit = [](Buf& f) { f[15] = std::byte{0x40}; }; });
  fault("unet-fault-tag", "a stream message names source port 0", "unet.tag", [](auto& m) { m[18].sport = 0; });
  fault("unet-fault-length", "the seventh message's length counts 10 octets more than the frame holds", "unet.length",
        [](auto& m) { m[6].edit = [](Buf& f) { put_be16(f, 20, static_cast<std::uint16_t>(be16(B(f), 20) + 10)); }; });
  fault("unet-fault-padding", "the first message's padding is not zero", "unet.length",
        [](auto& m) { m[0].edit = [](Buf& f) { f[50] = std::byte{0x5a}; }; });
  fault("unet-fault-broadcast", "a stream message goes to the broadcast address", "unet.channel.unicast", [](auto& m) {
    m[20].edit = [](Buf& f) { std::fill_n(f.begin(), 6, std::byte{0xff}); };
  });
  fault("unet-fault-after-close", "host A closes the ping-pong channel a second time, with a message", "unet.channel.closed",
        [](auto& m) { m.push_back(Message{true, 7, 9, 16, true, {}}); });
}

}  // namespace

const RegisterScenarios registered_unet{"unet", &add_unet_scenarios};

}  // namespace rdmaconf::captures::gen

// rdmaconf-gen: writes the golden captures and their manifests.
//   rdmaconf-gen OUTDIR            every scenario
//   rdmaconf-gen OUTDIR NAME...    only those
// Each scenario builds its traffic with the project's encoders and states,
// from how it builds it, which verdict each exercised case must reach: the
// manifest is written from that declaration, never from running the checker.
#include "captures/gen/iwarp.hpp"
#include "captures/gen/roce.hpp"
#include "captures/gen/scenarios.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf;
using namespace rdmaconf::captures::gen;

// A large capture for bench/: one MPA revision 2 connection with CRC, the
// initiator sending 1 KiB-payload RDMA Writes until `megabytes` of FPDUs are written.
int bench_capture(const std::string& path, std::size_t megabytes) {
  PcapWriter w(path);
  TcpConversation t(w, host_v4(192, 0, 2, 1, 40001), host_v4(192, 0, 2, 2, 7174));
  t.handshake();
  IwarpConfig c;
  const Traffic m = iwarp_traffic(c);
  Buf req, rep;
  iwarp::encode_mpa_rr(req, m.req);
  iwarp::encode_mpa_rr(rep, m.rep);
  t.send(0, B(req));
  t.send(1, B(rep));
  const Buf payload = pattern(1024 - iwarp::kDdpTagged.size, 7);
  Buf batch;
  std::uint64_t to = 0, written = 0;
  while (written < megabytes * 1000000) {
    batch.clear();
    for (int i = 0; i < 64; ++i, to += payload.size())
      iwarp::encode_fpdu(batch, B(ddp_tagged(iwarp::kOpWrite, 0x77, to, (i % 8) == 7, B(payload))), true);
    t.send(0, B(batch), 1448);
    written += batch.size();
  }
  t.close();
  return 0;
}

// `count` short iWARP connections one after another, 1 ms apart, each from
// its own client address: handshake, MPA Request and Reply with CRC, one
// Send each way, FIN both ways (a capture whose open state stays small
// while its history grows: the checker's memory must not follow the count).
int bench_connections(const std::string& path, std::size_t count) {
  PcapWriter w(path);
  IwarpConfig c;
  const Traffic m = iwarp_traffic(c);
  Buf req, rep;
  iwarp::encode_mpa_rr(req, m.req);
  iwarp::encode_mpa_rr(rep, m.rep);
  Buf ask, answer;
  iwarp::encode_fpdu(ask, B(ddp_untagged(iwarp::kOpSend, 0, 1, 0, true, B(pattern(64, 3)))), true);
  iwarp::encode_fpdu(answer, B(ddp_untagged(iwarp::kOpSend, 0, 1, 0, true, B(pattern(32, 4)))), true);
  for (std::size_t i = 0; i < count; ++i) {
    w.set_time_us(static_cast<std::int64_t>(1'000'000'000 + i * 1000));
    const auto o = [&](unsigned shift) { return static_cast<std::uint8_t>((i >> shift) & 0xff); };
    TcpConversation t(w, host_v4(10, o(16), o(8), o(0), static_cast<std::uint16_t>(40000 + (i >> 24))),
                      host_v4(192, 0, 2, 2, 7174));
    t.handshake();
    t.send(0, B(req));
    t.send(1, B(rep));
    t.send(0, B(ask));
    t.send(1, B(answer));
    t.close();
  }
  return 0;
}

// `count` TCP connections, each carrying 64 KiB of pseudo-random octets (no
// MPA) from the client, with their handshake or, `midstream`, without it (a
// capture started while they were open), and no FIN. Mid-stream, the checker
// looks for FPDUs at every offset of what it holds before it gives up on a
// connection: bench/all measures what that costs.
int bench_opaque(const std::string& path, std::size_t count, bool midstream) {
  PcapWriter w(path);
  std::uint64_t x = 0x9e3779b97f4a7c15u;  // xorshift64: fixed, so every run checks the same octets
  Buf data(64 * 1024);
  for (std::size_t i = 0; i < count; ++i) {
    w.set_time_us(static_cast<std::int64_t>(1'000'000'000 + i * 1000));
    for (auto& b : data) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = std::byte(x & 0xff);
    }
    const auto o = [&](unsigned shift) { return static_cast<std::uint8_t>((i >> shift) & 0xff); };
    TcpConversation t(w, host_v4(10, o(16), o(8), o(0), 40000), host_v4(192, 0, 2, 2, 5001));
    if (!midstream) t.handshake();
    t.send(0, B(data));
  }
  return 0;
}

// `count` RoCEv2 conversations open at once, each from its own address: one
// RC SEND Only request (AckReq set) every 3 microseconds, none answered (so none ends
// within the capture: a checker holds every one until its end, unless it
// bounds its open state).
int bench_roce_open(const std::string& path, std::size_t count) {
  PcapWriter w(path);
  const Host b = host_v4(192, 0, 2, 2, ib::kRoceV2Port);
  for (std::size_t i = 0; i < count; ++i) {
    w.set_time_us(static_cast<std::int64_t>(1'000'000'000 + i * 3));
    const auto o = [&](unsigned shift) { return static_cast<std::uint8_t>((i >> shift) & 0xff); };
    const Host a = host_v4(10, o(16), o(8), o(0), 49152);
    RocePkt p = send_only(static_cast<std::uint32_t>(i & 0xffffff), 16, true);
    p.qp = static_cast<std::uint32_t>(0x100 + (i & 0xffff));
    const Buf tr = encode_roce_pkt(p);
    auto l3 = ip_udp(a, b, B(tr), false);
    put_le32(l3, l3.size() - 4, ib::roce_icrc(B(l3), false, 20));
    w.ip_packet(a, b, B(l3));
  }
  return 0;
}

// `count` TCP SYNs to an iWARP port, each from its own address, none
// answered (half-open connections: a checker holds every one until the
// capture's end, unless it bounds its open state).
int bench_syns(const std::string& path, std::size_t count) {
  PcapWriter w(path);
  const Host b = host_v4(192, 0, 2, 2, 7174);
  for (std::size_t i = 0; i < count; ++i) {
    w.set_time_us(static_cast<std::int64_t>(1'000'000'000 + i * 3));
    const auto o = [&](unsigned shift) { return static_cast<std::uint8_t>((i >> shift) & 0xff); };
    const Host a = host_v4(10, o(16), o(8), o(0), 40000);
    w.ip_packet(a, b, B(ip_tcp(a, b, 1000, 0, tcpflag::syn, {}, 1460)));
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--bench") return bench_capture(argv[2], std::stoul(argv[3]));
  if (argc == 4 && std::string(argv[1]) == "--bench-connections") return bench_connections(argv[2], std::stoul(argv[3]));
  if (argc == 4 && std::string(argv[1]) == "--bench-roce-open") return bench_roce_open(argv[2], std::stoul(argv[3]));
  if (argc == 4 && std::string(argv[1]) == "--bench-syns") return bench_syns(argv[2], std::stoul(argv[3]));
  if (argc == 4 && (std::string(argv[1]) == "--bench-opaque" || std::string(argv[1]) == "--bench-opaque-midstream"))
    return bench_opaque(argv[2], std::stoul(argv[3]), std::string(argv[1]) == "--bench-opaque-midstream");
  if (argc < 2) {
    std::cerr << "usage: rdmaconf-gen OUTDIR [SCENARIO...]\n       rdmaconf-gen --bench FILE MEGABYTES\n"
                 "       rdmaconf-gen --bench-connections FILE COUNT\n"
                 "       rdmaconf-gen --bench-roce-open FILE COUNT\n"
                 "       rdmaconf-gen --bench-syns FILE COUNT\n"
                 "       rdmaconf-gen --bench-opaque[-midstream] FILE COUNT\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  std::vector<std::string> only(argv + 2, argv + argc);
  int made = 0;
  for (const auto& s : scenarios()) {
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    const fs::path pcap = out / (s.name + ".pcap");
    nlohmann::json m;
    m["capture"] = pcap.filename().string();
    m["made_by"] = "rdmaconf-gen (captures/gen/main.cpp), scenario " + s.name;
    m["description"] = s.description;
    m["config"] = s.make(pcap.string());
    m["expected"] = s.expected;
    std::ofstream(out / (s.name + ".manifest.json")) << m.dump(2) << "\n";
    ++made;
  }
  if (!only.empty() && made != static_cast<int>(only.size())) {
    std::cerr << "rdmaconf-gen: unknown scenario name\n";
    return 2;
  }
  return 0;
}

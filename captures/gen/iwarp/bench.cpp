// The iWARP family's large captures for bench/ (rdmaconf-gen --bench...).
#include "captures/gen/iwarp/traffic.hpp"
#include "captures/gen/scenarios.hpp"

namespace rdmaconf::captures::gen {

namespace {

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

}  // namespace

const RegisterBench bench_fpdus{{"bench", "MEGABYTES", &bench_capture}};
const RegisterBench bench_conns{{"bench-connections", "COUNT", &bench_connections}};
const RegisterBench bench_syn{{"bench-syns", "COUNT", &bench_syns}};
const RegisterBench bench_opaque_start{{"bench-opaque", "COUNT", [](const std::string& p, std::size_t n) { return bench_opaque(p, n, false); }}};
const RegisterBench bench_opaque_mid{{"bench-opaque-midstream", "COUNT", [](const std::string& p, std::size_t n) { return bench_opaque(p, n, true); }}};

}  // namespace rdmaconf::captures::gen

// The InfiniBand family's large captures for bench/ (rdmaconf-gen --bench-roce-open).
#include "captures/gen/ib/traffic.hpp"
#include "captures/gen/scenarios.hpp"

namespace rdmaconf::captures::gen {

namespace {

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

}  // namespace

const RegisterBench bench_open{{"bench-roce-open", "COUNT", &bench_roce_open}};

}  // namespace rdmaconf::captures::gen

#pragma once
// perftest's own connection setup over TCP (its default port is 18515), so
// that our engine meets unmodified ib_write_bw / ib_read_bw. Established
// from captures of perftest 6.06 between two rxe devices
// (captures/lab/lab-rxe-rxe.ib_write_bw-tcp.pcap); docs/interop.md has the
// sequence. Each step is an exchange of equal-sized messages; the client
// writes first and then reads, the server reads first and then writes:
//
//   version    16 octets, the version string NUL-padded ("6.06")
//   system     4 octets page size, then 4 octets cache line size (big-endian)
//   MTU        2 octets: the MTU enum as a decimal digit and NUL ("3" = 1024)
//   keys       108 octets of text, NUL-terminated:
//              LID:OUT_READS:QPN:PSN:RKEY:VADDR:GID0:...:GID15:SRQN:
//              (hex, widths 4,4,6,6,8,16, 2 per GID octet, 8); sent three
//              times before the test (the first carries the keys, the other
//              two are barriers), once after it and once before closing
//   report     after the test, 5 x 8 octets: size, iterations, then peak
//              bandwidth, average bandwidth and message rate as big-endian
//              IEEE doubles (the server's values are not used)
//   done       "done" and NUL, 5 octets, from perftest before upstream commit
//              dbf395e (July 2023); later releases (25.01) close instead
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmaconf::interop::ib {

struct PerftestDest {
  std::uint16_t lid = 0, out_reads = 0;
  std::uint32_t qpn = 0, psn = 0, rkey = 0, srqn = 0;
  std::uint64_t vaddr = 0;
  std::array<std::uint8_t, 16> gid{};
};

inline constexpr std::size_t kPerftestKeySize = 108;
inline constexpr std::uint16_t kPerftestPort = 18515;

// The 108-octet keys message (107 characters and the NUL).
std::string perftest_keys(const PerftestDest& d);
std::optional<PerftestDest> parse_perftest_keys(std::string_view msg, std::string& err);
// The MTU enum of verbs (1 = 256 ... 5 = 4096) and back; 0 when unknown.
unsigned perftest_mtu_code(unsigned bytes);
unsigned perftest_mtu_bytes(unsigned code);

// One side of the exchange on a connected TCP socket.
class PerftestSession {
 public:
  PerftestSession(int fd, bool client, int timeout_ms) : fd_(fd), client_(client), timeout_ms_(timeout_ms) {}
  // Version, system data and MTU; `mtu` in: ours, out: the smaller of both.
  bool setup(unsigned& mtu, std::string& remote_version);
  bool keys(const PerftestDest& mine, PerftestDest& theirs);
  bool barrier(const PerftestDest& mine);  // a keys message whose contents are not used
  bool report(std::uint64_t size, std::uint64_t iterations, double peak_gbps, double avg_gbps, double mpps);
  bool done();
  const std::string& error() const { return err_; }

 private:
  bool exchange(const void* mine, void* theirs, std::size_t n, const char* what);

  int fd_;
  bool client_;
  int timeout_ms_;
  std::string err_;
};

}  // namespace rdmaconf::interop::ib

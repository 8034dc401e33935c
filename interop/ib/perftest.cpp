#include "interop/ib/perftest.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace rdmaconf::interop::ib {

std::string perftest_keys(const PerftestDest& d) {
  std::string s = fmt::format("{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:", d.lid, d.out_reads, d.qpn & 0xffffff,
                              d.psn & 0xffffff, d.rkey, d.vaddr);
  for (const auto g : d.gid) s += fmt::format("{:02x}:", g);
  s += fmt::format("{:08x}:", d.srqn);
  s.resize(kPerftestKeySize, '\0');
  return s;
}

std::optional<PerftestDest> parse_perftest_keys(std::string_view msg, std::string& err) {
  if (const auto nul = msg.find('\0'); nul != std::string_view::npos) msg = msg.substr(0, nul);
  std::vector<std::uint64_t> f;
  std::size_t pos = 0;
  while (pos < msg.size()) {
    const auto colon = msg.find(':', pos);
    const auto tok = msg.substr(pos, colon == std::string_view::npos ? std::string_view::npos : colon - pos);
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v, 16);
    if (ec != std::errc() || p != tok.data() + tok.size() || tok.empty()) {
      err = fmt::format("perftest keys: field {} '{}' is not hexadecimal", f.size() + 1, tok);
      return std::nullopt;
    }
    f.push_back(v);
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  // LID, out_reads, QPN, PSN, R_Key, VA, 16 GID octets, and SRQN when present.
  if (f.size() != 6 + 16 && f.size() != 6 + 16 + 1) {
    err = fmt::format("perftest keys: {} fields, expected 22 or 23", f.size());
    return std::nullopt;
  }
  PerftestDest d;
  d.lid = static_cast<std::uint16_t>(f[0]);
  d.out_reads = static_cast<std::uint16_t>(f[1]);
  d.qpn = static_cast<std::uint32_t>(f[2] & 0xffffff);
  d.psn = static_cast<std::uint32_t>(f[3] & 0xffffff);
  d.rkey = static_cast<std::uint32_t>(f[4]);
  d.vaddr = f[5];
  for (std::size_t i = 0; i < 16; ++i) d.gid[i] = static_cast<std::uint8_t>(f[6 + i]);
  if (f.size() == 23) d.srqn = static_cast<std::uint32_t>(f[22]);
  return d;
}

unsigned perftest_mtu_code(unsigned bytes) {
  for (unsigned c = 1; c <= 5; ++c)
    if (perftest_mtu_bytes(c) == bytes) return c;
  return 0;
}
unsigned perftest_mtu_bytes(unsigned code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

bool PerftestSession::exchange(const void* mine, void* theirs, std::size_t n, const char* what) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  auto left = [&] {
    return static_cast<int>(std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  end - std::chrono::steady_clock::now()).count()));
  };
  auto put = [&] {
    const char* p = static_cast<const char*>(mine);
    for (std::size_t off = 0; off < n;) {
      const ssize_t k = ::send(fd_, p + off, n - off, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        err_ = fmt::format("perftest {}: send: {}", what, std::strerror(errno));
        return false;
      }
      off += static_cast<std::size_t>(k);
    }
    return true;
  };
  auto get = [&] {
    char* p = static_cast<char*>(theirs);
    for (std::size_t off = 0; off < n;) {
      pollfd pf{fd_, POLLIN, 0};
      if (::poll(&pf, 1, left()) <= 0) {
        err_ = fmt::format("perftest {}: no answer within {} ms ({} of {} octets)", what, timeout_ms_, off, n);
        return false;
      }
      const ssize_t k = ::recv(fd_, p + off, n - off, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        err_ = fmt::format("perftest {}: the other side closed after {} of {} octets", what, off, n);
        return false;
      }
      off += static_cast<std::size_t>(k);
    }
    return true;
  };
  return client_ ? put() && get() : get() && put();
}

bool PerftestSession::setup(unsigned& mtu, std::string& remote_version) {
  char v[16] = "6.06", rv[16] = {};
  if (!exchange(v, rv, sizeof v, "version")) return false;
  remote_version.assign(rv, strnlen(rv, sizeof rv));
  const std::uint32_t page = std::bit_cast<std::uint32_t>(std::array<std::uint8_t, 4>{0, 0, 0x10, 0});  // 4096, big-endian
  const std::uint32_t line = std::bit_cast<std::uint32_t>(std::array<std::uint8_t, 4>{0, 0, 0, 0x40});  // 64
  std::uint32_t rpage = 0, rline = 0;
  if (!exchange(&page, &rpage, 4, "page size") || !exchange(&line, &rline, 4, "cache line size")) return false;
  char m[2] = {static_cast<char>('0' + perftest_mtu_code(mtu)), 0}, rm[2] = {};
  if (!exchange(m, rm, 2, "MTU")) return false;
  const unsigned theirs = perftest_mtu_bytes(static_cast<unsigned>(rm[0] - '0'));
  if (!theirs) {
    err_ = fmt::format("perftest MTU: '{}' is no MTU code", std::string(rm, strnlen(rm, 2)));
    return false;
  }
  mtu = std::min(mtu, theirs);
  return true;
}

bool PerftestSession::keys(const PerftestDest& mine, PerftestDest& theirs) {
  const std::string out = perftest_keys(mine);
  std::string in(kPerftestKeySize, '\0');
  if (!exchange(out.data(), in.data(), kPerftestKeySize, "keys")) return false;
  auto d = parse_perftest_keys(in, err_);
  if (!d) return false;
  theirs = *d;
  return true;
}

bool PerftestSession::barrier(const PerftestDest& mine) {
  PerftestDest ignored;
  return keys(mine, ignored);
}

bool PerftestSession::report(std::uint64_t size, std::uint64_t iterations, double peak_gbps, double avg_gbps, double mpps) {
  auto be = [](std::uint64_t v) { return std::endian::native == std::endian::little ? __builtin_bswap64(v) : v; };
  for (const std::uint64_t v : {size, iterations, std::bit_cast<std::uint64_t>(peak_gbps),
                                std::bit_cast<std::uint64_t>(avg_gbps), std::bit_cast<std::uint64_t>(mpps)}) {
    const std::uint64_t out = be(v);
    std::uint64_t in = 0;
    if (!exchange(&out, &in, 8, "bandwidth report")) return false;
  }
  return true;
}

// perftest until July 2023 wrote "done" and its NUL after the last
// handshake, then closed (neither side read it); from upstream commit
// dbf395e ("Fix race in non-rdmacm ctx_close_connection()", in perftest
// 25.01 of Debian 13 and sid) it only closes. Either ends a run: ours is
// written for an older peer (a newer one may have closed already, which is
// no error), and the peer's "done" or its close (or the reset our "done"
// then brings) at the first octet is taken.
bool PerftestSession::done() {
  static constexpr char kDone[5] = "done";
  (void)::send(fd_, kDone, sizeof kDone, MSG_NOSIGNAL);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  char in[sizeof kDone] = {};
  for (std::size_t off = 0; off < sizeof in;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    pollfd pf{fd_, POLLIN, 0};
    if (::poll(&pf, 1, static_cast<int>(std::max<long>(0, left))) <= 0) {
      err_ = fmt::format("perftest done: no \"done\" and no close within {} ms ({} of {} octets)", timeout_ms_, off, sizeof in);
      return false;
    }
    const ssize_t k = ::recv(fd_, in + off, sizeof in - off, 0);
    if (k < 0 && errno == EINTR) continue;
    // A perftest since dbf395e closes: an orderly close, or a reset when our
    // "done" reached its socket after it closed (the race that commit names).
    if (off == 0 && (k == 0 || (k < 0 && errno == ECONNRESET))) return true;
    if (k <= 0) {
      err_ = k == 0 ? fmt::format("perftest done: the other side closed after {} of {} octets", off, sizeof in)
                    : fmt::format("perftest done: after {} of {} octets: {}", off, sizeof in, std::strerror(errno));
      return false;
    }
    off += static_cast<std::size_t>(k);
  }
  if (std::memcmp(in, kDone, sizeof in) != 0) {
    err_ = "perftest done: expected \"done\" and NUL, got something else";
    return false;
  }
  return true;
}

}  // namespace rdmaconf::interop::ib

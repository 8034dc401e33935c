#pragma once
// A capture held in memory frame by frame, to be changed and written again
// (the metamorphic and split-check tests).
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "captures/io/pcap_reader.hpp"

namespace rdmaconf::test {

using captures::io::PcapReader;

struct RawFrame {
  std::int64_t sec = 0, usec = 0;
  std::uint32_t orig_len = 0;
  std::vector<std::byte> data;
};

struct Capture {
  int linktype = 0;
  std::vector<RawFrame> frames;
  // How save() writes it: classic pcap (libpcap's writer), pcapng (one
  // interface), or classic pcap of ERF records (LINKTYPE_ERF) holding the frames.
  enum class Format { pcap, pcapng, erf } format = Format::pcap;
};

inline Capture load(const std::string& path) {
  std::string err;
  auto r = PcapReader::open(path, err, false);
  BOOST_TEST_REQUIRE(!!r, err);
  Capture c;
  c.linktype = r->linktype();
  while (auto f = r->next()) c.frames.push_back({f->ts_sec, f->ts_usec, f->orig_len, {f->data.begin(), f->data.end()}});
  return c;
}

namespace detail {
inline void put(std::string& b, std::uint64_t v, int n, bool big = false) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<char>(v >> (8 * (big ? n - 1 - i : i))));
}
inline void put(std::string& b, const std::vector<std::byte>& d) { b.append(reinterpret_cast<const char*>(d.data()), d.size()); }

// pcapng, little-endian: a section header, one interface (microsecond
// stamps by default), an enhanced packet block per frame.
inline std::string pcapng(const Capture& c) {
  std::string b;
  auto block = [&](std::uint32_t type, const std::string& body) {
    const std::uint32_t len = static_cast<std::uint32_t>(12 + body.size() + (-body.size() & 3));
    put(b, type, 4);
    put(b, len, 4);
    b += body;
    b.append(-body.size() & 3, '\0');
    put(b, len, 4);
  };
  std::string shb;
  put(shb, 0x1a2b3c4d, 4);
  put(shb, 1, 2);
  put(shb, 0, 2);
  put(shb, ~std::uint64_t{0}, 8);  // section length not given
  block(0x0a0d0d0a, shb);
  std::string idb;
  put(idb, static_cast<std::uint32_t>(c.linktype), 2);
  put(idb, 0, 2);
  put(idb, 262144, 4);
  block(1, idb);
  for (const auto& f : c.frames) {
    std::string epb;
    const std::uint64_t ts = static_cast<std::uint64_t>(f.sec) * 1000000 + static_cast<std::uint64_t>(f.usec);
    put(epb, 0, 4);
    put(epb, ts >> 32, 4);
    put(epb, ts & 0xffffffff, 4);
    put(epb, f.data.size(), 4);
    put(epb, std::max<std::size_t>(f.orig_len, f.data.size()), 4);
    put(epb, f.data);
    epb.append(-f.data.size() & 3, '\0');
    block(6, epb);
  }
  return b;
}

// Classic pcap of ERF records: Ethernet (type 2: offset and pad octets, the
// frame, a zero FCS the wire length counts), InfiniBand (21) or IPv4/IPv6 (22, 23).
inline std::string erf(const Capture& c) {
  std::string b;
  put(b, 0xa1b2c3d4, 4);
  put(b, 2, 2);
  put(b, 4, 2);
  put(b, 0, 8);
  put(b, 262144, 4);
  put(b, 197, 4);
  for (const auto& f : c.frames) {
    std::string body;
    int type = 21;
    std::size_t wlen = std::max<std::size_t>(f.orig_len, f.data.size());
    if (c.linktype == DLT_EN10MB) {
      type = 2;
      body.append(2, '\0');
      put(body, f.data);
      if (f.data.size() >= wlen) body.append(4, '\0');  // the FCS, when the frame is whole
      wlen += 4;
    } else {
      if (c.linktype != DLT_INFINIBAND) type = !f.data.empty() && (static_cast<unsigned>(f.data[0]) >> 4) == 6 ? 23 : 22;
      put(body, f.data);
    }
    std::string rec;
    put(rec, (static_cast<std::uint64_t>(f.sec) << 32) | ((static_cast<std::uint64_t>(f.usec) << 32) / 1000000), 8);
    rec.push_back(static_cast<char>(type));
    rec.push_back(0x04);
    put(rec, 16 + body.size(), 2, true);
    put(rec, 0, 2, true);
    put(rec, wlen, 2, true);
    rec += body;
    put(b, static_cast<std::uint64_t>(f.sec), 4);
    put(b, static_cast<std::uint64_t>(f.usec), 4);
    put(b, rec.size(), 4);
    put(b, rec.size(), 4);
    b += rec;
  }
  return b;
}
}  // namespace detail

// The file save() writes, in memory.
inline std::string encode(const Capture& c) {
  if (c.format != Capture::Format::pcap) return c.format == Capture::Format::pcapng ? detail::pcapng(c) : detail::erf(c);
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  BOOST_TEST_REQUIRE(out != nullptr);
  pcap_t* dead = pcap_open_dead(c.linktype, 262144);
  pcap_dumper_t* d = pcap_dump_fopen(dead, out);
  BOOST_TEST_REQUIRE(d != nullptr, pcap_geterr(dead));
  for (const auto& f : c.frames) {
    pcap_pkthdr h{};
    h.ts.tv_sec = f.sec;
    h.ts.tv_usec = static_cast<suseconds_t>(f.usec);
    h.caplen = static_cast<bpf_u_int32>(f.data.size());
    h.len = std::max<bpf_u_int32>(h.caplen, f.orig_len);
    pcap_dump(reinterpret_cast<u_char*>(d), &h, reinterpret_cast<const u_char*>(f.data.data()));
  }
  pcap_dump_close(d);  // (closes `out`, which sets buf and len)
  pcap_close(dead);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

inline void save(const std::string& path, const Capture& c) {
  std::ofstream out(path, std::ios::binary);
  out << encode(c);
  out.close();
  BOOST_TEST_REQUIRE(!out.fail(), path << ": cannot write");
}

}  // namespace rdmaconf::test

#pragma once
// A capture held in memory frame by frame, to be changed and written again
// (the metamorphic and split-check tests).
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdint>
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

inline void save(const std::string& path, const Capture& c) {
  pcap_t* dead = pcap_open_dead(c.linktype, 262144);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  BOOST_TEST_REQUIRE(d != nullptr, path);
  for (const auto& f : c.frames) {
    pcap_pkthdr h{};
    h.ts.tv_sec = f.sec;
    h.ts.tv_usec = static_cast<suseconds_t>(f.usec);
    h.caplen = static_cast<bpf_u_int32>(f.data.size());
    h.len = std::max<bpf_u_int32>(h.caplen, f.orig_len);
    pcap_dump(reinterpret_cast<u_char*>(d), &h, reinterpret_cast<const u_char*>(f.data.data()));
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

}  // namespace rdmaconf::test

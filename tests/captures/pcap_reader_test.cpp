// Our reading of classic pcap files (captures/io/pcap_reader.cpp
// walks their records itself) against libpcap reading the same files: every
// golden and lab capture, the format's variants (byte order, nanoseconds,
// a snapshot length shorter than the records), files large enough that
// records straddle the reader's chunks, and files cut at every point or
// carrying an impossible record length. libpcap is the oracle: the same
// link type, the same frames (time, lengths, octets), and an error exactly
// where libpcap reports one.
#include <boost/test/unit_test.hpp>

#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "captures/io/pcap_reader.hpp"
#include "conformance/checker.hpp"

namespace fs = std::filesystem;
using rdmaconf::captures::io::PcapReader;

namespace {

const fs::path kSource = RDMACONF_SOURCE_DIR;

struct Rec {
  std::int64_t sec = 0, usec = 0;
  std::uint32_t orig = 0;
  std::string data;
  bool operator==(const Rec&) const = default;
};
struct Read {
  int linktype = -1;
  std::vector<Rec> recs;
  bool error = false;
  std::string message;
};

Read ours(const fs::path& p, bool hash) {
  Read r;
  std::string err;
  auto reader = PcapReader::open(p.string(), err, hash);
  if (!reader) {
    r.error = true;
    r.message = err;
    return r;
  }
  r.linktype = reader->linktype();
  while (auto f = reader->next())
    r.recs.push_back({f->ts_sec, f->ts_usec, f->orig_len,
                      std::string(reinterpret_cast<const char*>(f->data.data()), f->data.size())});
  r.error = !reader->error().empty();
  r.message = reader->error();
  if (hash) (void)reader->sha256();
  return r;
}

Read libpcap(const fs::path& p) {
  Read r;
  char eb[PCAP_ERRBUF_SIZE] = {};
  pcap_t* pc = pcap_open_offline(p.c_str(), eb);
  if (!pc) {
    r.error = true;
    r.message = eb;
    return r;
  }
  r.linktype = pcap_datalink(pc);
  pcap_pkthdr* h = nullptr;
  const u_char* d = nullptr;
  int rc;
  while ((rc = pcap_next_ex(pc, &h, &d)) == 1)
    r.recs.push_back({h->ts.tv_sec, h->ts.tv_usec, h->len, std::string(reinterpret_cast<const char*>(d), h->caplen)});
  r.error = rc == PCAP_ERROR;
  r.message = r.error ? pcap_geterr(pc) : "";
  pcap_close(pc);
  return r;
}

// Both ways of ours (with and without the hashing thread) agree with libpcap.
void agree(const fs::path& p, const std::string& what) {
  const Read want = libpcap(p);
  for (const bool hash : {false, true}) {
    const Read got = ours(p, hash);
    BOOST_TEST_CONTEXT(what << (hash ? " (hashing)" : "")) {
      BOOST_TEST(got.error == want.error, "ours: '" << got.message << "' libpcap: '" << want.message << "'");
      if (want.error && !got.message.empty()) BOOST_TEST(got.message.find(p.string()) != std::string::npos, got.message);
      if (!want.error || got.linktype >= 0) BOOST_TEST(got.linktype == want.linktype);
      BOOST_TEST(got.recs.size() == want.recs.size());
      const std::size_t n = std::min(got.recs.size(), want.recs.size());
      std::size_t first_diff = n;
      for (std::size_t i = 0; i < n && first_diff == n; ++i)
        if (!(got.recs[i] == want.recs[i])) first_diff = i;
      BOOST_TEST(first_diff == n, "frame " << first_diff + 1 << " differs");
    }
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void spit(const fs::path& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

std::uint32_t get32(const std::string& b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
void put32(std::string& b, std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void swap_at(std::string& b, std::size_t at, std::size_t n) { std::reverse(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n)); }

// Offsets of the record headers of a little-endian classic pcap file.
std::vector<std::size_t> records(const std::string& b) {
  std::vector<std::size_t> at;
  for (std::size_t o = 24; o + 16 <= b.size(); o += 16 + get32(b, o + 8)) at.push_back(o);
  return at;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / fmt::format("rdmaconf-pcap-reader-{}", getpid());
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

const fs::path kBase = kSource / "captures" / "golden" / "iwarp-rev2-crc.pcap";

}  // namespace

BOOST_AUTO_TEST_SUITE(pcap_reader)

BOOST_AUTO_TEST_CASE(every_shipped_capture_reads_as_libpcap_reads_it) {
  int n = 0;
  for (const char* dir : {"golden", "lab"})
    for (const auto& e : fs::directory_iterator(kSource / "captures" / dir))
      if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") {
        agree(e.path(), e.path().filename().string());
        ++n;
      }
  BOOST_TEST(n >= 130);
}

BOOST_AUTO_TEST_CASE(format_variants) {
  TempDir t;
  const std::string base = slurp(kBase);
  BOOST_REQUIRE(get32(base, 0) == 0xa1b2c3d4u);
  const auto recs = records(base);
  BOOST_REQUIRE(recs.size() > 10);

  std::string be = base;  // written on a big-endian machine: every field swapped
  swap_at(be, 0, 4);
  swap_at(be, 4, 2);
  swap_at(be, 6, 2);
  for (std::size_t at : {8, 12, 16, 20}) swap_at(be, at, 4);
  for (const auto o : recs)
    for (std::size_t k = 0; k < 16; k += 4) swap_at(be, o + k, 4);
  spit(t.dir / "be.pcap", be);
  agree(t.dir / "be.pcap", "big-endian");

  std::string ns = base;  // nanosecond timestamps
  put32(ns, 0, 0xa1b23c4du);
  for (const auto o : recs) put32(ns, o + 4, get32(ns, o + 4) * 1000 + 999);
  spit(t.dir / "ns.pcap", ns);
  agree(t.dir / "ns.pcap", "nanoseconds");

  std::string snap = base;  // records longer than the snapshot length
  put32(snap, 16, 60);
  spit(t.dir / "snap.pcap", snap);
  agree(t.dir / "snap.pcap", "snapshot length 60");

  std::string zero = base;  // snapshot length 0
  put32(zero, 16, 0);
  spit(t.dir / "snap0.pcap", zero);
  agree(t.dir / "snap0.pcap", "snapshot length 0");

  std::string v = base;  // an unknown version: libpcap decides
  v[6] = 3;
  spit(t.dir / "v23.pcap", v);
  agree(t.dir / "v23.pcap", "version 2.3");

  std::string raw = base;  // LINKTYPE_RAW (101): libpcap's own mapping of the link type
  put32(raw, 20, 101);
  spit(t.dir / "raw.pcap", raw);
  agree(t.dir / "raw.pcap", "LINKTYPE_RAW");
}

BOOST_AUTO_TEST_CASE(records_across_the_reader_chunks) {
  TempDir t;
  const std::string base = slurp(kBase);
  std::string big = base;
  const std::string body = base.substr(24);
  while (big.size() < (5u << 20)) big += body;  // five 1 MiB chunks and more, records cut at each boundary
  spit(t.dir / "big.pcap", big);
  agree(t.dir / "big.pcap", "5 MiB");
}

BOOST_AUTO_TEST_CASE(cut_files_and_impossible_lengths) {
  TempDir t;
  const std::string base = slurp(kBase);
  const auto recs = records(base);
  // Cut at every octet of the first records, and at every record boundary
  // and the octets around it further on.
  std::vector<std::size_t> cuts;
  for (std::size_t c = 0; c < std::min<std::size_t>(base.size(), 400); ++c) cuts.push_back(c);
  for (const auto o : recs)
    for (std::size_t d : {0, 1, 15, 16, 17}) cuts.push_back(o + d);
  for (const auto c : cuts) {
    spit(t.dir / "cut.pcap", base.substr(0, c));
    agree(t.dir / "cut.pcap", fmt::format("cut at {}", c));
  }
  std::string huge = base;  // the third record claims more than any record may hold
  put32(huge, recs[2] + 8, 300000);
  spit(t.dir / "huge.pcap", huge);
  agree(t.dir / "huge.pcap", "captured length 300000");
  const Read r = ours(t.dir / "huge.pcap", false);
  BOOST_TEST(r.message.find("frame 3") != std::string::npos, r.message);
  BOOST_TEST(r.message.find(fmt::format("file offset {}", recs[2])) != std::string::npos, r.message);
}

// A compressed capture is refused by the compression's name, with how to
// read it: gzip (a real gzip file, made by Python's gzip module), and zstd,
// xz and bzip2 by the magic numbers their formats begin with.
BOOST_AUTO_TEST_CASE(compressed_captures_are_named) {
  TempDir t;
  const auto gz = t.dir / "c.pcap.gz";
  BOOST_TEST_REQUIRE(std::system(("/usr/bin/python3 -c 'import gzip, sys; open(sys.argv[2], \"wb\").write(gzip.compress(open(sys.argv[1], "
                                  "\"rb\").read()))' " + kBase.string() + " " + gz.string())
                                     .c_str()) == 0);
  const Read g = ours(gz, false);
  BOOST_TEST(g.error);
  BOOST_TEST(g.message.find(gz.string() + ": a gzip-compressed file, not a capture: decompress it first (gzip -dc") != std::string::npos,
             g.message);
  for (const auto& [name, magic] : {std::pair{"zstd", std::string("\x28\xb5\x2f\xfd", 4)}, std::pair{"xz", std::string("\xfd" "7zXZ\0", 6)},
                                    std::pair{"bzip2", std::string("BZh9")}}) {
    spit(t.dir / "c", magic + std::string(64, 'x'));
    const Read r = ours(t.dir / "c", false);
    BOOST_TEST(r.error, name);
    BOOST_TEST(r.message.find(fmt::format("a {}-compressed file", name)) != std::string::npos, r.message);
  }
  spit(t.dir / "c", std::string(64, 'x'));  // not compressed, not a capture: the message says just that
  BOOST_TEST(ours(t.dir / "c", false).message.find("not a pcap or pcapng capture") != std::string::npos);
}

// A capture checked from memory gives the result the file gives (the
// fuzz target and any embedding read captures that way), hash included.
BOOST_AUTO_TEST_CASE(memory_and_file_agree) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kSource / "captures" / "golden")) {
    if (e.path().extension() != ".pcap" && e.path().extension() != ".pcapng") continue;
    const std::string bytes = slurp(e.path());
    rdmaconf::conformance::CheckOptions o;
    o.strict = true;
    const rdmaconf::conformance::Checker c(o);
    const auto f = c.check_file(e.path().string());
    const auto m = c.check_memory(e.path().string(), rdmaconf::protocols::as_bytes(bytes.data(), bytes.size()));
    BOOST_TEST_CONTEXT(e.path().filename()) {
      BOOST_TEST(m.sha256 == f.sha256);
      BOOST_TEST(m.error == f.error);
      BOOST_TEST(m.stats.frames == f.stats.frames);
      BOOST_TEST(m.scopes.size() == f.scopes.size());
      for (std::size_t i = 0; i < std::min(m.scopes.size(), f.scopes.size()); ++i)
        for (std::size_t k = 0; k < std::min(m.scopes[i].outcomes.size(), f.scopes[i].outcomes.size()); ++k)
          BOOST_TEST((m.scopes[i].outcomes[k].tally.verdict() == f.scopes[i].outcomes[k].tally.verdict()));
    }
    ++n;
  }
  BOOST_TEST(n > 10);
}

// A record whose captured length exceeds its original length, and a
// timestamp earlier than the one before it: the check warns about each with
// its frame number (and counts them), where it used to stay silent.
BOOST_AUTO_TEST_CASE(file_level_anomalies_are_warned) {
  TempDir t;
  std::string b = slurp(kBase);
  const auto recs = records(b);
  BOOST_REQUIRE(recs.size() > 6);
  put32(b, recs[2] + 12, get32(b, recs[2] + 8) - 4);  // frame 3: orig_len below caplen
  put32(b, recs[4], get32(b, recs[3]) - 2);           // frame 5 (at +50 us): 2 s before frame 4 (at +40 us)
  spit(t.dir / "odd.pcap", b);
  const Read r = ours(t.dir / "odd.pcap", false);
  BOOST_TEST(!r.error);
  rdmaconf::conformance::CheckOptions o;
  o.hash = false;
  const auto res = rdmaconf::conformance::Checker(o).check_file((t.dir / "odd.pcap").string());
  BOOST_TEST(res.error.empty(), res.error);
  BOOST_TEST(res.stats.capture_anomalies == 2u);
  std::string all;
  for (const auto& w : res.warnings) all += w + "\n";
  BOOST_TEST(all.find("frame 3: captured length") != std::string::npos, all);
  BOOST_TEST(all.find("frame 5: timestamp 1999990 us earlier than frame 4's") != std::string::npos, all);
  // The untouched file has none.
  const auto clean = rdmaconf::conformance::Checker(o).check_file(kBase.string());
  BOOST_TEST(clean.stats.capture_anomalies == 0u);
}

// A capture of ERF records (LINKTYPE_ERF) is read as the packets inside
// them, by the first record's type: here Ethernet, an extension header
// stepped over and the FCS left out; a record that holds no Ethernet frame
// (too short, another type, padding, cut in its extension headers) is a
// frame the checker names as undecodable, and the rest are read.
BOOST_AUTO_TEST_CASE(erf_records) {
  TempDir t;
  const Read base = ours(kBase, false);
  BOOST_REQUIRE(base.recs.size() > 2);
  const std::string eth = base.recs[0].data;
  // ERF header: 64-bit little-endian timestamp, type, flags, then record
  // length, loss counter and wire length, big-endian.
  auto erf = [](int type, const std::string& body, std::size_t wlen, const std::string& ext = {}) {
    std::string r(16, '\0');
    r[8] = static_cast<char>(type | (ext.empty() ? 0 : 0x80));
    r[9] = 0x04;
    const std::size_t rlen = 16 + ext.size() + body.size();
    r[10] = static_cast<char>(rlen >> 8), r[11] = static_cast<char>(rlen);
    r[14] = static_cast<char>(wlen >> 8), r[15] = static_cast<char>(wlen);
    return r + ext + body;
  };
  const std::string fcs = "\x11\x22\x33\x44";
  const std::string pad2(2, '\0');
  const std::string ext("\x03\0\0\0\0\0\0\x01", 8);  // one extension header, no other after it
  const std::vector<std::string> records = {
      erf(2, pad2 + eth + fcs, eth.size() + 4, ext),                // 1: read as the Ethernet frame
      std::string(10, '\x02'),                                      // 2: shorter than a header
      erf(22, base.recs[1].data.substr(14), base.recs[1].data.size() - 14),  // 3: an IPv4 record
      erf(48, std::string(8, '\0'), 0),                              // 4: padding
      erf(2, "", 60, std::string("\x83\0\0\0", 4)),                 // 5: cut in its extension headers
      erf(2, pad2 + eth.substr(0, 20), eth.size() + 4),             // 6: snapped at 20 octets of the frame
  };
  std::string file("\xd4\xc3\xb2\xa1\x02\0\x04\0\0\0\0\0\0\0\0\0\0\0\x04\0\xc5\0\0\0", 24);  // LINKTYPE_ERF 197
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::string h(16, '\0');
    put32(h, 0, static_cast<std::uint32_t>(1700000000 + i));
    put32(h, 8, static_cast<std::uint32_t>(records[i].size()));
    put32(h, 12, static_cast<std::uint32_t>(records[i].size()));
    file += h + records[i];
  }
  spit(t.dir / "erf.pcap", file);
  const Read r = ours(t.dir / "erf.pcap", false);
  BOOST_TEST(!r.error, r.message);
  BOOST_TEST(r.linktype == 1);  // Ethernet, the first record's
  BOOST_TEST_REQUIRE(r.recs.size() == records.size());
  BOOST_TEST(r.recs[0].data == eth);
  BOOST_TEST(r.recs[0].orig == eth.size());
  for (std::size_t i : {1u, 2u, 3u, 4u}) BOOST_TEST(r.recs[i].data.empty(), "frame " << i + 1);
  BOOST_TEST(r.recs[5].data == eth.substr(0, 20));
  BOOST_TEST(r.recs[5].orig == eth.size());

  rdmaconf::conformance::CheckOptions o;
  o.hash = false;
  const auto res = rdmaconf::conformance::Checker(o).check_file((t.dir / "erf.pcap").string());
  BOOST_TEST(res.error.empty(), res.error);
  BOOST_TEST(res.stats.frames == records.size());
  std::string all;
  for (const auto& w : res.warnings) all += w + "\n";
  for (const char* want : {"frame 2: an ERF record shorter than its 16-octet header",
                           "frame 3: an ERF record of another type than the capture's first",
                           "frame 4: an ERF padding record, which carries no packet",
                           "frame 5: an ERF record cut inside its extension headers"})
    BOOST_TEST(all.find(want) != std::string::npos, want << " not in:\n" << all);
  BOOST_TEST(res.stats.undecodable_frames >= 4u);
}

BOOST_AUTO_TEST_SUITE_END()

// The engines' frame tap written to a pcap: a TCP connection from its
// handshake to its FINs with the octets each side handed over, and UDP
// datagrams, read back by our reader and its dissector.
#include <arpa/inet.h>

#include "captures/io/packet.hpp"
#include "captures/io/pcap_tap.hpp"

BOOST_AUTO_TEST_SUITE(pcap_tap)

BOOST_AUTO_TEST_CASE(what_the_engines_hand_over_is_read_back) {
  namespace io = rdmaconf::captures::io;
  auto ep = [](const char* ip, std::uint16_t port) {
    sockaddr_storage s{};
    auto& in = reinterpret_cast<sockaddr_in&>(s);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    ::inet_pton(AF_INET, ip, &in.sin_addr);
    return s;
  };
  const auto a = ep("192.0.2.1", 40001), b = ep("192.0.2.2", 7174);
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("rdmaconf-tap-{}.pcap", ::getpid())).string();
  std::string err;
  BOOST_TEST(!io::pcap_tap("/nonexistent-dir/x.pcap", err));
  BOOST_TEST(!err.empty());
  {
    auto tap = io::pcap_tap(path, err);
    BOOST_TEST_REQUIRE(!!tap, err);
    auto s = tap->stream(a, b);
    const std::string req = "request", rep = "reply!";
    s->data(0, std::as_bytes(std::span(req)));
    s->data(1, std::as_bytes(std::span(rep)));
    const std::string dg = "datagram";
    tap->datagram(b, a, std::as_bytes(std::span(dg)));
    s->close();
  }
  auto r = PcapReader::open(path, err, false);
  BOOST_TEST_REQUIRE(!!r, err);
  std::vector<std::string> got;
  while (auto f = r->next()) {
    const auto d = io::dissect(r->linktype(), *f);
    const auto& p = d.pkt;
    got.push_back(fmt::format("{}:{}>{}{}{} {}", p.protocol, p.sport, p.dport, p.syn ? " S" : "", p.fin ? " F" : "",
                              std::string(reinterpret_cast<const char*>(p.payload.data()), p.payload.size())));
  }
  std::filesystem::remove(path);
  const std::vector<std::string> want{"6:40001>7174 S ",       "6:7174>40001 S ",       "6:40001>7174 ",
                                      "6:40001>7174 request",  "6:7174>40001 reply!",   "17:7174>40001 datagram",
                                      "6:40001>7174 F ",       "6:7174>40001 F ",       "6:40001>7174 "};
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

#pragma once
// `rdmaconf nic live`: the harness's wire on a real Linux interface. It makes
// a network namespace with one end of a veth pair (the kernel's side,
// 10.77.0.1) and keeps the other end (the NIC's wire, 10.77.0.2) in its own,
// read and written through an AF_PACKET socket. Ordinary kernel UDP sockets
// in the namespace send datagrams to the NIC model, which places them in
// posted receives; the model sends datagrams back with checksum offload, and
// the kernel's own counters (/proc/net/snmp: Udp InDatagrams, InCsumErrors)
// judge its checksums. Every Kth datagram from the kernel is corrupted on
// the wire (one payload octet), and the model must drop it. Needs root
// (namespaces, veth, raw sockets); sends to nothing outside the namespace.
#include <cstdint>
#include <iosfwd>
#include <string>

namespace rdmaconf::interop::fastudp {

struct LiveOptions {
  std::string plugin;
  std::uint32_t count = 2000;     // datagrams each way
  std::uint32_t size = 1472;      // payload octets
  std::uint32_t corrupt_every = 10;  // 0: none
  int timeout_ms = 20000;
};

struct LiveResult {
  bool ok = false;
  std::string error;  // set up failed (not the NIC's doing)
  std::uint64_t sent_by_kernel = 0, delivered = 0, intact = 0, corrupted = 0, csum_dropped = 0;
  std::uint64_t sent_by_nic = 0, kernel_received = 0, kernel_in_datagrams = 0, kernel_in_csum_errors = 0, kernel_in_errors = 0;
  double rx_seconds = 0;
};

LiveResult run_live(const LiveOptions& opt, std::ostream& log);

}  // namespace rdmaconf::interop::fastudp

#!/usr/bin/python3
"""Independent ICRC and VCRC oracle for native InfiniBand and RoCEv1 captures.

  ib_crc.py verify IN.pcap   print JSON: the frames whose ICRC or VCRC differs

A native capture has link type LINKTYPE_INFINIBAND (247); a RoCEv1 capture is
Ethernet (1) whose frames of type 0x8915 carry a GRH, the transport packet
and the ICRC, and no VCRC: their ICRC is the one of a global native packet.
RoCEv2 over IPv6 (Ethernet, type 0x86dd, UDP to port 4791) is covered too,
which scapy's RoCE layer is not: eight octets of ones, the IPv6 header with
traffic class, flow label and hop limit set to ones, the UDP header with its
checksum set to ones, then the BTH as above (IBTA Vol. 1 Annex A17).

Shares no code with rdmaconf: the pcap records are read here with struct, the
CRC-32 is zlib's and the CRC-16 is crcmod's. What it takes from IBTA Vol. 1:
- §7.8.1, ICRC: CRC-32 (the Ethernet one) over the packet from the LRH to the
  ICRC field, with the fields a switch or router may change replaced by ones:
  without a GRH the LRH's VL; with a GRH the whole LRH and the GRH's traffic
  class, flow label and hop limit; in both the BTH octet after the P_Key.
- §7.8.2, VCRC: CRC-16 with polynomial x^16+x^12+x^3+x+1 (0x100B), register
  seeded with ones, reflected, result inverted, over the LRH through the ICRC.
Both travel least significant octet first. The frame's last two octets are
the VCRC (the link type carries it) and the four before them the ICRC.
"""
import json
import struct
import sys
import zlib

import crcmod

VCRC = crcmod.mkCrcFun(0x1100B, initCrc=0x0000, rev=True, xorOut=0xFFFF)  # initCrc = seed ^ xorOut


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        sys.exit(path + ": not a pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    if linktype not in (1, 247):
        sys.exit(path + ": link type is neither Ethernet (1) nor LINKTYPE_INFINIBAND (247)")
    off, n = 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack(e + "I", data[off + 8:off + 12])[0]
        n += 1
        yield linktype, n, data[off + 16:off + 16 + caplen]
        off += 16 + caplen


def masked_grh(grh):
    g = bytearray(grh)
    g[0] |= 0x0F  # traffic class (low nibble of octet 0 ...)
    g[1:4] = b"\xff\xff\xff"  # ... its rest and the flow label
    g[7] = 0xFF  # hop limit
    return bytes(g)


def icrc(pkt, lrh):
    """pkt: LRH (when lrh) or GRH through ICRC."""
    if not lrh or pkt[1] & 3 == 3:
        at = 8 if lrh else 0
        head, bth_at = b"\xff" * 8 + masked_grh(pkt[at:at + 40]), at + 40
    else:
        head, bth_at = bytes([pkt[0] | 0xF0]) + pkt[1:8], 8
    bth = bytearray(pkt[bth_at:bth_at + 12])
    bth[4] = 0xFF
    return zlib.crc32(head + bytes(bth) + pkt[bth_at + 12:-4]) & 0xFFFFFFFF


def verify(path):
    checked, bad_icrc, bad_vcrc = 0, [], []
    for linktype, n, f in frames(path):
        if linktype == 1 and f[12:14] == b"\x86\xdd" and len(f) >= 14 + 40 + 8 + 16 and f[14 + 6] == 17 \
                and int.from_bytes(f[14 + 40 + 2:14 + 40 + 4], "big") == 4791:
            ip = f[14:14 + 40 + int.from_bytes(f[14 + 4:14 + 6], "big")]
            udp = bytearray(ip[40:48])
            udp[6:8] = b"\xff\xff"
            bth = bytearray(ip[48:60])
            bth[4] = 0xFF
            checked += 1
            want = zlib.crc32(b"\xff" * 8 + masked_grh(ip[:40]) + bytes(udp) + bytes(bth) + ip[60:-4]) & 0xFFFFFFFF
            if want != int.from_bytes(ip[-4:], "little"):
                bad_icrc.append(n)
            continue
        if linktype == 1:  # RoCEv1: GRH (next header 0x1B) after an Ethernet header of type 0x8915
            if len(f) < 14 + 40 or f[12:14] != b"\x89\x15" or f[14 + 6] != 0x1B:
                continue
            pkt = f[14:]  # at least 70 octets: never Ethernet padding
            checked += 1
            if icrc(pkt, False) != int.from_bytes(pkt[-4:], "little"):
                bad_icrc.append(n)
            continue
        if len(f) < 8 or (f[1] & 3) not in (2, 3):
            continue  # no BTH follows: not an IBA transport packet
        pkt = f[:-2]
        if (f[1] & 3) == 3 and pkt[8 + 6] != 0x1B:
            continue
        checked += 1
        if icrc(pkt, True) != int.from_bytes(pkt[-4:], "little"):
            bad_icrc.append(n)
        if VCRC(pkt) != int.from_bytes(f[-2:], "little"):
            bad_vcrc.append(n)
    print(json.dumps({"checked": checked, "icrc_mismatched_frames": bad_icrc, "vcrc_mismatched_frames": bad_vcrc}))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "verify":
        sys.exit(__doc__)
    verify(sys.argv[2])

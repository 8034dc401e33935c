#!/usr/bin/python3
"""Rewrites a pcap capture as one of ERF records (LINKTYPE_ERF, 197), the way
Endace DAG cards and many InfiniBand capture tools store them.

usage: to_erf.py IN.pcap OUT.pcap

Ethernet frames become ERF Ethernet records (type 2: two octets of offset and
pad before the frame, the FCS after it and counted in the wire length), native
InfiniBand packets ERF InfiniBand records (type 21), raw IP packets ERF IPv4 or
IPv6 records (22, 23). Every second record carries one extension header, and
records are padded to a multiple of 8 octets, as DAG cards write them. Written
from the record layout alone (a 16-octet header: 64-bit little-endian
timestamp, type, flags, then record length, loss counter and wire length,
16 bits big-endian each), with no code of ours.
"""
import struct
import sys
import zlib

ETH, INFINIBAND, IPV4, IPV6 = 2, 21, 22, 23
EXT_FLOW_ID = 3  # an extension header type a DAG card writes


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nsec = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(order + "I", data[20:24])[0]
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(order + "IIII", data[pos:pos + 16])
        yield linktype, sec, frac if nsec else frac * 1000, data[pos + 16:pos + 16 + incl], orig
        pos += 16 + incl


def erf_record(linktype, sec, nsec, pkt, orig, n):
    if linktype == 1:
        kind, body = ETH, b"\x00\x00" + pkt + struct.pack("<I", zlib.crc32(pkt))
        wlen = orig + 4
    elif linktype == 247:
        kind, body, wlen = INFINIBAND, pkt, orig
    elif linktype in (12, 14, 101, 228, 229):
        kind, body, wlen = (IPV6 if pkt[0] >> 4 == 6 else IPV4), pkt, orig
    else:
        sys.exit(f"link type {linktype} is not one this script rewrites")
    ext = b""
    if n % 2:
        kind |= 0x80
        ext = struct.pack(">BBHI", EXT_FLOW_ID, 0, 0, n)
    ts = (sec << 32) | ((nsec << 32) // 1000000000)
    rlen = 16 + len(ext) + len(body)
    pad = -rlen % 8
    rlen += pad
    flags = 0x04  # variable-length record, interface 0
    return struct.pack("<QBB", ts, kind, flags) + struct.pack(">HHH", rlen, 0, wlen) + ext + body + b"\x00" * pad


def main():
    src, dst = sys.argv[1], sys.argv[2]
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 197)]
    for n, (lt, sec, nsec, pkt, orig) in enumerate(records(src)):
        rec = erf_record(lt, sec, nsec, pkt, orig, n)
        out.append(struct.pack("<IIII", sec, nsec // 1000, len(rec), len(rec)) + rec)
    with open(dst, "wb") as f:
        f.write(b"".join(out))


if __name__ == "__main__":
    main()

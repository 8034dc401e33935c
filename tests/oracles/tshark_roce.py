#!/usr/bin/python3
"""Cross-checks rdmaconf's InfiniBand transport decoding against tshark's.

usage: tshark_roce.py RDMACONF CAPTURE...

For every RoCEv2 packet tshark decodes, the BTH fields, the extension header
fields (RETH, AETH, DETH, ImmDt, IETH, AtomicETH, AtomicAckETH) and the ICRC
field must equal ours (`rdmaconf packets`), frame by frame. A field tshark
does not show on a packet is not compared, and each such omission is counted
under its stated reason (LIMITS) in the output, never skipped silently.
Prints a JSON summary; exits 1 on any disagreement.

Native InfiniBand captures (LINKTYPE_INFINIBAND, 247): tshark 4.0 reads no
pcap of that link type, so the script hands tshark a copy whose link type is
USER0 (147), mapped to tshark's own "infiniband" dissector; the LRH, GRH and
VCRC fields are then compared as well. ERF captures (LINKTYPE_ERF, 197) tshark
reads itself; their Ethernet records end with the FCS (counted in the ERF
wire length), which tshark is told with eth.fcs (its heuristic cannot tell
for a frame with no IP length, RoCEv1's).
"""
import ipaddress
import json
import os
import struct
import subprocess
import sys
import tempfile

# (tshark field, our header, our field, transform of tshark's value)
def num(s):
    s = s.strip()
    return int(s, 16) if s.lower().startswith("0x") else int(s)


def hexbytes(s):
    return int(s.replace(":", ""), 16)


def swap32(v):
    return int.from_bytes(v.to_bytes(4, "big"), "little")


def swap16(v):
    return int.from_bytes(v.to_bytes(2, "big"), "little")


def gid(s):
    return str(ipaddress.IPv6Address(s))


FIELDS = [
    ("infiniband.bth.opcode", "bth", "ib.bth.opcode", num),
    ("infiniband.bth.se", "bth", "ib.bth.se", num),
    ("infiniband.bth.m", "bth", "ib.bth.m", num),
    ("infiniband.bth.padcnt", "bth", "ib.bth.padcnt", num),
    ("infiniband.bth.tver", "bth", "ib.bth.tver", num),
    ("infiniband.bth.p_key", "bth", "ib.bth.p_key", num),
    ("infiniband.bth.destqp", "bth", "ib.bth.destqp", num),
    ("infiniband.bth.a", "bth", "ib.bth.a", num),
    ("infiniband.bth.reserved7", "bth", "ib.bth.rsvd2", num),
    ("infiniband.bth.psn", "bth", "ib.bth.psn", num),
    ("infiniband.reth.va", "ib.reth", "ib.reth.va", num),
    ("infiniband.reth.r_key", "ib.reth", "ib.reth.r_key", num),
    ("infiniband.reth.dmalen", "ib.reth", "ib.reth.dma_length", num),
    ("infiniband.aeth.syndrome", "ib.aeth", "ib.aeth.syndrome", num),
    ("infiniband.aeth.msn", "ib.aeth", "ib.aeth.msn", num),
    ("infiniband.deth.q_key", "ib.deth", "ib.deth.q_key", num),
    ("infiniband.deth.srcqp", "ib.deth", "ib.deth.srcqp", num),
    ("infiniband.immdt", "ib.immdt", "ib.immdt", hexbytes),
    ("infiniband.ieth", "ib.ieth", "ib.ieth.r_key", hexbytes),
    ("infiniband.atomiceth.swapdt", "ib.atomiceth", "ib.atomiceth.swap_or_add", num),
    ("infiniband.atomiceth.cmpdt", "ib.atomiceth", "ib.atomiceth.compare", num),
    ("infiniband.atomicacketh.origremdt", "ib.atomicacketh", "ib.atomicacketh.orig", num),
    ("infiniband.invariant.crc", None, "icrc", lambda s: swap32(num(s))),
    # native InfiniBand only
    ("infiniband.lrh.vl", "lrh", "ib.lrh.vl", num),
    ("infiniband.lrh.lver", "lrh", "ib.lrh.lver", num),
    ("infiniband.lrh.sl", "lrh", "ib.lrh.sl", num),
    ("infiniband.lrh.reserved2", "lrh", "ib.lrh.rsvd1", num),
    ("infiniband.lrh.lnh", "lrh", "ib.lrh.lnh", num),
    ("infiniband.lrh.dlid", "lrh", "ib.lrh.dlid", num),
    ("infiniband.lrh.reserved5", "lrh", "ib.lrh.rsvd2", num),
    ("infiniband.lrh.pktlen", "lrh", "ib.lrh.pktlen", num),
    ("infiniband.lrh.slid", "lrh", "ib.lrh.slid", num),
    ("infiniband.grh.ipver", "grh", "ib.grh.ipver", num),
    ("infiniband.grh.tclass", "grh", "ib.grh.tclass", num),
    ("infiniband.grh.flowlabel", "grh", "ib.grh.flowlabel", num),
    ("infiniband.grh.paylen", "grh", "ib.grh.paylen", num),
    ("infiniband.grh.nxthdr", "grh", "ib.grh.nxthdr", num),
    ("infiniband.grh.hoplmt", "grh", "ib.grh.hoplmt", num),
    ("infiniband.grh.sgid", "grh", "ib.grh.sgid", gid),
    ("infiniband.grh.dgid", "grh", "ib.grh.dgid", gid),
    ("infiniband.variant.crc", None, "vcrc", lambda s: swap16(num(s))),
]
NATIVE_FIELDS = {f[0] for f in FIELDS if f[1] in ("lrh", "grh") or f[2] == "vcrc"}

# Where tshark 4.0 shows less than the packet carries, each stated once.
LIMITS = {
    "icrc_not_shown": "tshark 4.0 shows no ICRC field for SEND with Invalidate, for datagrams it hands to its MAD "
                      "dissector (QP1), for CNPs, and for a short SEND whose payload its RPC-over-RDMA heuristic "
                      "claims (and calls malformed)",
    "eth_not_shown": "tshark 4.0 does not decode the extension headers of a packet whose opcode it does not know, "
                     "nor of a packet too short for them",
    "ours_rejected": "we reject the packet (headers or ICRC missing): there are no fields of ours to compare",
    "native_not_shown": "tshark 4.0 shows the VCRC only where it finds exactly the ICRC and VCRC after the headers and "
                        "payload it decoded (not for packets its MAD or RPC-over-RDMA dissectors claim)",
}


def linktype(path):
    with open(path, "rb") as f:
        head = f.read(24)
    magic = head[:4]
    if len(head) < 24 or magic not in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        return None  # pcapng or other: not a native InfiniBand pcap
    return struct.unpack("<I" if magic[0] in (0xd4, 0x4d) else ">I", head[20:24])[0]


def tshark_frames(path):
    cmd = ["tshark", "-Y", "infiniband.bth", "-T", "fields", "-E", "occurrence=f", "-E", "separator=\t",
           "-e", "frame.number"]
    for f in FIELDS:
        cmd += ["-e", f[0]]
    tmp = None
    if linktype(path) == 197:
        cmd += ["-o", "eth.fcs:Always"]
    if linktype(path) == 247:
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[20:24] = struct.pack("<I" if data[0] in (0xd4, 0x4d) else ">I", 147)
        fd, tmp = tempfile.mkstemp(suffix=".pcap")
        os.write(fd, data)
        os.close(fd)
        cmd += ["-o", 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""']
    try:
        out = subprocess.run(cmd + ["-r", tmp or path], capture_output=True, text=True, check=True).stdout
    finally:
        if tmp:
            os.unlink(tmp)
    frames = {}
    for line in out.splitlines():
        cols = line.split("\t")
        frames[int(cols[0])] = dict(zip([f[0] for f in FIELDS], cols[1:]))
    return frames


def ours(rdmaconf, path):
    out = subprocess.run([rdmaconf, "packets", path], capture_output=True, text=True, check=True).stdout
    return {j["frame"]: j for j in map(json.loads, out.splitlines())}


def compare(rdmaconf, path):
    theirs, mine = tshark_frames(path), ours(rdmaconf, path)
    res = {"capture": path.rsplit("/", 1)[-1], "packets_compared": 0, "fields_compared": 0, "mismatches": [],
           "native_fields_compared": 0, "not_compared": {k: 0 for k in LIMITS},
           "tshark_missed": sorted(set(mine) - set(theirs))}
    for frame, t in sorted(theirs.items()):
        m = mine.get(frame)
        if m is None or "error" in m:
            res["not_compared"]["ours_rejected"] += 1
            continue
        res["packets_compared"] += 1
        for tf, header, field, conv in FIELDS:
            if header == "ib.reth" and "ib.atomiceth" in m and field != "ib.reth.dma_length":
                # tshark shows an AtomicETH's address and R_Key under its RETH field names
                header, field = "ib.atomiceth", field.replace("ib.reth.", "ib.atomiceth.")
            want = m.get(field) if header is None else m.get(header, {}).get(field) if header != "bth" else m["bth"].get(field)
            got = t.get(tf, "")
            if want is None:
                if got:
                    res["mismatches"].append({"frame": frame, "field": tf, "tshark": got, "ours": None})
                continue
            if not got:
                res["not_compared"]["icrc_not_shown" if field == "icrc" else "native_not_shown" if tf in NATIVE_FIELDS
                                   else "eth_not_shown"] += 1
                continue
            res["fields_compared"] += 1
            res["native_fields_compared"] += tf in NATIVE_FIELDS
            if conv is gid:
                want = gid(want)  # both sides in one spelling of the address
            if conv(got) != want:
                res["mismatches"].append({"frame": frame, "field": tf, "tshark": got, "ours": want})
    return res


def main():
    rdmaconf, caps = sys.argv[1], sys.argv[2:]
    results = [compare(rdmaconf, c) for c in caps]
    bad = any(r["mismatches"] or r["tshark_missed"] for r in results)
    print(json.dumps({"limits": LIMITS, "results": results}, indent=1))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

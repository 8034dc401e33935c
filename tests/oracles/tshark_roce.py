#!/usr/bin/python3
"""Cross-checks rdmaconf's InfiniBand transport decoding against tshark's.

usage: tshark_roce.py RDMACONF CAPTURE...

For every RoCEv2 packet tshark decodes, the BTH fields, the extension header
fields (RETH, AETH, DETH, ImmDt, IETH, AtomicETH, AtomicAckETH) and the ICRC
field must equal ours (`rdmaconf packets`), frame by frame. A field tshark
does not show on a packet is not compared, and each such omission is counted
under its stated reason (LIMITS) in the output, never skipped silently.
Prints a JSON summary; exits 1 on any disagreement.
"""
import json
import subprocess
import sys

# (tshark field, our header, our field, transform of tshark's value)
def num(s):
    s = s.strip()
    return int(s, 16) if s.lower().startswith("0x") else int(s)


def hexbytes(s):
    return int(s.replace(":", ""), 16)


def swap32(v):
    return int.from_bytes(v.to_bytes(4, "big"), "little")


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
]

# Where tshark 4.0 shows less than the packet carries, each stated once.
LIMITS = {
    "icrc_not_shown": "tshark 4.0 shows no ICRC field for SEND with Invalidate, for datagrams it hands to its MAD "
                      "dissector (QP1), for CNPs, and for a short SEND whose payload its RPC-over-RDMA heuristic "
                      "claims (and calls malformed)",
    "eth_not_shown": "tshark 4.0 does not decode the extension headers of a packet whose opcode it does not know, "
                     "nor of a packet too short for them",
    "ours_rejected": "we reject the packet (headers or ICRC missing): there are no fields of ours to compare",
}


def tshark_frames(path):
    cmd = ["tshark", "-r", path, "-Y", "infiniband.bth", "-T", "fields", "-E", "occurrence=f", "-E", "separator=\t",
           "-e", "frame.number"]
    for f in FIELDS:
        cmd += ["-e", f[0]]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
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
           "not_compared": {k: 0 for k in LIMITS}, "tshark_missed": sorted(set(mine) - set(theirs))}
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
                res["not_compared"]["icrc_not_shown" if field == "icrc" else "eth_not_shown"] += 1
                continue
            res["fields_compared"] += 1
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

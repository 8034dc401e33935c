#!/usr/bin/python3
"""Independent oracles for the U-Net wire format (docs/unet.md).

  unet_frames.py make OUT.pcap [COUNT]     write COUNT U-Net frames built with scapy (random channels,
                                           sizes, close flags once per side at the end)
  unet_frames.py compare IN.pcap LISTING   compare tshark's Ethernet decoding, and our header read
                                           here from tshark's octets, with `rdmaconf unet-frames` output;
                                           print JSON {"frames": N, "mismatches": [...]}

The header is read here with struct from the octets tshark reports after the
Ethernet header, not with the project's tables.
"""
import json
import random
import struct
import subprocess
import sys

ETHERTYPE = 0x88B5


def make(path, count):
    from scapy.all import Ether, Raw, wrpcap

    rng = random.Random(0x88B5)
    hosts = ["02:00:0a:55:01:%02x" % i for i in range(1, 4)]
    channels = []
    for _ in range(4):
        a, b = rng.sample(hosts, 2)
        channels.append(((a, rng.randrange(1, 0xFFFF)), (b, rng.randrange(1, 0xFFFF))))
    pkts = []
    for _ in range(count):
        (a, pa), (b, pb) = rng.choice(channels)
        if rng.random() < 0.5:
            (a, pa), (b, pb) = (b, pb), (a, pa)
        size = rng.choice([0, 1, 20, 37, 38, 39, 100, 1000, 1492, rng.randrange(1493)])
        msg = bytes(rng.randrange(256) for _ in range(size))
        hdr = struct.pack(">BBHHH", 1 << 4, 0, pb, pa, size)
        frame = Ether(src=a, dst=b, type=ETHERTYPE) / Raw(hdr + msg)
        raw = bytes(frame)
        if len(raw) < 60:
            raw += bytes(60 - len(raw))  # Ethernet's minimum frame, zero padding
        pkts.append(Ether(raw))
    for (a, pa), (b, pb) in channels:
        for (src, ps), (dst, pd) in (((a, pa), (b, pb)), ((b, pb), (a, pa))):
            hdr = struct.pack(">BBHHH", (1 << 4) | 1, 0, pd, ps, 0)
            pkts.append(Ether(bytes(Ether(src=src, dst=dst, type=ETHERTYPE) / Raw(hdr)) + bytes(60 - 22)))
    wrpcap(path, pkts)


def compare(pcap, listing):
    ours = {}
    with open(listing) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                ours[j["frame"]] = j
    out = subprocess.run(
        ["tshark", "-n", "-r", pcap, "-Y", "eth.type == 0x88b5", "-T", "fields", "-E", "separator=|",
         "-e", "frame.number", "-e", "frame.len", "-e", "eth.src", "-e", "eth.dst", "-e", "data.data", "-e", "eth.padding"],
        capture_output=True, text=True, check=True).stdout
    mismatches, frames = [], 0
    for line in out.splitlines():
        num, flen, src, dst, data, pad = (line.split("|") + [""] * 6)[:6]
        num, flen = int(num), int(flen)
        octets = bytes.fromhex(data.replace(":", "")) + bytes.fromhex(pad.replace(":", ""))
        frames += 1
        mine = ours.get(num)
        if mine is None:
            mismatches.append({"frame": num, "what": "not listed by rdmaconf"})
            continue
        if len(octets) < 8:
            mismatches.append({"frame": num, "what": "shorter than the header"})
            continue
        b0, rsvd, dport, sport, length = struct.unpack(">BBHHH", octets[:8])
        expect = {
            "eth_src": src, "eth_dst": dst, "message_length": min(length, len(octets) - 8),
            "padding": max(0, flen - 14 - 8 - length),
            "unet.version": b0 >> 4, "unet.flags.rsvd": (b0 >> 1) & 7, "unet.flags.close": b0 & 1, "unet.rsvd": rsvd,
            "unet.dst_port": dport, "unet.src_port": sport, "unet.length": length,
        }
        got = dict((k, v) for k, v in mine.items() if k != "unet")
        got.update(mine.get("unet", {}))
        for k, v in expect.items():
            if got.get(k) != v:
                mismatches.append({"frame": num, "field": k, "tshark": v, "rdmaconf": got.get(k)})
    print(json.dumps({"frames": frames, "listed": len(ours), "mismatches": mismatches[:20], "mismatch_count": len(mismatches)}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 300)
    else:
        compare(sys.argv[2], sys.argv[3])

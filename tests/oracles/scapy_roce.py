#!/usr/bin/python3
"""Independent RoCEv2 ICRC oracle built on scapy's contrib.roce layer.

  scapy_roce.py make OUT.pcap [COUNT]   write COUNT RoCEv2/IPv4 packets whose ICRC scapy computed
  scapy_roce.py verify IN.pcap          print JSON: frames whose ICRC differs from scapy's

scapy's layer covers IPv4 only; IPv6 ICRCs are cross-checked against real rxe
captures once the lab produces them.
"""
import json
import random
import sys

from scapy.all import Ether, IP, UDP, Raw, rdpcap, wrpcap
from scapy.contrib.roce import BTH, AETH

# Fixed link addresses: an Ether() without them makes scapy resolve the
# destination MAC, i.e. send ARP requests on the host's network.
def ether():
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def make(path, count):
    rng = random.Random(4791)
    pkts = []
    for i in range(count):
        kind = rng.choice(["send", "ack", "write_first", "cnp", "ud"])
        payload = b""
        bth = dict(pkey=rng.randrange(0x10000), dqpn=rng.randrange(1 << 24), psn=rng.randrange(1 << 24),
                   fecn=rng.randrange(2), becn=rng.randrange(2), ackreq=rng.randrange(2),
                   solicited=rng.randrange(2), migreq=rng.randrange(2))
        if kind == "send":
            op, payload = 0x04, bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        elif kind == "ack":
            op, payload = 0x11, bytes([rng.randrange(256)]) + rng.randrange(1 << 24).to_bytes(3, "big")
        elif kind == "write_first":
            reth = rng.randrange(1 << 64).to_bytes(8, "big") + rng.randrange(1 << 32).to_bytes(4, "big") + (1024).to_bytes(4, "big")
            op, payload = 0x06, reth + bytes(rng.randrange(256) for _ in range(256))
        elif kind == "ud":
            deth = rng.randrange(1 << 32).to_bytes(4, "big") + b"\x00" + rng.randrange(1 << 24).to_bytes(3, "big")
            op, payload = 0x64, deth + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 100)))
        else:
            op, payload = 0x81, bytes(16)
        pad = (4 - len(payload) % 4) % 4
        ip = IP(src="203.0.113.%d" % (1 + i % 7), dst="203.0.113.200", tos=rng.randrange(256), ttl=rng.randrange(1, 256),
                id=rng.randrange(0x10000), flags="DF")
        p = ether() / ip / UDP(sport=rng.randrange(49152, 65536), dport=4791) / BTH(opcode=op, padcount=pad, **bth) / Raw(payload + bytes(pad))
        pkts.append(p)
    wrpcap(path, pkts)


def verify(path):
    bad, checked = [], 0
    for n, pkt in enumerate(rdpcap(path), start=1):
        if IP not in pkt or UDP not in pkt or pkt[UDP].dport != 4791:
            continue
        wire = bytes(pkt[UDP].payload)[-4:]
        ip = pkt[IP].copy()
        ip[UDP].remove_payload()
        rebuilt = ip / BTH(bytes(pkt[UDP].payload)[:-4] + b"\0\0\0\0")
        rebuilt[BTH].icrc = None
        again = bytes(ether() / rebuilt)[-4:]
        checked += 1
        if again != wire:
            bad.append(n)
    print(json.dumps({"checked": checked, "mismatched_frames": bad}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 200)
    else:
        verify(sys.argv[2])

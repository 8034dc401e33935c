#!/usr/bin/python3
"""Writes the fuzz seed corpora from the golden captures: transport payloads
(MPA frames and FPDUs, InfiniBand transport packets), whole frames, and
the captures themselves. Run by .ci/run before fuzzing; nothing is committed."""
import os
import struct
import subprocess
import sys
import tempfile

golden, out = sys.argv[1], sys.argv[2]
to_erf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracles", "to_erf.py")


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        yield data[off + 16: off + 16 + caplen]
        off += 16 + caplen


def put(target, name, blob):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


def engine_seed(role, stream):
    """fuzz_engine input: role/config octet, then the stream in chunks of <= 255."""
    out = bytes([role])
    for at in range(0, len(stream), 200):
        piece = stream[at:at + 200]
        out += bytes([len(piece)]) + piece
    return out


for cap in sorted(os.listdir(golden)):
    if not cap.endswith(".pcap"):
        continue
    path = os.path.join(golden, cap)
    streams = {}
    roce = b""
    put("fuzz_capture", cap, open(path, "rb").read())
    if cap in ("roce-v4.pcap", "roce-v1.pcap", "ib-native-global.pcap", "iwarp-rev2-crc.pcap"):
        # the same as ERF records (LINKTYPE_ERF), which the reader unwraps
        with tempfile.NamedTemporaryFile(suffix=".pcap") as t:
            subprocess.run([sys.executable, to_erf, path, t.name], check=True)
            put("fuzz_capture", cap.replace(".pcap", ".erf.pcap"), open(t.name, "rb").read())
    # fuzz_dissector: the link type's choice octet (strict), then each frame
    # with its 2-octet length, as the plugin pushes them
    linktype = struct.unpack_from("<I", open(path, "rb").read(24), 20)[0]
    choice = {1: 0, 113: 1, 276: 2, 101: 3, 228: 4, 229: 5, 247: 6}.get(linktype, 0)
    frames = [f[:0x7fff] for f in records(path)]
    put("fuzz_dissector", cap, bytes([0x80 | choice]) + b"".join(struct.pack(">H", len(f)) + f for f in frames))
    if struct.unpack_from("<I", open(path, "rb").read(24), 20)[0] == 247:
        # native InfiniBand: fuzz_link's link type 7 is LINKTYPE_INFINIBAND;
        # the transport packet follows the LRH (and the GRH when LNH is 3)
        for i, frame in enumerate(records(path)):
            if i % 3 == 0 and len(frame) > 8:
                put("fuzz_link", "%s-%d" % (cap, i), b"\x07" + frame)
                put("fuzz_ib", "%s-%d" % (cap, i), frame[48 if frame[1] & 3 == 3 else 8:-2])
        continue
    for i, frame in enumerate(records(path)):
        if len(frame) < 14 + 20:
            continue
        if frame[12:14] == b"\x89\x15":  # RoCEv1: GRH, then the transport packet
            if i % 3 == 0:
                put("fuzz_link", "%s-%d" % (cap, i), b"\x00" + frame)
                put("fuzz_ib", "%s-%d" % (cap, i), frame[14 + 40:])
            continue
        ipv6 = frame[12:14] == b"\x86\xdd"
        l4 = 14 + (40 if ipv6 else 20)
        proto = frame[14 + 6] if ipv6 else frame[14 + 9]
        if proto == 17 and len(frame) > l4 + 8:
            # a record for fuzz_roce_state: direction bit and length, then the transport packet
            src = frame[14 + 8:14 + 24] if ipv6 else frame[14 + 12:14 + 16]
            pkt = frame[l4 + 8:][:0x7fff]
            roce += bytes([(0x80 if src[-1] & 1 == 0 else 0) | (len(pkt) >> 8), len(pkt) & 0xff]) + pkt
        if proto == 6 and len(frame) > l4 + 12:
            payload = frame[l4 + (frame[l4 + 12] >> 4) * 4:]
            src = frame[14 + 8:14 + 24] if ipv6 else frame[14 + 12:14 + 16]
            streams[src] = streams.get(src, b"") + payload
        if i % 3:
            continue
        put("fuzz_link", "%s-%d" % (cap, i), b"\x00" + frame)
        if proto == 6:
            if payload:
                put("fuzz_mpa", "%s-%d" % (cap, i), payload)
                # (first octet: both starts unknown, or both known as after a SYN)
                put("fuzz_mpa_stream", "%s-%d" % (cap, i), bytes([3 * (i % 2), 0, min(255, len(payload))]) + payload[:255])
                put("fuzz_headers", "%s-%d" % (cap, i), bytes([9]) + payload)
        elif proto == 17:
            put("fuzz_ib", "%s-%d" % (cap, i), frame[l4 + 8:])
            put("fuzz_headers", "%s-%d" % (cap, i), bytes([23]) + frame[l4 + 8:])
    if roce:
        put("fuzz_roce_state", cap, bytes([1]) + roce)
        # fuzz_ib_engine reads the same records (the top bit there marks a bad
        # ICRC, so direction bits become ICRC faults now and then); RC, 1024.
        put("fuzz_ib_engine", cap, bytes([0x09]) + roce)
    # Whole streams for the engine: what the initiator (first sender) sent, to
    # our responder (CRC asked), and what the responder sent, to our initiator.
    for n, (src, stream) in enumerate(streams.items()):
        if n < 2:
            put("fuzz_engine", "%s-%d" % (cap, n), engine_seed(2 if n == 0 else 3, stream[:20000]))
            # fuzz_mpa_stream: the first 8 KiB of a direction as 255-octet chunks, the start known; once
            # from the first octet, once after the first 40 (a start in the middle, or FPDUs without MPA frames)
            # fuzz_mpa_framer: the FPDUs after the MPA frame, with and without markers, cut by two seeds
            if stream.startswith(b"MPA ID R") and len(stream) >= 20:
                body = stream[20 + struct.unpack_from(">H", stream, 18)[0]:][:16384]
                for flags in (2, 3):
                    put("fuzz_mpa_framer", "%s-%d-%d" % (cap, n, flags), bytes([flags, 37 * n + flags]) + body)
            for cut in (0, 40):
                body = stream[cut:cut + 8192]
                rec = bytes([3 | 4 * (n == 0)]) + b"".join(bytes([n, len(body[k:k + 255])]) + body[k:k + 255]
                                                           for k in range(0, len(body), 255))
                put("fuzz_mpa_stream", "%s-stream%d-%d" % (cap, n, cut), rec)

# fuzz_control: the RoCE control messages as the interop tools send them
for name, line in {
    "hello": b'{"hello":{"scenario":"write","type":"rc","qpn":4660,"psn":7,"udp":"127.0.0.2:4791","mtu":1024,'
             b'"size":64,"buffer":64,"recvs":0,"seed":1}}',
    "ready": b'{"ready":{"qpn":77,"psn":1,"udp":"127.0.0.1:4791","rkey":5,"va":4096,"length":64,'
             b'"atomic_rkey":6,"atomic_va":8192,"qkey":0}}',
    "done": b'{"done":true,"packets_sent":12}',
    "result": b'{"recv_count":1,"recv_digest":5,"counters":{"naks_sent":0},"refusals":[{"what":"x","why":"y","psn":3}],'
              b'"recv_statuses":{"success":1},"immediates":[1],"state":"rts"}',
    "error": b'{"error":"busy"}',
    # what a hostile client sent: octets that are not UTF-8, deep nesting, a done off its schema
    "not-utf8": b'{"hello":{"scenario":"w\xe0\x80\x80","type":"rc"}}',
    "lone-ff": b'\xff',
    "overlong": b'{"h\xc0\x80":1}',
    "deep": b'{"hello":' + b'[' * 2000 + b']' * 2000 + b'}',
    "done-bad": b'{"done":[true],"packets_sent":1e400}',
}.items():
    put("fuzz_control", name, line)


# fuzz_iwarp_control: what a client sends the iWARP peer before its session
# (MPA Requests, whole and cut, and what is none) and a scenario's control message
def mpa_request(rev, flags, pd):
    return b"MPA ID Req Frame" + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd
for name, raw in {
    "req-v1-crc": mpa_request(1, 0x40, b""),
    "req-v2-enhanced-p2p": mpa_request(2, 0x50, struct.pack(">I", (1 << 31) | (1 << 30) | (16 << 16) | 16)),
    "req-v2-pd": mpa_request(2, 0x10, struct.pack(">I", 16 << 16 | 16) + b"hello"),
    "req-cut": mpa_request(1, 0x40, b"x" * 40)[:30],
    "req-rev9": mpa_request(9, 0x40, b""),
    "not-mpa": b"GET / HTTP/1.1\r\n\r\n",
    "ctl-hello": struct.pack(">IBBBBIIIIQIIQHHI", 0x52434E46, 1, 1, 3, 0, 4096, 100, 0, 0, 0, 0, 0, 0, 4, 16, 0),
}.items():
    put("fuzz_iwarp_control", name, raw)


# fuzz_nic: UDP datagrams over IPv4 and IPv6 to the ports that have
# receives (checksums fixed by the target), fragments, a transmit, and the
# golden RoCE frames as they are.
def ip_udp(v6, dport, payload, frag=0):
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(payload), 0) + payload
    if v6:
        ip = struct.pack(">IHBB", 6 << 28, len(udp), 17, 64) + bytes(15) + b"\x01" + bytes(15) + b"\x02"
        return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x86\xdd" + ip + udp
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, frag, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + udp


def nic_seed(cfg, frames):
    return bytes([cfg]) + b"".join(bytes([flags]) + struct.pack(">H", len(f)) + f for flags, f in frames)


put("fuzz_nic", "basic", nic_seed(0x12, [(1, ip_udp(False, 5001, bytes(range(100)))), (1, ip_udp(True, 5002, b"x" * 700)),
                                         (1, ip_udp(False, 6000, b"k" * 30))]))
put("fuzz_nic", "truncate", nic_seed(0x01, [(3, ip_udp(False, 5003, b"t" * 400)), (1, ip_udp(False, 5001, b"u" * 600))]))
put("fuzz_nic", "fragments", nic_seed(0x01, [(1, ip_udp(False, 5001, b"f" * 64, 0x2000)), (1, ip_udp(True, 5001, b"g" * 64))]))
put("fuzz_nic", "ring-full", nic_seed(0x48, [(1, ip_udp(False, 6000, b"r" * 64))] * 6))
# Frames that arrive over time with interrupts coalesced (cfg bit 3): gaps
# of 256 and 3840 cycles, inside and past the 500-cycle timer.
put("fuzz_nic", "arrivals", nic_seed(0x0b, [(0x11, ip_udp(False, 5001, b"a" * 90)), (0x11, ip_udp(False, 5002, b"b" * 90)),
                                            (0xf1, ip_udp(True, 5003, b"c" * 90)), (0x11, ip_udp(False, 6000, b"d" * 90))]))
put("fuzz_nic", "transmit", nic_seed(0x00, [(4, ip_udp(False, 9000, b"s" * 77)), (4, ip_udp(True, 9000, b"s" * 78))]))
roce = [f for cap in sorted(os.listdir(golden)) if cap.startswith("roce") and cap.endswith(".pcap")
        for f in list(records(os.path.join(golden, cap)))[:4]]
put("fuzz_nic", "roce", nic_seed(0x22, [(0, f[:4000]) for f in roce[:12]]))

# fuzz_unet: the golden U-Net frames, with buffers given and channels opened
# as they arrive (flags 0x03), some made well formed (0x07), a teardown in
# the middle (0x0b).
unet = [f for cap in sorted(os.listdir(golden)) if cap.startswith("unet") and cap.endswith(".pcap")
        for f in list(records(os.path.join(golden, cap)))[:6]]
put("fuzz_unet", "golden", nic_seed(0x03, [(0x03, f) for f in unet[:24]]))
put("fuzz_unet", "small-buffers", nic_seed(0x08, [(0x07, f) for f in unet[:12]]))
put("fuzz_unet", "teardown", nic_seed(0x01, [(0x03, f) for f in unet[:4]] + [(0x0b, f) for f in unet[4:8]]))

# fuzz_unet_xdp: single golden U-Net frames with each flag combination (an
# endpoint, a channel, well formed, the channel check off), and frames the
# kernel keeps (IPv4 UDP, ARP).
for k, f in enumerate(unet[:8]):
    for flags in (0x00, 0x01, 0x03, 0x07, 0x09):
        put("fuzz_unet_xdp", f"golden-{k}-{flags:02x}", bytes([flags]) + f)
put("fuzz_unet_xdp", "ipv4", bytes([0x03]) + ip_udp(False, 7000, b"k" * 40))
put("fuzz_unet_xdp", "arp", bytes([0x03]) + b"\xff" * 6 + b"\x02\x00\x0a\x55\x00\x01" + b"\x08\x06" + b"\x00" * 46)

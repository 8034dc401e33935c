"""What fuzz/make_seeds.py and the families' fuzz/F/seeds.py share: the
golden captures' frames, where a seed is written, and the frame builders
more than one family's seeds use."""
import os
import struct


class Capture:
    """One golden capture: its file name, path, link type and frames."""

    def __init__(self, golden, name):
        self.name = name
        self.path = os.path.join(golden, name)
        with open(self.path, "rb") as f:
            self.data = f.read()
        self.linktype = struct.unpack_from("<I", self.data, 20)[0]
        self.frames = []
        off = 24
        while off + 16 <= len(self.data):
            caplen = struct.unpack_from("<I", self.data, off + 8)[0]
            self.frames.append(self.data[off + 16: off + 16 + caplen])
            off += 16 + caplen


def golden_captures(golden):
    return [Capture(golden, n) for n in sorted(os.listdir(golden)) if n.endswith(".pcap")]


class Seeds:
    """Writes seed files: OUT/TARGET/NAME."""

    def __init__(self, out):
        self.out = out

    def put(self, target, name, blob):
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(blob)


def ip_of(frame):
    """An Ethernet frame's IP layer: (IPv6?, offset of the transport header,
    IP protocol, source address), or None when it is too short for one."""
    if len(frame) < 14 + 20:
        return None
    ipv6 = frame[12:14] == b"\x86\xdd"
    l4 = 14 + (40 if ipv6 else 20)
    proto = frame[14 + 6] if ipv6 else frame[14 + 9]
    src = frame[14 + 8:14 + 24] if ipv6 else frame[14 + 12:14 + 16]
    return ipv6, l4, proto, src


def ip_udp(v6, dport, payload, frag=0):
    """An Ethernet frame carrying one UDP datagram (checksum zero) to `dport`."""
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(payload), 0) + payload
    if v6:
        ip = struct.pack(">IHBB", 6 << 28, len(udp), 17, 64) + bytes(15) + b"\x01" + bytes(15) + b"\x02"
        return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x86\xdd" + ip + udp
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, frag, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + udp


def flagged_frames(cfg, frames):
    """The input of the frame-driven engine targets (fuzz_nic, fuzz_unet): a
    configuration octet, then per frame a flags octet, a 2-octet length, the frame."""
    return bytes([cfg]) + b"".join(bytes([flags]) + struct.pack(">H", len(f)) + f for flags, f in frames)

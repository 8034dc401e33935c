#!/usr/bin/python3
"""Independent oracle for MPA markers (RFC 5044 §4.3) in a capture.

  mpa_markers.py IN.pcap [--markers initiator,responder]

Prints JSON: for each TCP direction that carries markers, how many markers
were read and the ones that break §4.3, each as [direction, stream offset,
reserved bits, FPDU pointer, the pointer §4.3 asks for].

Shares no code with rdmaconf: pcap records and Ethernet/IPv4/TCP headers are
read here with struct, and the streams are put together by sequence number.
What it takes from RFC 5044:
- §7.1: an MPA Request or Reply is 16 octets of key, a flags octet (M is its
  top bit), the revision, a 16-bit private data length and the private data;
  a Request's M asks the responder for markers, a Reply's M the initiator.
- §4.3: markers sit at every 512th octet of the stream counted from the
  first FPDU after the frame (from the stream's first octet when there is
  none: --markers names the sides that send them), each 2 reserved octets
  that are zero and a 16-bit FPDUPTR. A marker right before an FPDU's ULPDU
  Length field belongs to that FPDU and is 0; any other marker holds the
  number of octets from the ULPDU Length field of the FPDU it sits in to the
  marker's first octet.
- §4.1: an FPDU is the 16-bit ULPDU Length, the ULPDU, a pad to a multiple
  of four octets and a 4-octet CRC field; markers inside it are not counted
  in its length.
"""
import json
import struct
import sys

INTERVAL = 512
MARKER = 4


def tcp_segments(path):
    with open(path, "rb") as f:
        data = f.read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    link = struct.unpack(e + "I", data[20:24])[0]
    at = 24
    while at + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[at:at + 16])
        frame = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if link != 1 or len(frame) < 14 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        if ip[9] != 6:
            continue
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        flags = tcp[13]
        off = (tcp[12] >> 4) * 4
        yield (ip[12:16], sport), (ip[16:20], dport), seq, flags, tcp[off:]


def streams(path):
    """Each direction's octets, in sequence order from its SYN (or first segment)."""
    isn, pieces, order = {}, {}, []
    for src, dst, seq, flags, payload in tcp_segments(path):
        key = (src, dst)
        if key not in isn:
            isn[key] = seq + 1 if flags & 0x02 else seq
            pieces[key] = {}
            order.append(key)
        if payload:
            pieces[key].setdefault((seq - isn[key]) & 0xFFFFFFFF, payload)
    out = {}
    for key in order:
        b = bytearray()
        for rel in sorted(pieces[key]):
            if rel <= len(b):
                b += pieces[key][rel][len(b) - rel:]
        out[key] = bytes(b)
    return order, out


def check_direction(b, start):
    """Reads FPDUs from `start` with markers every 512 octets from there."""
    markers, wrong = 0, []

    def is_marker(p):
        return (p - start) % INTERVAL == 0

    def take(p, n):
        """n octets of FPDU from p, markers stepped over (they are checked by the caller)."""
        got = bytearray()
        inside = []
        while len(got) < n and p < len(b):
            if is_marker(p):
                inside.append(p)
                p += MARKER
                continue
            step = min(n - len(got), INTERVAL - (p - start) % INTERVAL)
            got += b[p:p + step]
            p += step
        return bytes(got), p, inside

    p = start
    while p + 2 <= len(b):
        leading = is_marker(p)
        if leading:
            if p + MARKER > len(b):
                break
            rsvd, ptr = struct.unpack(">HH", b[p:p + MARKER])
            markers += 1
            if rsvd != 0 or ptr != 0:
                wrong.append([p, rsvd, ptr, 0])
            p += MARKER
        length_field = p
        head, p2, inside = take(p, 2)
        if len(head) < 2:
            break
        (ulpdu_len,) = struct.unpack(">H", head)
        rest = ulpdu_len + (-(2 + ulpdu_len) % 4) + 4
        body, p3, inside2 = take(p2, rest)
        if len(body) < rest or p3 > len(b):
            break
        for m in inside + inside2:
            rsvd, ptr = struct.unpack(">HH", b[m:m + MARKER])
            markers += 1
            if rsvd != 0 or ptr != m - length_field:
                wrong.append([m, rsvd, ptr, m - length_field])
        p = p3
    return markers, wrong


def main(argv):
    path = argv[1]
    forced = set()
    if len(argv) > 3 and argv[2] == "--markers":
        forced = set(argv[3].split(","))
    order, data = streams(path)
    report = {"markers": 0, "wrong": []}
    if not order:
        print(json.dumps(report))
        return 0
    initiator = order[0]
    responder = (initiator[1], initiator[0])
    req, rep = data.get(initiator, b""), data.get(responder, b"")
    starts = {}
    if req[:16] == b"MPA ID Req Frame" and rep[:16] == b"MPA ID Rep Frame":
        req_end = 20 + struct.unpack(">H", req[18:20])[0]
        rep_end = 20 + struct.unpack(">H", rep[18:20])[0]
        if rep[16] & 0x80:
            starts["initiator"] = (initiator, req_end)
        if req[16] & 0x80:
            starts["responder"] = (responder, rep_end)
    else:
        for side in forced:
            starts[side] = (initiator if side == "initiator" else responder, 0)
    for side, (key, start) in sorted(starts.items()):
        n, wrong = check_direction(data.get(key, b""), start)
        report["markers"] += n
        report["wrong"] += [[side] + w for w in wrong]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

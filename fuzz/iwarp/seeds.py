"""Seeds of the iWARP family's fuzz targets: the golden captures' TCP
payloads (MPA frames and FPDUs) and whole streams, and what a client sends
the iWARP peer before its session. Called by fuzz/make_seeds.py."""
import struct

from seedlib import ip_of

LINKTYPE_INFINIBAND = 247


def engine_seed(role, stream):
    """fuzz_engine input: role/config octet, then the stream in chunks of <= 255."""
    out = bytes([role])
    for at in range(0, len(stream), 200):
        piece = stream[at:at + 200]
        out += bytes([len(piece)]) + piece
    return out


def mpa_request(rev, flags, pd):
    return b"MPA ID Req Frame" + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd


def seeds(captures, s):
    for cap in captures:
        if cap.linktype == LINKTYPE_INFINIBAND:
            continue
        streams = {}
        for i, frame in enumerate(cap.frames):
            ip = ip_of(frame)
            if ip is None or frame[12:14] == b"\x89\x15":
                continue
            _, l4, proto, src = ip
            if proto != 6 or len(frame) <= l4 + 12:
                continue
            payload = frame[l4 + (frame[l4 + 12] >> 4) * 4:]
            streams[src] = streams.get(src, b"") + payload
            if i % 3 == 0 and payload:
                s.put("fuzz_mpa", "%s-%d" % (cap.name, i), payload)
                # (first octet: both starts unknown, or both known as after a SYN)
                s.put("fuzz_mpa_stream", "%s-%d" % (cap.name, i), bytes([3 * (i % 2), 0, min(255, len(payload))]) + payload[:255])
                s.put("fuzz_headers", "%s-%d" % (cap.name, i), bytes([9]) + payload)
        # Whole streams for the engine: what the initiator (first sender) sent, to
        # our responder (CRC asked), and what the responder sent, to our initiator.
        for n, (src, stream) in enumerate(streams.items()):
            if n >= 2:
                break
            s.put("fuzz_engine", "%s-%d" % (cap.name, n), engine_seed(2 if n == 0 else 3, stream[:20000]))
            # (and through the socket reader's path, receive_whole)
            s.put("fuzz_engine", "%s-%d-whole" % (cap.name, n), engine_seed(0x42 if n == 0 else 0x43, stream[:20000]))
            # fuzz_mpa_framer: the FPDUs after the MPA frame, with and without markers, cut by two seeds
            if stream.startswith(b"MPA ID R") and len(stream) >= 20:
                body = stream[20 + struct.unpack_from(">H", stream, 18)[0]:][:16384]
                for flags in (2, 3):
                    s.put("fuzz_mpa_framer", "%s-%d-%d" % (cap.name, n, flags), bytes([flags, 37 * n + flags]) + body)
            # fuzz_mpa_stream: the first 8 KiB of a direction as 255-octet chunks, the start known; once
            # from the first octet, once after the first 40 (a start in the middle, or FPDUs without MPA frames)
            for cut in (0, 40):
                body = stream[cut:cut + 8192]
                rec = bytes([3 | 4 * (n == 0)]) + b"".join(bytes([n, len(body[k:k + 255])]) + body[k:k + 255]
                                                           for k in range(0, len(body), 255))
                s.put("fuzz_mpa_stream", "%s-stream%d-%d" % (cap.name, n, cut), rec)

    # fuzz_iwarp_control: what a client sends the iWARP peer before its session
    # (MPA Requests, whole and cut, and what is none) and a scenario's control message
    for name, raw in {
        "req-v1-crc": mpa_request(1, 0x40, b""),
        "req-v2-enhanced-p2p": mpa_request(2, 0x50, struct.pack(">I", (1 << 31) | (1 << 30) | (16 << 16) | 16)),
        "req-v2-pd": mpa_request(2, 0x10, struct.pack(">I", 16 << 16 | 16) + b"hello"),
        "req-cut": mpa_request(1, 0x40, b"x" * 40)[:30],
        "req-rev9": mpa_request(9, 0x40, b""),
        "not-mpa": b"GET / HTTP/1.1\r\n\r\n",
        "ctl-hello": struct.pack(">IBBBBIIIIQIIQHHI", 0x52434E46, 1, 1, 3, 0, 4096, 100, 0, 0, 0, 0, 0, 0, 4, 16, 0),
    }.items():
        s.put("fuzz_iwarp_control", name, raw)

"""Seeds of the InfiniBand family's fuzz targets: the golden captures'
transport packets (native, RoCEv1, RoCEv2) and packet records with their
direction, and the RoCE control messages. Called by fuzz/make_seeds.py."""
from seedlib import ip_of

LINKTYPE_INFINIBAND = 247


def seeds(captures, s):
    for cap in captures:
        if cap.linktype == LINKTYPE_INFINIBAND:
            # the transport packet follows the LRH (and the GRH when LNH is 3)
            for i, frame in enumerate(cap.frames):
                if i % 3 == 0 and len(frame) > 8:
                    s.put("fuzz_ib", "%s-%d" % (cap.name, i), frame[48 if frame[1] & 3 == 3 else 8:-2])
            continue
        roce = b""
        for i, frame in enumerate(cap.frames):
            ip = ip_of(frame)
            if ip is None:
                continue
            if frame[12:14] == b"\x89\x15":  # RoCEv1: GRH, then the transport packet
                if i % 3 == 0:
                    s.put("fuzz_ib", "%s-%d" % (cap.name, i), frame[14 + 40:])
                continue
            _, l4, proto, src = ip
            if proto != 17:
                continue
            if len(frame) > l4 + 8:
                # a record for fuzz_roce_state: direction bit and length, then the transport packet
                pkt = frame[l4 + 8:][:0x7fff]
                roce += bytes([(0x80 if src[-1] & 1 == 0 else 0) | (len(pkt) >> 8), len(pkt) & 0xff]) + pkt
            if i % 3 == 0:
                s.put("fuzz_ib", "%s-%d" % (cap.name, i), frame[l4 + 8:])
                s.put("fuzz_headers", "%s-%d" % (cap.name, i), bytes([23]) + frame[l4 + 8:])
        if roce:
            s.put("fuzz_roce_state", cap.name, bytes([1]) + roce)
            # fuzz_ib_engine reads the same records (the top bit there marks a bad
            # ICRC, so direction bits become ICRC faults now and then); RC, 1024.
            s.put("fuzz_ib_engine", cap.name, bytes([0x09]) + roce)

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
        s.put("fuzz_control", name, line)

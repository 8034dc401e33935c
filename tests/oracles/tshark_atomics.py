#!/usr/bin/python3
"""tshark's reading of the RFC 7306 messages in a capture.

usage: tshark_atomics.py CAPTURE

Prints one JSON object per Atomic Request or Response tshark decodes: its
RDMAP opcode, DDP queue number and MSN, and for a request the name tshark's
iWARP dissector gives its Atomic Operation Code ("FetchAdd", "CmpSwap", or
tshark's word for a code it does not know). tshark's dissector is written
from RFC 7306 by others, so it judges our tables' queue numbers and codes.
"""
import json
import re
import subprocess
import sys


def main():
    path = sys.argv[1]
    # PDML gives each field's value and tshark's own name for it.
    out = subprocess.run(["tshark", "-r", path, "-o", "tcp.desegment_tcp_streams:TRUE", "-Y", "iwarp_rdma.opcode >= 0xa",
                          "-T", "pdml"], capture_output=True, text=True, check=True).stdout
    messages = []
    for packet in out.split("<packet>")[1:]:
        fields = re.findall(r'<field name="([^"]+)" showname="([^"]*)"[^>]*? show="([^"]*)"', packet)
        cur = None
        for name, showname, show in fields:
            if name == "iwarp_mpa.fpdu":  # each FPDU's fields follow its own
                cur = {"opcode": None}
                messages.append(cur)
            elif cur is not None and name == "iwarp_rdma.opcode":
                cur["opcode"] = int(show, 0)
            elif cur is not None and name == "iwarp_ddp.qn":
                cur["qn"] = int(show, 0)
            elif cur is not None and name == "iwarp_ddp.msn":
                cur["msn"] = int(show, 0)
            elif cur is not None and name == "iwarp_rdma.atomic.opcode":
                cur["aopcode"] = int(show, 0)
                m = re.search(r"OpCode: (.*) \(\d+\)$", showname)
                cur["aopcode_name"] = m.group(1) if m else showname
    print(json.dumps([m for m in messages if m["opcode"] in (0xA, 0xB)]))


if __name__ == "__main__":
    main()

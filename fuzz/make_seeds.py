#!/usr/bin/python3
"""Writes the fuzz seed corpora from the golden captures: the captures
themselves (fuzz_capture, also as ERF records), each capture's frames as the
plugin pushes them (fuzz_dissector), single frames (fuzz_link), then what each
family's fuzz/F/seeds.py writes for its own targets. Run by tools/quickstart
before fuzzing; nothing is committed.

  make_seeds.py GOLDEN_DIR OUT_DIR"""
import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # (no __pycache__ in the source tree)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from seedlib import Seeds, golden_captures  # noqa: E402

golden, seeds = sys.argv[1], Seeds(sys.argv[2])
to_erf = os.path.join(here, "..", "tests", "oracles", "to_erf.py")
captures = golden_captures(golden)
LINKTYPE_INFINIBAND = 247

for cap in captures:
    seeds.put("fuzz_capture", cap.name, cap.data)
    if cap.name in ("roce-v4.pcap", "roce-v1.pcap", "ib-native-global.pcap", "iwarp-rev2-crc.pcap"):
        # the same as ERF records (LINKTYPE_ERF), which the reader unwraps
        with tempfile.NamedTemporaryFile(suffix=".pcap") as t:
            subprocess.run([sys.executable, to_erf, cap.path, t.name], check=True)
            seeds.put("fuzz_capture", cap.name.replace(".pcap", ".erf.pcap"), open(t.name, "rb").read())
    # fuzz_dissector: the link type's choice octet (strict), then each frame
    # with its 2-octet length, as the plugin pushes them
    choice = {1: 0, 113: 1, 276: 2, 101: 3, 228: 4, 229: 5, 247: 6}.get(cap.linktype, 0)
    seeds.put("fuzz_dissector", cap.name,
              bytes([0x80 | choice]) + b"".join(struct.pack(">H", len(f[:0x7fff])) + f[:0x7fff] for f in cap.frames))
    # fuzz_link: every third frame after its link type's choice octet (7 is
    # LINKTYPE_INFINIBAND, 0 Ethernet)
    native = cap.linktype == LINKTYPE_INFINIBAND
    for i, frame in enumerate(cap.frames):
        if i % 3 == 0 and (len(frame) > 8 if native else len(frame) >= 14 + 20):
            seeds.put("fuzz_link", "%s-%d" % (cap.name, i), (b"\x07" if native else b"\x00") + frame)

# The families' targets, each family's seeds.py in its fuzz/ folder.
for family in sorted(os.listdir(here)):
    path = os.path.join(here, family, "seeds.py")
    if os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("seeds_" + family, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.seeds(captures, seeds)

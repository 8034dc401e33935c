#!/usr/bin/python3
"""Writes the fuzz seed corpora from the golden captures: the captures
themselves (fuzz_capture, also as ERF records), each capture's frames as the
plugin pushes them (fuzz_dissector), single frames (fuzz_link), then what each
family's fuzz/F/seeds.py writes for its own targets. Run by tools/quickstart
before fuzzing; nothing is committed.

  make_seeds.py GOLDEN_DIR OUT_DIR"""
import importlib.util
import json
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

# fuzz_reports: the first octet picks the report command (fuzz_reports.cpp),
# the rest is what it reads. Real reports of a few golden captures, made by
# the build's own binary when there is one (build/cli/rdmaconf: the quick
# start writes the seeds after that build), and a lab report by hand.
LAB_REPORT = json.dumps({
    "lab": {"kernel": "6.12.118+deb12-amd64", "kernel_file": "6.12",
            "manifest": "linux-image-6.12.118+deb12-amd64_6.12.118-1_amd64.deb\nrdma-core_44.0-2_amd64.deb\n"},
    "summary": {"cells": 2, "green": 1, "red": 1, "skipped": 0, "regressions": 0},
    "findings": {"siw-pad": {"title": "siw sends the pad octets unzeroed", "text": "the pad is not cleared",
                             "cases": ["iwarp.mpa.fpdu.pad"], "severity": "conformance", "capture_only": True,
                             "source": [{"file": "drivers/infiniband/sw/siw/siw_qp_tx.c", "function": "siw_qp_prepare_tx",
                                         "anchor": "MAX_HDR_INLINE", "what": "the short-FPDU path",
                                         "lines": {"6.12": "1-2"}}]}},
    "citations": {"kernel": "6.12", "source": "src", "problems": []},
    "cells": [{"id": "siw.siw-siw.ib_send_bw", "peer": "siw", "our_role": "none", "peer_program": "ib_send_bw",
               "scenario": "ib_send_bw", "configuration": {"label": "crc-off.v2"}, "verdict": "red",
               "reason": "siw finding", "finding": "siw-pad", "known_finding": "the pad",
               "check": {"pass": 1, "fail": 1, "inconclusive": 0, "failed_cases": ["iwarp.mpa.fpdu.pad"]}},
              {"id": "siw.other", "peer": "siw", "verdict": "green", "finding": None}]}).encode()
for cmd in (0, 1):
    seeds.put("fuzz_reports", "lab-%d" % cmd, bytes([cmd]) + LAB_REPORT)
binary = os.path.join(here, "..", "build", "cli", "rdmaconf")
if os.access(binary, os.X_OK):
    picked = [c.path for c in captures if c.name in ("iwarp-fault-crc.pcap", "roce-v4.pcap", "iwarp-rev2-crc.pcap")]
    with tempfile.TemporaryDirectory() as t:
        def made(*args):
            subprocess.run([binary] + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        made("check", *picked, "--json", t + "/r.json")
        for i in (0, 1):
            made("check", *picked, "--shard", "%d/2" % i, "--json", t + "/s%d.json" % i)
        made("report", "history", "--dir", t + "/h", t + "/r.json")
        made("report", "coverage", "--json", t + "/c.json")
        def read(name):
            path = os.path.join(t, name)
            return open(path, "rb").read() if os.path.exists(path) else None
        report, hist, cov = read("r.json"), read("h/history.jsonl"), read("c.json")
        s0, s1 = read("s0.json"), read("s1.json")
        if report:
            for cmd in (0, 2):
                seeds.put("fuzz_reports", "check-%d" % cmd, bytes([cmd]) + report)
            seeds.put("fuzz_reports", "diff", b"\x03" + report + b"\0" + report)
        if hist:
            seeds.put("fuzz_reports", "history", b"\x04" + hist)
        if s0 and s1:
            seeds.put("fuzz_reports", "merge", b"\x05" + s0 + b"\0" + s1)
        if cov:
            seeds.put("fuzz_reports", "coverage", b"\x06" + cov)

# The families' targets, each family's seeds.py in its fuzz/ folder.
for family in sorted(os.listdir(here)):
    path = os.path.join(here, family, "seeds.py")
    if os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("seeds_" + family, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.seeds(captures, seeds)

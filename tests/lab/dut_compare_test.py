#!/usr/bin/env python3
"""Checks interop/lab/dut_compare.py on small reports made here: which
differences between the guest's run and the device's run it lets through,
against the shipped interop/lab/dut-differences.json."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "interop/lab/dut_compare.py")
DIFFERENCES = os.path.join(ROOT, "interop/lab/dut-differences.json")
DEVICE = {"profile": "siw", "kernel": "6.1", "driver": "siw", "dut": "root@guest"}
CELL = "siw.our-initiator.rping.crc-off.v2.early-data"


def cell(verdict, reason="", **extra):
    c = {"id": CELL, "verdict": verdict, "reason": reason, "device": {"profile": "siw"},
         "finding": "siw-early-fpdu-stall", "known_finding": None, "regression": False}
    c.update(extra)
    return c


def compare(device_cell, cell_id=CELL):
    device_cell = dict(device_cell, id=cell_id)
    with tempfile.TemporaryDirectory() as tmp:
        guest = os.path.join(tmp, "guest.json")
        dut = os.path.join(tmp, "dut.json")
        with open(guest, "w") as f:
            json.dump({"cells": [dict(cell("green"), id=cell_id)]}, f)
        with open(dut, "w") as f:
            json.dump({"device": DEVICE, "cells": [device_cell]}, f)
        run = subprocess.run([sys.executable, TOOL, guest, dut, "siw", DIFFERENCES],
                             capture_output=True, text=True)
        return run.returncode, run.stdout


failures = []


def expect(name, want, got):
    rc, out = got
    if rc != want:
        failures.append(f"{name}: exit {rc}, expected {want}\n{out}")


expect("same verdict", 0, compare(cell("green")))
expect("a symptom the entry lists", 0,
       compare(cell("red", "ping 0: waiting for the RDMA Read to complete: timed out after 8000 ms", regression=True)))
expect("the entry's own finding, judged known", 0,
       compare(cell("red", "siw finding: siw as responder sends ...", known_finding="siw as responder ...")))
expect("the entry's finding but a regression", 1,
       compare(cell("red", "the capture FAILs iwarp.mpa.fpdu.pad", known_finding="x", regression=True)))
expect("another finding", 1,
       compare(cell("red", "siw finding: pad", finding="siw-unzeroed-pad", known_finding="pad")))
expect("another reason", 1, compare(cell("red", "our initiator crashed", regression=True)))
# Red on both attempts: the first shows the entry's symptom (siw stalled),
# the second failed on the device that stall left behind.
TAGGED = "siw.our-initiator.terminate-ddp-version-tagged.crc-off.v2"
expect("the entry's symptom on the first attempt", 0,
       compare(cell("red", "MPA setup: timed out after 8000 ms", finding=None, regression=True,
                    first_attempt="waiting for Terminate 1/1/0x04: timed out after 8000 ms"), cell_id=TAGGED))
expect("another reason on both attempts", 1,
       compare(cell("red", "MPA setup: timed out after 8000 ms", finding=None, regression=True,
                    first_attempt="MPA setup: timed out after 8000 ms"), cell_id=TAGGED))
expect("a cell the entry does not name", 1,
       compare(cell("red", "siw finding: ...", known_finding="x"), cell_id="siw.our-responder.rping.crc-off.v2"))

for f in failures:
    print(f"FAIL {f}")
print(f"dut_compare: {9 - len(failures)} of 9 checks hold")
sys.exit(1 if failures else 0)

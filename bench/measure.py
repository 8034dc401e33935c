"""Shared by the benchmark scripts: one timed run of a command, and the
families' engine benchmarks (each family's bench/F/engine.py) with the rows
they report and their targets."""
import os
import subprocess
import sys
import tempfile
import time

_mem = os.path.join(tempfile.mkdtemp(prefix="rdmaconf-bench-"), "mem")


def run(argv):
    """Wall seconds and peak RSS (MiB) of one run of argv (exit status 0 or 1
    expected: 1 is a FAIL verdict). GNU time reports the peak, as Python's
    own RSS would leak into the child's ru_maxrss."""
    t = time.perf_counter()
    rc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", _mem, *argv],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    if rc not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed with status {rc}")
    with open(_mem) as f:
        return wall, int(f.read().split()[-1]) / 1024


def family_benchmarks():
    """Each family's engine benchmarks, as its bench/F/engine.py lists them
    (BENCHMARKS), families in conformance/families.def's order. Each is a dict:
    "tool" (a binary in BUILD/bench), "argv" (quick, runs) -> its arguments,
    "root" (needs root), "rows" (its JSON) -> (what, figure, baseline, ratio,
    target, op) rows with their targets, as bench/all and bench/compare report them."""
    import importlib.util
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "conformance", "families.def")) as f:
        families = re.findall(r"^RDMACONF_FAMILY\((\w+)\)", f.read(), re.M)
    out = []
    for family in families:
        path = os.path.join(here, family, "engine.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("bench_" + family, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            out += module.BENCHMARKS
    return out

"""Shared by the checker benchmarks: one timed run of a command."""
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

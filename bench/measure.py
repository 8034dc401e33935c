"""Shared by the benchmark scripts: one timed run of a command, the
families' engine benchmarks (each family's bench/F/engine.py) with the rows
they report and their targets, and the statistics of paired rounds (the
spread of a ratio, and whether the baseline moved more than the effect)."""
import os
import statistics
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
    target, op, stats) rows with their targets and the spread over rounds
    (paired() below), as bench/all and bench/compare report them."""
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


def quartiles(values):
    """First quartile, median and third quartile (inclusive method); one
    value is all three."""
    v = sorted(values)
    if len(v) < 2:
        return (v[0], v[0], v[0]) if v else (0.0, 0.0, 0.0)
    q1, q2, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return q1, q2, q3


def paired(engine, baseline):
    """The spread of engine against baseline over rounds measured side by
    side: each round's ratio engine / baseline (the figures in the same unit:
    a time or a rate), their median and
    interquartile range, and the baseline's own movement over the rounds
    (its interquartile range over its median). The baseline moved more than
    the effect when that movement exceeds the distance of the ratio from 1:
    the ratio then says less than its digits suggest."""
    pairs = [(e, b) for e, b in zip(engine, baseline) if e > 0 and b > 0]
    ratios = [e / b for e, b in pairs]
    q1, med, q3 = quartiles(ratios)
    b1, bm, b3 = quartiles([b for _, b in pairs])
    moved = (b3 - b1) / bm if bm else 0.0
    return {"ratio": med, "q1": q1, "q3": q3, "rounds": len(ratios), "baseline": bm, "baseline_moved": moved,
            "warning": moved_more_than(moved, abs(med - 1))}


def moved_more_than(moved, effect):
    """The warning for a baseline that moved (relative interquartile range)
    more than the effect measured (a relative difference), or None."""
    if moved <= effect:
        return None
    return (f"the baseline moved {moved * 100:.1f} % (interquartile range over its rounds), more than the "
            f"{effect * 100:.1f} % effect measured")


def spread_text(stats):
    """'[q1-q3]' of a row's ratio, or '' without rounds."""
    if not stats or stats.get("rounds", 0) < 2:
        return ""
    return f"[{stats['q1']:.2f}-{stats['q3']:.2f}]"

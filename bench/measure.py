"""Shared by the benchmark scripts: one timed run of a command, and the engine
benchmarks' rows with their targets."""
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


def iwarp_rows(result, how):
    """The iWARP engine rows the tables report, from rdmaconf-bench-iwarp's
    JSON: (what, figure, baseline, ratio, target, op) each."""
    out = []
    for x in (result or {}).get("rows", []):
        cfg = x["config"]
        if x["test"] == "write-bw" and cfg in ("crc on", "crc on, markers both ways"):
            out.append((f"iWARP RDMA Write 64 KiB, {cfg}, {how}", f"{x['engine_gbit_s']:.1f} Gb/s",
                        f"{x['raw_tcp_gbit_s']:.1f} Gb/s", x["ratio"], 0.9 if "markers" in cfg else 1.0, ">="))
        if x["test"] == "write-lat" and cfg == "crc on":
            out.append((f"iWARP half round trip {x['size']} B, {how}", f"{x['engine_half_rtt_us']:.2f} us",
                        f"{x['raw_tcp_half_rtt_us']:.2f} us", x["ratio"], 1.05 if x["size"] == 4 else 1.10, "<="))
    return out


def roce_rows(r):
    """The RoCE engine rows, from rdmaconf-bench-roce's JSON, as iwarp_rows."""
    raw = f"{r['raw_udp_80B_msgs_per_s'] / 1e3:.0f} k/s"
    return [(f"RoCE {t.upper()} SEND 64 B (messages/s)", f"{r[f'{t}_send_64B_msgs_per_s'] / 1e3:.0f} k/s", raw,
             r[f"{t}_send_64B_ratio"], 0.9, ">=") for t in ("rc", "ud")]

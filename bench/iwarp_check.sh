#!/bin/bash
# Throughput of `rdmaconf check` on iWARP traffic (1 KiB FPDUs, CRC on)
# against tshark on the same file, measured in the same run, plus our peak
# memory at two capture sizes (it must not grow with the capture).
#   bench/iwarp_check.sh [BUILD_DIR] [MB_LARGE] [MB_SMALL]
# rdmaconf is timed both as `check` and as `check --json` (the JSON report
# carries each capture's SHA-256, computed on a second thread); each figure is
# the median of three runs. tshark runs once, on the large file, with full
# MPA/DDP/RDMAP dissection and its CRC check (it takes a few seconds).
set -euo pipefail
build=${1:-build}
large=${2:-120}
small=${3:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen=$build/captures/rdmaconf-gen
bin=$build/cli/rdmaconf
for mb in "$small" "$large"; do
  "$gen" --bench "$tmp/c$mb.pcap" "$mb"
done
sync  # the fresh files' writeback must not compete with the timed runs
BENCH_DIR="$(dirname "$0")" python3 - "$bin" "$tmp" "$tmp/c$large.pcap" "$tmp/c$small.pcap" <<'PY'
import os, statistics, sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import run

rdmaconf, tmp, large, small = sys.argv[1:]

def ours(path, *extra):
    run([rdmaconf, "check", "--quiet", path])  # warm the page cache
    runs = [run([rdmaconf, "check", "--quiet", *extra, path]) for _ in range(3)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)

report = os.path.join(tmp, "r.json")
size = {p: os.path.getsize(p) for p in (large, small)}
rows = {}
for path in (large, small):
    rows[path, "check"] = ours(path)
    rows[path, "check --json"] = ours(path, "--json", report)
t_shark, m_shark = run(["tshark", "-r", large, "-o", "tcp.desegment_tcp_streams:TRUE", "-Y", "iwarp_mpa"])
shark = size[large] / t_shark / 1e9
for path in (large, small):
    for mode in ("check", "check --json"):
        t, m = rows[path, mode]
        print(f"capture {size[path]/1e6:4.0f} MB  rdmaconf {mode:<13} {size[path]/t/1e9:5.2f} GB/s  peak {m:5.1f} MiB")
print(f"capture {size[large]/1e6:4.0f} MB  tshark                {shark*1000:6.1f} MB/s  peak {m_shark:5.1f} MiB")
for mode in ("check", "check --json"):
    t, _ = rows[large, mode]
    print(f"ratio rdmaconf {mode} / tshark (same {size[large]/1e6:.0f} MB file): {size[large]/t/1e9/shark:.0f}x")
PY

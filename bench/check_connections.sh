#!/bin/bash
# Memory and time of `rdmaconf check` against the number of connections in
# one capture: short iWARP connections one after another (rdmaconf-gen
# --bench-connections: handshake, MPA Request/Reply with CRC, a Send each
# way, FIN both ways), checked without and with --json. Peak memory must not
# follow the count (the checker keeps only open connections; the reports
# are written as scopes end), time must grow linearly, and --json should
# cost little over the plain check (its writer runs on a second thread).
# Each figure is the median of three runs; the baseline of the ratios is the
# plain check of the same file in the same run, both on one checking thread
# (--jobs 1; bench/all measures the check spread over every core).
#   bench/check_connections.sh [BUILD_DIR] [COUNT...]   (default 10000 100000 1000000)
set -euo pipefail
build=${1:-build}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10000 100000 1000000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in "${counts[@]}"; do
  "$build/captures/rdmaconf-gen" --bench-connections "$tmp/c$n.pcap" "$n"
done
sync
BENCH_DIR="$(dirname "$0")" python3 - "$build/cli/rdmaconf" "$tmp" "${counts[@]}" <<'PY'
import os, statistics, sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import run

rdmaconf, tmp, *counts = sys.argv[1:]

report = os.path.join(tmp, "r.json")
print(f"{'connections':>11}  {'capture':>9}  {'check':>8}  {'peak':>8}  {'--json':>8}  {'peak':>8}  {'report':>9}  ratio  us/conn")
for n in counts:
    path = os.path.join(tmp, f"c{n}.pcap")
    run([rdmaconf, "check", "--quiet", path])  # warm the page cache
    plain = [run([rdmaconf, "check", "--quiet", "--jobs", "1", path]) for _ in range(3)]
    js = []
    for _ in range(3):
        if os.path.exists(report):
            os.remove(report)
        js.append(run([rdmaconf, "check", "--quiet", "--jobs", "1", "--json", report, path]))
    tp, mp = statistics.median(r[0] for r in plain), max(r[1] for r in plain)
    tj, mj = statistics.median(r[0] for r in js), max(r[1] for r in js)
    print(f"{int(n):>11}  {os.path.getsize(path)/1e6:>7.0f}MB  {tp:>7.2f}s  {mp:>5.1f}MiB  {tj:>7.2f}s  {mj:>5.1f}MiB"
          f"  {os.path.getsize(report)/1e6:>7.0f}MB  {tj/tp:>4.2f}x  {tp/int(n)*1e6:>6.1f}")
PY

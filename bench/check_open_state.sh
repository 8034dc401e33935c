#!/bin/bash
# Peak memory of `rdmaconf check` against open state: COUNT RoCEv2
# conversations open at once (rdmaconf-gen --bench-roce-open: one
# unanswered request each, from its own address) and COUNT half-open TCP
# connections (--bench-syns: one SYN each), checked with no bound
# (--state-memory 0), where memory follows the open state, and with the
# default bound, where it must not. The no-bound peaks over the counts give
# the octets one open conversation or connection takes (the constants
# behind the bound: conformance/ib/family.cpp, conformance/udp/family.cpp,
# conformance/checker.hpp). The baseline of the ratio is the bounded check's
# peak on the smallest count, in the same run.
#   bench/check_open_state.sh [BUILD_DIR] [COUNT...]   (default 100000 1000000; no bound only up to 100000)
set -euo pipefail
build=${1:-build}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 1000000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 10000 "${counts[@]}"; do
  "$build/captures/rdmaconf-gen" --bench-roce-open "$tmp/roce$n.pcap" "$n"
  "$build/captures/rdmaconf-gen" --bench-syns "$tmp/syn$n.pcap" "$n"
done
BENCH_DIR="$(dirname "$0")" python3 - "$build/cli/rdmaconf" "$tmp" "${counts[@]}" <<'PY'
import os, sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import run

rdmaconf, tmp, *counts = sys.argv[1:]
print(f"{'kind':>5} {'open':>9}  {'bounded':>9}  {'time':>7}  {'no bound':>9}  ratio to {counts[0]}")
for kind in ("roce", "syn"):
    base = None
    free = {}
    for n in ["10000"] + counts:
        path = os.path.join(tmp, f"{kind}{n}.pcap")
        if int(n) <= 100000:
            free[int(n)] = run([rdmaconf, "check", "--quiet", "--jobs", "1", "--state-memory", "0", path])[1]
        if n == "10000" and "10000" not in counts:
            continue
        t, m = run([rdmaconf, "check", "--quiet", "--jobs", "1", path])
        base = base or m
        f = f"{free[int(n)]:>6.0f}MiB" if int(n) in free else ""
        print(f"{kind:>5} {int(n):>9}  {m:>6.0f}MiB  {t:>6.2f}s  {f:>9}  {m / base:.2f}x")
    big = max(k for k in free)
    if big > 10000:
        print(f"{kind:>5} one open {'conversation' if kind == 'roce' else 'connection'} with no bound: "
              f"{(free[big] - free[10000]) * 1048576 / (big - 10000):.0f} octets (peak over {big} less peak over 10000)")
PY

#!/bin/bash
# Throughput of `rdmaconf check` on iWARP traffic (1 KiB FPDUs, CRC on)
# against tshark on the same file, measured in the same run, plus our peak
# memory at two capture sizes (it must not grow with the capture).
#   bench/iwarp_check.sh [BUILD_DIR] [MB_LARGE] [MB_SMALL]
set -euo pipefail
build=${1:-build}
large=${2:-120}
small=${3:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen=$build/captures/rdmaconf-gen
bin=$build/cli/rdmaconf

measure() {  # file -> "seconds peak_kib"
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" check --quiet "$1" >/dev/null || true
  cat "$tmp/t"
}
for mb in "$small" "$large"; do
  "$gen" --bench "$tmp/c$mb.pcap" "$mb"
done
size_large=$(stat -c %s "$tmp/c$large.pcap")
size_small=$(stat -c %s "$tmp/c$small.pcap")
read -r t_large m_large < <(measure "$tmp/c$large.pcap")
read -r t_small m_small < <(measure "$tmp/c$small.pcap")
# tshark with MPA/DDP/RDMAP dissection and CRC check on the smaller file (it is slow), same run.
/usr/bin/time -f "%e" -o "$tmp/ts" tshark -r "$tmp/c$small.pcap" -o tcp.desegment_tcp_streams:TRUE -Y iwarp_mpa >/dev/null 2>&1 || true
t_tshark=$(cat "$tmp/ts")
python3 - "$size_large" "$t_large" "$m_large" "$size_small" "$t_small" "$m_small" "$t_tshark" <<'PY'
import sys
sl, tl, ml, ss, ts, ms, tt = sys.argv[1:]
sl, ss = int(sl), int(ss)
tl, ts, tt = max(float(tl), 0.01), max(float(ts), 0.01), max(float(tt), 0.01)
ours = sl / tl / 1e9
ours_small = ss / ts / 1e9
shark = ss / tt / 1e9
print(f"capture {sl/1e6:.0f} MB: rdmaconf {ours:.2f} GB/s, peak {int(ml)/1024:.1f} MiB")
print(f"capture {ss/1e6:.0f} MB: rdmaconf {ours_small:.2f} GB/s, peak {int(ms)/1024:.1f} MiB; tshark {shark*1000:.1f} MB/s")
print(f"ratio rdmaconf/tshark: {ours_small/shark:.0f}x")
PY

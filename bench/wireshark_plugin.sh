#!/bin/bash
# What the Wireshark plugin costs: tshark over the same iWARP capture (1 KiB
# FPDUs, CRC on), two passes as the plugin needs for its verdicts, with the
# plugin loaded and with an empty plugin folder, side by side in one run;
# medians of five runs each, alternating. Target: at most 1.3x.
#   bench/wireshark_plugin.sh [BUILD_DIR] [MB]
# tshark ignores WIRESHARK_PLUGIN_DIR when run as root, so as root it runs
# as the unprivileged user 65534.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
mb=${2:-100}
plugins=$build/wireshark-plugins
[ -f "$plugins"/*/epan/rdmaconf.so ] || { echo "no plugin in $plugins (build with wireshark-dev installed)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/none" "$tmp/home"
"$build/captures/rdmaconf-gen" --bench "$tmp/c.pcap" "$mb"
chmod -R a+rwX "$tmp"
sync
as=()
[ "$(id -u)" = 0 ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
BENCH_DIR="$(dirname "$0")" python3 - "$tmp" "$plugins" "${as[@]}" <<'PY'
import os, statistics, sys

sys.path.insert(0, os.environ["BENCH_DIR"])
from measure import run

tmp, plugins, *as_user = sys.argv[1:]
capture = os.path.join(tmp, "c.pcap")

def tshark(plugin_dir):
    env = ["env", f"HOME={tmp}/home", f"WIRESHARK_PLUGIN_DIR={plugin_dir}"]
    return run([*as_user, *env, "tshark", "-n", "-2", "-r", capture])

tshark(plugins)  # warm the page cache
times = {"without": [], "with": []}
mem = {"without": 0.0, "with": 0.0}
for _ in range(5):
    for name, d in (("without", os.path.join(tmp, "none")), ("with", plugins)):
        t, m = tshark(d)
        times[name].append(t)
        mem[name] = max(mem[name], m)
size = os.path.getsize(capture) / 1e6
for name in ("without", "with"):
    t = statistics.median(times[name])
    print(f"tshark -2 {name:<7} the plugin  {size:4.0f} MB  {t:6.2f} s  {size / t:6.1f} MB/s  peak {mem[name]:6.1f} MiB")
ratio = statistics.median(times["with"]) / statistics.median(times["without"])
print(f"ratio with / without: {ratio:.2f}x (target at most 1.3x)")
PY

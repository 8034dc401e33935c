"""The U-Net benchmark (rdmaconf-bench-unet: endpoints against kernel UDP on
a veth pair; root) and its rows. Listed by bench/measure.py."""
import statistics

from measure import paired


def _rows(r):
    out = []
    for how in ("busy-polling", "interrupt-driven"):
        m = r[how]
        out.append((f"U-Net ({r['path']}) 64 B round trip, {how}", f"{statistics.median(m['unet_rtt_us']):.1f} us",
                    f"{statistics.median(m['kernel_rtt_us']):.1f} us", m["rtt_ratio"], 0.7, "<=",
                    paired(m["unet_rtt_us"], m["kernel_rtt_us"])))
        out.append((f"U-Net ({r['path']}) 1472 B stream, {how}", f"{statistics.median(m['unet_msgs_per_s']) / 1e3:.0f} k/s",
                    f"{statistics.median(m['kernel_msgs_per_s']) / 1e3:.0f} k/s", m["stream_ratio"], 1.0, ">=",
                    paired(m["unet_msgs_per_s"], m["kernel_msgs_per_s"])))
    return out


BENCHMARKS = [{"tool": "rdmaconf-bench-unet", "root": True, "rows": _rows,
               "argv": lambda quick, runs: ["--rounds", str(runs), *(["--count", "200", "--stream", "5000"] if quick else [])]}]

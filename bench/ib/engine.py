"""The RoCE engine's benchmark (rdmaconf-bench-roce: RC and UD SEND against
raw UDP on loopback) and its rows. Listed by bench/measure.py."""


def _rows(r):
    raw = f"{r['raw_udp_80B_msgs_per_s'] / 1e3:.0f} k/s"
    return [(f"RoCE {t.upper()} SEND 64 B (messages/s)", f"{r[f'{t}_send_64B_msgs_per_s'] / 1e3:.0f} k/s", raw,
             r[f"{t}_send_64B_ratio"], 0.9, ">=") for t in ("rc", "ud")]


BENCHMARKS = [{"tool": "rdmaconf-bench-roce", "root": False, "rows": _rows,
               "argv": lambda quick, runs: ["--runs", str(runs), *(["--iterations", "20000"] if quick else [])]}]

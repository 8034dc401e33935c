"""The RoCE engine's benchmark (rdmaconf-bench-roce: RC and UD SEND against
raw UDP on loopback, in alternating rounds) and its rows with their spread.
Listed by bench/measure.py."""
from measure import paired


def _rows(r):
    raw = f"{r['raw_udp_80B_msgs_per_s'] / 1e3:.0f} k/s"
    rounds = r.get("rounds", {})

    def stats(t):
        key = f"{t}_send_64B_msgs_per_s"
        return paired(rounds[key], rounds["raw_udp_80B_msgs_per_s"]) if key in rounds else None
    return [(f"RoCE {t.upper()} SEND 64 B (messages/s)", f"{r[f'{t}_send_64B_msgs_per_s'] / 1e3:.0f} k/s", raw,
             r[f"{t}_send_64B_ratio"], 0.9, ">=", stats(t)) for t in ("rc", "ud")]


BENCHMARKS = [{"tool": "rdmaconf-bench-roce", "root": False, "rows": _rows,
               "argv": lambda quick, rounds: ["--runs", str(rounds), *(["--iterations", "5000"] if quick else [])]}]

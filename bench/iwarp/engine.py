"""The iWARP engine's benchmark (rdmaconf-bench-iwarp: engine against raw TCP
on loopback, in alternating short rounds), sleeping and busy-polling, and
the rows it reports with their targets and spread. Listed by
bench/measure.py's family_benchmarks()."""
from measure import paired


def _argv(spin):
    def argv(quick, rounds):
        few = ["--bw-iterations", "500", "--lat-iterations", "500"] if quick else []
        return ["--runs", str(rounds), *few, *(["--spin"] if spin else [])]
    return argv


def _rows(how):
    def rows(result):
        out = []
        for x in (result or {}).get("rows", []):
            cfg = x["config"]
            stats = paired(x["engine_rounds"], x["raw_rounds"]) if "engine_rounds" in x else None
            if x["test"] == "write-bw" and cfg in ("crc on", "crc on, markers both ways"):
                out.append((f"iWARP RDMA Write 64 KiB, {cfg}, {how}", f"{x['engine_gbit_s']:.1f} Gb/s",
                            f"{x['raw_tcp_gbit_s']:.1f} Gb/s", x["ratio"], 0.9 if "markers" in cfg else 1.0, ">=", stats))
            if x["test"] == "write-lat" and cfg == "crc on":
                out.append((f"iWARP half round trip {x['size']} B, {how}", f"{x['engine_half_rtt_us']:.2f} us",
                            f"{x['raw_tcp_half_rtt_us']:.2f} us", x["ratio"], 1.10 if x["size"] == 4 else 1.15, "<=",
                            stats))
        return out
    return rows


BENCHMARKS = [{"tool": "rdmaconf-bench-iwarp", "argv": _argv(spin), "root": False,
               "rows": _rows("busy-polling" if spin else "sleeping")} for spin in (False, True)]

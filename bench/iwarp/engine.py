"""The iWARP engine's benchmark (rdmaconf-bench-iwarp: engine against raw TCP
on loopback), sleeping and busy-polling, and the rows it reports with their
targets. Listed by bench/measure.py's family_benchmarks()."""


def _argv(spin):
    def argv(quick, runs):
        few = ["--bw-iterations", "2000", "--lat-iterations", "2000"] if quick else []
        return ["--runs", str(runs), *few, *(["--spin"] if spin else [])]
    return argv


def _rows(how):
    def rows(result):
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
    return rows


BENCHMARKS = [{"tool": "rdmaconf-bench-iwarp", "argv": _argv(spin), "root": False,
               "rows": _rows("busy-polling" if spin else "sleeping")} for spin in (False, True)]

#!/usr/bin/env python3
"""The lab's second attempt, end to end (docs/lab.md, "run once more").

Writes a table of three rxe-against-rxe cells taken from the shipped table:
the rping cell as it is; the same with a client that fails unless the first
attempt's folder exists (so it is red in the first boot and green in the
second); and one whose client always fails. Runs `rdmaconf lab run` over it
and requires: exit status 1; the always-failing cell a regression, red on
both attempts; the second cell green, run twice, not a regression; the first
green, run once; the summary counting one cell red only on a first attempt.

  interop/lab/retry_check.py RDMACONF CELLS_JSON OUT_DIR
"""
import json
import os
import subprocess
import sys

rdmaconf, cells_file, out = sys.argv[1:4]
table = json.load(open(cells_file))
group = next(g for g in table["groups"] if g["name"] == "rxe-rxe")
base = next(c for c in group["cells"] if c["id"] == "rxe.rxe-rxe.rping")
flaky = dict(base, id="rxe.rxe-rxe.rping-second-boot",
             client='sh -c "test -d /share/first-attempt && exec ' + base["client"] + '"')
broken = dict(base, id="rxe.rxe-rxe.rping-always-red", client="false")
group["cells"] = [base, flaky, broken]
table["groups"] = [group]
os.makedirs(out, exist_ok=True)
mine = os.path.join(out, "cells.json")
with open(mine, "w") as f:
    json.dump(table, f, indent=1)

run = subprocess.run([rdmaconf, "lab", "run", "--cells", mine, "--out", out], capture_output=True, text=True)
try:
    report = json.load(open(os.path.join(out, "lab-report.json")))
except (OSError, ValueError) as e:
    sys.stdout.write(run.stdout + run.stderr)
    sys.exit(f"lab retry check: no report ({e})")
cells = {c["id"]: c for c in report["cells"]}
problems = []


def want(ok, what):
    if not ok:
        problems.append(what)


want(run.returncode == 1, f"exit status {run.returncode}, not 1")
c = cells[base["id"]]
want(c["verdict"] == "green" and c["first_attempt"] is None, f"{base['id']}: {c['verdict']}, ran twice: {c['first_attempt']}")
c = cells[flaky["id"]]
want(c["verdict"] == "green" and not c["regression"] and c["first_attempt"],
     f"{flaky['id']}: {c['verdict']}, regression {c['regression']}, first attempt {c['first_attempt']}")
want(os.path.isdir(os.path.join(out, "first-attempt", flaky["id"])), "the first attempt's files were not kept")
c = cells[broken["id"]]
want(c["verdict"] == "red" and c["regression"] and c["first_attempt"],
     f"{broken['id']}: {c['verdict']}, regression {c['regression']}, first attempt {c['first_attempt']}")
s = report["summary"]
want(s["regressions"] == 1 and s["flaky"] == 1 and s["green"] == 2, f"summary {s}")
if problems:
    sys.stdout.write(run.stdout + run.stderr)
    sys.exit("lab retry check: " + "; ".join(problems))
print("lab retry check: a flake was run twice and passed, a broken cell stayed a regression")

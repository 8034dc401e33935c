#!/usr/bin/env python3
"""dut_compare.py GUEST_REPORT DUT_REPORT PROFILE [DIFFERENCES]

The lab's cells run twice in CI: inside the guest (siw or rxe beside our
engine, on a veth pair) and across a real link, with the guest's siw or rxe
as a device under test reached over SSH and our engine on the host
(docs/lab.md, "A device under test over SSH"). Their verdicts must agree
cell by cell; DIFFERENCES (interop/lab/dut-differences.json) names each cell
allowed to differ, with the reason and what the device run's reason must
then contain. Exits 1 on a difference it does not
name, or when the device run does not say which device it ran against.
"""
import fnmatch
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    guest, dut, profile = load(argv[1]), load(argv[2]), argv[3]
    allowed = load(argv[4]).get("differences", []) if len(argv) == 5 else []
    problems = []

    def explanation(cell):
        """The entry that explains the cell's difference: its id matches, and its
        reason shows what the entry says or the lab judged it red as the very
        finding the entry names (a known finding, not a regression). A cell red
        on both attempts is explained as well when its first attempt's reason
        shows what the entry says: the condition the entry describes was
        there, and the second attempt ran on the device it left behind."""
        reasons = [cell.get("reason", "")] + ([cell["first_attempt"]] if cell.get("first_attempt") else [])
        for entry in allowed:
            seen = entry["seen"] if isinstance(entry["seen"], list) else [entry["seen"]]
            if not any(fnmatch.fnmatchcase(cell["id"], pattern) for pattern in entry["cells"]):
                continue
            as_finding = entry.get("finding") and cell.get("finding") == entry["finding"] and \
                cell.get("known_finding") and not cell.get("regression")
            if as_finding or any(text in reason for text in seen for reason in reasons):
                return entry
        return None

    device = dut.get("device") or {}
    if device.get("profile") != profile:
        problems.append(f"the device run names profile {device.get('profile')!r}, not {profile!r}")
    for key in ("kernel", "driver", "dut"):
        if not device.get(key):
            problems.append(f"the device run does not name the device's {key}")
    if not dut.get("cells"):
        problems.append("the device run holds no cell")

    in_guest = {c["id"]: c for c in guest.get("cells", [])}
    same = differ = 0
    for cell in dut.get("cells", []):
        if cell.get("device", {}).get("profile") != profile:
            problems.append(f"{cell['id']}: the cell does not name the device it ran against")
        g = in_guest.get(cell["id"])
        if g is None:
            problems.append(f"{cell['id']}: not in the guest's run")
            continue
        if g["verdict"] == cell["verdict"]:
            same += 1
            continue
        differ += 1
        line = f"{cell['id']}: {g['verdict']} in the guest, {cell['verdict']} on the device ({cell['reason'][:300]})"
        entry = explanation(cell)
        if entry:
            print(f"explained  {line}\n           because {entry['why']}")
        else:
            problems.append(f"unexplained difference: {line}")
    not_run = len(dut.get("not_run", []))
    print(f"{profile}: {same} cells agree with the guest's run, {differ} differ; {not_run} the profile does not run")
    rec = device.get("recoveries") or {}
    if rec.get("tried"):
        print(f"{profile}: the device stopped answering and was recovered {rec.get('recovered', 0)} of "
              f"{rec['tried']} time(s) (recover.log beside the report)")
    for p in problems:
        print(f"PROBLEM {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

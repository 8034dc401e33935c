#!/usr/bin/python3
"""Checks a JUnit report of `rdmaconf check` the way a CI server reads it.

junit_check.py JUNIT.xml JUNIT.xsd REPORT.json BASE {skipped|failure}

* The file validates against JUNIT.xsd (python3-xmlschema).
* junitparser (a reader we did not write) reads it: every (classname, name)
  pair is unique, so per-test history cannot mix two tests; the class part
  of a classname (after its last dot, where readers split package from
  class) is a scope id; suite names are relative to BASE and carry no
  absolute path.
* Its counts agree with the JSON report of the same run, read independently
  of the XML: per input, tests, failures and skipped; INCONCLUSIVE results
  are <skipped type="INCONCLUSIVE"> or, with `failure`, <failure
  type="INCONCLUSIVE">, each with a system-out line and counted in the
  suite's rdmaconf.inconclusive property.
* Times: each suite has one, the cases' times add up to it.
Prints "ok" and the figures; exits 1 with the first problem otherwise.
"""
import collections
import json
import os
import sys

import junitparser
import xmlschema


def fail(msg):
    print(f"junit_check: {msg}")
    sys.exit(1)


def main():
    xml_path, xsd_path, report_path, base, mode = sys.argv[1:6]
    schema = xmlschema.XMLSchema(xsd_path)
    errors = list(schema.iter_errors(xml_path))
    if errors:
        fail(f"{xml_path} does not validate against {xsd_path}: {errors[0]}")

    report = json.load(open(report_path))
    want = {}
    for inp in report["inputs"]:
        rel = os.path.relpath(os.path.abspath(inp["path"]), base)
        counts = collections.Counter(r["verdict"] for s in inp["scopes"] for r in s["results"])
        want[rel] = counts

    xml = junitparser.JUnitXml.fromfile(xml_path)
    seen = collections.Counter()
    suites = 0
    cases_total = 0
    for suite in xml:
        suites += 1
        name = suite.name
        if name.startswith("/") or ".." in name.split("/"):
            fail(f"suite name {name!r} is not relative to {base}")
        if name not in want:
            fail(f"suite {name!r} is not an input of {report_path}")
        if suite.time is None or suite.timestamp is None or suite.hostname is None:
            fail(f"suite {name!r} lacks time, timestamp or hostname")
        props = {p.name: p.value for p in suite.properties()}
        counts = want[name]
        n = collections.Counter()
        case_time = 0.0
        for case in suite:
            cases_total += 1
            seen[(case.classname, case.name)] += 1
            package, _, cls = case.classname.rpartition(".")
            if package != name.replace(".", "_") or "." in cls or not cls:
                fail(f"classname {case.classname!r} is not INPUT.SCOPE for {name!r}")
            case_time += case.time or 0.0
            results = case.result
            if not results:
                n["PASS"] += 1
                continue
            r = results[0]
            kind = type(r).__name__
            n[r.type] += 1
            if r.type == "FAIL" and kind != "Failure":
                fail(f"{case.classname} {case.name}: a FAIL as {kind}")
            if r.type == "NOT_APPLICABLE" and kind != "Skipped":
                fail(f"{case.classname} {case.name}: NOT_APPLICABLE as {kind}")
            if r.type == "INCONCLUSIVE":
                expected = "Failure" if mode == "failure" else "Skipped"
                if kind != expected:
                    fail(f"{case.classname} {case.name}: INCONCLUSIVE as {kind}, not {expected}")
                if not (case.system_out or "").startswith("INCONCLUSIVE: "):
                    fail(f"{case.classname} {case.name}: INCONCLUSIVE without its system-out line")
        for verdict in ("PASS", "FAIL", "INCONCLUSIVE", "NOT_APPLICABLE"):
            if n[verdict] != counts[verdict]:
                fail(f"{name}: {n[verdict]} {verdict} test cases, the JSON report has {counts[verdict]}")
        if int(props.get("rdmaconf.inconclusive", -1)) != counts["INCONCLUSIVE"]:
            fail(f"{name}: rdmaconf.inconclusive {props.get('rdmaconf.inconclusive')} != {counts['INCONCLUSIVE']}")
        failures = counts["FAIL"] + (counts["INCONCLUSIVE"] if mode == "failure" else 0)
        if suite.tests != sum(counts.values()) or suite.failures != failures:
            fail(f"{name}: tests {suite.tests} failures {suite.failures}, expected {sum(counts.values())} and {failures}")
        if suite.skipped != sum(counts.values()) - counts["PASS"] - failures:
            fail(f"{name}: skipped {suite.skipped}")
        if abs(case_time - suite.time) > 0.001 + 1e-6 * suite.tests:
            fail(f"{name}: the cases' times add up to {case_time}, the suite's is {suite.time}")
    if suites != len(want):
        fail(f"{suites} suites for {len(want)} inputs")
    dup = [k for k, c in seen.items() if c > 1]
    if dup:
        fail(f"{len(dup)} (classname, name) pairs repeat, e.g. {dup[0]} x{seen[dup[0]]}")
    print(f"ok: {suites} suites, {cases_total} test cases, all (classname, name) pairs unique")


if __name__ == "__main__":
    main()

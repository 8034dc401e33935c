#!/usr/bin/env python3
"""The dashboard against hostile inputs, in a real browser (headless Chromium
through Selenium).

A lab report and a check report are written as someone could hand them to
`rdmaconf report html`: a cell's verdict that closes its class attribute and
adds an element with an onerror handler, roles "__proto__" and
"constructor", a capture in a folder named "javascript:...", a finding and an
input named with "<!--<script>", evidence whose stream offset is markup. Each
payload, if it ran, would set window.pwned. In the page: it draws, no script
error, nothing set window.pwned, no element the payloads would add exists, and
no link has a scheme other than file or http(s). A coverage file whose
numbers are markup is refused with exit status 2, naming the file and the
field.

  hostile_test.py RDMACONF CAPTURE OUT_DIR
"""
import json
import os
import subprocess
import sys

from selenium.webdriver.common.by import By

from browser import check, chromium, failures, open_page

rdmaconf, capture, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)


def write(name, doc):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def payload(n):
    return f'<img class="pwned" src="x" onerror="window.pwned={n}">'


# A check report of a real FAILing capture, then edited: its input renamed
# with "<!--<script>" and its first evidence's stream offset made markup.
check_json = os.path.join(out, "check.json")
p = subprocess.run([rdmaconf, "check", "--quiet", "--json", check_json, capture], capture_output=True, text=True)
if p.returncode not in (0, 1):
    sys.exit(f"rdmaconf check exited {p.returncode}: {p.stderr}")
with open(check_json) as f:
    report = json.load(f)
edited = False
for inp in report["inputs"]:
    inp["path"] = "<!--<script>" + inp["path"]
    for scope in inp.get("scopes", []):
        for res in scope.get("results", []):
            for ev in res.get("evidence", []):
                ev["stream_offset"] = payload(1)
                edited = True
check(edited, "the capture's check report has evidence to edit")
check_json = write("check-edited.json", report)

jsfolder = "javascript:window.pwned=2//"
cells = []
attribute_breaker = 'red" onmouseover="window.pwned=3"><img class="pwned" src="x" onerror="window.pwned=3'
for i, (verdict, role) in enumerate([("red", "initiator"),
                                     ("red", "__proto__"), ("green", "constructor"), ("skipped", "toString"),
                                     ("green", "none")]):
    cells.append({"id": f"siw.cell{i}", "peer": "siw", "our_role": role, "peer_program": "rping -s",
                  "scenario": "<!--<script>", "configuration": {"label": "crc-off.v2"}, "verdict": verdict,
                  "reason": payload(4), "finding": "x<!--<script>" if i == 1 else None, "regression": False,
                  "capture": jsfolder + f"/cell{i}.pcap", "check_report": "",
                  "check": {"pass": 1, "fail": 0, "inconclusive": 0, "failed_cases": []}})
lab = write("lab.json", {"lab": {"kernel": "test", "manifest": "", "topology": ""}, "sweep": False, "seconds": {},
                         "summary": {"cells": len(cells), "green": 2, "red": 2, "skipped": 1, "regressions": 0},
                         "cells": cells,
                         "findings": {"x<!--<script>": {"title": "<!--<script>" + payload(5), "text": payload(6),
                                                        "cases": ["iwarp.mpa.fpdu.pad"], "source": [payload(7)]}}})

# A verdict that is none of the lab's (here one that would close its class
# attribute) is refused, naming file and field: the page never sees it.
lab_doc = json.load(open(lab))
lab_doc["cells"][0]["verdict"] = attribute_breaker
bad_lab = write("lab-bad-verdict.json", lab_doc)
p = subprocess.run([rdmaconf, "report", "html", bad_lab, "-o", os.path.join(out, "bad.html")], capture_output=True, text=True)
check(p.returncode == 2 and f"{bad_lab}: /cells/0/verdict: expected one of green, red, skipped" in p.stderr,
      f"a verdict of another kind is refused by field ({p.returncode}: {p.stderr.strip()})")
check(not os.path.exists(os.path.join(out, "bad.html")), "and no page is written")

page = os.path.join(out, "hostile.html")
p = subprocess.run([rdmaconf, "report", "html", check_json, lab, "-o", page], capture_output=True, text=True)
check(p.returncode == 0, f"report html exits 0 on the hostile reports ({p.returncode}: {p.stderr.strip()})")

# A coverage file whose numbers are markup: refused, naming file and field.
cov = write("coverage.json", {"totals": {"cases": payload(8), "captures": 1, "cells": 1}})
p = subprocess.run([rdmaconf, "report", "html", lab, "--coverage", cov, "-o", os.path.join(out, "cov.html")],
                   capture_output=True, text=True)
check(p.returncode == 2 and f"{cov}: /totals/cases: expected a number, got a string" in p.stderr,
      f"a coverage file with markup for a number is refused by file and field ({p.returncode}: {p.stderr.strip()})")

driver = chromium()
try:
    open_page(driver, os.path.abspath(page))
    check(len(driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq")) == len(cells),
          "one square per cell, the roles __proto__ and constructor among them")
    # Every cell opens (its reason, capture link and check counts drawn), and the input opens its evidence.
    for i in range(len(cells)):
        driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[data-cell="{i}"]').click()
        driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    for el in driver.find_elements(By.CSS_SELECTOR, "#input-table [data-input]")[:3]:
        el.click()
        check("stream offset ?" in driver.find_element(By.ID, "detail").text,
              "evidence whose stream offset is not a number shows '?'")
        driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
        break
    driver.execute_script("document.querySelectorAll('[onmouseover]').forEach((e) => e.dispatchEvent(new Event('mouseover')))")
    check(driver.execute_script("return window.pwned === undefined"),
          f"no payload ran (window.pwned = {driver.execute_script('return window.pwned')})")
    check(not driver.find_elements(By.CSS_SELECTOR, ".pwned, [onerror], [onmouseover]"), "no element a payload would add")
    hrefs = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a[href]")]
    driver.find_element(By.CSS_SELECTOR, '#lab-table .sq[data-cell="0"]').click()
    hrefs += [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#detail a[href]")]
    bad = [h for h in hrefs if h and not h.split(":", 1)[0].lower() in ("file", "http", "https")]
    check(not bad, f"every link is file or http(s) {bad[:2]}")
    check(any("javascript" in h for h in hrefs), "the capture in the folder named javascript:... is linked, as a file")
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script error after opening every cell {errors[:2]}")
finally:
    driver.quit()

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("the dashboard holds against the hostile reports")

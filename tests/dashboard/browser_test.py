#!/usr/bin/env python3
"""The dashboard in a real browser (headless Chromium through Selenium).

`rdmaconf report html` is run on a check report of the shipped captures and on
lab reports made here (the lab itself needs its VM): a small one whose
baseline had one cell green that is now red, and one of 10 000 cells. In the
page: the matrices' counts equal the reports' JSON, a filter shows exactly the
cells it should, the regression is at the top, and a cell opens its evidence.
Prints the render time of 10 000 cells; keeps a screenshot.

  browser_test.py RDMACONF CAPTURES_DIR OUT_DIR [SCREENSHOT]
"""
import json
import os
import random
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

rdmaconf, captures, out = sys.argv[1:4]
shot = sys.argv[4] if len(sys.argv) > 4 else os.path.join(out, "dashboard.png")
os.makedirs(out, exist_ok=True)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    p = subprocess.run([rdmaconf, *args], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"rdmaconf {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def lab_report(cells, path):
    summary = {"cells": len(cells), "regressions": 0}
    for v in ("green", "red", "skipped"):
        summary[v] = sum(c["verdict"] == v for c in cells)
    with open(path, "w") as f:
        json.dump({"lab": {"kernel": "test", "manifest": "", "topology": ""}, "sweep": False, "seconds": {},
                   "summary": summary, "cells": cells, "findings": {}}, f)


def cell(i, verdict, peer="siw"):
    return {"id": f"{peer}.cell{i:05d}", "peer": peer, "our_role": ["initiator", "responder", "none"][i % 3],
            "peer_program": ["rping -s", "rping -c", "ib_write_bw"][i % 3], "scenario": f"scenario{i % 17}",
            "configuration": {"label": f"conf{i % 12}"}, "verdict": verdict, "reason": f"why {i}",
            "finding": None, "regression": False, "capture": f"/nowhere/{i}.pcap", "check_report": "",
            "check": {"pass": 10, "fail": int(verdict == "red"), "inconclusive": 0,
                      "failed_cases": ["iwarp.mpa.fpdu.pad"] if verdict == "red" else []}}


# A check report of the shipped captures, and two small lab reports: the
# baseline and the night after it, where one cell went from green to red.
check_json = os.path.join(out, "check.json")
run("check", "--quiet", "--json", check_json, captures)
rng = random.Random(7)
small = [cell(i, rng.choice(["green", "green", "red", "skipped"]), "siw" if i % 2 else "rxe") for i in range(60)]
base = json.loads(json.dumps(small))
turned = next(c for c in small if c["verdict"] == "green")
turned["verdict"] = "red"
turned["check"]["failed_cases"] = ["iwarp.mpa.fpdu.pad"]
lab_report(base, os.path.join(out, "lab-base.json"))
lab_report(small, os.path.join(out, "lab-now.json"))
page = os.path.join(out, "dashboard.html")
run("report", "html", check_json, os.path.join(out, "lab-now.json"), "--baseline", os.path.join(out, "lab-base.json"),
    "-o", page)

opts = Options()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
    opts.add_argument(a)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    driver.get("file://" + os.path.abspath(page))
    check(driver.find_element(By.TAG_NAME, "body").get_attribute("data-rendered") == "yes", "the page rendered")
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script error in the console {errors[:2]}")

    # The lab matrix: its counts and squares equal the report.
    counts = driver.find_element(By.ID, "lab-counts")
    for v in ("green", "red", "skipped"):
        shown = int(counts.find_element(By.CSS_SELECTOR, f"[data-{v}]").get_attribute(f"data-{v}"))
        check(shown == sum(c["verdict"] == v for c in small), f"lab matrix: {shown} {v} as in the report")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq")) == len(small), "one square per cell")

    # The capture matrix: its result counts equal the check report's summary.
    with open(check_json) as f:
        summary = json.load(f)["summary"]
    inc = driver.find_element(By.ID, "input-counts")
    for k in ("pass", "fail", "inconclusive"):
        shown = int(inc.find_element(By.CSS_SELECTOR, f"[data-{k}]").get_attribute(f"data-{k}"))
        check(shown == summary[k], f"capture matrix: {shown} {k} results, the report says {summary[k]}")

    # The regression is at the top, and only it.
    rows = driver.find_elements(By.CSS_SELECTOR, "#regressions .regression-row")
    check(len(rows) == 1 and turned["id"] in rows[0].text, f"the regression {turned['id']} is shown at the top")
    top = driver.find_element(By.ID, "regressions").location["y"]
    check(top < driver.find_element(By.ID, "lab").location["y"], "the regressions come before the matrices")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq.regression")) == 1, "the regressed cell is marked")

    # Filters: red only, then one peer.
    Select(driver.find_element(By.ID, "f-verdict")).select_by_value("red")
    sq = driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq")
    check(len(sq) == sum(c["verdict"] == "red" for c in small) and all("red" in s.get_attribute("class") for s in sq),
          f"verdict filter: {len(sq)} red squares")
    Select(driver.find_element(By.ID, "f-peer")).select_by_value("rxe")
    sq = driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq")
    check(len(sq) == sum(c["verdict"] == "red" and c["peer"] == "rxe" for c in small), "peer filter on top of it")
    Select(driver.find_element(By.ID, "f-peer")).select_by_value("")
    Select(driver.find_element(By.ID, "f-verdict")).select_by_value("")

    # A cell opens its evidence with the requirement's text.
    driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[title="{turned["id"]}"]').click()
    detail = driver.find_element(By.ID, "detail")
    check(detail.is_displayed() and "iwarp.mpa.fpdu.pad" in detail.text and "RFC 5044" in detail.text,
          "a red cell opens its failed case with the requirement")
    driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    # A failing capture opens its evidence: frames and expected against actual.
    fam = driver.find_elements(By.CSS_SELECTOR, "#input-table .fam.FAIL")
    check(bool(fam), "some capture cell shows FAIL")
    if fam:
        fam[0].click()
        t = driver.find_element(By.ID, "detail").text
        check("frames" in t and "expected" in t, "a failing capture opens frames and expected against actual")
        driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(shot)
    print(f"screenshot: {shot}")

    # 10 000 cells.
    big = [cell(i, rng.choice(["green", "green", "green", "red", "skipped"]), "siw" if i % 3 else "rxe") for i in range(10000)]
    lab_report(big, os.path.join(out, "lab-big.json"))
    big_page = os.path.join(out, "dashboard-10000.html")
    t0 = time.monotonic()
    run("report", "html", os.path.join(out, "lab-big.json"), "-o", big_page)
    write_s = time.monotonic() - t0
    t0 = time.monotonic()
    driver.get("file://" + os.path.abspath(big_page))
    load_s = time.monotonic() - t0
    ms = driver.execute_script("return window.renderMs")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq")) == 10000, "10 000 squares")
    t0 = time.monotonic()
    Select(driver.find_element(By.ID, "f-verdict")).select_by_value("red")
    n_red = len(driver.find_elements(By.CSS_SELECTOR, "#lab-table .sq"))
    filter_s = time.monotonic() - t0
    check(n_red == sum(c["verdict"] == "red" for c in big), "the filter on 10 000 cells")
    print(f"10 000 cells: report html {write_s:.2f} s ({os.path.getsize(big_page) / 1e6:.1f} MB); page load "
          f"{load_s:.2f} s, of which the script's render {ms:.0f} ms; a filter {filter_s:.2f} s")
    check(ms < 5000, "10 000 cells render in under 5 s")
finally:
    driver.quit()

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all dashboard checks passed")

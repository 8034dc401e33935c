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

from selenium.webdriver.common.by import By

from browser import check, chromium, failures, open_page
from selenium.webdriver.support.ui import Select

rdmaconf, captures, out = sys.argv[1:4]
shot = sys.argv[4] if len(sys.argv) > 4 else os.path.join(out, "dashboard.png")
os.makedirs(out, exist_ok=True)


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

driver = chromium()
try:
    open_page(driver, os.path.abspath(page))

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

    # History of three runs: a trend, "failing since", "flaky", a run picker;
    # regressions of a check report grouped by input and case, the FAIL first;
    # links relative to the page's folder.
    hist = os.path.join(out, "history")
    if os.path.exists(os.path.join(hist, "history.jsonl")):
        os.remove(os.path.join(hist, "history.jsonl"))
    runs = [json.loads(json.dumps(small)) for _ in range(3)]
    since_cell = next(c for c in small if c["verdict"] == "green" and c["id"] != turned["id"])
    flaky_cell = next(c for c in small if c["verdict"] == "green" and c["id"] not in (turned["id"], since_cell["id"]))
    pattern = {since_cell["id"]: ["green", "red", "red"], flaky_cell["id"]: ["green", "red", "green"]}
    for k, cells in enumerate(runs):
        for c in cells:
            if c["id"] in pattern:
                c["verdict"] = pattern[c["id"]][k]
        lab_report(cells, os.path.join(out, f"lab-run{k}.json"))
        run("report", "history", "--dir", hist, os.path.join(out, f"lab-run{k}.json"), "--run-id", f"night{k}",
            "--commit", f"c0ffee{k}")
    # The check report made worse in one input: one result to FAIL, three to INCONCLUSIVE.
    with open(check_json) as f:
        worse = json.load(f)
    target = next(i for i in worse["inputs"] if sum(r["verdict"] == "PASS" for sc in i["scopes"] for r in sc["results"]) >= 4)
    passes = [r for sc in target["scopes"] for r in sc["results"] if r["verdict"] == "PASS"]
    passes[0]["verdict"] = "FAIL"
    for r in passes[1:4]:
        r["verdict"] = "INCONCLUSIVE"
    worse_json = os.path.join(out, "check-worse.json")
    with open(worse_json, "w") as f:
        json.dump(worse, f)
    sub = os.path.join(out, "site", "night")
    page2 = os.path.join(sub, "dashboard.html")
    run("report", "html", worse_json, os.path.join(out, "lab-run2.json"), "--baseline", check_json, "--history", hist,
        "-o", page2)
    driver.get("file://" + os.path.abspath(page2))
    check(driver.find_element(By.TAG_NAME, "body").get_attribute("data-rendered") == "yes", "the history page rendered")
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script error on the history page {errors[:2]}")
    bars = driver.find_elements(By.CSS_SELECTOR, "#trend-chart rect[data-run]")
    check(len(bars) == 3, f"the trend has a bar per run ({len(bars)})")
    last = bars[-1].find_element(By.TAG_NAME, "title").get_attribute("textContent") if bars else ""
    red3 = sum(c["verdict"] == "red" for c in runs[2])
    green3 = sum(c["verdict"] == "green" for c in runs[2])
    check(f"night2" in last and "c0ffee2" in last and f"{red3} FAIL or red" in last and f"{green3} PASS or green" in last,
          f"the last bar names its run, commit and totals: {last}")
    driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[title="{since_cell["id"]}"]').click()
    detail = driver.find_element(By.ID, "detail").text
    check("failing since night1" in detail, f"a cell red in the last two runs is failing since night1: {detail[:200]}")
    driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[title="{flaky_cell["id"]}"]').click()
    detail = driver.find_element(By.ID, "detail").text
    check("flaky" in detail and "failing since" not in detail, "a cell green, red, green is flaky and not failing")
    driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    check("flaky" in driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[title="{flaky_cell["id"]}"]').get_attribute("class"),
          "the flaky cell's square is marked")
    # The run picker: as of night0, the cells show that night's verdicts.
    Select(driver.find_element(By.ID, "f-run")).select_by_value("0")
    sq = driver.find_element(By.CSS_SELECTOR, f'#lab-table .sq[title="{since_cell["id"]}"]')
    check("green" in sq.get_attribute("class"), "as of night0 the cell failing since night1 is green")
    red0 = int(driver.find_element(By.CSS_SELECTOR, "#lab-counts [data-red]").get_attribute("data-red"))
    check(red0 == sum(c["verdict"] == "red" for c in runs[0]), f"as of night0: {red0} red, as night0 had")
    Select(driver.find_element(By.ID, "f-run")).select_by_value("")
    # Grouped regressions: the input once, its FAIL first, then the INCONCLUSIVE ones; a row opens the input.
    groups = driver.find_elements(By.CSS_SELECTOR, "#regressions .regression-group")
    rows = driver.find_elements(By.CSS_SELECTOR, "#regressions .regression-row")
    check(len(groups) == 1, f"one group for the one input that got worse ({len(groups)})")
    check(len(rows) >= 2 and "FAIL" in rows[0].text and "root" in rows[0].get_attribute("class")
          and all("INCONCLUSIVE" in r.text for r in rows[1:]), "the FAIL comes first, then the INCONCLUSIVE rows")
    rows[-1].click()
    detail = driver.find_element(By.ID, "detail")
    check(detail.is_displayed() and "capture" in detail.text, "a regression row opens its input's evidence")
    # Links relative to the page: they resolve from the page's folder.
    href = detail.find_element(By.CSS_SELECTOR, "a").get_attribute("href")
    check(href.startswith("file://") and os.path.exists(href[len("file://"):]), f"the capture link resolves: {href}")
    raw = json.loads(driver.execute_script("return document.getElementById('data').textContent"))
    check(all(not x["href"].startswith("/") and os.path.exists(os.path.join(sub, x["href"])) for x in raw["inputs"]),
          "every capture link is relative to the page's folder and resolves")
    driver.find_element(By.CSS_SELECTOR, "#detail .close").click()
    page3 = os.path.join(sub, "linked.html")
    run("report", "html", worse_json, "--link-base", "https://ci.example/artifacts/", "-o", page3)
    with open(page3) as f:
        text = f.read()
    check('"href":"https://ci.example/artifacts/' in text, "--link-base prefixes the relative links")

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

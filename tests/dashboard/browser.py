"""What the dashboard's browser tests share: their checks, and headless
Chromium (Debian's chromium and chromium-driver, through Selenium) opening a
page and holding that it drew without a script error."""
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def chromium():
    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def open_page(driver, path):
    """Loads the page; checks that its script drew it and logged no error."""
    driver.get("file://" + path)
    check(driver.find_element(By.TAG_NAME, "body").get_attribute("data-rendered") == "yes", "the page rendered")
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, f"no script error in the console {errors[:2]}")

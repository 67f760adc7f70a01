"""Drives Debian's Chromium through chromedriver (python3-selenium) to register and sign in
on webauthn.html with the real USB security key Touchgate makes on /dev/uhid: no DevTools
virtual authenticator. Prints one JSON line per ceremony (or its error) and exits 1 on any
failure.

    python3 chromium_webauthn.py URL
"""
import json
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CALL = """
const done = arguments[arguments.length - 1];
%s.then((result) => done({ ok: result }), (error) => done({ error: String(error) }));
"""


def ceremony(driver, name, expression):
    outcome = driver.execute_async_script(CALL % expression)
    print(json.dumps({"ceremony": name, **outcome}), flush=True)
    if "error" in outcome:
        raise SystemExit(1)
    return outcome["ok"]


def main():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--enable-logging=stderr", "--v=0", "--vmodule=*/device/fido/*=1"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        # The emulated guest is slow, and the finger is played while the page waits.
        driver.set_script_timeout(400)
        driver.set_page_load_timeout(300)
        driver.get(sys.argv[1])
        made = ceremony(driver, "register", 'register("alice")')
        ceremony(driver, "sign-in", "signIn(%s, %s)" % (json.dumps(made["raw"]), json.dumps(made["publicKey"])))
    finally:
        driver.quit()


if __name__ == "__main__":
    main()

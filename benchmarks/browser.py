"""A headless Chromium driven by Selenium, for what is probed through the web page."""

from __future__ import annotations

import os
import shutil


class NoBrowser(RuntimeError):
    pass


def chrome():
    """Debian's chromium with its chromium-driver (`make test` installs them); never a driver
    looked up online. Raises ``NoBrowser`` when either, or Selenium, is missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        raise NoBrowser("the browser needs Debian's chromium and chromium-driver "
                        "(`make test` installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise NoBrowser(f"the browser needs selenium (the test extra): {exc}") from None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1500,1100"):
        options.add_argument(arg)
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium look for drivers online
    return webdriver.Chrome(service=Service(driver), options=options)

"""One headless Chromium per test module (Debian's ``chromium`` + ``chromium-driver``, driven
by Selenium with that chromedriver; nothing downloads a browser). Skips, saying what to install,
when either is missing; CI installs both (``.ci/run``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,1000",
)  # fmt: skip


def _missing(reason: str):
    """Skip, saying what to install; under ``CI=true`` fail instead: CI installs the browser and
    Selenium (the README's test command), so there a missing part must not pass as a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if importlib.util.find_spec("selenium") is None:
        _missing("needs selenium: pip install -e '.[browser]'")
    from selenium import webdriver

    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        _missing("needs Debian's chromium and chromium-driver: apt-get install chromium "
                 "chromium-driver")  # fmt: skip
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="paravt-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)

"""Headless chromium for the review report's tests: the browser fixture and the page helpers they share."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 60  # seconds: generous, the machine is shared; never a timing assertion


def _open(driver: webdriver.Chrome, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && document.getElementById('shown').textContent !== ''"
        " || document.querySelector('#clusters .empty') !== null"))


def _embedded(page: Path) -> dict[str, Any]:
    """The JSON data a page carries."""
    found = re.search(r'<script type="application/json" id="simpg-data">(.*?)</script>',
                      page.read_text(encoding="utf-8"), re.DOTALL)
    assert found
    out: dict[str, Any] = json.loads(found.group(1))
    return out


def _click(driver: webdriver.Chrome, element: Any) -> None:
    """Click ``element`` scrolled to the middle of the window, clear of the sticky toolbar."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()

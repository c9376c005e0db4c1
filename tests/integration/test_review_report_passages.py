"""The review report's "Copied passages" section in a real browser (headless chromium, Selenium).

A ``simpg dedup --passages --html`` run on files with planted passages (Latin, Han with
characters outside the BMP, a passage whose spelling NFKC changes, markup in a text): every
shared passage is highlighted with ``<mark>`` in both texts, and the highlighted text in the
DOM is the passage's text cut from the stored text at its character offsets. ``simpg report
--passages --html`` carries the same section.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.integration.cli import run
from tests.integration.report_browser import WAIT, _click, _embedded, _open

RNG = random.Random(3030)
WORDS = sorted({"".join(RNG.choice("bdfgklmnprstvz") + RNG.choice("aeiou") for _ in range(3)) for _ in range(2000)})


def _words(n: int) -> str:
    return " ".join(RNG.choice(WORDS) for _ in range(n))


LATIN = _words(200)
LATIN_PASSAGE = " ".join(LATIN.split()[60:140])
# Han with characters outside the BMP (two UTF-16 units each in the page)
HAN = "".join(chr(0x4E00 + RNG.randrange(3000)) if n % 9 else chr(0x20000 + n) for n in range(220))
# full-width letters and a ligature, which NFKC makes plain: the copy spells them plainly
FANCY = "Ｏｆｆｉｃｅ ﬁles " + _words(70) + " ＡＢＣ"
PLAIN = "office files " + FANCY.split(" ", 2)[2].replace("ＡＢＣ", "abc")
FILES = {
    "a-latin.txt": LATIN,
    "b-latin-copy.txt": "😀 Quoted <mark>not a highlight</mark> & more: " + LATIN_PASSAGE + " " + _words(40),
    "c-han.txt": HAN,
    "d-han-copy.txt": "引用：" + HAN[50:170] + "。" + "".join(chr(0x6000 + RNG.randrange(500)) for _ in range(40)),
    "e-fancy.txt": _words(30) + " " + FANCY + " " + _words(30),
    "f-plain.txt": "</script><script>window.pwned=1</script> " + PLAIN + " " + _words(20),
}


def _check_page(driver: webdriver.Chrome, page: Path) -> dict[str, Any]:
    """Open every copied-from cluster; each passage's <mark> in both panes holds the passage's text."""
    _open(driver, page)
    data = _embedded(page)
    report, docs = data["passages"], data["documents"]
    heads = driver.find_elements(By.CSS_SELECTOR, "#passages .copy-cluster > h3")
    assert len(heads) == len(report["clusters"]) > 0
    for head in heads:
        _click(driver, head)
    WebDriverWait(driver, WAIT).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".copy-pair")) ==
                                      sum(len(c["pairs"]) for c in report["clusters"]))
    checked = 0
    for cluster in report["clusters"]:
        for n in cluster["pairs"]:
            p = report["pairs"][n]
            box = driver.find_element(By.CSS_SELECTOR, f'.copy-pair[data-a="{p["a"]}"][data-b="{p["b"]}"]')
            for side in "ab":
                pane = box.find_element(By.CSS_SELECTOR, f'.text[data-side="{side}"]')
                text = docs[str(p[side])]["text"]
                marks = {int(m.get_attribute("data-start")): m for m in pane.find_elements(By.TAG_NAME, "mark")}
                assert len(marks) == len(p["passages"])  # no passage overlaps another here: one mark each
                for q in p["passages"]:
                    mark = marks[q[f"{side}_start"]]
                    assert int(mark.get_attribute("data-end")) == q[f"{side}_end"]
                    assert mark.get_attribute("textContent") == text[q[f"{side}_start"]:q[f"{side}_end"]]
                    checked += 1
                # the whole pane is the text, unchanged: markup in it is text
                assert pane.get_attribute("textContent") == text
    assert checked == 2 * sum(len(report["pairs"][n]["passages"]) for c in report["clusters"] for n in c["pairs"])
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    return report


def test_copied_passages_highlighted(db: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     browser: tuple[webdriver.Chrome, Path]) -> None:  # noqa: F811
    driver, _ = browser
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    page = tmp_path / "dedup.html"
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn, "--json", "--passages",
                         "--collection", "copied", "--html", str(page))
    assert code == 0, err
    made = json.loads(out)["passages"]
    named = {(Path(p["a_source"]).name, Path(p["b_source"]).name): p for p in made["pairs"]}
    assert set(named) == {("a-latin.txt", "b-latin-copy.txt"), ("c-han.txt", "d-han-copy.txt"),
                          ("e-fancy.txt", "f-plain.txt")}
    assert named[("a-latin.txt", "b-latin-copy.txt")]["longest"] == 80
    assert named[("c-han.txt", "d-han-copy.txt")]["longest"] == 120
    fancy = named[("e-fancy.txt", "f-plain.txt")]
    a_text, b_text = FILES["e-fancy.txt"], FILES["f-plain.txt"]
    (q,) = fancy["passages"]
    assert a_text[q["a_start"]:q["a_end"]].startswith("Ｏｆｆｉｃｅ ﬁles")  # offsets into the text as written
    assert b_text[q["b_start"]:q["b_end"]].startswith("office files")
    assert a_text[q["a_start"]:q["a_end"]].endswith("ＡＢＣ") and b_text[q["b_start"]:q["b_end"]].endswith("abc")
    shown = _check_page(driver, page)
    assert shown == made

    # the same section from the stored collection
    page_db = tmp_path / "report.html"
    code, out, err = run(capsys, "report", "--collection", "copied", "--dsn", db.dsn, "--passages",
                         "--html", str(page_db))
    assert code == 0, err
    assert _check_page(driver, page_db) == made

"""The review report (issue 32) in a real browser: Debian's chromium, headless, driven by Selenium.

The report of a real ``simpg dedup`` run on a corpus with planted near-duplicates is
opened from file:// with the network off, then searched, expanded, navigated by keys,
decided and exported, and checked against the JSON report of the same run. A document
holding ``</script>`` and markup shows as text. A report of 10,000 clusters opens with
only a page of them in the DOM.

Screenshots for docs/review.md: ``SIMPG_DOC_IMAGES=1`` writes them to docs/images
(otherwise to the test's temporary folder).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from simpg.exc import SimpgError
from simpg.review import data, html
from tests.integration.cli import run
from tests.integration.report_browser import WAIT, _click, _embedded, _open

DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

HARBOUR = ("the ferry left the harbour at dawn while the fishermen mended their nets on the quay and "
           "the gulls circled above the market stalls where bakers sold warm bread to early travellers "
           "who waited for the morning train to the capital and talked about the storm that had closed "
           "the coastal road for three days last winter and flooded the old warehouse by the river")
HARBOUR_EDITED = HARBOUR.replace("at dawn", "at noon").replace("talked about", "talked quietly about")
LEDGER = ("the ledger records every payment received by the cooperative during the season including "
          "deposits from members invoices from suppliers and the quarterly grants paid by the regional "
          "council which are audited each spring by an independent accountant chosen at the general meeting")
CHINESE = ("今天早上我们在公园里散步，看到很多老人在打太极拳，孩子们在草地上放风筝，湖边的柳树已经发芽了，"
           "空气里有花的香味。中午我们去了附近的一家小饭馆，点了饺子和面条，老板很热情地给我们介绍本地的特色菜。"
           "下午天气变得有点冷，我们就回家喝茶看书，晚上一起做饭聊天，觉得这样的周末非常轻松愉快。")
CHINESE_EDITED = CHINESE.replace("今天早上", "明天早上")
HOSTILE = ("</script><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\"> the template of "
           "this page must show as text and never run, whatever the document holds: markup, scripts and "
           "entities like &amp; and &lt;b&gt; stay the characters they are in the stored document body")
UNRELATED = [
    "volcanic soils hold water well and the vineyards on the southern slopes ripen early in warm years",
    "the committee postponed the vote on the new library building until the architects revise the budget",
    "migrating cranes stop at the marsh each october and birdwatchers count them from the wooden tower",
]


def _chain() -> list[str]:
    """Four texts: 0~1 and 1~2 near-duplicates, 0 and 2 not, 3 a copy of 2 with one word changed.

    Loaded in order, 0 and 1 make a cluster, 2 and 3 another, and 1~2 and 1~3 are
    near-duplicate pairs across the two clusters: the links the report must show.
    """
    rng = random.Random(32)
    vocab = [a + b for a in ("lor", "mak", "tus", "ven", "qir", "dob", "sel", "fra", "gun", "pim")
             for b in ("ax", "ed", "ion", "ur", "el", "ost", "ine", "ay")]
    words = [rng.choice(vocab) for _ in range(120)]

    def edit(ws: list[str], start: int, n: int) -> list[str]:
        out = list(ws)
        for i in range(start, start + n):
            out[i] = rng.choice(vocab) + "q"
        return out

    w1 = edit(words, 10, 10)
    w2 = edit(w1, 70, 10)
    w3 = edit(w2, 100, 1)
    return [" ".join(w) for w in (words, w1, w2, w3)]


CHAIN = _chain()
FILES = {  # loaded in name order: the first of each cluster is its representative
    "a1-harbour.txt": HARBOUR, "a2-harbour.txt": HARBOUR_EDITED,
    "b1-ledger.txt": LEDGER, "b2-ledger.txt": LEDGER + " and filed", "b3-ledger.txt": "minutes: " + LEDGER,
    "c1-zh.txt": CHINESE, "c2-zh.txt": CHINESE_EDITED,
    "d1-chain.txt": CHAIN[0], "d2-chain.txt": CHAIN[1], "d3-chain.txt": CHAIN[2], "d4-chain.txt": CHAIN[3],
    "e1-hostile.txt": HOSTILE, "e2-hostile.txt": HOSTILE + " today",
    **{f"u{n}.txt": text for n, text in enumerate(UNRELATED)},
}


def _clusters_shown(driver: webdriver.Chrome) -> list[int]:
    """The clusters in the DOM, read in one script (a render between two reads cannot go stale)."""
    return [int(i) for i in driver.execute_script(
        "return [...document.querySelectorAll('#clusters .cluster')].map(e => e.dataset.index)")]


def _cluster(driver: webdriver.Chrome, index: int) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'.cluster[data-index="{index}"]')


def _expand(driver: webdriver.Chrome, index: int) -> Any:
    node = _cluster(driver, index)
    if not node.find_elements(By.CSS_SELECTOR, ".body"):
        _click(driver, node.find_element(By.CSS_SELECTOR, "h2"))
    return _cluster(driver, index)


def _diff(driver: webdriver.Chrome, index: int, member: int) -> Any:
    """Show a member's differences against its representative; the diff box."""
    row = _expand(driver, index).find_element(By.CSS_SELECTOR, f'tr.member[data-id="{member}"]')
    _click(driver, row.find_element(By.CSS_SELECTOR, "button.show-diff"))
    return _cluster(driver, index).find_element(By.CSS_SELECTOR, f'.diff[data-b="{member}"]')


def _marks(box: Any, tag: str) -> list[str]:
    return [e.get_attribute("textContent").strip() for e in box.find_elements(By.TAG_NAME, tag)]


def _screenshot(driver: webdriver.Chrome, name: str, tmp_path: Path) -> None:
    folder = DOC_IMAGES if os.environ.get("SIMPG_DOC_IMAGES") == "1" else tmp_path
    path = folder / f"review-{name}.png"
    assert driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_of_a_dedup_run(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch, browser: tuple[webdriver.Chrome, Path]) -> None:
    driver, downloads = browser
    monkeypatch.chdir(tmp_path)  # sources are then corpus/NAME, as a user in their folder sees them
    folder = Path("corpus")
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    page = tmp_path / "report.html"
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn, "--json",  # type: ignore[attr-defined]
                         "--collection", "planted", "--html", str(page))
    assert code == 0, err
    assert f"review report written to {page}" in err
    report = json.loads(out)
    by_source = {Path(d["source"]).name: d["id"] for c in report["clusters"] for d in c["documents"]}
    by_source |= {Path(p[f"source_{s}"]).name: p[s] for p in report["pairs"] for s in "ab"}
    # the planted clusters, as dedup made them (the representative first)
    assert [sorted(Path(d["source"]).name for d in c["documents"]) for c in report["clusters"]] == [
        ["b1-ledger.txt", "b2-ledger.txt", "b3-ledger.txt"], ["a1-harbour.txt", "a2-harbour.txt"],
        ["c1-zh.txt", "c2-zh.txt"], ["d1-chain.txt", "d2-chain.txt"], ["d3-chain.txt", "d4-chain.txt"],
        ["e1-hostile.txt", "e2-hostile.txt"]]
    label = {d["id"]: n for n, c in enumerate(report["clusters"]) for d in c["documents"]}
    crossing = [(p["a"], p["b"]) for p in report["pairs"] if label.get(p["a"]) != label.get(p["b"])]
    assert crossing == [(by_source["d2-chain.txt"], by_source["d3-chain.txt"]),
                        (by_source["d2-chain.txt"], by_source["d4-chain.txt"])]

    carried = _embedded(page)
    assert carried["collection"] == "planted"
    assert [[c["representative"]] + [m["id"] for m in c["members"]] for c in carried["clusters"]] == \
        [[d["id"] for d in c["documents"]] for c in report["clusters"]]
    assert [(link["a"], link["b"]) for link in carried["links"]] == crossing
    assert carried["documents"][str(by_source["e1-hostile.txt"])]["text"] == HOSTILE

    _open(driver, page)
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
    # the summary says what the JSON report says
    summary = {key: int(driver.find_element(By.ID, f"summary-{key}").text.replace(",", ""))
               for key in ("documents", "clusters", "clustered", "duplicates", "after", "links")}
    clustered = sum(c["size"] for c in report["clusters"])
    assert summary == {"documents": report["documents"], "clusters": len(report["clusters"]),
                       "clustered": report["clustered_documents"], "duplicates": clustered - len(report["clusters"]),
                       "after": report["documents"] - (clustered - len(report["clusters"])), "links": 2}
    assert report["documents"] == len(FILES)
    bars = driver.find_elements(By.CSS_SELECTOR, "#histogram rect")
    assert [b.find_element(By.TAG_NAME, "title").get_attribute("textContent") for b in bars] == [
        "5 clusters of 2 documents", "1 clusters of 3 documents"]
    assert _clusters_shown(driver) == list(range(6))
    _screenshot(driver, "summary", tmp_path)

    # search by source narrows the list; by text too; cleared, all come back
    search = driver.find_element(By.ID, "search")
    search.send_keys("c2-zh")
    WebDriverWait(driver, WAIT).until(lambda d: _clusters_shown(d) == [label[by_source["c2-zh.txt"]]])
    assert driver.find_element(By.ID, "shown").text == "clusters 1–1 of 1 (of 6)"
    search.clear()
    search.send_keys("cooperative")
    WebDriverWait(driver, WAIT).until(lambda d: _clusters_shown(d) == [label[by_source["b1-ledger.txt"]]])
    search.clear()
    search.send_keys(Keys.ESCAPE)
    driver.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    WebDriverWait(driver, WAIT).until(lambda d: _clusters_shown(d) == list(range(6)))

    # keyboard: j / k move the selection, Enter expands, / goes to the search box
    body = driver.find_element(By.TAG_NAME, "body")

    def selected() -> list[int]:
        return [int(e.get_attribute("data-index")) for e in driver.find_elements(By.CSS_SELECTOR, ".cluster.selected")]

    assert selected() == [0]
    body.send_keys("j")
    body.send_keys("j")
    assert selected() == [2]
    body.send_keys("k")
    assert selected() == [1]
    body.send_keys(Keys.ARROW_DOWN)
    assert selected() == [2]
    body.send_keys(Keys.ENTER)
    assert _cluster(driver, 2).find_elements(By.CSS_SELECTOR, ".body")
    body.send_keys(Keys.ENTER)
    assert not _cluster(driver, 2).find_elements(By.CSS_SELECTOR, ".body")
    body.send_keys("/")
    assert driver.switch_to.active_element == search
    search.send_keys(Keys.ESCAPE)

    # the differences of a member against its representative: word level for English
    harbour = label[by_source["a1-harbour.txt"]]
    box = _diff(driver, harbour, by_source["a2-harbour.txt"])
    assert box.get_attribute("data-mode") == "words"
    assert _marks(box, "del") == ["dawn"]
    assert _marks(box, "ins") == ["noon", "quietly"]
    without = "const c = arguments[0].cloneNode(true); c.querySelectorAll(arguments[1]).forEach(e => e.remove()); " \
              "return c.textContent"
    assert (driver.execute_script(without, box, "ins"), driver.execute_script(without, box, "del")) == \
        (HARBOUR, HARBOUR_EDITED)  # the whole of both texts, nothing lost
    # the figures shown are the member's against the representative
    row = _cluster(driver, harbour).find_element(By.CSS_SELECTOR, f'tr.member[data-id="{by_source["a2-harbour.txt"]}"]')
    member = carried["clusters"][harbour]["members"][0]
    cells = [c.text for c in row.find_elements(By.CSS_SELECTOR, "td.num")][1:]
    assert cells == [str(member["distance"]), str(member["sketch_distance"]), f"{member['sketch_similarity']:.3f}",
                     f"{member['estimated_jaccard']:.3f}"]
    driver.execute_script("arguments[0].scrollIntoView()", _cluster(driver, harbour))
    _screenshot(driver, "diff", tmp_path)
    # character level for Chinese
    chinese = label[by_source["c1-zh.txt"]]
    box = _diff(driver, chinese, by_source["c2-zh.txt"])
    assert box.get_attribute("data-mode") == "chars"
    assert (_marks(box, "del"), _marks(box, "ins")) == (["今"], ["明"])

    # the cross-cluster link is shown in both clusters
    for name in ("d1-chain.txt", "d3-chain.txt"):
        links = _expand(driver, label[by_source[name]]).find_elements(By.CSS_SELECTOR, "tr.link")
        assert [(int(r.get_attribute("data-a")), int(r.get_attribute("data-b"))) for r in links] == crossing

    # a hostile document renders as text and runs nothing
    hostile = label[by_source["e1-hostile.txt"]]
    rep_row = _expand(driver, hostile).find_element(By.CSS_SELECTOR, "tr.representative")
    _click(driver, rep_row.find_element(By.CSS_SELECTOR, "button.show-text"))
    shown = _cluster(driver, hostile).find_element(By.CSS_SELECTOR, ".text").get_attribute("textContent")
    assert shown == HOSTILE
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    assert driver.find_elements(By.CSS_SELECTOR, "#clusters img, #clusters script") == []

    # decisions: a member "not a duplicate", the link "duplicate", one pressed twice (undone); exported
    ledger = label[by_source["b1-ledger.txt"]]
    ledger_row = _expand(driver, ledger).find_element(By.CSS_SELECTOR,
                                                       f'tr.member[data-id="{by_source["b3-ledger.txt"]}"]')
    not_dup = ledger_row.find_element(By.CSS_SELECTOR, "button.not_duplicate")
    _click(driver, not_dup)
    assert not_dup.get_attribute("aria-pressed") == "true"
    other = _cluster(driver, ledger).find_element(By.CSS_SELECTOR, f'tr.member[data-id="{by_source["b2-ledger.txt"]}"]')
    _click(driver, other.find_element(By.CSS_SELECTOR, "button.duplicate"))
    assert driver.find_element(By.ID, "decision-count").text == "2 decisions"
    _click(driver, other.find_element(By.CSS_SELECTOR, "button.duplicate"))  # pressed again: undone
    link_row = _expand(driver, label[by_source["d1-chain.txt"]]).find_element(By.CSS_SELECTOR, "tr.link")
    _click(driver, link_row.find_element(By.CSS_SELECTOR, "button.duplicate"))
    assert driver.find_element(By.ID, "decision-count").text == "2 decisions"
    # kept in the page: a reload shows them
    _open(driver, page)
    kept = driver.execute_script("return localStorage.getItem('simpg-decisions:planted')")
    assert driver.find_element(By.ID, "decision-count").text == "2 decisions", kept
    _click(driver, driver.find_element(By.ID, "export"))
    exported = downloads / "simpg-decisions.json"
    WebDriverWait(driver, WAIT).until(lambda d: exported.exists() and exported.stat().st_size > 0)
    a, b = by_source["d2-chain.txt"], by_source["d3-chain.txt"]
    source = {v: os.fspath(folder / k) for k, v in by_source.items()}
    expected = [{"a": by_source["b1-ledger.txt"], "b": by_source["b3-ledger.txt"], "verdict": "not_duplicate",
                 "source_a": source[by_source["b1-ledger.txt"]], "source_b": source[by_source["b3-ledger.txt"]]},
                {"a": a, "b": b, "verdict": "duplicate", "source_a": source[a], "source_b": source[b]}]
    assert json.loads(exported.read_text(encoding="utf-8")) == {
        "format": "simpg-decisions", "version": 1, "collection": "planted",
        "decisions": sorted(expected, key=lambda d: (d["a"], d["b"]))}

    # simpg report --collection: the same decision from the stored rows, the same data
    again = tmp_path / "again.html"
    code, out, err = run(capsys, "report", "--collection", "planted", "--html", str(again),
                         "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, out, err) == (0, f"{again}\n", "")
    assert _embedded(again) == carried

    # a new run replaces the rows (new ids): the page's decisions of the old ids are kept aside, not exported
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn,  # type: ignore[attr-defined]
                         "--collection", "planted", "--html", str(page))
    assert code == 0 and out.endswith(f"simpg: review report written to {page}\n"), err
    _open(driver, page)
    assert driver.find_element(By.ID, "decision-count").text == \
        "0 decisions (2 of an earlier report, for other documents, not exported)"


def test_report_errors(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "report", "--collection", "nowhere", "--html", str(tmp_path / "r.html"),
                         "--dsn", db.dsn)  # type: ignore[attr-defined]
    assert (code, out, err) == (1, "", "simpg: collection 'nowhere' has no documents in simpg_documents\n")
    target = tmp_path / "missing" / "r.html"
    code, out, err = run(capsys, "dedup", str(tmp_path), "--dsn", db.dsn, "--html", str(target))  # type: ignore[attr-defined]
    assert (code, out, err) == (1, "", f"simpg: cannot write '{target}': no such folder\n")
    with pytest.raises(SimpgError, match="verdict must be not_duplicate or duplicate, got 'maybe'"):
        data.build("c", 2, [[1, 2]], [(1, 2, 0, 0)], _synthetic_docs(1),
                   decisions=[{"a": 1, "b": 2, "verdict": "maybe"}])


def _synthetic_docs(clusters: int) -> dict[int, data.StoredDocument]:
    rng = random.Random(7)
    docs = {}
    for n in range(clusters):
        text = f"synthetic cluster {n} " + " ".join(rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(12))
        sketch = rng.randbytes(32)
        for i, body in ((2 * n + 1, text), (2 * n + 2, text + " more")):
            docs[i] = data.StoredDocument(i, f"docs/{i}.txt", None, body, rng.getrandbits(64), sketch)
    return docs


def test_ten_thousand_clusters_open_lazily(tmp_path: Path, browser: tuple[webdriver.Chrome, Path]) -> None:
    driver, _ = browser
    docs = _synthetic_docs(10_000)
    clusters = [[2 * n + 1, 2 * n + 2] for n in range(10_000)]
    recorded = [{"a": 1, "b": 2, "verdict": "not_duplicate", "who": "alice", "at": "2026-11-29 10:00"}]
    report = data.build("synthetic", 20_000, clusters, [(a, b, 3, 10) for a, b in clusters], docs,
                        decisions=recorded)
    page = tmp_path / "big.html"
    html.write(report, page)
    _open(driver, page)
    first = WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.CSS_SELECTOR, '.cluster[data-index="0"]'))
    assert first.is_displayed()
    assert driver.find_element(By.ID, "summary-clusters").text == "10,000"
    shown = len(driver.find_elements(By.CSS_SELECTOR, ".cluster"))
    assert 0 < shown <= 50  # one page in the DOM, not 10,000 sections
    assert driver.find_element(By.ID, "shown").text == "clusters 1–50 of 10000"
    # the next page, and a search over all 10,000
    driver.find_element(By.ID, "next").click()
    assert _clusters_shown(driver)[0] == 50
    driver.find_element(By.ID, "search").send_keys("cluster 9999 ")
    WebDriverWait(driver, WAIT).until(lambda d: _clusters_shown(d) == [9999])
    # a decision stored before the report is shown as recorded
    driver.find_element(By.ID, "search").clear()
    driver.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    WebDriverWait(driver, WAIT).until(lambda d: _clusters_shown(d)[:1] == [0])
    note = _expand(driver, 0).find_element(By.CSS_SELECTOR, "tr.member .recorded").text
    assert note == "recorded: not duplicate by alice, 2026-11-29 10:00"

"""No collapse (issue 14 item 4): separators, runs and shared templates do not decide a fingerprint.

The pages here are built like the evaluation's failures: Tcl/Tk manual pages with a line of
underscores under the title, help pages of one HTML template, Chinese pages of one template.
Their bodies are unrelated, so no two of them may match, neither by fingerprints alone at
DEFAULT_K nor by ``simpg dedup``'s decision (within DEDUP_K, confirmed by sketches).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simpg import allpairs
from simpg.bits import hamming
from simpg.fingerprint import (
    DEDUP_K,
    DEFAULT_K,
    MAX_SKETCH_DISTANCE,
    FingerprintConfig,
    NoFeatures,
    features,
    fingerprint,
    sketch,
)
from tests.template_pages import BODIES, TEMPLATES, ZH_BODIES, tcl_page

CONFIGS = [FingerprintConfig(), FingerprintConfig(lang="zh"), FingerprintConfig(unit="word")]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["default", "zh", "word"])
@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_unrelated_pages_of_one_template_do_not_match_by_fingerprint(template: str, cfg: FingerprintConfig) -> None:
    fps = [fingerprint(page, cfg) for page in TEMPLATES[template]]
    distances = [hamming(a, b) for a, b in itertools.combinations(fps, 2)]
    assert min(distances) > DEFAULT_K, distances


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_unrelated_pages_of_one_template_are_not_duplicates_for_dedup(template: str) -> None:
    pages = TEMPLATES[template]
    fps = np.array([fingerprint(page) for page in pages], dtype=np.uint64)
    sketches = allpairs.as_sketches([sketch(page) for page in pages])
    decided = [len(i) for i, _, _, _ in allpairs.confirmed_pair_chunks(fps, sketches, DEDUP_K, MAX_SKETCH_DISTANCE)]
    assert sum(decided) == 0
    # and a real near-duplicate of one page (a word changed) is still found
    edited = pages[0].replace("Additional", "More").replace("可以指定", "能指定")
    assert hamming(fingerprint(pages[0]), fingerprint(edited)) <= DEFAULT_K


SEPARATORS = ["_" * 79, "-" * 79, "=" * 79, "─" * 79, "." * 79, "*" * 40, "＿" * 40, "~" * 30 + "=" * 30,
              "x" * 79, "0" * 79, "ー" * 40]


@pytest.mark.parametrize("sep", SEPARATORS, ids=range(len(SEPARATORS)))
@pytest.mark.parametrize("cfg", CONFIGS, ids=["default", "zh", "word"])
def test_separator_lines_do_not_decide_a_fingerprint(sep: str, cfg: FingerprintConfig) -> None:
    for body in (BODIES[0], ZH_BODIES[0], tcl_page("glob", BODIES[3])):
        framed = f"{sep}\n{body}\n{sep}\n{sep}"
        # the lines add no feature at all, however long they are
        assert features(framed, cfg) == features(body, cfg)
        assert fingerprint(framed, cfg) == fingerprint(body, cfg)


@pytest.mark.parametrize("cfg", CONFIGS, ids=["default", "zh", "word"])
def test_runs_inside_words_are_cut(cfg: FingerprintConfig) -> None:
    short = "the wait was loooong, about 10000 s"
    assert fingerprint(short, cfg) == fingerprint(short.replace("loooong", "looooooooooooong").replace(
        "10000", "10000000000"), cfg)
    assert not any("ooooo" in f or "00000" in f for f, _ in features(short.replace("o", "o" * 30), cfg))


@pytest.mark.parametrize("cfg", CONFIGS, ids=["default", "zh", "word"])
def test_a_document_of_separators_only_has_no_features(cfg: FingerprintConfig) -> None:
    with pytest.raises(NoFeatures, match="document has no usable features"):
        fingerprint("\n".join(SEPARATORS[:6]), cfg)

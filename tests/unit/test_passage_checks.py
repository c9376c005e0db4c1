"""simpg.passages.checks: one rule and one message per argument, whichever surface is called."""

from __future__ import annotations

from typing import Any

import pytest

from simpg.fingerprint.errors import InvalidConfig
from simpg.passage_report import check_options
from simpg.passages import PassageConfig, candidate_pairs, passage_pairs
from simpg.passages.lookup import checked_thresholds, verify
from simpg.reference import PASSAGE_CONFIG


def _message(call: Any) -> str:
    with pytest.raises(InvalidConfig) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_max_common_has_one_message_everywhere(bad: Any) -> None:
    want = f"max_common must be an integer of at least 0, a fraction between 0 and 1, or None, got {bad!r}"
    assert _message(lambda: candidate_pairs([[1], [1]], max_common=bad)) == want
    assert _message(lambda: passage_pairs(["a", "b"], max_common=bad, workers=1)) == want
    assert _message(lambda: check_options(None, None, bad)) == want


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", True])
def test_min_containment_has_one_message_everywhere(bad: Any) -> None:
    want = f"min_containment must be a number from 0 to 1, got {bad!r}"
    assert _message(lambda: passage_pairs(["a", "b"], min_containment=bad, workers=1)) == want
    assert _message(lambda: checked_thresholds(PassageConfig(), None, bad)) == want
    assert _message(lambda: verify("a text", None, [], min_containment=bad)) == want
    assert _message(lambda: check_options(None, bad, None)) == want


def test_min_tokens_below_the_guarantee_is_refused_by_lookups_and_reports() -> None:
    """The lookups and the stored reports promise every run of the guarantee: below it is refused,
    with the same words; the in-memory pairs take any count from 1 (a pair found through a longer run)."""
    guarantee = PASSAGE_CONFIG.guarantee
    want = (f"min_tokens must be an integer of at least {guarantee} (the passage index's larger window 46 + 4: "
            f"shorter shared runs are not all found), got {guarantee - 1}")
    assert _message(lambda: check_options(guarantee - 1, None, None)) == want
    assert _message(lambda: checked_thresholds(PASSAGE_CONFIG, guarantee - 1, None)) == want
    assert _message(lambda: passage_pairs(["a", "b"], min_tokens=0, workers=1)) == (
        "min_tokens must be an integer of at least 1, got 0")
    # the edges are accepted: 0 and 1 for containment, 0 for max_common
    assert check_options(guarantee, 0, 0).max_common == 0
    assert checked_thresholds(PASSAGE_CONFIG, None, 1) == (guarantee, 1.0)

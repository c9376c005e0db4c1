"""The command line speaks docs/vocabulary.md: one flag per concept, the old spellings refused."""

from __future__ import annotations

import pytest

from simpg.cli import build_parser


@pytest.mark.parametrize("argv", [
    ["plan", "--k", "3", "--rows", "10"],
    ["plan", "--distance", "3", "--rows", "10"],
    ["backfill", "--table", "t", "--text-column", "b", "--column", "f", "--k", "3"],
    ["find-all", "--distance", "3"],
    ["find-clusters", "--distance", "3"],
    ["report", "--collection", "c", "--html", "f", "--distance", "3"],
    ["backfill", "--table", "t", "--text-column", "b", "--fp-column", "f"],
    ["spark", "find-all", "-k", "3", "-i", "x.csv", "-o", "y", "--fp-column", "f"],
    ["spark", "find-all", "-k", "3", "-i", "x.csv", "-o", "y", "--id-column", "i"],
])
def test_old_flags_are_refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """-k is the radius everywhere (and -d on the find-all family), --column the fingerprint column, --key the key."""
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    assert "error: " in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["plan", "-k", "3", "--rows", "10"],
    ["find-all", "-d", "3"],
    ["find-clusters", "-k", "3"],
])
def test_radius_flags(argv: list[str]) -> None:
    assert int(build_parser().parse_args(argv).k) == 3

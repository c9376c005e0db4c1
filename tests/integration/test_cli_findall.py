"""``simpg find-all`` / ``find-clusters``: seomoz-compatible output, exact, duplicates kept."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from tests.integration.cli import run
from tests.oracles import brute_clusters_numbered, brute_pairs_numbered, brute_representatives_numbered


def sample(seed: int) -> list[int]:
    rng = random.Random(seed)
    base = [rng.getrandbits(64) for _ in range(150)]
    out = list(base)
    for i, b in enumerate(base[:60]):
        for p in rng.sample(range(64), i % 6):
            b ^= 1 << p
        out.append(b)
    out += base[:4] + [0, 2**63, 2**64 - 1, 2**64 - 2]
    rng.shuffle(out)
    return out


def feed(monkeypatch: pytest.MonkeyPatch, values: list[int], extra: str = "") -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{v}\n" for v in values) + extra))


@pytest.mark.parametrize("blocks", [None, "4", "6"])
def test_find_all_equals_brute_force(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                     blocks: str | None) -> None:
    values = sample(1)
    feed(monkeypatch, values, "\n")
    code, out, err = run(capsys, "find-all", "-d", "3", *(["--blocks", blocks] if blocks else []))
    assert (code, err) == (0, "")
    got = [tuple(json.loads(line)) for line in out.splitlines()]
    expected = sorted((min(values[a - 1], values[b - 1]), max(values[a - 1], values[b - 1]))
                      for a, b, _ in brute_pairs_numbered(values, 3))
    assert got == expected  # one line per pair of input rows, duplicates as [x, x]
    assert any(a == b for a, b in got)


def test_find_all_lines_and_files(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    values = sample(2)
    src = tmp_path / "in.txt"
    src.write_text("".join(f"{v}\n" for v in values), encoding="utf-8")
    dst = tmp_path / "out.txt"
    code, out, _ = run(capsys, "find-all", "-d", "2", "-i", str(src), "-o", str(dst), "--lines")
    assert (code, out) == (0, "")
    got = [tuple(json.loads(line)) for line in dst.read_text().splitlines()]
    expected = sorted((a, b) for a, b, _ in brute_pairs_numbered(values, 2))
    assert got == expected


def test_find_clusters_equals_brute_force(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    values = sample(3)
    feed(monkeypatch, values)
    code, out, _ = run(capsys, "find-clusters", "-d", "3", "--lines", "--method", "components")
    assert code == 0
    got = {frozenset(json.loads(line)) for line in out.splitlines()}
    pairs = brute_pairs_numbered(values, 3)
    assert got == {frozenset(g) for g in brute_clusters_numbered(len(values), pairs)}
    sizes = [len(json.loads(line)) for line in out.splitlines()]
    assert sizes == sorted(sizes, reverse=True)


def test_find_clusters_prints_fingerprints(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    feed(monkeypatch, [0x00FF, 0x00EF, 0xFF00, 0xEF00, 0x3333, 0x00FF])
    code, out, _ = run(capsys, "find-clusters", "-d", "1")
    assert (code, out) == (0, "[239, 255, 255]\n[61184, 65280]\n")


def test_find_clusters_around_representatives(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--method representative: input order, each line joins the earliest leader within -d."""
    values = sample(4)
    feed(monkeypatch, values)
    code, out, _ = run(capsys, "find-clusters", "-d", "3", "--lines", "--method", "representative")
    assert code == 0
    assert {frozenset(json.loads(x)) for x in out.splitlines()} == {
        frozenset(g) for g in brute_representatives_numbered(values, 3)}
    # a chain: components join it whole, representatives cut it
    chain = [0, 0b11, 0b1111, 0b111111]
    feed(monkeypatch, chain)
    assert run(capsys, "find-clusters", "-d", "2", "--lines", "--method", "components")[1] == "[1, 2, 3, 4]\n"
    feed(monkeypatch, chain)
    assert run(capsys, "find-clusters", "-d", "2", "--lines")[1] == "[1, 2]\n[3, 4]\n"  # the default


@pytest.mark.parametrize("argv, stdin, message", [
    (["-d", "3"], "12\nabc\n", "simpg: line 2: expected a decimal 64-bit fingerprint (digits 0-9), got 'abc'\n"),
    # seed 004's format is plain ASCII decimal; int() would take these as 1000
    (["-d", "3"], "5\n1_000\n", "simpg: line 2: expected a decimal 64-bit fingerprint (digits 0-9), got '1_000'\n"),
    (["-d", "3"], "+1000\n", "simpg: line 1: expected a decimal 64-bit fingerprint (digits 0-9), got '+1000'\n"),
    (["-d", "3"], "\n\n\u0661\u0660\u0660\u0660\n",
     "simpg: line 3: expected a decimal 64-bit fingerprint (digits 0-9), got '\u0661\u0660\u0660\u0660'\n"),
    (["-d", "3"], "-1\n", "simpg: line 1: expected 64-bit fingerprint in [0, 2**64), got -1\n"),
    (["-d", "3"], f"{2**64}\n", f"simpg: line 1: expected 64-bit fingerprint in [0, 2**64), got {2**64}\n"),
    (["-d", "3", "-b", "3"], "1\n", "simpg: --blocks (3) must be more than -d (3)\n"),
    (["-k", "3", "-b", "3"], "1\n", "simpg: --blocks (3) must be more than -k (3)\n"),
    # the flag the user typed (-k everywhere; -d as seed 004's tool), and its range
    (["-d", "-1"], "1\n", "simpg: -d must be from 0 to 16, got -1\n"),
    (["-d", "17"], "1\n", "simpg: -d must be from 0 to 16, got 17\n"),
    (["-k", "40"], "1\n", "simpg: -k must be from 0 to 16, got 40\n"),
])
def test_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                   argv: list[str], stdin: str, message: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code, out, err = run(capsys, "find-all", *argv)
    assert (code, out, err) == (1, "", message)


@pytest.mark.parametrize("flag", ["-k", "-d"])
def test_radius_flags_are_one_option(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                     flag: str) -> None:
    """-k, as in every other command, SQL and Python; -d, as seed 004's tool."""
    for command, expected in (("find-all", "[1, 2]\n"), ("find-clusters", "[1, 2]\n")):
        monkeypatch.setattr("sys.stdin", io.StringIO("1\n3\n" + str(2**64 - 1) + "\n"))
        assert run(capsys, command, flag, "1", "--lines") == (0, expected, "")


def test_missing_input_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The wording simpg fingerprint uses, for input and output alike."""
    missing = tmp_path / "none.txt"
    code, _, err = run(capsys, "find-clusters", "-d", "3", "-i", str(missing))
    assert (code, err) == (1, f"simpg: cannot read '{missing}': No such file or directory\n")
    src = tmp_path / "in.txt"
    src.write_text("1\n2\n", encoding="utf-8")
    out = tmp_path / "no" / "out.txt"
    code, _, err = run(capsys, "find-all", "-d", "3", "-i", str(src), "-o", str(out))
    assert (code, err) == (1, f"simpg: cannot write '{out}': No such file or directory\n")


@pytest.mark.parametrize("command", ["find-all", "find-clusters"])
def test_input_file_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    """A non-UTF-8 file is one line naming the file and byte, as on stdin, never a traceback."""
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"12\n34\xe9\n")
    code, out, err = run(capsys, command, "-d", "3", "-i", str(bad))
    assert (code, out, err) == (1, "", f"simpg: {bad}: invalid utf-8 at byte offset 5 (byte 0xe9)\n")
    binary = Path("/bin/ls")
    if binary.exists():
        code, out, err = run(capsys, command, "-d", "3", "-i", str(binary))
        assert code == 1 and out == "" and err.startswith("simpg: ") and err.count("\n") == 1

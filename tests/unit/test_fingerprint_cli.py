"""simpg fingerprint: the argparse subcommand."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from simpg.bits import to_db
from simpg.commands import fingerprint as command
from simpg.exc import SimpgError
from simpg.fingerprint import FingerprintConfig, fingerprint


def run(argv: list[str], stdin: bytes | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> int:
    parser = argparse.ArgumentParser(prog="simpg")
    command.register(parser.add_subparsers())
    args = parser.parse_args(["fingerprint", *argv])
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    result: int = args.func(args)
    return result


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("The first document, with some words.\n", encoding="utf-8")
    b.write_text("第二个文档，中文内容。\n", encoding="utf-8")
    return a, b


def test_decimal_default(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = files
    assert run([str(a)]) == 0  # one file: the bare number, for scripts
    assert capsys.readouterr().out == f"{fingerprint(a.read_text())}\n"
    assert run([str(a), str(b)]) == 0  # several: each line names its file, as sha256sum does
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{fingerprint(a.read_text())}  {a}", f"{fingerprint(b.read_text())}  {b}"]
    assert run(["--hex", str(a), str(b)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"{fingerprint(b.read_text()):016x}  {b}"


def test_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`simpg fingerprint ... | head -1`: no 'Broken pipe' message, status 0."""
    import subprocess

    data = "".join(f"line number {i} of some text\n" for i in range(20000)).encode()
    proc = subprocess.Popen([sys.executable, "-m", "simpg", "fingerprint", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    import threading

    def feed() -> None:
        try:
            proc.stdin.write(data)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass  # simpg stopped reading once its output pipe closed

    feeder = threading.Thread(target=feed)
    feeder.start()
    assert proc.stdout.readline().strip().isdigit()
    proc.stdout.close()  # the reader goes, as head does
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    feeder.join()
    assert err == b""


def test_hex_and_options(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = files
    run(
        ["--hex", "--unit", "word", "--ngram", "2", "--hash", "fnv1", "--lang", "en"]
        + ["--weighting", "binary", str(a)]
    )
    cfg = FingerprintConfig(unit="word", ngram=2, hash="fnv1", lang="en", weighting="binary")
    assert capsys.readouterr().out == f"{fingerprint(a.read_text(), cfg):016x}\n"


def test_json_lines(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = files
    run(["--json", "--top-n", "0", str(a)])
    record = json.loads(capsys.readouterr().out)
    cfg = FingerprintConfig(top_n=None)
    fp = fingerprint(a.read_text(), cfg)
    assert record == {
        "source": str(a),
        "fingerprint": fp,
        "hex": f"{fp:016x}",
        "bigint": to_db(fp),
        "config": cfg.identity,
    }


def test_stdin_lines_and_whole(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"first line of text\nsecond line\n"
    run(["--json", "-"], stdin=data, monkeypatch=monkeypatch)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["line"], r["fingerprint"]) for r in records] == [
        (1, fingerprint("first line of text")),
        (2, fingerprint("second line")),
    ]
    run(["--whole", "-"], stdin=data, monkeypatch=monkeypatch)
    assert capsys.readouterr().out == f"{fingerprint(data.decode())}\n"


def test_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\xff")
    with pytest.raises(SimpgError, match=f"invalid utf-8 in '{bad}' at byte offset 3"):
        run([str(bad)])
    with pytest.raises(SimpgError, match="cannot read '/nonexistent': No such file or directory"):
        run(["/nonexistent"])
    with pytest.raises(SimpgError, match="<stdin> line 2: empty document"):
        run(["-"], stdin=b"text\n\n", monkeypatch=monkeypatch)
    with pytest.raises(SimpgError, match="invalid utf-8 in <stdin> line 1 at byte offset 1"):
        run(["-"], stdin=b"a\xffb\n", monkeypatch=monkeypatch)
    with pytest.raises(SimpgError, match="no input"):
        run([])


def test_a_document_without_features_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # separator lines alone are no text: refused, never a fingerprint shared with other such files
    rules = tmp_path / "rules.txt"
    rules.write_text("_" * 79 + "\n" + "=" * 79 + "\n" + "x" * 40 + "\n", encoding="utf-8")
    with pytest.raises(SimpgError, match=f"document has no usable features: '{rules}'"):
        run([str(rules)])
    with pytest.raises(SimpgError, match="<stdin> line 2: document has no usable features: '-----'"):
        run(["-"], stdin=b"a title\n-----\n", monkeypatch=monkeypatch)
    capsys.readouterr()
    # a short title is a document like any other
    assert run(["-"], stdin=b"Re: ok\n", monkeypatch=monkeypatch) == 0
    assert capsys.readouterr().out == f"{fingerprint('Re: ok')}\n"


def test_replace_decode_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc def\xff ghi")
    run(["--errors", "replace", str(bad)])
    expected = fingerprint("abc def\ufffd ghi")
    assert capsys.readouterr().out == f"{expected}\n"


def test_config_file_and_show_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = FingerprintConfig(unit="word", ngram=4)
    path = tmp_path / "cfg.json"
    path.write_text(cfg.to_json())
    run(["--config", str(path), "--show-config"])
    out = capsys.readouterr().out.splitlines()
    assert out == [cfg.to_json(), cfg.identity]
    run(["--config", str(path), "--hash", "murmur3", "--show-config"])
    assert capsys.readouterr().out.splitlines()[1] == cfg.replace(hash="murmur3").identity

"""Issue 32's newcomer findings: what a first run on a real folder met, each fixed and held here."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simpg.fingerprint import fingerprint
from tests.integration.cli import CORPUS, run

ROOT = Path(__file__).resolve().parents[2]
PARAGRAPH = ("The committee met on Tuesday to review the annual budget and agreed to fund the new library "
             "wing, the repairs to the swimming pool and a study of traffic on the main road through town.")


def _mixed_folder(root: Path) -> Path:
    """Two near-duplicate .txt files, a licence without extension, a gzipped man page, source code."""
    folder = root / "mixed"
    (folder / "man1").mkdir(parents=True)
    (folder / "notes-a.txt").write_text(PARAGRAPH, encoding="utf-8")
    (folder / "notes-b.txt").write_text(PARAGRAPH.replace("Tuesday", "Tuesday morning"), encoding="utf-8")
    (folder / "LICENSE").write_text("Permission is hereby granted, free of charge, to any person.", encoding="utf-8")
    (folder / "man1" / "ls.1.gz").write_bytes(gzip.compress(PARAGRAPH.encode("utf-8")))
    (folder / "tool.py").write_text("def main() -> None:\n    print('hello')\n", encoding="utf-8")
    (folder / ".hidden.txt").write_text("not a document", encoding="utf-8")
    return folder


def test_skipped_files_are_counted_and_gz_is_read(db: object, capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    folder = _mixed_folder(tmp_path)
    dsn = db.dsn  # type: ignore[attr-defined]
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json")
    assert code == 0, err
    assert ("simpg: read 2 files matching **/*.txt; skipped 3 other files (1 .gz, 1 .py, 1 no extension; "
            "use --glob '**/*' to read them, .gz decompressed)") in err.splitlines()
    assert json.loads(out)["documents"] == 2

    code, out, err = run(capsys, "dedup", str(folder), "--dsn", dsn, "--json", "--glob", "**/*")
    assert code == 0, err
    assert "skipped" not in err  # the glob takes every file: nothing to say
    report = json.loads(out)
    assert report["documents"] == 5
    # the gzipped page is read as the text it holds: an exact copy of notes-a, in its cluster
    gz = os.fspath(folder / "man1" / "ls.1.gz")
    cluster = next(c for c in report["clusters"] if any(d["source"] == gz for d in c["documents"]))
    assert {Path(d["source"]).name for d in cluster["documents"]} >= {"notes-a.txt", "ls.1.gz"}
    rows = dict(db.conn.execute(  # type: ignore[attr-defined]
        "SELECT source, body FROM simpg_documents WHERE source = %s", [gz]).fetchall())
    assert rows == {gz: PARAGRAPH}


def test_bad_gzip_names_the_file(db: object, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "a.txt.gz").write_bytes(b"not gzip at all")
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn, "--glob", "*.gz")  # type: ignore[attr-defined]
    assert code == 1 and out == ""
    assert err.startswith(f"simpg: cannot read '{folder / 'a.txt.gz'}': not a valid gzip file")


def test_files_get_their_name_as_title_not_in_the_fingerprint(db: object, capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    folder = _mixed_folder(tmp_path)
    code, out, err = run(capsys, "dedup", str(folder), "--dsn", db.dsn, "--json")  # type: ignore[attr-defined]
    assert code == 0, err
    rows = db.conn.execute(  # type: ignore[attr-defined]
        "SELECT source, title, simhash FROM simpg_documents ORDER BY source").fetchall()
    assert [(Path(s).name, t) for s, t, _ in rows] == [("notes-a.txt", "notes-a"), ("notes-b.txt", "notes-b")]
    # the name is shown, not fingerprinted: the fingerprint is the body's alone
    from simpg import bits
    assert bits.from_db(rows[0][2]) == fingerprint(PARAGRAPH)
    documents = [d for c in json.loads(out)["clusters"] for d in c["documents"]]
    assert {d["title"] for d in documents} == {"notes-a", "notes-b"}
    # the README's report query (docs/reports.md) shows both titles
    pairs = db.conn.execute(  # type: ignore[attr-defined]
        "SELECT a.title, b.title FROM simpg.pairs('simpg_documents', 4) AS p "
        "JOIN simpg_documents a ON a.id = p.key_a JOIN simpg_documents b ON b.id = p.key_b").fetchall()
    assert pairs == [("notes-a", "notes-b")]


def test_sample_corpus_titles(db: object, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "dedup", str(CORPUS), "--dsn", db.dsn, "--json")  # type: ignore[attr-defined]
    assert code == 0, err
    titles = dict(db.conn.execute("SELECT source, title FROM simpg_documents").fetchall())  # type: ignore[attr-defined]
    assert titles and all(t == Path(s).stem for s, t in titles.items())


def _readme_block(contains: str) -> str:
    """The README's Python block holding ``contains``, as a reader would paste it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (code,) = [c for c in re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL) if contains in c]
    return code


def _python(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # a timeout: the bug was a hang (spawn workers re-running the script, for ever)
    return subprocess.run([sys.executable, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=120)


def test_readme_fingerprint_many_in_a_script_on_stdin_and_in_a_repl(tmp_path: Path) -> None:
    code = _readme_block("fingerprint_many(texts, workers=2)")
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    # saved as a script without a guard, and piped to python -: one process, one warning, the answer
    for args, stdin, where in ((["snippet.py"], None, f"{script}:4"), (["-"], code, "<stdin>:4")):
        result = _python(args, tmp_path, stdin)
        assert (result.returncode, result.stdout) == (0, "True\n"), result.stderr
        assert result.stderr.startswith(f"{where}: RuntimeWarning: simpg: workers=2 ignored, running in this "
                                        "process: "), result.stderr
        assert result.stderr.count("RuntimeWarning") == 1 and "Traceback" not in result.stderr
    # python -c (a REPL's main module): worker processes, no warning (turned into an error to be sure)
    result = _python(["-W", "error::RuntimeWarning", "-c", code], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "True\n", "")
    # an interactive interpreter fed the lines
    result = _python(["-i", "-q", "-W", "error::RuntimeWarning"], tmp_path, code + "\n")
    assert (result.returncode, result.stdout.strip()) == (0, "True"), result.stderr
    # the README's code under the guard: worker processes, no warning
    guarded = tmp_path / "guarded.py"
    guarded.write_text("if __name__ == '__main__':\n" + "".join(f"    {line}\n" for line in code.splitlines()),
                       encoding="utf-8")
    result = _python(["-W", "error::RuntimeWarning", "guarded.py"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "True\n", "")
    # and they are worker processes indeed
    guarded.write_text(
        "import multiprocessing\nfrom simpg.fingerprint import fingerprint_many\n\n"
        "def main():\n"
        "    found = fingerprint_many(['some words of text'] * 100, workers=2)\n"
        "    next(found)\n"
        "    print(len(multiprocessing.active_children()), len(list(found)))\n\n"
        "if __name__ == '__main__':\n    main()\n", encoding="utf-8")
    result = _python(["-W", "error::RuntimeWarning", "guarded.py"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "2 99\n", "")


def test_ctrl_c_prints_one_line(db: object, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) during fingerprinting."""
    import random
    import signal
    import threading
    import time

    folder = tmp_path / "many"
    folder.mkdir()
    rng = random.Random(32)
    words = [f"w{n}" for n in range(5000)]
    for n in range(30000):
        (folder / f"{n:05}.txt").write_text(" ".join(rng.choices(words, k=200)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "simpg", "dedup", str(folder), "--progress", "--workers", "2",
                             "--dsn", db.dsn], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,  # type: ignore[attr-defined]
                            start_new_session=True)
    assert proc.stderr is not None
    received = bytearray()

    def drain() -> None:  # tqdm redraws with \r: read bytes, not lines
        assert proc.stderr is not None
        while chunk := os.read(proc.stderr.fileno(), 4096):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    deadline = time.monotonic() + 120

    def done() -> int:  # documents fingerprinted so far, by the bar
        counts = re.findall(rb"fingerprinting and sketching: .*?\| *(\d+)/", bytes(received))
        return int(counts[-1]) if counts else 0

    while done() < 1000 and proc.poll() is None:  # the workers are at work
        assert time.monotonic() < deadline, received.decode(errors="replace")
        time.sleep(0.02)
    assert proc.poll() is None, "finished before it could be interrupted: make the folder larger"
    os.killpg(proc.pid, signal.SIGINT)
    status = proc.wait(timeout=60)
    reader.join(timeout=10)
    err = received.decode(errors="replace")
    assert status == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.rstrip("\n").endswith("simpg: interrupted"), err


def _simpg(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The simpg command as a user runs it, on the embedded default of a private SIMPG_HOME."""
    env = {k: v for k, v in os.environ.items() if k not in ("SIMPG_DSN", "PGHOST", "PGPORT", "PGDATABASE")}
    env["SIMPG_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "simpg", *argv], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def _status(home: Path) -> dict[str, object]:
    result = _simpg(home, "server", "status", "--json")
    assert result.returncode == 0, result.stderr
    status: dict[str, object] = json.loads(result.stdout)
    return status


def test_session_server_and_collections(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)  # the embedded server runs as its own OS user when we are root
    home = tmp_path / "home"
    pgdata = home / "pgdata"
    folder = _mixed_folder(tmp_path)
    shared = CORPUS / "en-cookies-original.txt"
    (folder / "cookies.txt").write_text(shared.read_text(encoding="utf-8"), encoding="utf-8")
    assert _status(home)["running"] is False
    try:
        started = _simpg(home, "server", "start")
        assert started.returncode == 0, started.stderr
        assert started.stdout.startswith(f"embedded PostgreSQL running in {pgdata} (pid ")
        status = _status(home)
        assert status["running"] is True and status["session"] is True and status["data_directory"] == str(pgdata)
        socket_dir = Path(str(status["socket_directory"]))
        assert socket_dir.stat().st_mode & 0o077 == 0  # only the server's OS user enters it
        pid = status["pid"]

        # commands use the session's server, say where its data lives first, and leave it running
        result = _simpg(home, "dedup", str(CORPUS), "--collection", "corpus", "--json")
        assert result.returncode == 0, result.stderr
        assert result.stderr.splitlines()[0] == (
            f"simpg: using the embedded PostgreSQL in {pgdata} (kept running by simpg server start; "
            "simpg collections list shows what it holds)")
        assert _status(home)["pid"] == pid
        result = _simpg(home, "dedup", str(folder), "--collection", "mixed")
        assert result.returncode == 0, result.stderr
        assert _status(home)["pid"] == pid

        # the collections, listed
        result = _simpg(home, "collections", "list", "--json")
        assert result.returncode == 0, result.stderr
        listed = json.loads(result.stdout)
        assert [(c["name"], c["documents"]) for c in listed] == [("corpus", 31), ("mixed", 3)]
        assert all(c["first_loaded"] <= c["last_loaded"] for c in listed)
        table = _simpg(home, "collections", "list").stdout.splitlines()
        assert table[0].split() == ["collection", "documents", "first", "loaded", "last", "loaded"]
        assert [line.split()[:2] for line in table[1:]] == [["corpus", "31"], ["mixed", "3"]]

        # near: every collection by default, one with --collection, a typo refused
        def near(*extra: str) -> set[str]:
            result = _simpg(home, "near", "--file", str(shared), "--json", *extra)
            assert result.returncode == 0, result.stderr
            return {n["source"] for n in json.loads(result.stdout)[0]["neighbors"]}

        everywhere = near()
        assert {os.fspath(shared), os.fspath(folder / "cookies.txt")} <= everywhere
        assert near("--collection", "mixed") == {os.fspath(folder / "cookies.txt")}
        assert os.fspath(folder / "cookies.txt") not in near("--collection", "corpus")
        assert near("--collection", "corpus") | near("--collection", "mixed") == everywhere
        result = _simpg(home, "near", "--file", str(shared), "--collection", "nope")
        assert result.returncode == 1
        assert result.stderr.splitlines()[-1] == (
            "simpg: no collection 'nope' in simpg_documents (simpg collections list shows them)")

        # drop
        result = _simpg(home, "collections", "drop", "corpus")
        assert (result.returncode, result.stdout) == (0, "dropped collection 'corpus': 31 documents deleted\n")
        result = _simpg(home, "collections", "list", "--json")
        assert [c["name"] for c in json.loads(result.stdout)] == ["mixed"]
        result = _simpg(home, "collections", "drop", "corpus")
        assert result.returncode == 1 and result.stderr.splitlines()[-1] == (
            "simpg: no collection 'corpus' in simpg_documents (simpg collections list shows them)")
    finally:
        stopped = _simpg(home, "server", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, f"embedded PostgreSQL in {pgdata} stopped\n")
    assert _status(home)["running"] is False

    # without a session, a command starts the server for itself, says so, and stops it
    result = _simpg(home, "collections", "list")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"simpg: using the embedded PostgreSQL in {pgdata} (started for this command; simpg server start keeps "
        "it running; simpg collections list shows what it holds)")
    assert result.stdout.split("\n")[1].split()[:2] == ["mixed", "3"]
    assert _status(home)["running"] is False


def test_a_session_server_needs_a_private_socket_directory(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from simpg.embedded import socket_not_private

    (tmp_path / "open").mkdir(mode=0o755)
    (tmp_path / "closed").mkdir(mode=0o700)
    os.chmod(tmp_path / "open", 0o755)
    assert socket_not_private(SimpleNamespace(socket_dir=tmp_path / "closed")) is None
    assert socket_not_private(SimpleNamespace(socket_dir=tmp_path / "open")) == (
        f"its socket directory {tmp_path / 'open'} is open to other users (mode 755)")
    assert socket_not_private(SimpleNamespace(socket_dir=None)) == "it listens on TCP, not on a Unix socket"

"""Download and cache the corpus's raw material: Debian packages and Debian index files.

Everything comes from deb.debian.org (bookworm, main) over plain HTTP, by the file names and
SHA-256 digests recorded in ``bench/quality/sources.json`` and ``copyright_packages.tsv``, and is
cached under ``bench/data/quality14/cache/``. A recorded file that the mirror no longer has (a
point release replaced it) is replaced by the current version from the Packages index, with a
warning, and the version actually used is written to the build's stats.

.deb files are read in pure Python (ar archive + ``data.tar.*`` through ``tarfile``); nothing is
installed on the system and dpkg is not needed.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = REPO / "bench" / "data" / "quality14"
CACHE = DATA / "cache"
MANIFEST = HERE / "sources.json"
COPYRIGHT_LIST = HERE / "copyright_packages.tsv"
FRESH_MANIFEST = HERE / "sources_fresh.json"  # the fresh held-out part: packages sources.json does not use
FRESH_COPYRIGHT_LIST = HERE / "copyright_packages_fresh.tsv"
ISSUE28_MANIFEST = HERE / "sources_issue28.json"  # issue 28: mixreal and revisions, Debian 11-13
MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
USER_AGENT = "simpg-bench-quality14 (urllib)"


def log(msg: str) -> None:
    print(f"[quality14 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Missing(Exception):
    """The mirror answered 404 for a recorded file."""


def download(url: str, dest: Path, sha256: str | None = None, *, tries: int = 3) -> Path:
    """Download ``url`` to ``dest`` once (cached); check the digest when one is recorded."""
    if dest.exists() and (sha256 is None or sha256_file(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    for attempt in range(tries):
        try:
            req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
            with urllib.request.urlopen(req, timeout=120) as resp, tmp.open("wb") as out:
                while block := resp.read(1 << 20):
                    out.write(block)
            break
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise Missing(url) from None
            if attempt == tries - 1:
                raise
        except (urllib.error.URLError, TimeoutError, ConnectionError):
            if attempt == tries - 1:
                raise
        time.sleep(2 * (attempt + 1))
    tmp.replace(dest)
    if sha256 is not None and sha256_file(dest) != sha256:
        log(f"WARNING: {url}: SHA-256 differs from the manifest (the mirror's file changed)")
    return dest


# -- Debian index files -------------------------------------------------------------------


def packages_index() -> dict[str, dict[str, str]]:
    """bookworm/main/binary-amd64 Packages (includes arch:all), name -> fields (cached file)."""
    path = download(f"{MIRROR}/dists/{SUITE}/main/binary-amd64/Packages.xz", CACHE / "index" / "Packages-amd64.xz")
    out: dict[str, dict[str, str]] = {}
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for para in parse_deb822(f.read()):
            name = para.get("Package")
            if name:
                out[name] = para
    return out


def parse_deb822(text: str) -> Iterator[dict[str, str]]:
    """Paragraphs of a deb822 file (Packages, Translation-*, DEP-5 copyright); continuation lines kept."""
    para: dict[str, str] = {}
    key = None
    for line in text.split("\n"):
        if not line.strip():
            if para:
                yield para
            para, key = {}, None
            continue
        if line[0] in " \t" and key is not None:
            para[key] += "\n" + line
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip()
            para[key] = value.strip()
    if para:
        yield para


def index_file(name: str, spec: dict[str, str]) -> Path:
    """A Debian index file (e.g. i18n/Translation-zh_CN.bz2) recorded in the manifest."""
    path = spec["path"]
    area = path.split("/")[2]  # dists/<suite>/<area>/...: contrib's Translation-en is not main's
    name = Path(path).name if area == "main" else f"{area}-{Path(path).name}"
    return download(f"{MIRROR}/{path}", CACHE / "index" / name, spec.get("sha256"))


# -- .deb packages ------------------------------------------------------------------------


@dataclass
class Deb:
    """One downloaded package: the version actually used and its local file."""

    name: str
    version: str
    filename: str
    path: Path
    pinned: bool  # False when the recorded version was gone and the current one was used


_INDEX: dict[str, dict[str, str]] | None = None


def _index() -> dict[str, dict[str, str]]:
    global _INDEX
    if _INDEX is None:
        _INDEX = packages_index()
    return _INDEX


def get_deb(name: str, spec: dict[str, str] | None) -> Deb:
    """The recorded version of a package (falling back to the current one, with a warning)."""
    if spec and spec.get("filename"):
        dest = CACHE / "debs" / Path(spec["filename"]).name
        try:
            download(f"{MIRROR}/{spec['filename']}", dest, spec.get("sha256"))
            return Deb(name, spec.get("version", "?"), spec["filename"], dest, True)
        except Missing:
            log(f"WARNING: {name} {spec.get('version')} is no longer on the mirror; using the current version")
    para = _index().get(name)
    if para is None:
        raise SystemExit(f"package {name!r} is not in {SUITE}/main")
    dest = CACHE / "debs" / Path(para["Filename"]).name
    download(f"{MIRROR}/{para['Filename']}", dest, para.get("SHA256"))
    return Deb(name, para["Version"], para["Filename"], dest, spec is None)


def deb_data_members(path: Path) -> Iterator[tuple[str, bytes | None, str | None]]:
    """(path, content, link target) for each regular file or symlink of a .deb's data.tar.*.

    Paths have no leading ``./``; a symlink has content None and its target; a file has no target.
    """
    raw = path.read_bytes()
    if not raw.startswith(b"!<arch>\n"):
        raise ValueError(f"{path}: not a .deb (ar) archive")
    pos = 8
    while pos + 60 <= len(raw):
        header = raw[pos : pos + 60]
        member = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = raw[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
        if member.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                for info in tar:
                    name = info.name[2:] if info.name.startswith("./") else info.name
                    if info.issym() or info.islnk():
                        yield name, None, info.linkname
                    elif info.isfile():
                        f = tar.extractfile(info)
                        yield name, (f.read() if f else b""), None
            return
    raise ValueError(f"{path}: no data.tar member")


def load_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return manifest


def load_copyright_list(path: Path = COPYRIGHT_LIST) -> list[dict[str, str]]:
    rows = []
    with path.open(encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if line.strip() and not line.startswith("#"):
                rows.append(dict(zip(header, line.rstrip("\n").split("\t"), strict=False)))
    return rows

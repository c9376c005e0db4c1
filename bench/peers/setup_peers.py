"""Create the virtual environments of the peer implementations the benchmark compares with.

Each peer gets its own venv (both install a top-level module named ``simhash``, and
simhash 2.1.2 needs numpy < 2), under ``$SIMPG_BENCH_CACHE`` or
``${XDG_CACHE_HOME:-~/.cache}/simpg-bench/peers/<name>``. Existing venvs are reused.

Usage:  python3 bench/peers/setup_peers.py [--force]
Prints the peer name and its interpreter, one per line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

PEERS: dict[str, list[str]] = {
    # https://pypi.org/project/simhash/ (1e0ng/simhash), the most used Python simhash.
    "simhash": ["simhash==2.1.2", "numpy<2"],
    # https://pypi.org/project/simhash-pybind/ (seomoz/simhash-cpp bindings, seed 004).
    "simhash-pybind": ["simhash-pybind==0.0.3"],
}


def cache_dir() -> Path:
    base = os.environ.get("SIMPG_BENCH_CACHE")
    if base:
        return Path(base) / "peers"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "simpg-bench" / "peers"


def python_of(name: str) -> Path:
    return cache_dir() / name / "bin" / "python"


def ensure(name: str, force: bool = False) -> Path:
    """Create (once) the venv of peer ``name`` and return its interpreter."""
    venv = cache_dir() / name
    marker = venv / ".simpg-ready"
    wanted = " ".join(PEERS[name])
    if force and venv.exists():
        shutil.rmtree(venv)
    if marker.exists() and marker.read_text() == wanted:
        return python_of(name)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python_of(name)), "-m", "pip", "install", "--quiet", *PEERS[name]], check=True)
    marker.write_text(wanted)
    return python_of(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--force", action="store_true", help="recreate the venvs")
    args = ap.parse_args()
    for name in PEERS:
        print(name, ensure(name, args.force))


if __name__ == "__main__":
    main()

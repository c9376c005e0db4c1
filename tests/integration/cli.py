"""Running the simpg command line in-process, and the sample corpus it is run on."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpg.cli import main

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err

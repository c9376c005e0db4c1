"""The usage tours in the fingerprint modules' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "api",
    "batch",
    "chinese",
    "config",
    "fingerprinter",
    "hashes",
    "minhash",
    "normalize",
    "simhash",
    "tokenize",
    "__init__",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module("simpg.fingerprint" if name == "__init__" else f"simpg.fingerprint.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

"""simpg.exc: the translation of database errors, without a database (the integration tests raise real ones)."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
from psycopg import errors

from simpg.exc import ExtensionNotInstalled, SimpgError, near_duplicate, translate, translated


def test_a_missing_simpg_function_means_the_extension_is_not_installed() -> None:
    err = errors.UndefinedFunction("function simpg.hamming(bigint, bigint) does not exist")
    assert isinstance(translate(err), ExtensionNotInstalled)
    other = errors.UndefinedFunction("function foo(bigint) does not exist")
    assert translate(other) is other


def test_clear_errors_become_simpg_errors_and_others_stay() -> None:
    assert str(translate(errors.InvalidParameterValue("k must be a non-negative integer, got -1"))) == (
        "k must be a non-negative integer, got -1")
    deadlock = errors.DeadlockDetected("deadlock detected")
    assert translate(deadlock) is deadlock


def test_an_exclusion_violation_without_a_guards_detail_is_no_near_duplicate() -> None:
    assert near_duplicate(errors.ExclusionViolation("conflicting key value")) is None
    assert near_duplicate(errors.UniqueViolation("duplicate key")) is None


def test_translated_raises_from_the_database_error_and_lets_others_through() -> None:
    with pytest.raises(SimpgError) as raised, translated():
        raise errors.UndefinedTable('relation "docs" does not exist')
    assert isinstance(raised.value.__cause__, psycopg.Error)
    with pytest.raises(errors.DeadlockDetected), translated():
        raise errors.DeadlockDetected("deadlock detected")
    with pytest.raises(KeyError), translated():
        raise KeyError("x")


def test_the_public_core_imports_without_psycopg() -> None:
    code = "import sys, simpg, simpg.exc, simpg.results; print('psycopg' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"

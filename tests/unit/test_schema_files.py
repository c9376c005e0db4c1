"""The packaged SQL files: one version, parts joined like the Makefile does."""

import re
import subprocess
from pathlib import Path

from simpg import schema

ROOT = Path(__file__).resolve().parents[2]


def test_version_lives_only_in_the_control_file():
    control = (ROOT / "sql" / "simpg.control").read_text()
    assert re.search(r"default_version = '0\.2\.0'", control)
    assert schema.default_version() == "0.2.0"
    assert "trusted = true" in control and "relocatable = false" in control
    # no schema: the script makes schema simpg itself, owned by the extension's owner
    assert not re.search(r"^schema\s*=", control, re.M)
    assert "CREATE SCHEMA simpg;" in schema.extension_script()


def test_parts_end_with_a_newline_so_cat_and_python_agree():
    parts = sorted((ROOT / "sql" / "functions").glob("*.sql"))
    assert parts[0].name == "00_header.sql"
    joined = b"".join(p.read_bytes() for p in parts)
    for part in parts:
        assert part.read_bytes().endswith(b"\n"), part.name
    assert schema.extension_script().encode() == joined


def test_extension_files_hold_control_install_and_upgrade_scripts():
    files = schema.extension_files()
    assert set(files) == {"simpg.control", "simpg--0.2.0.sql", "simpg--0.1.0.sql", "simpg--0.1.0.control",
                          "simpg--0.1.0--0.2.0.sql"}
    assert files["simpg--0.2.0.sql"] == schema.extension_script()
    assert files["simpg--0.1.0.sql"].startswith("-- simpg")  # as released, kept for upgrades
    assert "schema = 'simpg'" in files["simpg--0.1.0.control"]  # which 0.1.0's script expects


def test_upgrade_script_is_built_from_the_current_parts():
    # the update appends the install script's objects to its hand-written part, so an
    # updated install equals a fresh one (test_install compares them on a server); it is
    # built (here and by the Makefile, test_installcheck), never kept in the repository
    upgrade = schema.upgrade_script("simpg--0.1.0--0.2.0.sql")
    hand = (ROOT / "sql" / "upgrade" / "0.1.0--0.2.0.sql").read_text()
    guard = "\\echo Use \"ALTER EXTENSION simpg UPDATE TO '0.2.0'\" to load this file. \\quit\n"
    assert upgrade.startswith("-- complain if script is sourced in psql, rather than via ALTER EXTENSION\n"
                              + guard + "\n" + hand)
    assert "CREATE FUNCTION" not in upgrade.replace("CREATE OR REPLACE FUNCTION", "")
    assert "CREATE OR REPLACE FUNCTION simpg.hamming" in upgrade and "\n        CREATE SCHEMA simpg;" not in upgrade
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "sql"], capture_output=True, text=True).stdout
    if tracked:  # a source checkout (an sdist has no git): the built scripts are not committed
        assert "sql/simpg--0.1.0--0.2.0.sql" not in tracked.split()
        assert "sql/upgrade/0.1.0--0.2.0.sql" in tracked.split()


def test_psql_script_is_one_transaction_that_records_its_version():
    text = schema.psql_script()
    assert text.startswith("BEGIN;\n") and text.endswith("COMMIT;\n")
    assert "SET LOCAL search_path = pg_catalog, pg_temp;" in text
    assert "COMMENT ON SCHEMA simpg IS 'simpg version 0.2.0 (installed as a plain script)';" in text


def test_plain_script_drops_psql_guards_only():
    text = schema.script()
    assert "\\echo" not in text and "\\quit" not in text
    assert "CREATE FUNCTION simpg.hamming" in text
    assert len(text.splitlines()) == len(schema.extension_script().splitlines()) - 1

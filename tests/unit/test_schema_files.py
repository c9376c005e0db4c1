"""The packaged SQL files: one version, parts joined like the Makefile does."""

import re
from pathlib import Path

from simpg import schema

ROOT = Path(__file__).resolve().parents[2]


def test_version_lives_only_in_the_control_file():
    control = (ROOT / "sql" / "simpg.control").read_text()
    assert re.search(r"default_version = '0\.1\.1'", control)
    assert schema.default_version() == "0.1.1"
    assert "trusted = true" in control and "relocatable = false" in control and "schema = 'simpg'" in control


def test_parts_end_with_a_newline_so_cat_and_python_agree():
    parts = sorted((ROOT / "sql" / "functions").glob("*.sql"))
    assert parts[0].name == "00_header.sql"
    joined = b"".join(p.read_bytes() for p in parts)
    for part in parts:
        assert part.read_bytes().endswith(b"\n"), part.name
    assert schema.extension_script().encode() == joined


def test_extension_files_hold_control_install_and_upgrade_scripts():
    files = schema.extension_files()
    assert set(files) == {"simpg.control", "simpg--0.1.1.sql", "simpg--0.1.0.sql", "simpg--0.1.0--0.1.1.sql"}
    assert files["simpg--0.1.1.sql"] == schema.extension_script()
    assert files["simpg--0.1.0.sql"].startswith("-- simpg")  # as released, kept for upgrades


def test_upgrade_script_replaces_functions_with_their_current_text():
    # each function the upgrade replaces is byte for byte its definition in sql/functions/,
    # so an updated install equals a fresh one (test_install compares them on a server)
    upgrade = (ROOT / "sql" / "simpg--0.1.0--0.1.1.sql").read_text()
    starts = [m.start() for m in re.finditer(r"^CREATE (?:OR REPLACE )?FUNCTION ", upgrade, re.M)]
    defined = []
    for start, end in zip(starts, [*starts[1:], len(upgrade)], strict=True):
        chunk = upgrade[start:end]  # a definition ends with its $$ body or its SQL RETURN body
        body_end = re.search(r"^\$\$;\n" if "AS $$" in chunk else r"^    RETURN .*?;\n", chunk, re.S | re.M)
        assert body_end is not None, chunk[:80]
        defined.append(chunk[: body_end.end()])
    # replaced: create_index, plan, binomial, table_segments, near_query; added: layout_is, order_segments
    assert len(defined) == 7
    current = schema.extension_script()
    for definition in defined:
        assert definition.replace("CREATE OR REPLACE FUNCTION", "CREATE FUNCTION", 1) in current


def test_plain_script_drops_psql_guards_only():
    text = schema.script()
    assert "\\echo" not in text and "\\quit" not in text
    assert "CREATE FUNCTION simpg.hamming" in text
    assert len(text.splitlines()) == len(schema.extension_script().splitlines()) - 1

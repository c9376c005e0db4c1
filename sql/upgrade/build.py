"""Write sql/simpg--0.1.0--0.2.0.sql: the hand-written part, then the 0.2.0 objects.

The 0.2.0 objects are the install script's (sql/functions/*.sql) without its header
(the hand-written part takes the schema over instead), every function as CREATE OR
REPLACE: 0.1.0's functions keep their identity (prefix columns and your own views may
depend on them), new ones are created.
Run after changing sql/functions/ (tests/unit/test_schema_files.py checks the file).

    python3 sql/upgrade/build.py
"""

from __future__ import annotations

import re
from pathlib import Path

SQL = Path(__file__).resolve().parent.parent
GUARD = "\\echo Use \"ALTER EXTENSION simpg UPDATE TO '0.2.0'\" to load this file. \\quit\n"


def upgrade_script() -> str:
    """The text of sql/simpg--0.1.0--0.2.0.sql."""
    parts = sorted((SQL / "functions").glob("*.sql"))
    body = "".join(p.read_text(encoding="utf-8") for p in parts if p.name != "00_header.sql")
    body = re.sub(r"^CREATE FUNCTION simpg\.", "CREATE OR REPLACE FUNCTION simpg.", body, flags=re.M)
    hand = (SQL / "upgrade" / "0.1.0--0.2.0.sql").read_text(encoding="utf-8")
    return "-- complain if script is sourced in psql, rather than via ALTER EXTENSION\n" + GUARD + "\n" + hand + "\n" + body


if __name__ == "__main__":
    (SQL / "simpg--0.1.0--0.2.0.sql").write_text(upgrade_script(), encoding="utf-8")

"""simpg.reference renders the reference table from its one definition, the model Document.

The database side (the DDL run, the migrations, an earlier table moved forward) is in
tests/integration/test_migrations.py.
"""

from __future__ import annotations

import subprocess
import sys

from simpg import reference
from simpg.sqlalchemy.documents import Document
from simpg.sqlalchemy.index import table_indexes


def test_the_names_are_the_models() -> None:
    table = Document.__table__
    assert table.name == reference.TABLE
    assert tuple(c for c in table.c.keys() if c.startswith("sketch_b")) == reference.BAND_COLUMNS


def test_the_statements_leave_the_prefix_columns_to_simpg_create_index() -> None:
    (spec,) = table_indexes(Document.__table__).values()
    assert spec.layout.k == 4 and spec.layout.levels == (6,) and len(spec.prefix_columns) == 15
    decisions = [s.as_string() for s in reference.decisions_statements()]
    *documents, = (s.as_string() for s in reference.statements())
    assert documents[-len(decisions):] == decisions and decisions[0].startswith("CREATE TABLE simpg_decisions (")
    create_table, *indexes, create_index, create_passage_index = documents[:-len(decisions)]
    assert create_table.startswith("CREATE TABLE simpg_documents (\n    id BIGSERIAL NOT NULL,\n")
    assert "simhash_p" not in create_table and "\t" not in create_table
    plain = [c.name for c in Document.__table__.c if "simpg_prefix_of" not in c.info]
    assert [line.split()[0] for line in create_table.splitlines()[1:-2]] == plain
    assert indexes == [f"CREATE INDEX simpg_documents_{c}_idx ON simpg_documents ({c})"
                       for c in ("collection", *reference.BAND_COLUMNS)]
    assert create_index == "SELECT simpg.create_index('simpg_documents', 'simhash', k => 4, blocks => 6)"
    assert create_passage_index == "SELECT simpg.create_passage_index('simpg_documents', 'passages', 22, 46, NULL)"
    assert reference.script() == "".join(s + ";\n" for s in (create_table, *indexes, create_index,
                                                              create_passage_index, *decisions))


def test_importing_the_module_needs_no_sqlalchemy() -> None:
    # simpg dedup imports it: SQLAlchemy is loaded only when the table is created or checked
    code = "import sys, simpg.reference, simpg.dedup; print('sqlalchemy' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "False\n"


def test_python_m_prints_the_script() -> None:
    run = subprocess.run([sys.executable, "-m", "simpg.reference"], capture_output=True, text=True, check=True)
    assert run.stdout == reference.script()

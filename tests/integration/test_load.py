"""A short run of bench/load.py: 8 concurrent clients, then its exact audit.

The full run (minutes, figures in docs/benchmarks.md) is ``python bench/load.py``;
CI runs this short one on every server.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

LOAD = Path(__file__).resolve().parents[2] / "bench" / "load.py"


def load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simpg_bench_load", LOAD)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_eight_clients_leave_exactly_what_they_did(db):
    done = subprocess.run(
        [
            sys.executable,
            str(LOAD),
            "--dsn",
            db.dsn,
            "--clients",
            "8",
            "--seconds",
            "8",
            "--rows",
            "3000",
            "--verify-every",
            "10",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(done.stdout)
    assert done.returncode == 0, json.dumps(result, indent=2) + done.stderr
    assert result["ok"] and result["clients"] == 8
    for kind, ops in result["ops"].items():
        assert ops["count"] > 0, kind
    assert result["inserted"] > 0 and result["deleted"] > 0 and result["verified_samples"] >= 20
    assert result["rows"] == result["seeded"] + result["inserted"] - result["deleted"]
    assert db.conn.execute("SELECT to_regclass('simpg_load')").fetchone() == (None,)


def test_audit_notices_lost_duplicated_and_stale_rows(db):
    load = load_module()
    seeded, _ = load.setup(db.dsn, "audited", 200, 2, seed=3)
    log = load.ClientLog()
    assert load.audit(db.dsn, "audited", 2, seeded, [log])["lost_rows"] == 0
    victim = min(seeded)
    db.conn.execute("DELETE FROM audited WHERE id = %s", [victim])
    assert load.audit(db.dsn, "audited", 2, seeded, [log])["lost_rows"] == 1
    log.deleted.add(victim)
    db.conn.execute("INSERT INTO audited (token, simhash, body) VALUES (gen_random_uuid(), 1, 'x')")
    result = load.audit(db.dsn, "audited", 2, seeded, [log])
    assert result["lost_rows"] == 0 and result["unexpected_rows"] == 1
    assert result["index_problems"] == []
    # a prefix column turned into a plain one (which could then hold anything): simpg's
    # verifier says the index is damaged
    prefix = db.conn.execute("SELECT prefix_columns[1] FROM simpg.indexes").fetchone()[0]
    db.conn.execute(f'ALTER TABLE audited ALTER COLUMN "{prefix}" DROP EXPRESSION')
    problems = load.audit(db.dsn, "audited", 2, seeded, [log])["index_problems"]
    assert problems and problems[0].startswith("missing prefix column: table 0 of k=2")

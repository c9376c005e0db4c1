"""A wheel alone carries the SQL files, so it can install the extension anywhere."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_carries_the_sql_files(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True)
    (wheel,) = tmp_path.glob("simpg-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for source in sorted((ROOT / "sql").rglob("*.sql")) + [ROOT / "sql" / "simpg.control"]:
            if source.name.startswith("simpg--") and source.name.count("--") == 1:
                continue  # a Makefile build product, not a source
            packaged = "simpg/sql/" + source.relative_to(ROOT / "sql").as_posix()
            assert packaged in names
            assert zf.read(packaged) == source.read_bytes()
        assert "simpg/schema.py" in names
        assert "simpg/py.typed" in names  # PEP 561: type checkers read simpg's annotations
        # the review report's page, styles, scripts and jsdiff with its licence (issue 32)
        for asset in sorted((ROOT / "simpg" / "review" / "assets").iterdir()):
            assert zf.read(f"simpg/review/assets/{asset.name}") == asset.read_bytes()

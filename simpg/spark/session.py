"""A SparkSession set up for simpg's engine."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from simpg.exc import SimpgError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULTS", "require_pyspark", "session"]

#: Settings applied unless the caller gives its own.
DEFAULTS = {
    "spark.ui.showConsoleProgress": "true",  # the stage progress bar on stderr
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.adaptive.skewJoin.enabled": "true",  # the joins of pairs to their rows
    "spark.sql.session.timeZone": "UTC",
}


def require_pyspark() -> None:
    """Fail with one line when pyspark (or pyarrow, which its Arrow functions need) is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as err:
        raise SimpgError(f"the Spark engine needs {err.name}: pip install 'simpg[spark]'") from None


def session(master: str | None = None, conf: Mapping[str, str] | None = None, app_name: str = "simpg",
            ) -> SparkSession:
    """The active SparkSession, or a new one (``master`` e.g. ``local[2]``; default: spark-submit's, else local[*]).

    Settings in ``conf`` (``spark.driver.memory``, ...) apply when the session is new. On a local
    master the workers run this interpreter (the one that has simpg and pyarrow), not PATH's
    ``python3``, unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` says otherwise.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    settings = {**DEFAULTS, **(conf or {})}
    if "spark.driver.extraJavaOptions" not in settings:  # quiet logs, unless the caller set its own options
        log4j = Path(__file__).with_name("log4j2.properties")
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log4j.as_uri()}"
    if (master is None or master.startswith("local")) and "spark.pyspark.python" not in settings:
        # pyspark's driver reads only this variable when it starts the workers
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()

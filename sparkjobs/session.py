"""The one SparkSession builder: every job, command, task and test gets its session here.

Spark binds the machine's external interface and serves a UI on *:4040 unless told otherwise, and its Python
workers run whatever ``python3`` is first on the PATH (without pandas or pyarrow): so the driver binds 127.0.0.1
unless ``SPARK_LOCAL_IP`` says else (set it to the driver's address when the master is on another host), workers run
this interpreter, the UI and the console progress bar are off (progress goes to the job run's display instead), and
session times are UTC like the database. The executors need two Django-free modules of the project (the transforms
and :mod:`stats.histogram`, used by a UDF): they are shipped as a zip, so a cluster needs no copy of the project.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
import zipfile
from pathlib import Path

from django.conf import settings
from pyspark.sql import SparkSession

from sparkjobs.config import SparkConfig

APP_NAME = "mqcloud-sparkjobs"
BASE_DIR = Path(__file__).resolve().parent.parent
# What executors import: the transforms (their UDFs are pickled by reference) and the histogram they call.
# Zips of older code are removed once no running job can still be using them.
STALE_ZIP_SECONDS = 86400
EXECUTOR_MODULES = ("stats/__init__.py", "stats/histogram.py", "sparkjobs/__init__.py", "sparkjobs/transforms")


def spark_session(config: SparkConfig) -> SparkSession:
    """A session on ``config.master``: the running one if it already uses that master, else a new one (a running
    session on another master is stopped first: a process holds one SparkContext)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == config.master:
            return active
        active.stop()
    # py4j logs every connection it opens and closes at INFO (also from finalizers at interpreter exit).
    logging.getLogger("py4j").setLevel(logging.WARNING)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    work_dir = Path(settings.VAR_DIR) / "spark"
    (work_dir / "tmp").mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    if config.java_options:
        builder = builder.config("spark.driver.extraJavaOptions", config.java_options).config(
            "spark.executor.extraJavaOptions", config.java_options
        )
    session = (
        builder.master(config.master)
        .appName(APP_NAME)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", str(work_dir / "tmp"))
        .config("spark.sql.warehouse.dir", (work_dir / "warehouse").as_uri())
        # Rollups shuffle a few aggregates per subject: on a local master, a couple of partitions per core (Spark's
        # fixed 200 costs more in task overhead than the data); on a cluster adaptive execution coalesces them.
        .config("spark.sql.shuffle.partitions", str(_shuffle_partitions(config)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    session.sparkContext.addPyFile(str(_executor_zip(work_dir)))
    return session


def _shuffle_partitions(config: SparkConfig) -> int:
    if not config.is_local:
        return 200
    cores = config.master.removeprefix("local").strip("[]")
    return 2 * (os.cpu_count() or 1 if cores in {"", "*"} else int(cores))


def _executor_zip(work_dir: Path) -> Path:
    """The executor modules zipped (named by content, so a changed module ships as a new file)."""
    files: list[Path] = []
    for entry in EXECUTOR_MODULES:
        path = BASE_DIR / entry
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(BASE_DIR)).encode())
        digest.update(path.read_bytes())
    target = work_dir / f"executor-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w") as archive:
            for path in files:
                archive.write(path, str(path.relative_to(BASE_DIR)))
        partial.replace(target)
        for old in work_dir.glob("executor-*.zip"):
            if old != target and time.time() - old.stat().st_mtime > STALE_ZIP_SECONDS:
                old.unlink(missing_ok=True)
    return target

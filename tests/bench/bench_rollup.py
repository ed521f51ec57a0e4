"""The Spark rollups on local[2] over one day of minute data for 10,000 topics: 14.4 million TopicMinute rows.

The day is generated straight into the Parquet lake with numpy and pyarrow (24 hour partitions of 600,000 rows,
written through the lake's own writer) rather than inserted into SQLite and exported: at the export rate this bench
measures (``rollup_extract_rows_per_s``, from SQLite with the real exporter, on 60,000 rows), 14.4 million rows
would take minutes of SQLite inserts and reads that say nothing about Spark. The other minute tables of the day
are exported from the (empty apart from the cluster's minutes) throwaway database by the jobs themselves.

Times are end to end through the job runner, on a session already started (a Celery worker keeps its session;
``rollup_session_start_seconds`` is its start): extract (partitions already there), Spark read and transform,
results collected and loaded into the throwaway SQLite database in one transaction.

* ``rollup_hourly_seconds``: the 10-minute and hourly rollups of one hour (600,000 rows in, 70,000 rows out), after
  a first hourly run has warmed the JVM up (``rollup_hourly_cold_seconds``);
* ``rollup_daily_seconds``: the daily rollups of the day (14.4 million rows in, 10,000 out);
* ``rollup_rows_per_s_per_core``: the daily run's rows divided by its seconds and by the 2 cores.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from django.db import connection
from django.test.utils import override_settings, setup_test_environment, teardown_test_environment

TOPICS = 10_000
MINUTES_PER_HOUR = 60
CORES = 2
MASTER = f"local[{CORES}]"
DAY = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
CLUSTER = 1
EXTRACT_TOPICS = 1_000


class _NoMigrations(dict):
    """Every app's tables straight from its models (as ``pytest --nomigrations`` builds them)."""

    def __contains__(self, item):
        return True

    def __getitem__(self, item):
        return None


def _topic_hour(hour: dt.datetime, names: pa.Array, rng: np.random.Generator) -> pa.RecordBatch:
    from sparkjobs.extract.tables import TOPIC_MINUTE

    rows = TOPICS * MINUTES_PER_HOUR
    start_us = int(hour.timestamp()) * 1_000_000
    minutes = np.repeat(start_us + np.arange(MINUTES_PER_HOUR, dtype=np.int64) * 60_000_000, TOPICS)
    put_nums = rng.poisson(lam=rng.uniform(0, 200, TOPICS), size=(MINUTES_PER_HOUR, TOPICS)).reshape(rows)
    columns = {
        "cluster_id": pa.array(np.full(rows, CLUSTER, dtype=np.int32)),
        "topic": pa.concat_arrays([names] * MINUTES_PER_HOUR),
        "minute": pa.array(minutes, type=pa.timestamp("us", tz="UTC")),
        "put_nums": pa.array(put_nums.astype(np.int64)),
        "put_size": pa.array(put_nums.astype(np.int64) * 1024),
    }
    return pa.RecordBatch.from_arrays(list(columns.values()), schema=TOPIC_MINUTE.schema)


def _generate_day(lake) -> int:
    from sparkjobs.extract.tables import CLUSTER_MINUTE, TOPIC_MINUTE

    rng = np.random.default_rng(7)
    names = pa.array([f"TOPIC_{i:05d}" for i in range(TOPICS)])
    rows = 0
    for h in range(24):
        hour = DAY + dt.timedelta(hours=h)
        rows += lake.write(
            lake.partition(TOPIC_MINUTE.name, hour), TOPIC_MINUTE.schema, [_topic_hour(hour, names, rng)]
        )
        minutes = [hour + dt.timedelta(minutes=m) for m in range(MINUTES_PER_HOUR)]
        clusters = pa.table(
            {
                "cluster_id": pa.array([CLUSTER] * MINUTES_PER_HOUR, pa.int32()),
                "minute": pa.array(minutes, pa.timestamp("us", tz="UTC")),
                "put_nums": pa.array([1] * MINUTES_PER_HOUR, pa.int64()),
                "put_size": pa.array([1] * MINUTES_PER_HOUR, pa.int64()),
                "get_nums": pa.array([1] * MINUTES_PER_HOUR, pa.int64()),
                "get_size": pa.array([1] * MINUTES_PER_HOUR, pa.int64()),
                "brokers": pa.array([2] * MINUTES_PER_HOUR, pa.int32()),
                "brokers_down": pa.array([0] * MINUTES_PER_HOUR, pa.int32()),
            },
            schema=CLUSTER_MINUTE.schema,
        )
        lake.write(lake.partition(CLUSTER_MINUTE.name, hour), CLUSTER_MINUTE.schema, clusters.to_batches())
    return rows


def _extract_rate(lake) -> float:
    """Rows per second the exporter reads from the database and writes to the lake (one hour, 1,000 topics)."""
    from sparkjobs.extract.export import export_partition
    from sparkjobs.extract.tables import TOPIC_MINUTE
    from stats.models import TopicMinute

    hour = DAY - dt.timedelta(days=1)
    TopicMinute.objects.bulk_create(
        (
            TopicMinute(
                cluster_id=CLUSTER, topic=f"T{i}", minute=hour + dt.timedelta(minutes=m), put_nums=m, put_size=m
            )
            for m in range(MINUTES_PER_HOUR)
            for i in range(EXTRACT_TOPICS)
        ),
        batch_size=5000,
    )
    started = time.perf_counter()
    exported = export_partition(lake, TOPIC_MINUTE, hour)
    return exported.rows / (time.perf_counter() - started)


def _measure(tmp: Path) -> dict[str, float]:
    from sparkjobs.config import SparkConfig
    from sparkjobs.extract.lake import Lake
    from sparkjobs.jobs.runner import run_job
    from sparkjobs.session import spark_session
    from stats.models import TopicRollup

    config = SparkConfig(master=MASTER, lake_url=str(tmp / "lake"))
    lake = Lake(config.lake_uri)
    figures: dict[str, float] = {}
    started = time.perf_counter()
    rows = _generate_day(lake)
    figures["rollup_generate_seconds"] = time.perf_counter() - started
    figures["rollup_extract_rows_per_s"] = _extract_rate(lake)

    started = time.perf_counter()
    spark = spark_session(config)
    figures["rollup_session_start_seconds"] = time.perf_counter() - started
    try:
        for name, label, start in [
            ("hourly", "rollup_hourly_cold_seconds", DAY),
            ("hourly", "rollup_hourly_seconds", DAY + dt.timedelta(hours=1)),
            ("daily", "rollup_daily_seconds", DAY),
        ]:
            started = time.perf_counter()
            run = run_job(name, start, config=config, spark=spark)
            figures[label] = time.perf_counter() - started
            figures[f"{label.removesuffix('_seconds')}_rows_read"] = run.rows_read
    finally:
        spark.stop()
    if figures["rollup_daily_rows_read"] < rows or TopicRollup.objects.filter(resolution="1d").count() != TOPICS:
        raise RuntimeError("the daily rollup did not cover the generated day")
    figures["rollup_rows_per_s_per_core"] = rows / figures["rollup_daily_seconds"] / CORES
    return figures


def run() -> dict[str, float]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp, override_settings(MIGRATION_MODULES=_NoMigrations()):
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            return _measure(Path(tmp))
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

"""Where the jobs run and where the lake is, from settings (``SPARK_MASTER``, ``SPARK_LAKE_URL``, and
``SPARK_JAVA_OPTIONS`` for the JVMs); a command-line ``--master`` overrides the master. Nothing else in
``sparkjobs`` reads settings for these."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

_MASTER = re.compile(r"^(local(\[(\*|\d+)\])?|spark://[^/\s]+|yarn|k8s://\S+)$")


@dataclass(frozen=True)
class SparkConfig:
    master: str
    # A local folder or a URL any Hadoop-compatible file system understands (file://, hdfs://, s3a://, ...).
    lake_url: str
    # Extra JVM options for the driver and executors (they apply when the JVM starts: the first session of a
    # process). Empty in production; the tests start JIT-light JVMs, which warm up in half the time.
    java_options: str = ""

    def with_master(self, master: str | None) -> SparkConfig:
        return self if not master else replace(self, master=check_master(master))

    @property
    def is_local(self) -> bool:
        return self.master.startswith("local")

    @property
    def lake_uri(self) -> str:
        """The lake as Spark reads it: a URL (a plain folder becomes file:///absolute/path)."""
        if "://" in self.lake_url:
            return self.lake_url.rstrip("/")
        return Path(self.lake_url).resolve().as_uri()


def check_master(master: str) -> str:
    if not _MASTER.match(master):
        raise ValueError(f"not a Spark master URL: {master!r} (expected local[*], local[N] or spark://host:port)")
    return master


def spark_config() -> SparkConfig:
    return SparkConfig(
        master=check_master(settings.SPARK_MASTER),
        lake_url=settings.SPARK_LAKE_URL,
        java_options=settings.SPARK_JAVA_OPTIONS,
    )

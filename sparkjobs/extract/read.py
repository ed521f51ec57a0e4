"""Lake partitions and database rows as Spark DataFrames (the other half of Extract)."""

from __future__ import annotations

import datetime as dt

from django.db import models
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from sparkjobs.extract.export import hours
from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import TableSpec


def read_window(spark: SparkSession, lake: Lake, spec: TableSpec, start: dt.datetime, end: dt.datetime) -> DataFrame:
    """A table's exported hours ``start`` .. ``end`` (every one must be in the lake: export them first). The files
    are named one by one, so Spark lists no other partition of the lake."""
    files = [lake.uri_of(lake.partition(spec.name, hour)) for hour in hours(start, end)]
    return spark.read.schema(from_arrow_schema(spec.schema)).parquet(*files)


def read_rows(spark: SparkSession, spec: TableSpec, rows: models.QuerySet) -> tuple[DataFrame, int]:
    """Database rows straight into a DataFrame, for small inputs (the daily rollups rankings are made from), and
    how many rows that was."""
    table = spec.table(rows)
    if not table.num_rows:
        # PySpark cannot convert an Arrow table without chunks; an empty frame needs only the schema.
        return spark.createDataFrame([], from_arrow_schema(spec.schema)), 0
    return spark.createDataFrame(table), table.num_rows

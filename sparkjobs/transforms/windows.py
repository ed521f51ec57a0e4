"""Rollup windows: fixed lengths aligned on the Unix epoch, i.e. on UTC minutes, hours and days.

A rollup can be asked for several window lengths at once (``windows``: (resolution label, seconds) pairs, e.g. the
10-minute and the hourly rollups of an hour): each input row is then counted once per length, in one aggregation
instead of one per length.
"""

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

Windows = Sequence[tuple[str, int]]


def window_start(column: str, seconds: int) -> Column:
    """The start of the ``seconds``-long window the timestamp ``column`` falls in."""
    return F.timestamp_seconds(F.floor(F.unix_seconds(F.col(column)) / seconds) * seconds)


def in_windows(frame: DataFrame, windows: Windows, column: str = "minute") -> DataFrame:
    """``frame`` with ``resolution`` and ``start``: each row once per window length, in the window it falls in."""
    if len(windows) == 1:
        ((resolution, seconds),) = windows
        return frame.withColumn("resolution", F.lit(resolution)).withColumn("start", window_start(column, seconds))
    choices = F.array(
        *[
            F.struct(F.lit(resolution).alias("resolution"), window_start(column, seconds).alias("start"))
            for resolution, seconds in windows
        ]
    )
    return (
        frame.withColumn("_window", F.explode(choices))
        .select("*", "_window.resolution", "_window.start")
        .drop("_window")
    )

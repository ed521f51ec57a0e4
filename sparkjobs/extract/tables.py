"""What is exported: for each table, the model, the columns (and their Arrow types) and how a database value
becomes a lake value. Typed columns, not JSON: a producer's histogram becomes a bucket -> count map and its
sum/min/max, so Spark merges histograms with plain aggregations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from django.db import models

from stats.models import (
    BrokerMinute,
    ClusterMinute,
    ClusterRollup,
    ConsumeMinute,
    ConsumeRollup,
    ProducerLatencyRollup,
    ServerSample,
    TopicMinute,
    TopicRollup,
)
from stats.models.producers import ProducerMinute

# Rows read from the database per Arrow batch (a row group in the lake): bounds the extractor's memory.
CHUNK_ROWS = 50_000

TIMESTAMP = pa.timestamp("us", tz="UTC")
_ARROW_TYPES = {
    "IntegerField": pa.int32(),
    "BigIntegerField": pa.int64(),
    "FloatField": pa.float64(),
    "CharField": pa.string(),
    "TextField": pa.string(),
    "BooleanField": pa.bool_(),
    "DateTimeField": TIMESTAMP,
}


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    source: str
    convert: Callable[[object], object] | None = None


@dataclass(frozen=True)
class TableSpec:
    """A lake table: ``model`` rows selected by ``time_field`` and written as ``columns``."""

    name: str
    model: type[models.Model]
    time_field: str
    columns: tuple[Column, ...]
    sources: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(dict.fromkeys(column.source for column in self.columns)))

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(column.name, column.type) for column in self.columns])

    def batches(self, queryset: models.QuerySet, chunk_rows: int = CHUNK_ROWS) -> Iterator[pa.RecordBatch]:
        """The queryset's rows as record batches of at most ``chunk_rows`` rows, read with a streaming cursor."""
        position = {source: index for index, source in enumerate(self.sources)}
        chunk: list[tuple] = []
        for row in queryset.values_list(*self.sources).iterator(chunk_size=min(chunk_rows, 10_000)):
            chunk.append(row)
            if len(chunk) >= chunk_rows:
                yield self._batch(chunk, position)
                chunk = []
        if chunk:
            yield self._batch(chunk, position)

    def table(self, queryset: models.QuerySet) -> pa.Table:
        return pa.Table.from_batches(list(self.batches(queryset)), schema=self.schema)

    def _batch(self, rows: list[tuple], position: dict[str, int]) -> pa.RecordBatch:
        values = list(zip(*rows, strict=True))
        arrays = []
        for column in self.columns:
            raw = values[position[column.source]]
            if column.convert is not None:
                raw = [None if value is None else column.convert(value) for value in raw]
            arrays.append(pa.array(raw, type=column.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _columns(model: type[models.Model], names: Iterable[str]) -> tuple[Column, ...]:
    return tuple(Column(name, _ARROW_TYPES[model._meta.get_field(name).get_internal_type()], name) for name in names)


def _histogram_columns() -> tuple[Column, ...]:
    """The serialized histogram ({"v", "counts", "sum_ms", "max_ms", "min_ms"}) as four typed columns."""
    return (
        Column(
            "hist_counts",
            pa.map_(pa.int32(), pa.int64()),
            "histogram",
            lambda h: [(int(index), n) for index, n in h["counts"].items()],
        ),
        Column("hist_sum_ms", pa.float64(), "histogram", lambda h: float(h["sum_ms"])),
        Column("hist_min_ms", pa.float64(), "histogram", lambda h: float(h["min_ms"])),
        Column("hist_max_ms", pa.float64(), "histogram", lambda h: float(h["max_ms"])),
    )


EXCEPTIONS = pa.map_(pa.string(), pa.int64())


def _exceptions_column() -> Column:
    return Column("exceptions", EXCEPTIONS, "exceptions", lambda counts: list(counts.items()))


# --- the minute tables, exported per closed hour to the lake --------------------------------------------------------

CLUSTER_MINUTE = TableSpec(
    "cluster_minute",
    ClusterMinute,
    "minute",
    _columns(
        ClusterMinute,
        ["cluster_id", "minute", "put_nums", "put_size", "get_nums", "get_size", "brokers", "brokers_down"],
    ),
)
BROKER_MINUTE = TableSpec(
    "broker_minute",
    BrokerMinute,
    "minute",
    _columns(
        BrokerMinute,
        ["cluster_id", "broker_name", "broker_id", "minute", "up", "put_nums", "put_size", "get_nums", "get_size"],
    ),
)
TOPIC_MINUTE = TableSpec(
    "topic_minute",
    TopicMinute,
    "minute",
    _columns(TopicMinute, ["cluster_id", "topic", "minute", "put_nums", "put_size"]),
)
CONSUME_MINUTE = TableSpec(
    "consume_minute",
    ConsumeMinute,
    "minute",
    _columns(
        ConsumeMinute,
        ["cluster_id", "group", "topic", "minute", "get_nums", "get_size", "sndbck_nums", "lag", "lag_seconds"],
    ),
)
SERVER_SAMPLE = TableSpec(
    "server_sample",
    ServerSample,
    "minute",
    _columns(
        ServerSample,
        [
            "host",
            "minute",
            "cpu_percent",
            "cpu_iowait_percent",
            "load1",
            "mem_total",
            "mem_used",
            "swap_used",
            "net_in_bytes_per_s",
            "net_out_bytes_per_s",
            "disk_read_bytes_per_s",
            "disk_write_bytes_per_s",
            "disk_busy_percent",
            "tcp_established",
            "tcp_time_wait",
        ],
    ),
)
PRODUCER_MINUTE = TableSpec(
    "producer_minute",
    ProducerMinute,
    "minute",
    (
        *_columns(
            ProducerMinute,
            ["cluster_id", "producer_group", "topic", "client_id", "broker_name", "minute", "count", "exception_count"],
        ),
        _exceptions_column(),
        *_histogram_columns(),
    ),
)

MINUTE_TABLES = (CLUSTER_MINUTE, BROKER_MINUTE, TOPIC_MINUTE, CONSUME_MINUTE, SERVER_SAMPLE, PRODUCER_MINUTE)

# --- daily rollups, read straight from the database by the rankings job (one row per subject and day) -------------

TOPIC_DAY = TableSpec(
    "topic_day", TopicRollup, "start", _columns(TopicRollup, ["cluster_id", "topic", "start", "put_nums"])
)
CLUSTER_DAY = TableSpec(
    "cluster_day", ClusterRollup, "start", _columns(ClusterRollup, ["cluster_id", "start", "collected_minutes"])
)
CONSUME_DAY = TableSpec(
    "consume_day",
    ConsumeRollup,
    "start",
    _columns(ConsumeRollup, ["cluster_id", "group", "topic", "start", "sndbck_nums", "lag_seconds_max"]),
)
PRODUCER_DAY = TableSpec(
    "producer_day",
    ProducerLatencyRollup,
    "start",
    (
        *_columns(
            ProducerLatencyRollup,
            ["cluster_id", "producer_group", "topic", "client_id", "broker_name", "start", "count", "exception_count"],
        ),
        _exceptions_column(),
    ),
)

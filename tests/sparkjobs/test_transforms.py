"""The transforms are pure DataFrame -> DataFrame functions: small known inputs, compared with the expected
DataFrames row by row (pyspark.testing.assertDataFrameEqual) on the shared local session."""

import datetime as dt

import pytest
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.testing import assertDataFrameEqual

from sparkjobs.extract.tables import (
    BROKER_MINUTE,
    CLUSTER_DAY,
    CLUSTER_MINUTE,
    CONSUME_DAY,
    CONSUME_MINUTE,
    PRODUCER_DAY,
    PRODUCER_MINUTE,
    SERVER_SAMPLE,
    TOPIC_DAY,
    TOPIC_MINUTE,
)
from sparkjobs.transforms import latency, rankings, rollups
from sparkjobs.transforms.windows import in_windows
from stats.histogram import bucket_index, bucket_value

pytestmark = pytest.mark.slow

T0 = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
TEN_AND_HOUR = [("10m", 600), ("1h", 3600)]
DAY = dt.timedelta(days=1)


def at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def frame(spark, spec, rows: list[tuple]):
    """A DataFrame of ``rows`` shaped like the lake table ``spec``."""
    return spark.createDataFrame(rows, schema=from_arrow_schema(spec.schema))


def clusters(spark, minutes, cluster_id=1, down=()):
    return frame(
        spark,
        CLUSTER_MINUTE,
        [(cluster_id, at(n), *((None,) * 4 if n in down else (10, 100, 5, 50)), 1, int(n in down)) for n in minutes],
    )


def test_a_minute_counts_once_per_window_length(spark):
    minutes = spark.createDataFrame([(at(25),), (at(70),)], "minute timestamp")

    windowed = in_windows(minutes, TEN_AND_HOUR).select("resolution", "start")

    expected = [("10m", at(20)), ("1h", at(0)), ("10m", at(70)), ("1h", at(60))]
    assertDataFrameEqual(windowed, spark.createDataFrame(expected, "resolution string, start timestamp"))


def test_topic_rollup_sums_known_minutes_over_the_clusters_collected_minutes(spark):
    # Collected 0..11 except 3; minute 7 NULL (a broker down), minute 8 no row (a zero).
    collected = rollups.collected_minutes(clusters(spark, [n for n in range(12) if n != 3]), windows=TEN_AND_HOUR)
    topics = frame(
        spark,
        TOPIC_MINUTE,
        [(1, "orders", at(n), None if n == 7 else n, None if n == 7 else 10 * n) for n in range(12) if n not in (3, 8)],
    )

    rolled = rollups.topic_rollup(topics, collected, windows=TEN_AND_HOUR)

    known = [n for n in range(10) if n not in (3, 7, 8)]
    expected = [
        ("10m", at(0), 9, 1, "orders", sum(known), 10 * sum(known)),
        ("10m", at(10), 2, 1, "orders", 21, 210),
        ("1h", at(0), 11, 1, "orders", sum(known) + 21, 10 * (sum(known) + 21)),
    ]
    schema = (
        "resolution string, start timestamp, minutes int, cluster_id int, topic string, put_nums long, put_size long"
    )
    assertDataFrameEqual(rolled, spark.createDataFrame(expected, schema))


def test_consume_rollup_averages_lag_over_known_minutes_absent_rows_being_zero(spark):
    collected = rollups.collected_minutes(clusters(spark, range(10)), windows=[("10m", 600)])
    # Lag 4 and 8 in two minutes, unknown in one, no row (no lag) in the seven others: the average is 12 / 9.
    consumes = frame(
        spark,
        CONSUME_MINUTE,
        [
            (1, "billing", "orders", at(0), 10, 100, 1, 4, 2.0),
            (1, "billing", "orders", at(1), 20, 200, 0, 8, 6.0),
            (1, "billing", "orders", at(2), None, None, None, None, None),
        ],
    )

    rolled = rollups.consume_rollup(consumes, collected, windows=[("10m", 600)])

    expected = [("10m", at(0), 10, 1, "billing", "orders", 30, 300, 1, 8, 12 / 9, 6.0, 8.0 / 9)]
    schema = (
        "resolution string, start timestamp, minutes int, cluster_id int, group string, topic string, get_nums long, "
        "get_size long, sndbck_nums long, lag_max long, lag_avg double, lag_seconds_max double, lag_seconds_avg double"
    )
    assertDataFrameEqual(rolled, spark.createDataFrame(expected, schema))


def test_cluster_totals_sum_complete_minutes_and_brokers_count_their_minutes_down(spark):
    minutes = clusters(spark, range(4), down={2})
    brokers = frame(
        spark,
        BROKER_MINUTE,
        [(1, "broker-a", 0, at(n), n != 2, None if n == 2 else 7, None, None if n == 2 else 3, None) for n in range(4)],
    )

    cluster = rollups.cluster_rollup(minutes, windows=[("1h", 3600)])
    broker = rollups.broker_rollup(brokers, windows=[("1h", 3600)])

    assertDataFrameEqual(
        cluster,
        spark.createDataFrame(
            [("1h", at(0), 3, 1, 30, 300, 15, 150, 4, 1)],
            "resolution string, start timestamp, minutes int, cluster_id int, put_nums long, put_size long, "
            "get_nums long, get_size long, collected_minutes int, minutes_incomplete int",
        ),
    )
    assertDataFrameEqual(
        broker,
        spark.createDataFrame(
            [("1h", at(0), 4, 1, "broker-a", 0, 21, None, 9, None, 1)],
            "resolution string, start timestamp, minutes int, cluster_id int, broker_name string, broker_id int, "
            "put_nums long, put_size long, get_nums long, get_size long, minutes_down int",
        ),
    )


def test_server_rollup_keeps_averages_and_peaks_of_the_samples_read(spark):
    rest = (None,) * 7
    samples = frame(
        spark,
        SERVER_SAMPLE,
        [
            ("h", at(0), 10.0, 1.0, 0.5, 100, 40, 0, *rest),
            ("h", at(5), 30.0, 3.0, 1.5, 100, 60, 2, *rest),
            ("h", at(10), None, None, None, None, None, None, *rest),
        ],
    )

    rolled = rollups.server_rollup(samples, windows=[("1h", 3600)]).select(
        "minutes", "mem_total", "cpu_percent_avg", "cpu_percent_max", "load1_max", "mem_used_avg", "swap_used_max"
    )

    expected = [(2, 100, 20.0, 30.0, 1.5, 50.0, 2)]
    schema = (
        "minutes int, mem_total long, cpu_percent_avg double, cpu_percent_max double, load1_max double, "
        "mem_used_avg double, swap_used_max long"
    )
    assertDataFrameEqual(rolled, spark.createDataFrame(expected, schema))


B10, B20, B390 = bucket_index(10.0), bucket_index(20.0), bucket_index(390.0)


def producer(n, client, broker, counts, low, high, total, exceptions=None):
    failed = sum((exceptions or {}).values())
    return (
        1,
        "checkout",
        "orders",
        client,
        broker,
        at(n),
        sum(counts.values()),
        failed,
        exceptions or {},
        counts,
        total,
        low,
        high,
    )


def test_latency_rollup_adds_bucket_counts_and_takes_percentiles_of_the_merge(spark):
    minutes = frame(
        spark,
        PRODUCER_MINUTE,
        [
            producer(0, "c1", "broker-a", {B10: 2, B20: 1}, 10.0, 20.0, 40.0, {"RemotingTimeoutException": 1}),
            producer(1, "c2", "broker-a", {B10: 1, B390: 1}, 10.0, 390.0, 400.0),
            producer(1, "c1", "broker-b", {}, 0.0, 0.0, 0.0, {"MQBrokerException": 2}),
        ],
    )

    rolled = latency.latency_rollup(minutes, windows=[("1h", 3600)], grains={"group": ("producer_group",)})

    # Merged: 10 ms x3, 20 ms, 390 ms; rank 3 of 5 (p50) is in the bucket of 10 ms (its value clamped into
    # [min, max]), rank 5 (p90, p99) is the exact max.
    merged = {B10: 3, B20: 1, B390: 1}
    expected = [
        (
            "1h",
            at(0),
            2,
            1,
            "checkout",
            "",
            "",
            "",
            5,
            3,
            {"MQBrokerException": 2, "RemotingTimeoutException": 1},
            (1, merged, 440.0, 390.0, 10.0),
            max(bucket_value(B10), 10.0),
            390.0,
            390.0,
            390.0,
        )
    ]
    schema = (
        "resolution string, start timestamp, minutes int, cluster_id int, producer_group string, topic string, "
        "client_id string, broker_name string, count long, exception_count long, exceptions map<string, bigint>, "
        "histogram struct<v int, counts map<int, bigint>, sum_ms double, max_ms double, min_ms double>, "
        "p50_ms double, p90_ms double, p99_ms double, max_ms double"
    )
    assertDataFrameEqual(rolled, spark.createDataFrame(expected, schema))


def test_latency_rollup_keeps_one_row_per_grain_with_blank_meaning_all(spark):
    minutes = frame(
        spark,
        PRODUCER_MINUTE,
        [
            producer(0, "c1", "broker-a", {B10: 1}, 10.0, 10.0, 10.0),
            producer(0, "c2", "broker-b", {B20: 1}, 20.0, 20.0, 20.0),
        ],
    )
    grains = {"group": ("producer_group",), "group_broker": ("producer_group", "broker_name")}

    rolled = latency.latency_rollup(minutes, windows=[("1h", 3600)], grains=grains)

    expected = [("", 2, 20.0), ("broker-a", 1, 10.0), ("broker-b", 1, 20.0)]
    assertDataFrameEqual(
        rolled.select("broker_name", "count", "max_ms"),
        spark.createDataFrame(expected, "broker_name string, count long, max_ms double"),
    )


RANKED = (
    "cluster_id int, kind string, window_start timestamp, window_end timestamp, subject string, value double, "
    "rank int, detail string"
)
D = dt.datetime(2026, 3, 9, tzinfo=dt.UTC)


def test_topics_rank_by_traffic_of_the_day_and_of_seven_days_ties_by_name(spark):
    days = frame(
        spark,
        TOPIC_DAY,
        [
            (1, "a", D, 5),
            (1, "b", D, 9),
            (1, "c", D, 5),
            (1, "a", D - 3 * DAY, 100),
            (1, "a", D - 7 * DAY, 1000),  # outside both windows
            (1, "idle", D, 0),
            (2, "z", D, 1),
        ],
    )

    day = rankings.topic_traffic(days, kind="day", days=1, day=D)
    week = rankings.topic_traffic(days, kind="7d", days=7, day=D)

    end = D + DAY
    assertDataFrameEqual(
        day,
        spark.createDataFrame(
            [
                (1, "day", D, end, "b", 9.0, 1, '{"days":1}'),
                (1, "day", D, end, "a", 5.0, 2, '{"days":1}'),
                (1, "day", D, end, "c", 5.0, 3, '{"days":1}'),
                (2, "day", D, end, "z", 1.0, 1, '{"days":1}'),
            ],
            RANKED,
        ),
    )
    assertDataFrameEqual(
        week.select("cluster_id", "window_start", "subject", "value", "rank"),
        spark.createDataFrame(
            [
                (1, D - 6 * DAY, "a", 105.0, 1),
                (1, D - 6 * DAY, "b", 9.0, 2),
                (1, D - 6 * DAY, "c", 5.0, 3),
                (2, D - 6 * DAY, "z", 1.0, 1),
            ],
            "cluster_id int, window_start timestamp, subject string, value double, rank int",
        ),
    )


def test_topic_growth_and_shrink_compare_the_day_with_the_average_collected_day_before(spark):
    # The cluster was collected on 4 of the 7 days before: "steady" stored 40 then (10 a day) and 10 today.
    cluster_days = frame(spark, CLUSTER_DAY, [(1, D - n * DAY, 1440) for n in (0, 1, 2, 5, 7)])
    topic_days = frame(
        spark,
        TOPIC_DAY,
        [
            (1, "steady", D, 10),
            (1, "steady", D - DAY, 20),
            (1, "steady", D - 2 * DAY, 20),
            (1, "growing", D, 100),
            (1, "growing", D - DAY, 20),
            (1, "new", D, 3),
            (1, "gone", D - 5 * DAY, 8),
            (1, "older", D - 8 * DAY, 99),
        ],
    )

    changes = rankings.topic_change(topic_days, cluster_days, growth_kind="up", shrink_kind="down", day=D)

    assertDataFrameEqual(
        changes.select("kind", "subject", "value", "rank", "detail"),
        spark.createDataFrame(
            [
                ("up", "growing", 95.0, 1, '{"day":100,"baseline":5.0,"ratio":20.0}'),
                ("up", "new", 3.0, 2, '{"day":3,"baseline":0.0}'),
                ("down", "gone", -2.0, 1, '{"day":0,"baseline":2.0,"ratio":0.0}'),
            ],
            "kind string, subject string, value double, rank int, detail string",
        ),
    )


def test_consumers_rank_by_worst_lag_time_and_by_messages_sent_back(spark):
    days = frame(
        spark,
        CONSUME_DAY,
        [
            (1, "billing", "orders", D, 5, 30.0),
            (1, "billing", "%RETRY%billing", D, 7, 600.0),
            (1, "audit", "orders", D, 50, 0.0),
            (1, "fresh", "orders", D, 0, None),
            (1, "billing", "orders", D - DAY, 999, 9999.0),
        ],
    )

    lag = rankings.consumer_lag_time(days, kind="lag", day=D)
    failures = rankings.consumer_failures(days, kind="failures", day=D)

    assertDataFrameEqual(
        lag.select("subject", "value", "rank", "detail"),
        spark.createDataFrame(
            [("billing", 600.0, 1, '{"topic":"%RETRY%billing"}')],
            "subject string, value double, rank int, detail string",
        ),
    )
    assertDataFrameEqual(
        failures.select("subject", "value", "rank"),
        spark.createDataFrame([("audit", 50.0, 1), ("billing", 12.0, 2)], "subject string, value double, rank int"),
    )


def test_producers_rank_by_failed_sends_of_the_day(spark):
    days = frame(
        spark,
        PRODUCER_DAY,
        [
            (1, "checkout", "", "", "", D, 100, 4, {"RemotingTimeoutException": 3, "MQBrokerException": 1}),
            (1, "checkout", "orders", "", "", D, 100, 4, {"RemotingTimeoutException": 3, "MQBrokerException": 1}),
            (1, "quiet", "", "", "", D, 100, 0, {}),
            (1, "refunds", "", "", "", D, 10, 5, {"MQClientException": 5}),
        ],
    )

    ranked = rankings.producer_exceptions(days, kind="exceptions", day=D)

    assertDataFrameEqual(
        ranked.select("subject", "value", "rank", "detail"),
        spark.createDataFrame(
            [
                ("refunds", 5.0, 1, '{"sends":10,"share":0.5,"top_exception":"MQClientException"}'),
                ("checkout", 4.0, 2, '{"sends":100,"share":0.04,"top_exception":"RemotingTimeoutException"}'),
            ],
            "subject string, value double, rank int, detail string",
        ),
    )

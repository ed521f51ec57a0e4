"""The time-series API (``/api/v1/<kind>/{id}/series/``): a topic's, consumer group's, broker's, cluster's and
server's series read exactly as their charts draw them, at the step asked for (the minute data or a Spark rollup),
as JSON or streamed CSV, with a range too long for its step refused by the parameter at fault. Who may call which
endpoint is the authorization matrix's (test_authz_api.py).

Two days of minutes are stored by hand for one topic, its consumer group, the broker, the cluster and the broker's
host, ending at a fixed minute; the charts are drawn over the same range with the pages' own chart builders."""

import csv
import datetime as dt
import io
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Broker, Cluster, ConsumerGroup, Subscription, Topic
from portal.services import timeseries
from portal.web import monitoring
from stats.models import (
    BrokerMinute,
    ClusterMinute,
    ClusterRollup,
    ConsumeMinute,
    Resolution,
    ServerDiskSample,
    ServerSample,
    TopicMinute,
    TopicRollup,
)
from stats.ranges import time_range

UNTIL = dt.datetime(2026, 3, 9, 12, 34, tzinfo=dt.UTC)
DAYS = 2
HOST = "10.0.0.5"


def _value(n: int) -> int:
    """A figure that changes every minute, so a shifted or misaligned point shows."""
    return 500 + (n * 37) % 200


@pytest.fixture
def world(db, team):
    cluster = Cluster.objects.create(name="prod")
    broker = Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
        address=f"{HOST}:10911", role="ASYNC_MASTER", version="V4_9_4",
    )  # fmt: skip
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS", queue_nums=4)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=topic)
    rows: dict[type, list] = {}
    key = {"cluster_id": cluster.pk}
    for n in range(DAYS * 24 * 60):
        minute = UNTIL - dt.timedelta(minutes=n)
        if n % 97 == 5:  # a minute the collector missed: a gap everywhere
            continue
        put = _value(n)
        down = 1 if n % 53 == 0 else 0
        rows.setdefault(ClusterMinute, []).append(
            ClusterMinute(**key, minute=minute, put_nums=put, get_nums=put - 7, brokers=1, brokers_down=down)
        )
        rows.setdefault(BrokerMinute, []).append(
            BrokerMinute(
                **key, broker_name="broker-a", broker_id=0, minute=minute, up=not down, put_nums=put, get_nums=put - 7
            )
        )
        rows.setdefault(TopicMinute, []).append(
            TopicMinute(**key, topic="ORDERS", minute=minute, put_nums=put, put_size=put * 1024)
        )
        rows.setdefault(ConsumeMinute, []).append(
            ConsumeMinute(
                **key,
                group="GID_BILLING",
                topic="ORDERS",
                minute=minute,
                get_nums=put,
                consume_tps=put / 60,
                lag=n % 120,
                lag_seconds=(n % 30) / 2,
            )
        )
        if minute.minute % 5 == 0:
            rows.setdefault(ServerSample, []).append(
                ServerSample(
                    host=HOST,
                    minute=minute,
                    error="",
                    cpu_percent=n % 90,
                    load1=n % 7,
                    load5=1.0,
                    load15=1.0,
                    mem_total=8 << 30,
                    mem_used=(n % 8) << 28,
                )
            )
            rows.setdefault(ServerDiskSample, []).append(
                ServerDiskSample(host=HOST, minute=minute, mount="/", size=100, used=n % 100, available=100 - n % 100)
            )
    for model, objects in rows.items():
        model.objects.bulk_create(objects, batch_size=2000)
    return {"cluster": cluster, "broker": broker, "topic": topic, "group": group}


@pytest.fixture
def api(member):
    client = APIClient()
    client.force_login(member)
    return client


def series_url(world, kind: str) -> str:
    if kind == "server":
        return reverse("api:server-series", kwargs={"host": HOST})
    name = {"consumer_group": "consumer-group"}.get(kind, kind)
    return reverse(f"api:{name}-series", kwargs={"pk": world[{"consumer_group": "group"}.get(kind, kind)].pk})


def iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def read(api, world, kind: str, since: dt.datetime, until: dt.datetime = UNTIL, **params) -> dict:
    response = api.get(series_url(world, kind), {"from": iso(since), "to": iso(until), **params})
    assert response.status_code == 200, response.content
    return response.json()


def line(body: dict, metric: str, **labels) -> list:
    (found,) = [line for line in body["series"] if line["metric"] == metric and line["labels"] == labels]
    return found["points"]


def drawn(charts, title: str, name: str) -> list:
    """(time, value) of the line ``name`` of the chart ``title`` (times in UTC, as the charts are drawn here)."""
    (chart,) = [chart for chart in charts if chart.title == title]
    (trace,) = [trace for trace in json.loads(chart.spec)["data"] if trace.get("name") == name]
    return [[f"{moment}Z", value] for moment, value in zip(trace["x"], trace["y"], strict=True)]


def per_second(points: list) -> list:
    return [[moment, None if value is None else value / 60] for moment, value in points]


# (kind, how the chart is drawn, chart title, line name, API metric and labels, API points -> chart units)
AGREEING = [
    ("topic", lambda w, win: monitoring.topic_charts(w["topic"], win), "Messages produced per minute", "ORDERS",
     ("put_nums", {}), list),
    ("consumer_group", lambda w, win: monitoring.group_charts(w["group"], ["ORDERS"], win), "Lag", "ORDERS",
     ("lag", {"topic": "ORDERS"}), list),
    ("broker", lambda w, win: monitoring.broker_charts(w["broker"], win), "Put and get TPS", "put",
     ("put_nums", {}), per_second),
    ("cluster", lambda w, win: monitoring.cluster_charts(w["cluster"], win), "Brokers down", "down",
     ("brokers_down", {}), list),
    ("server", lambda w, win: monitoring.server_charts(HOST, win), "Load", "load1", ("load1", {}), list),
]  # fmt: skip


@pytest.mark.parametrize("span", ["1h", "1d", "7d"])
@pytest.mark.parametrize("kind, charts, title, name, metric, scale", AGREEING, ids=[case[0] for case in AGREEING])
def test_each_series_reads_point_for_point_as_its_chart_draws_it(api, world, span, kind, charts, title, name,
                                                                 metric, scale):  # fmt: skip
    window = monitoring.Window(*time_range(span, now=UNTIL))
    with timezone.override(dt.UTC):
        chart = drawn(charts(world, window), title, name)

    body = read(api, world, kind, window.since, window.until)

    assert scale(line(body, metric[0], **metric[1])) == chart
    assert len(chart) > 1 and any(value for _moment, value in chart)


def test_the_default_step_is_the_charts_and_a_step_picks_the_resolution(api, world):
    day = UNTIL - dt.timedelta(days=1)

    assert read(api, world, "topic", UNTIL - dt.timedelta(hours=6))["step"] == "1m"
    assert read(api, world, "topic", day)["step"] == "10m"
    assert read(api, world, "server", UNTIL - dt.timedelta(hours=1))["step"] == "5m"
    for step, name, seconds, points in [("1m", "1m", 60, 1441), ("600", "10m", 600, 145), ("1h", "1h", 3600, 25),
                                        ("1d", "1d", 86400, 2)]:  # fmt: skip
        body = read(api, world, "topic", day, step=step)
        assert (body["step"], body["step_seconds"]) == (name, seconds)
        assert len(line(body, "put_nums")) == points


def test_a_rolled_up_bucket_is_read_from_the_spark_rollup(api, world):
    """Where the hourly job has written a bucket, the hour step reads its row (an average per collected minute),
    not the minutes; the hours it has not written are aggregated from the minutes alike."""
    hour = UNTIL.replace(minute=0) - dt.timedelta(hours=3)
    TopicRollup.objects.create(cluster_id=world["cluster"].pk, topic="ORDERS", resolution=Resolution.HOUR,
                               start=hour, minutes=60, put_nums=60 * 1000, put_size=0)  # fmt: skip
    ClusterRollup.objects.create(cluster_id=world["cluster"].pk, resolution=Resolution.HOUR, start=hour, minutes=60,
                                 collected_minutes=60, put_nums=0, get_nums=0, minutes_incomplete=0)  # fmt: skip

    points = dict(line(read(api, world, "topic", hour - dt.timedelta(hours=1), hour, step="1h"), "put_nums"))

    assert points[iso(hour)] == 1000
    assert 500 <= points[iso(hour - dt.timedelta(hours=1))] < 700


@pytest.mark.parametrize(
    "params, parameter",
    [
        ({"from": iso(UNTIL), "to": iso(UNTIL - dt.timedelta(hours=1))}, "to"),
        ({"from": iso(UNTIL - dt.timedelta(days=30)), "to": iso(UNTIL), "step": "1m"}, "step"),
        ({"from": "0001-01-01T00:00:00Z", "to": iso(UNTIL)}, "from"),
        ({"from": iso(UNTIL - dt.timedelta(hours=1)), "step": "7m"}, "step"),
        ({"from": iso(UNTIL - dt.timedelta(hours=1)), "step": "1w"}, "step"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-02-30T00:00:00Z"}, "to"),
    ],
)
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_absurd_range_is_refused_with_the_parameter_at_fault(api, world, params, parameter, fmt):
    response = api.get(series_url(world, "topic"), {**params, "format": fmt})

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert list(response.json()) == [parameter]


def test_a_minute_step_over_a_week_is_the_longest_allowed(api, world):
    week = UNTIL - dt.timedelta(days=7)
    body = read(api, world, "topic", week, step="1m")
    assert len(line(body, "put_nums")) == timeseries.MAX_POINTS
    response = api.get(series_url(world, "topic"), {"from": iso(week - dt.timedelta(minutes=1)), "to": iso(UNTIL),
                                                    "step": "1m"})  # fmt: skip
    assert response.status_code == 400


@pytest.mark.parametrize("ask", [{"format": "csv"}, {"HTTP_ACCEPT": "text/csv"}], ids=["format", "accept"])
def test_csv_streams_the_same_points_as_the_json(api, world, ask):
    since = UNTIL - dt.timedelta(hours=2)
    body = read(api, world, "consumer_group", since)
    query = {"from": iso(since), "to": iso(UNTIL), **{k: v for k, v in ask.items() if k == "format"}}
    headers = {k: v for k, v in ask.items() if k != "format"}

    response = api.get(series_url(world, "consumer_group"), query, **headers)

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="consumer_group-')
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert list(rows[0]) == ["time", "metric", "unit", "topic", "value"]
    expected = [
        (moment, entry["metric"], entry["unit"], entry["labels"]["topic"], "" if value is None else str(value))
        for entry in body["series"]
        for moment, value in entry["points"]
    ]
    assert [(row["time"], row["metric"], row["unit"], row["topic"], row["value"]) for row in rows] == expected
    assert any(value == "" for *_rest, value in expected)  # the missed minute stays a gap


def test_a_server_series_covers_each_figure_and_file_system_of_a_broker_host(api, world):
    body = read(api, world, "server", UNTIL - dt.timedelta(hours=1))

    assert body["subject"] == {"kind": "server", "host": HOST}
    metrics = {(entry["metric"], tuple(entry["labels"].items())): entry["unit"] for entry in body["series"]}
    assert metrics[("cpu_percent", ())] == "percent"
    assert metrics[("mem_used", ())] == "bytes"
    assert metrics[("disk_used_percent", (("mount", "/"),))] == "percent"
    assert len(line(body, "cpu_percent")) == 12  # a five-minute slot each: 11:35 to 12:30
    assert api.get(reverse("api:server-series", kwargs={"host": "10.9.9.9"})).status_code == 404


def test_the_answer_names_its_subject_and_range(api, world):
    body = read(api, world, "broker", UNTIL - dt.timedelta(hours=1))

    assert body["subject"] == {"kind": "broker", "id": world["broker"].pk, "broker_name": "broker-a",
                               "broker_id": 0, "cluster": world["cluster"].pk}  # fmt: skip
    assert (body["from"], body["to"]) == (iso(UNTIL - dt.timedelta(hours=1)), iso(UNTIL))
    assert {entry["unit"] for entry in body["series"]} == {"messages/minute"}


def test_series_need_a_login_even_for_a_public_topic(world):
    response = APIClient().get(series_url(world, "topic"))

    assert response.status_code == 401

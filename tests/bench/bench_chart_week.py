"""Server time and HTML size of the 7-day chart pages (issue 16: a topic's week took 5.5-6.4 s and 1.8 MB).

Three days of minute data for one topic, the consumer group reading it (its topic and its retry topic), the
producer group sending to it (two clients), its broker, the broker's and the name server's probes and the broker
host's server stats; the hourly rollups (10-minute and hourly rows) of every hour but the last two (the job lags,
so the newest hours come from the minutes). Requests go through the full Django stack in-process, on a throwaway
database of the default engine (SQLite unless DATABASE_URL says otherwise). Prints, per page (topic, group,
producer group, server): ``chart_week_<page>_seconds`` (median of 5 requests after a warm-up) and
``chart_week_<page>_bytes``.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import tempfile
import time
from pathlib import Path

from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment, teardown_test_environment
from django.urls import reverse
from django.utils import timezone

DAYS = 3
LAG_HOURS = 2  # the newest hours the rollup job has not run for
REQUESTS = 5
TEN = dt.timedelta(minutes=10)
HOUR = dt.timedelta(hours=1)


def _minutes(cluster_id: int, now: dt.datetime) -> None:
    from stats.histogram import Histogram
    from stats.models import (
        BrokerMinute,
        BrokerProbe,
        ClusterMinute,
        ConsumeMinute,
        NameServerProbe,
        ProducerMinute,
        ServerSample,
        TopicMinute,
    )

    rng = random.Random(16)
    histogram = Histogram()
    for _ in range(200):
        histogram.record(rng.lognormvariate(1.0, 0.5))
    latency = histogram.to_dict()
    broker = {"cluster_id": cluster_id, "broker_name": "broker-a", "broker_id": 0}
    rows: dict[type, list] = {}
    for n in range(DAYS * 24 * 60, 0, -1):
        minute = now - dt.timedelta(minutes=n)
        put = rng.randint(500, 700)
        rows.setdefault(ClusterMinute, []).append(
            ClusterMinute(cluster_id=cluster_id, minute=minute, put_nums=put, get_nums=put, brokers=1)
        )
        rows.setdefault(BrokerMinute, []).append(
            BrokerMinute(**broker, minute=minute, up=True, put_nums=put, get_nums=put)
        )
        rows.setdefault(TopicMinute, []).append(
            TopicMinute(cluster_id=cluster_id, topic="ORDERS", minute=minute, put_nums=put, put_size=put * 1024)
        )
        for topic in ("ORDERS", "%RETRY%GID_BILLING"):
            rows.setdefault(ConsumeMinute, []).append(
                ConsumeMinute(
                    cluster_id=cluster_id,
                    group="GID_BILLING",
                    topic=topic,
                    minute=minute,
                    get_nums=put,
                    consume_tps=put / 60,
                    lag=rng.randint(0, 50),
                    lag_seconds=rng.random(),
                )
            )
        rows.setdefault(BrokerProbe, []).append(
            BrokerProbe(
                **broker,
                minute=minute,
                address="10.0.0.5:10911",
                listed=True,
                ok=True,
                attempts=1,
                latency_ms=rng.uniform(1, 3),
            )
        )
        rows.setdefault(NameServerProbe, []).append(
            NameServerProbe(
                cluster_id=cluster_id,
                address="10.0.0.9:9876",
                minute=minute,
                ok=True,
                attempts=1,
                latency_ms=rng.uniform(1, 2),
            )
        )
        for client in ("10.0.0.1@1", "10.0.0.2@2"):
            rows.setdefault(ProducerMinute, []).append(
                ProducerMinute(
                    cluster_id=cluster_id,
                    producer_group="PID_ORDERS",
                    topic="ORDERS",
                    client_id=client,
                    client_addr=client[:8],
                    broker_name="broker-a",
                    minute=minute,
                    count=200,
                    exception_count=0,
                    histogram=latency,
                    max_ms=histogram.max_ms,
                    updated_at=minute,
                )
            )
        if minute.minute % 5 == 0:
            rows.setdefault(ServerSample, []).append(
                ServerSample(
                    host="10.0.0.5",
                    minute=minute,
                    error="",
                    cpu_percent=rng.uniform(10, 60),
                    load1=1.0,
                    load5=1.0,
                    load15=1.0,
                    mem_total=8 << 30,
                    mem_used=3 << 30,
                )
            )
    for model, objects in rows.items():
        model.objects.bulk_create(objects, batch_size=2000)


def _rollups(cluster_id: int, now: dt.datetime) -> None:
    """10-minute and hourly rows of every closed hour but the last LAG_HOURS, figures of the right scale."""
    from stats.models import (
        BrokerRollup,
        ClusterRollup,
        ConsumeRollup,
        ProducerLatencyRollup,
        Resolution,
        TopicRollup,
    )

    first = (now - dt.timedelta(days=DAYS)).replace(minute=0) + HOUR
    last = now.replace(minute=0) - LAG_HOURS * HOUR
    rows: dict[type, list] = {}
    histogram = {"v": 1, "counts": {"120": 4000}, "sum_ms": 12000.0, "max_ms": 3.1, "min_ms": 2.9}
    for resolution, length in ((Resolution.TEN_MINUTES, TEN), (Resolution.HOUR, HOUR)):
        start, minutes = first, int(length / dt.timedelta(minutes=1))
        while start < last:
            window = {"cluster_id": cluster_id, "resolution": resolution, "start": start, "minutes": minutes}
            rows.setdefault(ClusterRollup, []).append(
                ClusterRollup(
                    **window,
                    put_nums=600 * minutes,
                    get_nums=600 * minutes,
                    collected_minutes=minutes,
                    minutes_incomplete=0,
                )
            )
            rows.setdefault(BrokerRollup, []).append(
                BrokerRollup(
                    **window,
                    broker_name="broker-a",
                    broker_id=0,
                    put_nums=600 * minutes,
                    get_nums=600 * minutes,
                    minutes_down=0,
                )
            )
            rows.setdefault(TopicRollup, []).append(
                TopicRollup(**window, topic="ORDERS", put_nums=600 * minutes, put_size=600 * 1024 * minutes)
            )
            for topic in ("ORDERS", "%RETRY%GID_BILLING"):
                rows.setdefault(ConsumeRollup, []).append(
                    ConsumeRollup(
                        **window,
                        group="GID_BILLING",
                        topic=topic,
                        get_nums=600 * minutes,
                        lag_max=50,
                        lag_seconds_max=1.0,
                    )
                )
            grains = [("PID_ORDERS", "", "", ""), ("", "ORDERS", "", ""), ("PID_ORDERS", "", "", "broker-a")]
            grains += [("PID_ORDERS", "", client, "") for client in ("10.0.0.1@1", "10.0.0.2@2")]
            for group, topic, client, broker in grains:
                rows.setdefault(ProducerLatencyRollup, []).append(
                    ProducerLatencyRollup(
                        **window,
                        producer_group=group,
                        topic=topic,
                        client_id=client,
                        broker_name=broker,
                        count=400 * minutes,
                        exception_count=0,
                        histogram=histogram,
                        p50_ms=3.0,
                        p90_ms=3.0,
                        p99_ms=3.0,
                        max_ms=3.1,
                    )
                )
            start += length
    for model, objects in rows.items():
        model.objects.bulk_create(objects, batch_size=2000)


def _seed():
    from django.contrib.auth import get_user_model

    from portal.models import Broker, Cluster, ConsumerGroup, Membership, ProducerGroup, Subscription, Team, Topic

    cluster = Cluster.objects.create(name="bench")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER", version="V4_9_4")  # fmt: skip
    team = Team.objects.create(name="orders")
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS", queue_nums=8)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=topic)
    producers = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_ORDERS")
    producers.topics.add(topic)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(team=team, user=user)
    now = timezone.now().replace(second=0, microsecond=0)
    _minutes(cluster.pk, now)
    _rollups(cluster.pk, now)
    return user, {
        "topic": reverse("topic-detail", args=[topic.pk]),
        "group": reverse("consumer-group-detail", args=[group.pk]),
        "producer_group": reverse("producer-group-detail", args=[producers.pk]),
        "server": reverse("server-detail", args=["10.0.0.5"]),
    }


def _measure(client: Client, url: str) -> tuple[float, int]:
    client.get(url, {"range": "7d"})  # warm-up: templates, query plans
    costs, size = [], 0
    for _ in range(REQUESTS):
        started = time.perf_counter()
        response = client.get(url, {"range": "7d"})
        costs.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
        size = len(response.content)
    return statistics.median(costs), size


def run() -> dict[str, float | int]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            user, urls = _seed()
            client = Client()
            client.force_login(user)
            figures: dict[str, float | int] = {}
            for page, url in urls.items():
                seconds, size = _measure(client, url)
                figures[f"chart_week_{page}_seconds"] = seconds
                figures[f"chart_week_{page}_bytes"] = size
            return figures
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

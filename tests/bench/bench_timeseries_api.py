"""Time-series API latency over a realistic stored week for one topic (issue 20).

Seven days of minute data for the topic and its cluster (a collected minute each), and the 10-minute and hourly
rollups of every closed hour but the last two (the rollup job lags, so the newest hours come from the minutes).
Requests go through the full Django stack in-process (authentication, throttles, JSON or CSV rendering), on a
throwaway database of the default engine (SQLite unless DATABASE_URL says otherwise), cycling through what a team
pulls: the last hour and six hours per minute, a day per 10 minutes, the week per hour (the charts' steps), the
week per minute (10,081 points, the most one line may have) as JSON and a day per minute as CSV. Prints
``timeseries_api_p95_ms`` (95th percentile of every request after a warm-up) and ``timeseries_api_week_minutes_ms``
(median of the week-per-minute JSON requests, the heaviest).
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

DAYS = 7
LAG_HOURS = 2
ROUNDS = 10
MINUTE = dt.timedelta(minutes=1)


def _seed(cluster_id: int, now: dt.datetime) -> None:
    from stats.models import ClusterMinute, ClusterRollup, Resolution, TopicMinute, TopicRollup

    rng = random.Random(20)
    clusters, topics = [], []
    for n in range(DAYS * 24 * 60, -1, -1):
        minute = now - n * MINUTE
        put = rng.randint(500, 700)
        clusters.append(ClusterMinute(cluster_id=cluster_id, minute=minute, put_nums=put, get_nums=put, brokers=2))
        topics.append(TopicMinute(cluster_id=cluster_id, topic="ORDERS", minute=minute, put_nums=put,
                                  put_size=put * 1024))  # fmt: skip
    ClusterMinute.objects.bulk_create(clusters, batch_size=2000)
    TopicMinute.objects.bulk_create(topics, batch_size=2000)
    first = (now - dt.timedelta(days=DAYS)).replace(minute=0) + dt.timedelta(hours=1)
    last = now.replace(minute=0) - dt.timedelta(hours=LAG_HOURS)
    rollups, topic_rollups = [], []
    for resolution, length in ((Resolution.TEN_MINUTES, 10), (Resolution.HOUR, 60)):
        start = first
        while start < last:
            window = {"cluster_id": cluster_id, "resolution": resolution, "start": start, "minutes": length}
            rollups.append(ClusterRollup(**window, put_nums=600 * length, get_nums=600 * length,
                                         collected_minutes=length, minutes_incomplete=0))  # fmt: skip
            topic_rollups.append(TopicRollup(**window, topic="ORDERS", put_nums=600 * length,
                                             put_size=600 * 1024 * length))  # fmt: skip
            start += dt.timedelta(minutes=length)
    ClusterRollup.objects.bulk_create(rollups, batch_size=2000)
    TopicRollup.objects.bulk_create(topic_rollups, batch_size=2000)


def _world():
    from django.contrib.auth import get_user_model

    from portal.models import Broker, Cluster, Membership, Team, Topic

    cluster = Cluster.objects.create(name="bench")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER", version="V4_9_4")  # fmt: skip
    team = Team.objects.create(name="orders")
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS", queue_nums=8)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(team=team, user=user)
    now = timezone.now().replace(second=0, microsecond=0)
    _seed(cluster.pk, now)
    return user, reverse("api:topic-series", args=[topic.pk]), now


def _requests(now: dt.datetime) -> list[tuple[str, dict]]:
    def since(delta: dt.timedelta) -> str:
        return (now - delta).strftime("%Y-%m-%dT%H:%M:%SZ")

    until = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    hour, day, week = dt.timedelta(hours=1), dt.timedelta(days=1), dt.timedelta(days=DAYS)
    return [
        ("hour", {"from": since(hour), "to": until}),
        ("6h", {"from": since(6 * hour), "to": until}),
        ("day", {"from": since(day), "to": until}),
        ("week", {"from": since(week), "to": until}),
        ("week_minutes", {"from": since(week), "to": until, "step": "1m"}),
        ("day_minutes_csv", {"from": since(day), "to": until, "step": "1m", "format": "csv"}),
    ]


def _timed(client: Client, url: str, params: dict) -> float:
    started = time.perf_counter()
    response = client.get(url, params)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    elapsed = time.perf_counter() - started
    if response.status_code != 200 or not body:
        raise RuntimeError(f"{url} {params} answered {response.status_code}")
    return elapsed * 1000


def run() -> dict[str, float]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            user, url, now = _world()
            client = Client()
            client.force_login(user)
            shapes = _requests(now)
            for _name, params in shapes:  # warm-up: query plans, imports
                _timed(client, url, params)
            costs: dict[str, list[float]] = {name: [] for name, _params in shapes}
            for _ in range(ROUNDS):
                for name, params in shapes:
                    costs[name].append(_timed(client, url, params))
            every = sorted(cost for values in costs.values() for cost in values)
            return {
                "timeseries_api_p95_ms": statistics.quantiles(every, n=20, method="inclusive")[-1],
                "timeseries_api_week_minutes_ms": statistics.median(costs["week_minutes"]),
            }
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

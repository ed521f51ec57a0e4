"""Consumers' reports accepted per second through the ingestion endpoint (``POST /api/v1/consumer-reports/``), as
``bench_ingest`` measures producers' (same database engine, batch size, histograms and full Django stack).

Batches of 100 reports, one per SDK consumer client, each a topic's minute: 300 messages with spread consume times
(about 40 non-empty buckets) and a few failures; every batch is a new minute, so each report is an insert. Prints
consume_report_ingest_per_s."""

import datetime as dt
import json
import random
import tempfile
import time
from pathlib import Path

from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment, teardown_test_environment
from django.urls import reverse
from django.utils import timezone

from stats.histogram import Histogram

BATCHES = 40
REPORTS_PER_BATCH = 100


def _seed() -> str:
    from django.contrib.auth import get_user_model

    from portal.models import Cluster, ConsumerGroup, Membership, Subscription, Team, Topic
    from portal.services import consumer_tokens

    cluster = Cluster.objects.create(name="bench")
    team = Team.objects.create(name="bench")
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(team=team, user=user)
    topic = Topic.objects.create(cluster=cluster, team=team, name="BENCH_ORDERS")
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BENCH")
    Subscription.objects.create(consumer_group=group, topic=topic)
    return consumer_tokens.issue(group, by=user).secret


def _bodies(rng: random.Random) -> list[bytes]:
    histogram = Histogram()
    for _ in range(300):
        histogram.record(rng.lognormvariate(1.5, 0.9))
    latest = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    bodies = []
    for batch in range(BATCHES):
        minute = (latest - dt.timedelta(minutes=batch)).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        reports = [
            {
                "minute": minute,
                "client_id": f"10.0.{client // 250}.{client % 250}@{4000 + client}",
                "client_addr": f"10.0.{client // 250}.{client % 250}",
                "consumer_group": "GID_BENCH",
                "topic": "BENCH_ORDERS",
                "count": 300,
                "failures": {"ValueError": 2},
                "histogram": histogram.to_dict(),
            }
            for client in range(REPORTS_PER_BATCH)
        ]
        bodies.append(json.dumps({"reports": reports}).encode())
    return bodies


def run() -> dict[str, float]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            client = Client(HTTP_AUTHORIZATION=f"Consumer {_seed()}")
            url = reverse("api:consumer-reports")
            bodies = _bodies(random.Random(7))
            warm_up, measured = bodies[:2], bodies[2:]
            for body in warm_up:
                client.post(url, body, content_type="application/json")
            started = time.perf_counter()
            for body in measured:
                response = client.post(url, body, content_type="application/json")
                if response.status_code != 202:
                    raise RuntimeError(f"the endpoint answered {response.status_code}: {response.content[:500]!r}")
            seconds = time.perf_counter() - started
            return {"consume_report_ingest_per_s": len(measured) * REPORTS_PER_BATCH / seconds}
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

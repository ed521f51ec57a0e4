"""Producers' reports accepted per second through the ingestion endpoint (``POST /api/v1/producer-reports/``), on
the default database engine (SQLite unless DATABASE_URL says otherwise).

Batches of 100 reports, each with 2 brokers and realistic histograms (a few hundred sends of spread latency, about
40 non-empty buckets each), as the SDK sends them after a minute of 100 clients; every batch is a new minute, so
each report is an insert. Requests go through the full Django stack in-process (middleware, token authentication,
parsing, validation, the upsert), which is the server's share of an ingestion. Prints ingest_reports_per_s."""

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
BROKERS = ("broker-a", "broker-b")


def _seed() -> str:
    from django.contrib.auth import get_user_model

    from portal.models import Cluster, Membership, ProducerGroup, Team, Topic
    from portal.services import producer_tokens

    cluster = Cluster.objects.create(name="bench")
    team = Team.objects.create(name="bench")
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(team=team, user=user)
    topic = Topic.objects.create(cluster=cluster, team=team, name="BENCH_ORDERS")
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_BENCH")
    group.topics.add(topic)
    return producer_tokens.issue(group, by=user).secret


def _histogram(rng: random.Random, sends: int) -> dict:
    histogram = Histogram()
    for _ in range(sends):
        histogram.record(rng.lognormvariate(1.0, 0.8))
    return histogram.to_dict()


def _bodies(rng: random.Random) -> list[bytes]:
    """One JSON body per batch: the same 100 clients, one minute further back each batch."""
    latest = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    brokers = [
        {"broker_name": name, "count": 300, "exceptions": {}, "histogram": _histogram(rng, 300)} for name in BROKERS
    ]
    bodies = []
    for batch in range(BATCHES):
        minute = (latest - dt.timedelta(minutes=batch)).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        reports = [
            {
                "minute": minute,
                "client_id": f"10.0.{client // 250}.{client % 250}@{4000 + client}",
                "client_addr": f"10.0.{client // 250}.{client % 250}",
                "producer_group": "PID_BENCH",
                "topic": "BENCH_ORDERS",
                "brokers": brokers,
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
            token = _seed()
            client = Client(HTTP_AUTHORIZATION=f"Producer {token}")
            url = reverse("api:producer-reports")
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
            return {"ingest_reports_per_s": len(measured) * REPORTS_PER_BATCH / seconds}
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

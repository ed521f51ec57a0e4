"""One Prometheus scrape of ``/metrics`` with 10,000 topics and 10,000 consumer groups registered on a cluster of
two brokers, each topic and group with a stored latest minute (a tenth of the groups lagging on four queues, a
thousand producer-SDK reports), on the default database engine (SQLite unless DATABASE_URL says otherwise).

Requests go through the full Django stack in-process with a scrape token. Prints metrics_scrape_ms (the median of
five scrapes; aim: under 1 s on 2 cores), metrics_scrape_bytes (the text format) and metrics_scrape_gzip_bytes."""

import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment, teardown_test_environment
from django.utils import timezone

TOPICS = 10_000
GROUPS = 10_000
BROKERS = ("broker-a", "broker-b")
SCRAPES = 5


def _seed() -> str:
    from portal.models import Broker, Cluster, ConsumerGroup, ProducerGroup, Subscription, Team, Topic
    from portal.services.metrics import tokens
    from stats.histogram import Histogram
    from stats.models import (
        BrokerMinute,
        BrokerProbe,
        ClusterMinute,
        ConsumeMinute,
        GroupMinute,
        ProducerMinute,
        QueueLagMinute,
        TopicMinute,
    )

    minute = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    cluster = Cluster.objects.create(name="bench")
    team = Team.objects.create(name="team")
    for i, name in enumerate(BROKERS):
        Broker.objects.create(
            cluster=cluster,
            cluster_name="DefaultCluster",
            broker_name=name,
            broker_id=0,
            address=f"10.0.0.{i + 1}:10911",
        )
        BrokerMinute.objects.create(
            cluster_id=cluster.pk,
            broker_name=name,
            broker_id=0,
            minute=minute,
            up=True,
            put_nums=60_000,
            get_nums=60_000,
        )
        BrokerProbe.objects.create(
            cluster_id=cluster.pk,
            broker_name=name,
            broker_id=0,
            minute=minute,
            address="",
            listed=True,
            ok=True,
            latency_ms=1.0,
            attempts=1,
            version="V4_9_4",
            runtime_seconds=3600,
            put_tps=1000.0,
            commit_log_disk_ratio=0.3,
        )
    topics = Topic.objects.bulk_create(
        [Topic(cluster=cluster, team=team, name=f"TOPIC_{i:05d}", queue_nums=8) for i in range(TOPICS)],
        batch_size=2000,
    )
    groups = ConsumerGroup.objects.bulk_create(
        [ConsumerGroup(cluster=cluster, team=team, name=f"GID_{i:05d}") for i in range(GROUPS)], batch_size=2000
    )
    Subscription.objects.bulk_create(
        [Subscription(consumer_group=group, topic=topics[i]) for i, group in enumerate(groups)], batch_size=2000
    )
    ProducerGroup.objects.bulk_create(
        [ProducerGroup(cluster=cluster, team=team, name=f"PID_{i:05d}") for i in range(1000)], batch_size=2000
    )
    ClusterMinute.objects.create(cluster_id=cluster.pk, minute=minute, brokers=2, seconds=12.0)
    key = {"cluster_id": cluster.pk, "minute": minute}
    TopicMinute.objects.bulk_create(
        [TopicMinute(topic=t.name, put_nums=600, put_size=600_000, **key) for t in topics], batch_size=2000
    )
    ConsumeMinute.objects.bulk_create(
        [
            ConsumeMinute(
                group=g.name,
                topic=f"TOPIC_{i:05d}",
                get_nums=600,
                get_size=600_000,
                consume_tps=10.0,
                sndbck_nums=0,
                lag=100 if i % 10 == 0 else 0,
                lag_seconds=30.0 if i % 10 == 0 else 0.0,
                **key,
            )
            for i, g in enumerate(groups)
        ],
        batch_size=2000,
    )
    QueueLagMinute.objects.bulk_create(
        [
            QueueLagMinute(
                group=f"GID_{i:05d}",
                topic=f"TOPIC_{i:05d}",
                broker_name=BROKERS[q % 2],
                queue_id=q,
                broker_offset=1000,
                consumer_offset=975,
                lag=25,
                **key,
            )
            for i in range(0, GROUPS, 10)
            for q in range(4)
        ],
        batch_size=2000,
    )
    GroupMinute.objects.bulk_create(
        [GroupMinute(group=g.name, clients=2, message_model="CLUSTERING", blocked_queues=0, **key) for g in groups],
        batch_size=2000,
    )
    histogram = Histogram()
    for ms in (1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0, 55.0, 89.0):
        histogram.record(ms)
    ProducerMinute.objects.bulk_create(
        [
            ProducerMinute(
                producer_group=f"PID_{i:05d}",
                topic=f"TOPIC_{i:05d}",
                client_id="app@1",
                client_addr="10.0.1.1",
                broker_name=BROKERS[i % 2],
                count=10,
                exception_count=0,
                histogram=histogram.to_dict(),
                max_ms=89.0,
                updated_at=minute,
                **key,
            )
            for i in range(1000)
        ],
        batch_size=2000,
    )
    admin = get_user_model().objects.create_user("bench", password="bench-password-1", is_staff=True)
    return tokens.issue(by=admin).secret


def run() -> dict[str, float]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            headers = {"HTTP_AUTHORIZATION": f"Bearer {_seed()}"}
            client = Client()
            client.get("/metrics", **headers)  # warm-up: query plans
            costs, size = [], 0
            for _ in range(SCRAPES):
                started = time.perf_counter()
                response = client.get("/metrics", **headers)
                costs.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    raise RuntimeError(f"/metrics answered {response.status_code}")
                size = len(response.content)
            zipped = client.get("/metrics", HTTP_ACCEPT_ENCODING="gzip", **headers)
            return {
                "metrics_scrape_ms": statistics.median(costs),
                "metrics_scrape_bytes": size,
                "metrics_scrape_gzip_bytes": len(zipped.content),
            }
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

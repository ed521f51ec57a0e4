"""Evaluating every warning rule for a cluster with 10,000 topics and 10,000 consumer groups after an hour of
collection, on the default database engine (SQLite unless DATABASE_URL says otherwise).

The registry is :mod:`tests.bench.bench_pages`'s (10,000 topics, 10,000 groups each subscribed to one topic), and
the stats are written in bulk as an hour of per-minute collection would have left them, every topic and group
active every minute (the worst case for the rules, which read the minutes they judge):

* TopicMinute: every topic every minute for 64 minutes, 100 of them surging and 100 dropping in the last three;
* ConsumeMinute: every group on its topic every minute (its consumption, a small lag and a few retries for 200
  groups); 1,000 groups over the lag thresholds for the last 10 minutes (4 lagging queues each in QueueLagMinute),
  half of them stalled;
* GroupMinute and ClientMinute: every group online every minute (one client), 100 with differing subscriptions,
  50 with dead letters, 100 with blocked queues; 50 offset-moved events;
* probes of 2 name servers and 4 brokers (one down), server samples of the brokers' host, and 1,000 producer groups'
  SDK reports (100 with exceptions);
* 100 owners' overrides of the lag thresholds.

Prints ``warn_eval_seconds`` (best of three evaluations, aim: well under 5 s) and ``warn_conditions``.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import connection
from django.test.utils import setup_test_environment, teardown_test_environment

from tests.bench.bench_pages import TOPICS, _seed

MINUTES = 64
BATCH = 2000
LAGGING = 1_000
HOST = "127.0.0.1"


def _minutes(now: dt.datetime) -> list[dt.datetime]:
    latest = now.replace(second=0, microsecond=0)
    return [latest - dt.timedelta(minutes=n) for n in range(MINUTES - 1, -1, -1)]


def _bulk(model, rows) -> None:
    model.objects.bulk_create(rows, batch_size=BATCH)


def _build(now: dt.datetime):
    from monitor.models import ServerAccess
    from portal.models import Broker, ConsumerGroup, ProducerGroup, Team, Topic
    from portal.models.warnings import ThresholdScope, WarningKind, WarningThreshold
    from stats.histogram import Histogram
    from stats.models import (
        BlockedQueueMinute,
        BrokerProbe,
        ClientMinute,
        ClusterMinute,
        ConsumeMinute,
        GroupMinute,
        NameServerProbe,
        OffsetMovedEvent,
        ProducerMinute,
        QueueLagMinute,
        TopicMinute,
    )
    from stats.store.servers import DiskUse, ServerStats, store_server_samples

    _, _user = _seed()
    cluster_id = Topic.objects.values_list("cluster_id", flat=True).first()
    topics = list(Topic.objects.order_by("pk").values_list("name", flat=True))
    groups = list(ConsumerGroup.objects.order_by("pk").values_list("name", flat=True))
    minutes = _minutes(now)
    latest = minutes[-1]
    recent = set(minutes[-3:])

    _bulk(ClusterMinute, [ClusterMinute(cluster_id=cluster_id, minute=m, brokers=4) for m in minutes])
    for m in minutes:
        rows = []
        for i, topic in enumerate(topics):
            value = 1000 + i % 7
            if m in recent and i < 100:
                value *= 5  # surge
            elif m in recent and 100 <= i < 200:
                value //= 10  # drop
            rows.append(TopicMinute(cluster_id=cluster_id, topic=topic, minute=m, put_nums=value, put_size=value * 512))
        _bulk(TopicMinute, rows)

    for index, m in enumerate(minutes):
        consumes, health, clients, queues = [], [], [], []
        for i, group in enumerate(groups):
            topic = topics[i % TOPICS]
            lagging = i < LAGGING and index >= MINUTES - 10
            stalled = i < LAGGING // 2
            lag = 20_000 + (0 if stalled else 100 * index) if lagging else 3
            consumes.append(
                ConsumeMinute(
                    cluster_id=cluster_id,
                    group=group,
                    topic=topic,
                    minute=m,
                    get_nums=0 if lagging and stalled else 1000,
                    get_size=512_000,
                    slave_get_nums=0,
                    consume_tps=16.7,
                    sndbck_nums=5 if 1000 <= i < 1200 else 0,
                    lag=lag,
                    lag_seconds=600.0 if lagging else 0.2,
                )
            )
            if lagging:
                for queue_id in range(4):
                    consumed = 1000 if stalled else 1000 + 200 * index
                    queues.append(
                        QueueLagMinute(
                            cluster_id=cluster_id,
                            group=group,
                            topic=topic,
                            broker_name="broker-a",
                            queue_id=queue_id,
                            minute=m,
                            broker_offset=consumed + lag // 4,
                            consumer_offset=consumed,
                            lag=lag // 4,
                        )
                    )
            split = 2000 <= i < 2100
            health.append(
                GroupMinute(
                    cluster_id=cluster_id,
                    group=group,
                    minute=m,
                    clients=2 if split else 1,
                    message_model="CLUSTERING",
                    consume_type="CONSUME_PASSIVELY",
                    subscription_consistent=not split,
                    blocked_queues=1 if 3000 <= i < 3100 else 0,
                    dlq_nums=1 if 4000 <= i < 4050 and m == latest else 0,
                    dlq_total=10 if 4000 <= i < 4050 else 0,
                )
            )
            if m == latest:
                clients.append(
                    ClientMinute(
                        cluster_id=cluster_id,
                        group=group,
                        client_id=f"10.0.{i // 250}.{i % 250}@{i}",
                        minute=m,
                        address=f"10.0.{i // 250}.{i % 250}:5000",
                        language="JAVA",
                        version=401,
                        subscription={topic: "*"},
                    )
                )
                if split:
                    clients.append(
                        ClientMinute(
                            cluster_id=cluster_id,
                            group=group,
                            client_id=f"10.1.0.1@{i}",
                            minute=m,
                            address="10.1.0.1:5000",
                            language="JAVA",
                            version=401,
                            subscription={topics[(i + 1) % TOPICS]: "*"},
                        )
                    )
        _bulk(ConsumeMinute, consumes)
        _bulk(GroupMinute, health)
        _bulk(ClientMinute, clients)
        _bulk(QueueLagMinute, queues)

    _bulk(
        BlockedQueueMinute,
        [
            BlockedQueueMinute(
                cluster_id=cluster_id,
                group=groups[i],
                topic=topics[i % TOPICS],
                broker_name="broker-a",
                queue_id=0,
                client_id=f"c@{i}",
                minute=latest,
                last_consumed_at=latest - dt.timedelta(minutes=5),
                cached_messages=32,
                lag=100,
            )
            for i in range(3000, 3100)
        ],
    )
    _bulk(
        OffsetMovedEvent,
        [
            OffsetMovedEvent(
                cluster_id=cluster_id,
                broker_name="broker-a",
                queue_id=0,
                queue_offset=i,
                stored_at=now - dt.timedelta(minutes=2),
                group=groups[5000 + i],
                topic=topics[(5000 + i) % TOPICS],
                event_broker_name="broker-a",
                event_queue_id=0,
                offset_request=10_000,
                offset_new=0,
            )
            for i in range(50)
        ],
    )

    probes_ns, probes_b = [], []
    for m in minutes[-10:]:
        for address in ("10.0.0.1:9876", "10.0.0.2:9876"):
            probes_ns.append(
                NameServerProbe(cluster_id=cluster_id, address=address, minute=m, ok=True, latency_ms=1.0, attempts=1)
            )
        for name in ("broker-a", "broker-b"):
            for broker_id in (0, 1):
                down = name == "broker-b" and broker_id == 1 and m >= minutes[-3]
                probes_b.append(
                    BrokerProbe(
                        cluster_id=cluster_id,
                        broker_name=name,
                        broker_id=broker_id,
                        minute=m,
                        address=f"{HOST}:{10911 + broker_id}",
                        listed=not down,
                        ok=not down,
                        latency_ms=None if down else 1.0,
                        attempts=3 if down else 1,
                        error="no answer" if down else "",
                        commit_log_max_offset=None if down else 10**9 - broker_id * 10**6,
                    )
                )
    _bulk(NameServerProbe, probes_ns)
    _bulk(BrokerProbe, probes_b)
    for name in ("broker-a", "broker-b"):
        for broker_id in (0, 1):
            Broker.objects.create(
                cluster_id=cluster_id,
                cluster_name="DefaultCluster",
                broker_name=name,
                broker_id=broker_id,
                address=f"{HOST}:{10911 + broker_id}",
            )
    ServerAccess.objects.create(cluster_id=cluster_id, username="mq", private_key="unused")
    for slot in (latest - dt.timedelta(minutes=5), latest):
        store_server_samples(
            slot,
            stats={
                HOST: ServerStats(
                    cpu_percent=95.0,
                    load1=3.0,
                    mem_total=100,
                    mem_used=50,
                    tcp_established=100,
                    disks=(DiskUse("/", 100, 90, 10),),
                )
            },
            errors={},
        )

    team = Team.objects.first()
    producer_groups = ProducerGroup.objects.bulk_create(
        [ProducerGroup(cluster_id=cluster_id, team=team, name=f"PID_{i:05d}") for i in range(1000)], batch_size=BATCH
    )
    histogram = Histogram()
    for ms in (1.0, 2.0, 5.0, 40.0):
        histogram.record(ms)
    reports = []
    for i, group in enumerate(producer_groups):
        for m in minutes[-5:]:
            reports.append(
                ProducerMinute(
                    cluster_id=cluster_id,
                    producer_group=group.name,
                    topic=topics[i],
                    client_id=f"10.2.0.{i % 250}@{i}",
                    client_addr=f"10.2.0.{i % 250}",
                    broker_name="broker-a",
                    minute=m,
                    count=600,
                    exception_count=2 if i < 100 else 0,
                    exceptions={"RemotingTimeoutException": 2} if i < 100 else {},
                    histogram=histogram.to_dict(),
                    max_ms=40.0,
                    updated_at=now,
                )
            )
    _bulk(ProducerMinute, reports)

    overridden = ConsumerGroup.objects.order_by("pk")[:100]
    _bulk(
        WarningThreshold,
        [
            WarningThreshold(
                kind=WarningKind.CONSUMER_LAG,
                scope=ThresholdScope.CONSUMER_GROUP,
                consumer_group=group,
                params={"messages": 50_000},
            )
            for group in overridden
        ],
    )
    return cluster_id


def run() -> dict[str, float]:
    from portal.models import Cluster

    setup_test_environment()
    # Build the tables from the models (as pytest --nomigrations does): the bench measures the rules, not the
    # migration history.
    modules = settings.MIGRATION_MODULES
    settings.MIGRATION_MODULES = {app.label: None for app in apps.get_app_configs()}
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            from portal.services.warnings.rules import evaluate

            now = dt.datetime.now(dt.UTC).replace(second=20, microsecond=0)
            cluster = Cluster.objects.get(pk=_build(now))
            costs = []
            for _ in range(3):
                started = time.perf_counter()
                evaluation = evaluate(cluster, now)
                costs.append(time.perf_counter() - started)
            assert len(evaluation.evaluated) == 17, sorted(evaluation.evaluated)
            return {"warn_eval_seconds": min(costs), "warn_conditions": len(evaluation.conditions)}
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            settings.MIGRATION_MODULES = modules
            teardown_test_environment()

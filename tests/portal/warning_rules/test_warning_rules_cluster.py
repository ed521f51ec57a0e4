"""Producer, traffic, health and server warning rules against stored stats: each condition, its boundary and its
absence (the sandbox-driven scenarios are in test_warning_scenarios.py)."""

import datetime as dt
import json

import pytest
from django.utils import timezone

from monitor.models import ServerAccess
from portal.models import Broker, Cluster, NameServer, ProducerGroup, Team, Topic
from portal.models.warnings import Severity, SubjectType, WarningKind
from portal.services.warnings.lifecycle import stored_summary
from portal.services.warnings.rules import evaluate
from stats.histogram import Histogram
from stats.models import BrokerProbe, NameServerProbe, ProducerMinute
from stats.store.health import store_probes
from stats.store.producers import store_producer_minutes
from stats.store.servers import DiskUse, ServerStats, store_server_samples
from tests.portal.warning_rules.warning_rows import (
    NOW,
    Minute,
    T,
    collected,
    default_threshold,
    minutes_before,
    override_threshold,
)

NAMESRV_A, NAMESRV_B = "10.0.0.1:9876", "10.0.0.2:9876"
HOST = "10.0.1.5"


@pytest.fixture
def cluster(db):
    cluster = Cluster.objects.create(name="rules")
    for address in (NAMESRV_A, NAMESRV_B):
        NameServer.objects.create(cluster=cluster, address=address)
    for broker_id in (0, 1):
        Broker.objects.create(
            cluster=cluster,
            cluster_name="DefaultCluster",
            broker_name="broker-a",
            broker_id=broker_id,
            address=f"{HOST}:{10911 + broker_id}",
        )
    return cluster


def found(cluster, kind, now=NOW):
    """The conditions of ``kind`` by subject (the kind must have been evaluated; what a warning event keeps of a
    condition must be JSON)."""
    evaluation = evaluate(cluster, now)
    assert kind in evaluation.evaluated
    for condition in evaluation.conditions:
        json.dumps(condition.details)
    return {c.subject_name: c for c in evaluation.of_kind(kind)}


# --- produce errors -----------------------------------------------------------------------------------------------


def report(cluster, group, minute, *, client="10.2.0.1@4711", broker="broker-a", sent=100, exceptions=None):
    histogram = Histogram()
    for _ in range(sent):
        histogram.record(3.0)
    exceptions = exceptions or {}
    return ProducerMinute(
        cluster_id=cluster.pk,
        producer_group=group,
        topic="TopicOrders",
        client_id=client,
        client_addr=client.partition("@")[0],
        broker_name=broker,
        minute=minute,
        count=sent,
        exception_count=sum(exceptions.values()),
        exceptions=exceptions,
        histogram=histogram.to_dict(),
        max_ms=histogram.max_ms if sent else None,
        updated_at=timezone.now(),
    )


def test_send_exceptions_reported_by_the_sdk_in_the_window_are_produce_errors(cluster):
    store_producer_minutes(
        [
            report(cluster, "pg_orders", minutes_before(T, 2), exceptions={"MQBrokerException": 3}),
            report(
                cluster,
                "pg_orders",
                minutes_before(T, 1),
                client="10.2.0.2@99",
                broker="broker-b",
                exceptions={"RemotingTimeoutException": 7},
            ),
            report(cluster, "pg_orders", minutes_before(T, 1)),
            report(cluster, "pg_fine", minutes_before(T, 1)),
            # before the five-minute window
            report(cluster, "pg_past", minutes_before(T, 6), exceptions={"MQBrokerException": 50}),
        ]
    )

    errors = found(cluster, WarningKind.PRODUCE_ERRORS)

    assert set(errors) == {"pg_orders"}
    condition = errors["pg_orders"]
    assert condition.subject_type == SubjectType.PRODUCER_GROUP
    assert stored_summary(condition).startswith(
        "10 sends of pg_orders failed in the last 5 min (3.3% of 300): RemotingTimeoutException ×7 (broker-b) and "
        "MQBrokerException ×3 (broker-a), on TopicOrders, from 2 clients (10.2.0.1@4711 and 10.2.0.2@99)."
    )
    assert condition.details["exceptions"] == {"RemotingTimeoutException": 7, "MQBrokerException": 3}


def test_a_producer_groups_own_threshold_and_window_apply_to_it(cluster):
    team = Team.objects.create(name="orders")
    tolerant = ProducerGroup.objects.create(cluster=cluster, team=team, name="pg_tolerant")
    override_threshold(WarningKind.PRODUCE_ERRORS, tolerant, exceptions=20, window_minutes=30)
    store_producer_minutes(
        [
            report(cluster, "pg_tolerant", minutes_before(T, 20), exceptions={"MQBrokerException": 15}),
            report(cluster, "pg_tolerant", minutes_before(T, 1), exceptions={"MQBrokerException": 5}),
        ]
    )

    assert found(cluster, WarningKind.PRODUCE_ERRORS)["pg_tolerant"].details["failed"] == 20
    override_threshold(WarningKind.PRODUCE_ERRORS, tolerant, exceptions=21, window_minutes=30)
    assert found(cluster, WarningKind.PRODUCE_ERRORS) == {}


# --- traffic ------------------------------------------------------------------------------------------------------


def traffic(cluster, per_minute: dict[str, tuple[int | None, int | None]], baseline=60, recent=3):
    """``per_minute``: topic -> (baseline messages a minute, recent messages a minute); None = not read."""
    for n in range(baseline + recent - 1, -1, -1):
        minute = Minute(cluster.pk, minutes_before(T, n))
        for topic, (before, now) in per_minute.items():
            value = now if n < recent else before
            if value != 0:
                minute.topic(topic, value)
        minute.store()


def test_a_topic_well_over_its_own_baseline_is_a_surge_and_far_under_it_a_drop(cluster):
    traffic(
        cluster,
        {
            "TopicSurge": (1000, 3001),
            "TopicBusy": (1000, 2999),  # under three times
            "TopicTiny": (2, 90),  # 45 times, but under 100 a minute
            "TopicDrop": (1000, 199),
            "TopicDip": (1000, 201),  # not under a fifth
            "TopicQuiet": (99, 0),  # a baseline too small to judge
            "TopicGone": (500, 0),
        },
    )

    evaluation = evaluate(cluster, NOW)
    json.dumps([c.details for c in evaluation.conditions])
    surges = {c.subject_name: c for c in evaluation.of_kind(WarningKind.TRAFFIC_SURGE)}
    drops = {c.subject_name: c for c in evaluation.of_kind(WarningKind.TRAFFIC_DROP)}

    assert set(surges) == {"TopicSurge"} and set(drops) == {"TopicDrop", "TopicGone"}
    assert surges["TopicSurge"].subject_type == SubjectType.TOPIC
    assert stored_summary(surges["TopicSurge"]).startswith(
        "TopicSurge is receiving 3,001 messages a minute over the last 3 minutes, 3.0 times its baseline of 1,000 a "
        "minute over the 1 h before."
    )
    assert stored_summary(drops["TopicGone"]).startswith(
        "TopicGone is receiving 0 messages a minute over the last 3 minutes, 100% less than its baseline of 500 a "
        "minute over the 1 h before."
    )
    assert drops["TopicDrop"].details["recent_per_minute"] == 199


def test_minutes_a_topic_could_not_be_read_count_neither_as_traffic_nor_as_silence(cluster):
    traffic(cluster, {"TopicUnread": (1000, None)})

    evaluation = evaluate(cluster, NOW)

    assert evaluation.of_kind(WarningKind.TRAFFIC_DROP) == [] and WarningKind.TRAFFIC_DROP in evaluation.evaluated


def test_without_half_a_baseline_of_history_traffic_is_not_evaluated(cluster):
    traffic(cluster, {"TopicYoung": (1000, 0)}, baseline=27)

    evaluation = evaluate(cluster, NOW)

    assert {WarningKind.TRAFFIC_SURGE, WarningKind.TRAFFIC_DROP}.isdisjoint(evaluation.evaluated)
    assert WarningKind.CONSUMER_LAG in evaluation.evaluated


def test_a_topics_own_baseline_window_is_used_for_it(cluster):
    team = Team.objects.create(name="orders")
    topic = Topic.objects.create(cluster=cluster, team=team, name="TopicShortMemory", queue_nums=8)
    override_threshold(WarningKind.TRAFFIC_SURGE, topic, baseline_minutes=10)
    # 1000 a minute for 40 minutes, then 8000 for the last 13: against an hour (2,400 a minute) that is a surge,
    # against its own last 10 minutes it is flat.
    for n in range(52, -1, -1):
        Minute(cluster.pk, minutes_before(T, n)).topic("TopicShortMemory", 8000 if n < 13 else 1000).topic(
            "TopicDefault", 8000 if n < 13 else 1000
        ).store()

    assert set(found(cluster, WarningKind.TRAFFIC_SURGE)) == {"TopicDefault"}
    default_threshold(WarningKind.TRAFFIC_SURGE, baseline_minutes=120)
    # A default longer than the history: not evaluated, however the topic's own override stands.
    assert WarningKind.TRAFFIC_SURGE not in evaluate(cluster, NOW).evaluated


# --- name servers and brokers -------------------------------------------------------------------------------------


def probe_round(cluster, at, *, down=(), namesrv_down=(), offsets=None):
    """One probe round at minute ``at``: ``down`` broker ids and ``namesrv_down`` addresses fail; ``offsets``:
    broker id -> commitLogMaxOffset."""
    offsets = offsets or {0: 5000, 1: 5000}
    name_servers = [
        NameServerProbe(
            cluster_id=cluster.pk,
            address=address,
            minute=at,
            ok=address not in namesrv_down,
            latency_ms=None if address in namesrv_down else 1.0,
            attempts=3 if address in namesrv_down else 1,
            error="connection refused" if address in namesrv_down else "",
        )
        for address in (NAMESRV_A, NAMESRV_B)
    ]
    brokers = []
    for broker_id in (0, 1):
        ok = broker_id not in down
        brokers.append(
            BrokerProbe(
                cluster_id=cluster.pk,
                broker_name="broker-a",
                broker_id=broker_id,
                minute=at,
                address=f"{HOST}:{10911 + broker_id}",
                listed=ok,
                ok=ok,
                latency_ms=1.0 if ok else None,
                attempts=1 if ok else 3,
                error="" if ok else "no answer in 2 s",
                role=("ASYNC_MASTER" if broker_id == 0 else "SLAVE") if ok else "",
                commit_log_max_offset=offsets[broker_id] if ok else None,
            )
        )
    store_probes(name_servers, brokers)


def test_one_failed_probe_round_is_not_an_alarm_two_in_a_row_are(cluster):
    probe_round(cluster, minutes_before(T, 2))
    probe_round(cluster, minutes_before(T, 1), down=[0], namesrv_down=[NAMESRV_B])
    assert found(cluster, WarningKind.BROKER_DOWN, now=minutes_before(T, 1)) == {}
    assert found(cluster, WarningKind.NAMESERVER_DOWN, now=minutes_before(T, 1)) == {}

    probe_round(cluster, T, down=[0], namesrv_down=[NAMESRV_B])

    broker = found(cluster, WarningKind.BROKER_DOWN)["broker-a@0"]
    assert broker.subject_type == SubjectType.BROKER and broker.severity == Severity.CRITICAL
    assert stored_summary(broker).startswith(
        f"Broker broker-a@0 (ASYNC_MASTER, {HOST}:10911) has not answered for 2 min: 2 probe rounds of 3 quick "
        "attempts each failed (no answer in 2 s). The name servers no longer list it."
    )
    name_server = found(cluster, WarningKind.NAMESERVER_DOWN)[NAMESRV_B]
    assert name_server.severity == Severity.WARNING
    assert stored_summary(name_server) == (
        f"Name server {NAMESRV_B} has not answered for 2 min: 2 probe rounds of 3 quick attempts each failed "
        f"(connection refused). Clients fall back on {NAMESRV_A}."
    )


def test_a_server_answering_again_is_no_longer_down(cluster):
    for n in (3, 2, 1):
        probe_round(cluster, minutes_before(T, n), down=[1], namesrv_down=[NAMESRV_A, NAMESRV_B])
    assert found(cluster, WarningKind.BROKER_DOWN, now=minutes_before(T, 1))["broker-a@1"].severity == Severity.WARNING
    all_down = found(cluster, WarningKind.NAMESERVER_DOWN, now=minutes_before(T, 1))
    assert all(c.severity == Severity.CRITICAL for c in all_down.values()) and len(all_down) == 2

    probe_round(cluster, T)

    assert found(cluster, WarningKind.BROKER_DOWN) == {} and found(cluster, WarningKind.NAMESERVER_DOWN) == {}


def test_the_grace_period_is_an_admin_setting(cluster):
    default_threshold(WarningKind.BROKER_DOWN, grace_seconds=0)
    probe_round(cluster, T, down=[0])

    assert set(found(cluster, WarningKind.BROKER_DOWN)) == {"broker-a@0"}


def test_without_recent_probes_health_kinds_are_not_evaluated(cluster):
    probe_round(cluster, T, down=[0])
    probe_round(cluster, T + dt.timedelta(minutes=1), down=[0])

    evaluation = evaluate(cluster, T + dt.timedelta(minutes=7))

    assert {WarningKind.BROKER_DOWN, WarningKind.NAMESERVER_DOWN, WarningKind.SLAVE_LAG}.isdisjoint(
        evaluation.evaluated
    )


def test_a_slave_behind_its_masters_commit_log_by_more_than_the_threshold_is_lagging(cluster):
    mib = 1024 * 1024
    probe_round(cluster, minutes_before(T, 1), offsets={0: 500 * mib, 1: 380 * mib})
    probe_round(cluster, T, offsets={0: 600 * mib, 1: 400 * mib})

    lagging = found(cluster, WarningKind.SLAVE_LAG)["broker-a@1"]

    assert stored_summary(lagging).startswith(
        f"Slave broker-a@1 ({HOST}:10912) is 200.0 MiB of commit log behind its master broker-a@0 ({HOST}:10911), "
        "and falls further behind by 80.0 MiB a minute (threshold 100.0 MiB)."
    )
    assert lagging.details["behind_bytes"] == 200 * mib


@pytest.mark.parametrize(("behind", "warns"), [(100 * 1024 * 1024, False), (100 * 1024 * 1024 + 1, True)])
def test_slave_lag_is_judged_over_the_byte_threshold(cluster, behind, warns):
    probe_round(cluster, T, offsets={0: 10**9, 1: 10**9 - behind})

    assert ("broker-a@1" in found(cluster, WarningKind.SLAVE_LAG)) is warns


def test_a_slave_that_does_not_answer_is_down_not_lagging(cluster):
    probe_round(cluster, minutes_before(T, 1), down=[1])
    probe_round(cluster, T, down=[1])

    assert found(cluster, WarningKind.SLAVE_LAG) == {}


# --- servers ------------------------------------------------------------------------------------------------------


@pytest.fixture
def server_access(cluster):
    return ServerAccess.objects.create(cluster=cluster, username="mq", port=22, private_key="not used here")


def reading(slot, **values):
    disks = values.pop("disks", ())
    store_server_samples(slot, stats={HOST: ServerStats(disks=tuple(disks), **values)}, errors={})


def test_server_readings_over_their_thresholds_are_conditions_of_the_host(cluster, server_access):
    gib = 1024**3
    reading(T - dt.timedelta(minutes=5), cpu_percent=95.0)
    reading(
        T,
        cpu_percent=97.0,
        cpu_iowait_percent=4.0,
        load1=12.5,
        load5=9.0,
        load15=6.0,
        mem_total=64 * gib,
        mem_used=60 * gib,
        swap_used=0,
        tcp_established=12_000,
        tcp_time_wait=300,
        tcp_total=12_500,
        disks=[
            DiskUse("/", size=100 * gib, used=40 * gib, available=60 * gib),
            DiskUse("/data", size=1000 * gib, used=930 * gib, available=70 * gib),
        ],
    )

    evaluation = evaluate(cluster, T + dt.timedelta(minutes=1))
    by_kind = {c.kind: c for c in evaluation.conditions if c.subject_type == SubjectType.SERVER}
    json.dumps([c.details for c in evaluation.conditions])

    assert set(by_kind) == {
        WarningKind.SERVER_CPU,
        WarningKind.SERVER_MEMORY,
        WarningKind.SERVER_DISK,
        WarningKind.SERVER_LOAD,
        WarningKind.SERVER_TCP,
    }
    assert all(c.subject_name == HOST for c in by_kind.values())
    assert stored_summary(by_kind[WarningKind.SERVER_CPU]).startswith(
        f"{HOST}: CPU 97% busy (4% waiting for I/O), over 90% in the last 2 readings (10 min); load 12.50."
    )
    assert stored_summary(by_kind[WarningKind.SERVER_MEMORY]).startswith(
        f"{HOST}: memory 94% used (60.0 GiB of 64.0 GiB)."
    )
    assert stored_summary(by_kind[WarningKind.SERVER_DISK]).startswith(f"{HOST}: /data 93% used (70.0 GiB free).")
    assert stored_summary(by_kind[WarningKind.SERVER_TCP]).startswith(
        f"{HOST}: 12,000 established TCP connections (threshold 10,000), 300 in TIME_WAIT, 12,500 sockets in all."
    )
    assert by_kind[WarningKind.SERVER_LOAD].details["load1"] == 12.5


def test_one_busy_cpu_reading_is_not_enough_and_readings_under_thresholds_are_fine(cluster, server_access):
    reading(T - dt.timedelta(minutes=5), cpu_percent=50.0)
    reading(T, cpu_percent=99.0, load1=9.99, mem_total=100, mem_used=89, tcp_established=9_999)

    evaluation = evaluate(cluster, T + dt.timedelta(minutes=1))

    assert [c for c in evaluation.conditions if c.subject_type == SubjectType.SERVER] == []
    assert WarningKind.SERVER_CPU in evaluation.evaluated


def test_a_failed_reading_leaves_the_previous_one_standing(cluster, server_access):
    reading(T - dt.timedelta(minutes=5), tcp_established=20_000)
    store_server_samples(T, stats={}, errors={HOST: "connection refused"})

    assert set(found(cluster, WarningKind.SERVER_TCP, now=T + dt.timedelta(minutes=1))) == {HOST}


def test_servers_are_not_evaluated_without_server_access_or_recent_readings(cluster, server_access):
    reading(T - dt.timedelta(minutes=20), tcp_established=20_000)
    assert WarningKind.SERVER_TCP not in evaluate(cluster, T).evaluated

    reading(T, tcp_established=20_000)
    server_access.delete()
    assert WarningKind.SERVER_TCP not in evaluate(cluster, T).evaluated


def test_rules_of_other_clusters_data_are_not_mixed_in(cluster):
    other = Cluster.objects.create(name="other")
    Minute(other.pk, T).consume("cg_other", "TopicOther", lag=99_999, lag_seconds=999.0).store()
    collected(cluster.pk, T)
    probe_round(cluster, T)

    assert evaluate(cluster, NOW).conditions == []

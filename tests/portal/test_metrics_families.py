"""What /metrics says, from stored minutes only: rocketmq-exporter's names and units where it has the figure, our
own ``mqcloud_`` families for the rest, every series filtered through the registry, and nothing for a cluster whose
collection stopped but its collection health."""

import datetime as dt

import pytest

from portal.models import ConsumerGroup, MessageModel, ProducerGroup, Severity, Subscription, Topic, WarningKind
from portal.models import Warning as PortalWarning
from stats.histogram import Histogram
from stats.models import (
    BrokerMinute,
    BrokerProbe,
    ClientMinute,
    ClientQueueLagMinute,
    ConsumeMinute,
    GroupMinute,
    ProducerMinute,
    QueueLagMinute,
    TopicMinute,
)
from stats.queries.producers import group_latency
from stats.store.producers import store_producer_minutes
from tests.portal.metrics_world import ago, collected, labels, scrape

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.portal.metrics_fixtures"]


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS", queue_nums=4)


@pytest.fixture
def billing(prod, team, orders):
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=orders)
    return group


def test_topic_traffic_is_the_charts_rate_and_an_idle_registered_topic_is_zero(
    client, scrape_token, prod, orders, team
):
    Topic.objects.create(cluster=prod, team=team, name="IDLE", queue_nums=4)
    collected(
        1, prod, topics=[TopicMinute(cluster_id=prod.pk, topic="ORDERS", minute=ago(1), put_nums=1200, put_size=600)]
    )
    metrics = scrape(client, scrape_token)
    assert metrics["rocketmq_producer_tps"] == {
        labels(cluster="prod", topic="ORDERS"): 20.0,
        labels(cluster="prod", topic="IDLE"): 0.0,
    }
    assert metrics["rocketmq_producer_message_size"][labels(cluster="prod", topic="ORDERS")] == 10.0


def test_consumer_lag_retry_lag_and_lag_time_use_the_exporters_names_and_labels(client, scrape_token, prod, billing):
    minute = ago(1)
    stored_at = minute - dt.timedelta(seconds=90)
    collected(
        1,
        prod,
        consumes=[
            ConsumeMinute(
                cluster_id=prod.pk,
                group="GID_BILLING",
                topic="ORDERS",
                minute=minute,
                get_size=6000,
                consume_tps=3.5,
                sndbck_nums=4,
                lag=42,
                lag_seconds=90.0,
            ),
            ConsumeMinute(cluster_id=prod.pk, group="GID_BILLING", topic="%RETRY%GID_BILLING", minute=minute, lag=3),
        ],
        queue_lags=[
            QueueLagMinute(
                cluster_id=prod.pk,
                group="GID_BILLING",
                topic="ORDERS",
                broker_name="broker-a",
                queue_id=2,
                minute=minute,
                broker_offset=100,
                consumer_offset=58,
                lag=42,
                last_consumed_stored_at=stored_at,
            ),
        ],
        groups=[
            GroupMinute(
                cluster_id=prod.pk, group="GID_BILLING", minute=minute, clients=2, blocked_queues=1, dlq_total=7
            )
        ],
    )
    metrics = scrape(client, scrape_token)
    pair = labels(cluster="prod", topic="ORDERS", group="GID_BILLING")
    assert metrics["rocketmq_consumer_tps"][pair] == 3.5
    assert metrics["rocketmq_consumer_message_size"][pair] == 100.0
    assert metrics["rocketmq_send_back_nums"][pair] == 4
    assert metrics["rocketmq_group_get_latency_by_storetime"][pair] == 90_000
    diff = dict(cluster="prod", group="GID_BILLING", countOfOnlineConsumers="2", msgModel="1")
    assert metrics["rocketmq_group_diff"] == {labels(topic="ORDERS", **diff): 42}
    assert metrics["rocketmq_group_retrydiff"] == {labels(topic="%RETRY%GID_BILLING", **diff): 3}
    assert metrics["rocketmq_group_dlqdiff"] == {labels(topic="%DLQ%GID_BILLING", **diff): 7}
    assert metrics["rocketmq_group_count"] == {labels(cluster="prod", group="GID_BILLING"): 2}
    queue = labels(cluster="prod", group="GID_BILLING", topic="ORDERS", broker="broker-a", queue_id="2", client_id="")
    assert metrics["mqcloud_queue_lag"] == {queue: 42}
    assert metrics["mqcloud_queue_broker_offset"][queue] == 100
    assert metrics["mqcloud_consumer_lag_seconds"][labels(cluster="prod", group="GID_BILLING", topic="ORDERS")] == 90
    assert metrics["mqcloud_consumer_blocked_queues"] == {labels(cluster="prod", group="GID_BILLING"): 1}


def test_a_broadcasting_group_has_a_lag_series_per_client_labelled_as_the_exporter_labels_a_client(
    client, scrape_token, prod, billing
):
    ConsumerGroup.objects.filter(pk=billing.pk).update(message_model=MessageModel.BROADCASTING)
    minute = ago(1)
    at = {"cluster_id": prod.pk, "group": "GID_BILLING", "minute": minute}
    behind, keeping_up = "10.0.0.9@1", "10.0.0.8@1"
    collected(
        1,
        prod,
        consumes=[ConsumeMinute(**at, topic="ORDERS", lag=5)],
        groups=[GroupMinute(**at, clients=2, message_model="BROADCASTING")],
        clients=[
            ClientMinute(**at, client_id=client_id, address=f"{client_id[:8]}:5000", subscription={"ORDERS": "*"})
            for client_id in (behind, keeping_up)
        ],
        # The group's own lag per queue is its furthest-behind client's; each client's is kept besides.
        queue_lags=[
            QueueLagMinute(
                **at,
                topic="ORDERS",
                broker_name="broker-a",
                queue_id=0,
                broker_offset=10,
                consumer_offset=5,
                lag=5,
                client_id=behind,
            ),
        ],
        client_queue_lags=[
            ClientQueueLagMinute(
                **at,
                topic="ORDERS",
                broker_name="broker-a",
                queue_id=0,
                client_id=behind,
                broker_offset=10,
                consumer_offset=5,
                lag=5,
            ),
        ],
    )
    metrics = scrape(client, scrape_token)
    diff = {"cluster": "prod", "group": "GID_BILLING", "topic": "ORDERS", "countOfOnlineConsumers": "2"}
    assert metrics["rocketmq_group_diff"] == {
        labels(**diff, msgModel="0", clientId=behind, clientAddr="10.0.0.9:5000"): 5,
        labels(**diff, msgModel="0", clientId=keeping_up, clientAddr="10.0.0.8:5000"): 0,
    }
    queue = {"cluster": "prod", "group": "GID_BILLING", "topic": "ORDERS", "broker": "broker-a", "queue_id": "0"}
    assert metrics["mqcloud_queue_lag"] == {labels(**queue, client_id=behind): 5}
    assert "mqcloud_consumer_lag_seconds" not in metrics  # how long a broadcasting group waited is not known


def test_a_deleted_topic_or_group_has_no_series_from_the_next_scrape(client, scrape_token, prod, billing, orders):
    minute = ago(1)
    collected(
        1,
        prod,
        topics=[TopicMinute(cluster_id=prod.pk, topic="ORDERS", minute=minute, put_nums=60, put_size=60)],
        consumes=[ConsumeMinute(cluster_id=prod.pk, group="GID_BILLING", topic="ORDERS", minute=minute, lag=1)],
    )
    assert scrape(client, scrape_token)["rocketmq_group_diff"]
    billing.delete()
    orders.delete()
    metrics = scrape(client, scrape_token)
    assert "rocketmq_group_diff" not in metrics
    assert "rocketmq_producer_tps" not in metrics


def test_a_cluster_whose_collection_stopped_exposes_only_its_collection_health(client, scrape_token, prod, orders):
    collected(30, prod, topics=[TopicMinute(cluster_id=prod.pk, topic="ORDERS", minute=ago(30), put_nums=60)])
    metrics = scrape(client, scrape_token)
    assert "rocketmq_producer_tps" not in metrics
    assert metrics["mqcloud_collection_last_minute_timestamp_seconds"] == {labels(cluster="prod"): ago(30).timestamp()}
    assert metrics["mqcloud_collection_cycle_seconds"] == {labels(cluster="prod"): 1.5}


def test_brokers_traffic_and_runtime_come_from_the_latest_minute_and_probe(client, scrape_token, prod):
    minute = ago(1)
    collected(
        1,
        prod,
        brokers=[
            BrokerMinute(
                cluster_id=prod.pk,
                broker_name="broker-a",
                broker_id=0,
                minute=minute,
                up=True,
                put_nums=600,
                get_nums=300,
            ),
            BrokerMinute(cluster_id=prod.pk, broker_name="broker-a", broker_id=1, minute=minute, up=False),
        ],
    )
    BrokerProbe.objects.create(
        cluster_id=prod.pk,
        broker_name="broker-a",
        broker_id=0,
        minute=minute,
        address="10.0.0.5:10911",
        listed=True,
        ok=True,
        latency_ms=2.0,
        attempts=1,
        version="V4_9_4",
        runtime_seconds=3600,
        put_tps=12.5,
        commit_log_disk_ratio=0.25,
    )
    BrokerProbe.objects.create(
        cluster_id=prod.pk,
        broker_name="broker-a",
        broker_id=1,
        minute=minute,
        address="10.0.0.5:10921",
        listed=False,
        ok=False,
        attempts=3,
        error="refused",
    )
    metrics = scrape(client, scrape_token)
    master = dict(cluster="prod", brokerIP="10.0.0.5:10911", broker="broker-a", broker_id="0")
    assert metrics["rocketmq_broker_tps"] == {labels(**master): 10.0}
    assert metrics["rocketmq_broker_qps"] == {labels(**master): 5.0}
    assert metrics["rocketmq_brokeruntime_put_tps10"] == {labels(broker_version="V4_9_4", **master): 12.5}
    assert metrics["rocketmq_brokeruntime_commitlog_disk_ratio"] == {labels(broker_version="V4_9_4", **master): 0.25}
    slave = labels(cluster="prod", brokerIP="10.0.0.5:10921", broker="broker-a", broker_id="1")
    assert metrics["mqcloud_broker_up"] == {labels(**master): 1, slave: 0}
    assert metrics["mqcloud_broker_uptime_seconds"] == {labels(**master): 3600}


def test_producer_send_latency_is_a_histogram_and_its_percentiles_are_the_charts(
    client, scrape_token, prod, orders, team
):
    ProducerGroup.objects.create(cluster=prod, team=team, name="PID_ORDERS")
    minute = ago(1)
    histogram = Histogram()
    for ms in (0.5, 3, 3, 7, 40, 40, 120, 900):
        histogram.record(ms)
    store_producer_minutes(
        [
            ProducerMinute(
                cluster_id=prod.pk,
                producer_group="PID_ORDERS",
                topic="ORDERS",
                client_id="c1",
                client_addr="10.0.0.9",
                broker_name="broker-a",
                minute=minute,
                count=9,
                exception_count=1,
                exceptions={"MQBrokerException": 1},
                histogram=histogram.to_dict(),
                max_ms=900,
                updated_at=minute,
            ),
        ]
    )
    metrics = scrape(client, scrape_token)
    send = dict(cluster="prod", producer_group="PID_ORDERS", topic="ORDERS", broker="broker-a")
    buckets = {dict(key)["le"]: value for key, value in metrics["mqcloud_producer_send_latency_seconds_bucket"].items()}
    assert buckets["0.001"] == 1
    assert buckets["0.005"] == 3
    assert buckets["0.01"] == 4
    assert buckets["0.05"] == 6
    assert buckets["1.0"] == buckets["+Inf"] == 8
    assert metrics["mqcloud_producer_send_latency_seconds_gsum"][labels(**send)] == pytest.approx(1.1135)
    assert metrics["mqcloud_producer_sends"] == {labels(**send): 9}
    assert metrics["mqcloud_producer_send_errors"] == {labels(exception="MQBrokerException", **send): 1}
    charted = group_latency(prod.pk, "PID_ORDERS", minute, minute).total
    exposed = metrics["mqcloud_producer_send_latency_ms"]
    assert exposed[labels(quantile="0.99", **send)] == charted.p99[0][1]
    assert exposed[labels(quantile="0.5", **send)] == charted.p50[0][1]


def test_open_warnings_are_counted_by_kind_and_severity_with_every_pair_present(client, scrape_token, prod):
    now = ago(0)
    for broker in ("broker-a", "broker-b"):
        PortalWarning.objects.create(
            kind=WarningKind.BROKER_DOWN,
            cluster=prod,
            subject_type="broker",
            subject_name=broker,
            severity=Severity.CRITICAL,
            opened_at=now,
            last_seen_at=now,
            last_notified_at=now,
            summary="",
        )
    metrics = scrape(client, scrape_token)["mqcloud_warnings_open"]
    assert metrics[labels(cluster="prod", kind="broker_down", severity="critical")] == 2
    assert metrics[labels(cluster="prod", kind="consumer_lag", severity="warning")] == 0
    assert len(metrics) == len(WarningKind.values) * len(Severity.values)

"""Each client's lag in a broadcasting group as stored and read back: every answering client on every topic it
subscribes to (not behind: 0), unknown where the group's lag is unknown, clients that did not answer left out, and
the rows deleted past retention like every minute table."""

import datetime as dt

import pytest
from django.utils import timezone

from stats.models import ClientMinute, ClientQueueLagMinute, ClusterMinute, ConsumeMinute, GroupMinute
from stats.queries.broadcast import ClientLag, broadcast_client_lags
from stats.store.traffic import MinuteSamples, delete_expired, store_minute

pytestmark = pytest.mark.django_db

MINUTE = timezone.now().replace(second=0, microsecond=0)
AT = {"cluster_id": 1, "minute": MINUTE}


def queue_lag(group: str, topic: str, client_id: str, queue_id: int, lag: int, **at) -> ClientQueueLagMinute:
    return ClientQueueLagMinute(
        **(at or AT),
        group=group,
        topic=topic,
        broker_name="broker-a",
        queue_id=queue_id,
        client_id=client_id,
        broker_offset=100,
        consumer_offset=100 - lag,
        lag=lag,
    )


def store(**rows) -> None:
    store_minute(MinuteSamples(cluster=ClusterMinute(**AT), **rows))


def test_every_answering_client_of_a_broadcasting_group_has_a_lag_on_each_topic_it_subscribes_to():
    both = {"ORDERS": "*", "REFUNDS": "*"}
    store(
        groups=[
            GroupMinute(**AT, group="cg_cache", clients=3, message_model="BROADCASTING"),
            GroupMinute(**AT, group="cg_billing", clients=1, message_model="CLUSTERING"),
        ],
        clients=[
            ClientMinute(**AT, group="cg_cache", client_id="a@1", address="10.0.0.1:1", subscription=both),
            ClientMinute(**AT, group="cg_cache", client_id="b@1", address="10.0.0.2:1", subscription=both),
            ClientMinute(**AT, group="cg_cache", client_id="c@1", address="10.0.0.3:1", error="timeout"),
            ClientMinute(**AT, group="cg_billing", client_id="d@1", address="10.0.0.4:1", subscription=both),
        ],
        consumes=[ConsumeMinute(**AT, group="cg_cache", topic="REFUNDS", lag=None)],
        client_queue_lags=[
            queue_lag("cg_cache", "ORDERS", "a@1", 0, 7),
            queue_lag("cg_cache", "ORDERS", "a@1", 1, 3),
            queue_lag("cg_cache", "ORDERS", "b@1", 1, 2),
        ],
    )

    assert broadcast_client_lags(1, MINUTE) == [
        ClientLag("cg_cache", "ORDERS", "a@1", "10.0.0.1:1", lag=10, queues_behind=2),
        ClientLag("cg_cache", "ORDERS", "b@1", "10.0.0.2:1", lag=2, queues_behind=1),
        ClientLag("cg_cache", "REFUNDS", "a@1", "10.0.0.1:1", lag=None, queues_behind=0),
        ClientLag("cg_cache", "REFUNDS", "b@1", "10.0.0.2:1", lag=None, queues_behind=0),
    ]
    assert broadcast_client_lags(1, MINUTE, ["cg_billing"]) == []


def test_clients_queue_lags_past_retention_are_deleted():
    old = MINUTE - dt.timedelta(days=8)
    ClientQueueLagMinute.objects.bulk_create(
        [queue_lag("cg_cache", "ORDERS", "a@1", 0, 1, cluster_id=1, minute=minute) for minute in (old, MINUTE)]
    )

    assert delete_expired(MINUTE - dt.timedelta(days=7), batch_size=10, max_batches=10) == 1
    assert list(ClientQueueLagMinute.objects.values_list("minute", flat=True)) == [MINUTE]

"""Storing producers' reports: one row per (cluster, group, topic, client, broker, minute), written with an upsert so
that a report sent again replaces its rows and never adds to them; old minutes go with the other minute tables."""

import datetime as dt

import pytest

from stats.histogram import Histogram
from stats.models import ProducerMinute
from stats.store.producers import store_producer_minutes
from stats.store.traffic import delete_expired

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)


def row(minute=T0, *, client="10.0.0.1@100", broker="broker-a", costs=(1.0, 2.0), failed=0) -> ProducerMinute:
    histogram = Histogram()
    for cost in costs:
        histogram.record(cost)
    return ProducerMinute(
        cluster_id=1,
        producer_group="PID_ORDERS",
        topic="ORDERS",
        client_id=client,
        client_addr=client.partition("@")[0],
        broker_name=broker,
        minute=minute,
        count=len(costs),
        exception_count=failed,
        exceptions={"MQBrokerException": failed} if failed else {},
        histogram=histogram.to_dict(),
        max_ms=histogram.max_ms,
        updated_at=minute + dt.timedelta(seconds=70),
    )


def test_a_report_sent_again_replaces_its_rows_instead_of_adding_to_them():
    store_producer_minutes([row(broker="broker-a"), row(broker="broker-b")])
    store_producer_minutes([row(broker="broker-a", costs=(5.0, 6.0, 7.0), failed=1)])

    stored = {r.broker_name: r for r in ProducerMinute.objects.all()}
    assert set(stored) == {"broker-a", "broker-b"}
    assert (stored["broker-a"].count, stored["broker-a"].exception_count, stored["broker-a"].max_ms) == (3, 1, 7.0)
    assert Histogram.from_dict(stored["broker-a"].histogram).count == 3
    assert stored["broker-b"].count == 2


def test_rows_with_the_same_key_in_one_batch_are_written_once_the_last_winning():
    assert store_producer_minutes([row(costs=(1.0,)), row(costs=(1.0, 2.0, 3.0))]) == 1
    assert ProducerMinute.objects.get().count == 3


def test_each_client_broker_and_minute_has_its_own_row():
    store_producer_minutes(
        [
            row(),
            row(client="10.0.0.2@200"),
            row(broker="broker-b"),
            row(T0 + dt.timedelta(minutes=1)),
        ]
    )
    assert ProducerMinute.objects.count() == 4


def test_producer_minutes_past_retention_are_deleted_with_the_other_minute_tables():
    store_producer_minutes([row(T0 - dt.timedelta(days=8)), row(T0 - dt.timedelta(days=8), broker="b"), row(T0)])

    assert delete_expired(T0 - dt.timedelta(days=7), batch_size=10, max_batches=10) == 2
    assert list(ProducerMinute.objects.values_list("minute", flat=True)) == [T0]

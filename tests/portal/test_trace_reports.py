"""The trace counts of the SDK's reports (``trace``: written, dropped, failed): stored per client, group, topic and
minute for producers and consumers alike, a batch sent again replacing its rows rather than adding to them; the
topic page lists the clients tracing the topic with their counts, and the message trace says whether any does."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Cluster, ConsumerGroup, ProducerGroup, Subscription, Topic
from portal.services import consumer_tokens, producer_tokens
from stats.histogram import Histogram
from stats.models import TraceClientMinute
from stats.queries.tracing import topic_is_traced
from stats.store.traffic import delete_expired

PRODUCER_REPORTS = reverse("api:producer-reports")
CONSUMER_REPORTS = reverse("api:consumer-reports")


@pytest.fixture
def orders(db, team):
    prod = Cluster.objects.create(name="prod")
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS", trace_enabled=True)


def client_for(kind: str, secret: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"{kind} {secret}")
    return api


@pytest.fixture
def producer_api(orders, team, member):
    group = ProducerGroup.objects.create(cluster=orders.cluster, team=team, name="PID_ORDERS")
    group.topics.add(orders)
    return client_for("Producer", producer_tokens.issue(group, by=member).secret)


@pytest.fixture
def consumer_api(orders, team, member):
    group = ConsumerGroup.objects.create(cluster=orders.cluster, team=team, name="GID_ORDERS")
    Subscription.objects.create(consumer_group=group, topic=orders, tag_expression="*")
    return client_for("Consumer", consumer_tokens.issue(group, by=member).secret)


def minute(offset: int = -1) -> str:
    moment = timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=offset)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def histogram(count: int) -> dict:
    recorded = Histogram()
    for _ in range(count):
        recorded.record(2.0)
    return recorded.to_dict()


def producer_report(trace: dict, *, at: str | None = None, client_id="10.1.2.3@4711") -> dict:
    return {
        "minute": at or minute(),
        "client_id": client_id,
        "client_addr": client_id.partition("@")[0],
        "producer_group": "PID_ORDERS",
        "topic": "ORDERS",
        "brokers": [{"broker_name": "broker-a", "count": 2, "exceptions": {}, "histogram": histogram(2)}],
        "trace": trace,
    }


def consumer_report(trace: dict | None, *, client_id="10.1.2.9@77") -> dict:
    report = {
        "minute": minute(),
        "client_id": client_id,
        "client_addr": client_id.partition("@")[0],
        "consumer_group": "GID_ORDERS",
        "topic": "ORDERS",
        "count": 3,
        "failures": {},
        "histogram": histogram(3),
    }
    return report if trace is None else report | {"trace": trace}


def stored() -> list[tuple]:
    return list(
        TraceClientMinute.objects.order_by("role", "minute").values_list(
            "role", "group", "topic", "client_id", "written", "dropped", "failed"
        )
    )


def test_producer_and_consumer_trace_counts_are_stored_once_however_often_a_batch_is_sent(producer_api, consumer_api):
    produced = {"reports": [producer_report({"written": 120, "dropped": 3, "failed": 1})]}
    consumed = {"reports": [consumer_report({"written": 6, "dropped": 0, "failed": 0})]}

    for _ in range(2):
        assert producer_api.post(PRODUCER_REPORTS, produced, format="json").status_code == 202
        assert consumer_api.post(CONSUMER_REPORTS, consumed, format="json").status_code == 202

    assert stored() == [
        ("consumer", "GID_ORDERS", "ORDERS", "10.1.2.9@77", 6, 0, 0),
        ("producer", "PID_ORDERS", "ORDERS", "10.1.2.3@4711", 120, 3, 1),
    ]


def test_a_corrected_report_replaces_its_minutes_counts(producer_api):
    at = minute(-2)
    for counts in ({"written": 5, "dropped": 0, "failed": 0}, {"written": 9, "dropped": 1, "failed": 0}):
        producer_api.post(PRODUCER_REPORTS, {"reports": [producer_report(counts, at=at)]}, format="json")

    assert stored() == [("producer", "PID_ORDERS", "ORDERS", "10.1.2.3@4711", 9, 1, 0)]


def test_reports_without_trace_counts_store_none_and_a_refused_batch_stores_nothing(consumer_api):
    assert consumer_api.post(CONSUMER_REPORTS, {"reports": [consumer_report(None)]}, format="json").status_code == 202
    bad = {"reports": [consumer_report({"written": 1, "dropped": 0, "failed": 0}), consumer_report({"written": 1})]}
    assert consumer_api.post(CONSUMER_REPORTS, bad, format="json").status_code == 400

    assert stored() == []


def test_trace_counts_expire_with_the_other_minute_tables(producer_api):
    producer_api.post(PRODUCER_REPORTS, {"reports": [producer_report({"written": 1, "dropped": 0, "failed": 0})]},
                      format="json")  # fmt: skip

    assert delete_expired(timezone.now(), batch_size=100, max_batches=10) >= 1

    assert stored() == []


def test_the_topic_page_lists_the_clients_tracing_it_with_their_group_and_counts(
    client, orders, producer_api, consumer_api, outsider
):
    producer_api.post(PRODUCER_REPORTS, {"reports": [
        producer_report({"written": 40, "dropped": 0, "failed": 0}, at=minute(-2)),
        producer_report({"written": 60, "dropped": 7, "failed": 2}),
    ]}, format="json")  # fmt: skip
    consumer_api.post(CONSUMER_REPORTS, {"reports": [consumer_report({"written": 6, "dropped": 0, "failed": 0})]},
                      format="json")  # fmt: skip
    client.force_login(outsider)

    page = client.get(reverse("topic-detail", args=[orders.pk]))

    listed = [(c.role, c.group, c.client_id, c.written, c.dropped, c.failed) for c in page.context["tracing_clients"]]
    assert listed == [
        ("producer", "PID_ORDERS", "10.1.2.3@4711", 100, 7, 2),
        ("consumer", "GID_ORDERS", "10.1.2.9@77", 6, 0, 0),
    ]
    html = page.content.decode()
    assert 'id="tracing-clients"' in html and "10.1.2.9@77" in html


def test_a_topic_nobody_traced_lately_says_so_and_is_not_traced(client, orders, producer_api, outsider):
    producer_api.post(PRODUCER_REPORTS, {"reports": [
        producer_report({"written": 40, "dropped": 0, "failed": 0}, at=minute(-30)),
    ]}, format="json")  # fmt: skip
    client.force_login(outsider)

    page = client.get(reverse("topic-detail", args=[orders.pk]))

    assert page.context["tracing_clients"] == []
    assert "No SDK client reported tracing this topic in the last 5 minutes" in page.content.decode()
    assert not topic_is_traced(orders.cluster_id, "ORDERS", timezone.now())


def test_anonymous_visitors_do_not_see_the_tracing_clients(client, orders, producer_api):
    producer_api.post(PRODUCER_REPORTS, {"reports": [producer_report({"written": 1, "dropped": 0, "failed": 0})]},
                      format="json")  # fmt: skip

    page = client.get(reverse("topic-detail", args=[orders.pk]))

    assert page.status_code == 200 and "tracing_clients" not in page.context
    assert "10.1.2.3@4711" not in page.content.decode()

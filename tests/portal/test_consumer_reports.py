"""SDK consumers and the portal: consumption reports (``POST /api/v1/consumer-reports/``) are taken only with a
consumer group's token (``Authorization: Consumer``), checked whole and stored idempotently; the client bootstrap
(``GET /api/v1/client-bootstrap/``) answers the cluster's name servers and the group's settings, the throttle shared
by the group's reporting clients; the group page shows what the clients reported and lets the owning team set the
throttle and issue tokens; and the warning rule judges the reported failures."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import (
    AuditEntry,
    Cluster,
    ConsumerGroup,
    ConsumerToken,
    NameServer,
    ProducerGroup,
    Subscription,
    Topic,
)
from portal.models.warnings import WarningKind
from portal.services import consumer_reports, consumer_tokens, producer_tokens
from portal.services.warnings.rules import evaluate
from stats.histogram import Histogram
from stats.models import ConsumerClientMinute
from tests.portal.warning_rules.warning_rows import default_threshold

URL = reverse("api:consumer-reports")
BOOTSTRAP = reverse("api:client-bootstrap")


@pytest.fixture
def prod(db):
    cluster = Cluster.objects.create(name="prod")
    NameServer.objects.create(cluster=cluster, address="10.0.0.1:9876")
    NameServer.objects.create(cluster=cluster, address="10.0.0.2:9876")
    return cluster


@pytest.fixture
def group(prod, team):
    orders = Topic.objects.create(cluster=prod, team=team, name="ORDERS")
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_ORDERS")
    Subscription.objects.create(consumer_group=group, topic=orders, tag_expression="TagA || TagB")
    return group


@pytest.fixture
def token(group, member):
    return consumer_tokens.issue(group, by=member).secret


@pytest.fixture
def api(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Consumer {token}")
    return client


def minute(offset: int = -1) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=offset)


def report(costs=(2.0, 3.0, 40.0), failures=None, **fields) -> dict:
    histogram = Histogram()
    for cost in costs:
        histogram.record(cost)
    base = {
        "minute": minute().astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "client_id": "10.1.2.3@4711",
        "client_addr": "10.1.2.3",
        "consumer_group": "GID_ORDERS",
        "topic": "ORDERS",
        "count": len(costs),
        "failures": failures or {},
        "histogram": histogram.to_dict(),
    }
    return base | fields


def test_a_valid_batch_is_stored_once_however_often_it_is_sent(api, prod):
    batch = {"reports": [report(failures={"ValueError": 1}), report(client_id="10.1.2.4@1", client_addr="10.1.2.4")]}

    assert api.post(URL, batch, format="json").status_code == 202
    assert api.post(URL, batch, format="json").json() == {"accepted": 2}

    rows = ConsumerClientMinute.objects.order_by("client_id")
    assert [(r.cluster_id, r.client_id, r.count, r.failure_count, r.failures, r.max_ms) for r in rows] == [
        (prod.pk, "10.1.2.3@4711", 3, 1, {"ValueError": 1}, 40.0),
        (prod.pk, "10.1.2.4@1", 3, 0, {}, 40.0),
    ]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"topic": "PAYMENTS"}, "topic", "Unknown topic PAYMENTS."),
        ({"count": 5}, "count", "count is 5 but the histogram holds 3 consumed messages."),
        ({"failures": {"ValueError": 4}}, "failures", "More failures than consumed messages."),
        ({"brokers": []}, "brokers", "Unknown field."),
        ({"minute": "2026-01-01T00:00:30Z"}, "minute", "Expected a whole minute"),
    ],
)
def test_a_malformed_report_refuses_the_whole_batch(api, fields, field, message):
    response = api.post(URL, {"reports": [report(), report(**fields)]}, format="json")

    assert response.status_code == 400
    assert message in response.json()["reports"]["1"][field][0]
    assert not ConsumerClientMinute.objects.exists()


def test_a_topic_the_group_does_not_subscribe_to_is_refused(api, prod, team):
    Topic.objects.create(cluster=prod, team=team, name="PAYMENTS")

    errors = api.post(URL, {"reports": [report(topic="PAYMENTS")]}, format="json").json()

    assert errors["reports"]["0"]["topic"] == [
        "Consumer group GID_ORDERS is not registered as subscribed to topic PAYMENTS."
    ]


def test_only_the_groups_own_consumer_token_reports(api, prod, team, member, group):
    ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_OTHER")
    assert api.post(URL, {"reports": [report(consumer_group="GID_OTHER")]}, format="json").status_code == 403

    anonymous = APIClient()
    assert anonymous.post(URL, {"reports": [report()]}, format="json").status_code == 401
    revoked = consumer_tokens.issue(group, by=member)
    consumer_tokens.revoke(revoked.token, by=member)
    anonymous.credentials(HTTP_AUTHORIZATION=f"Consumer {revoked.secret}")
    assert anonymous.post(URL, {"reports": [report()]}, format="json").status_code == 401


def test_the_bootstrap_answers_name_servers_subscriptions_and_the_clients_share_of_the_throttle(api, group):
    assert api.get(BOOTSTRAP).json() == {
        "cluster": "prod",
        "namesrv_addr": "10.0.0.1:9876;10.0.0.2:9876",
        "group": "GID_ORDERS",
        "refresh_seconds": 60,
        "trace_topic": "RMQ_SYS_TRACE_TOPIC",
        "traced_topics": [],
        "message_model": "CLUSTERING",
        "subscriptions": [{"topic": "ORDERS", "tag_expression": "TagA || TagB"}],
        "throttle_tps": None,
        "client_throttle_tps": None,
    }

    group.consume_throttle_tps = 100
    group.save()
    api.post(URL, {"reports": [report(client_id="10.1.2.4@1", client_addr="10.1.2.4")]}, format="json")
    answer = api.get(BOOTSTRAP, {"client_id": "10.1.2.3@4711"}).json()

    assert (answer["throttle_tps"], answer["client_throttle_tps"]) == (100, 50)  # two clients share it


def test_a_producer_token_bootstraps_with_its_groups_topics(prod, team, member):
    producer = ProducerGroup.objects.create(cluster=prod, team=team, name="PID_ORDERS")
    producer.topics.add(Topic.objects.create(cluster=prod, team=team, name="ORDERS"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Producer {producer_tokens.issue(producer, by=member).secret}")

    answer = client.get(BOOTSTRAP).json()

    assert (answer["namesrv_addr"], answer["topics"]) == ("10.0.0.1:9876;10.0.0.2:9876", ["ORDERS"])


def test_the_group_page_shows_the_reported_consumption(client, api, group, member, outsider):
    api.post(
        URL, {"reports": [report(failures={"ValueError": 1}), report(minute=minute(-2).isoformat())]}, format="json"
    )
    client.force_login(outsider)

    page = client.get(reverse("consumer-group-detail", args=[group.pk]))

    figures = page.context["consumption"].topics[0]
    assert (figures.name, figures.count, figures.failure_count, round(figures.tps, 3)) == ("ORDERS", 6, 1, 0.05)
    assert figures.p50_ms == pytest.approx(3.0, rel=0.01) and figures.p99_ms == pytest.approx(40.0, rel=0.01)
    html = page.content.decode()
    assert "Consumption reported by SDK consumers" in html and "consumer-tokens" not in html
    assert page.context["throttle_form"] is None


def test_the_owning_team_sets_the_throttle_and_issues_tokens_on_the_group_page(client, group, member):
    client.force_login(member)

    response = client.post(reverse("consumer-group-throttle", args=[group.pk]), {"consume_throttle_tps": "250"})
    issued = client.post(reverse("consumer-token-issue", args=[group.pk]), {"label": "billing"})

    assert response.status_code == 302
    group.refresh_from_db()
    assert group.consume_throttle_tps == 250
    entry = AuditEntry.objects.get(action="consumergroup.throttle")
    assert (entry.before["consume_throttle_tps"], entry.after["consume_throttle_tps"]) == (None, 250)
    assert issued.status_code == 200 and "Authorization: Consumer mqc_" in issued.content.decode()
    assert consumer_tokens.authenticate(issued.context["issued"].secret) == ConsumerToken.objects.get()
    client.post(reverse("consumer-group-throttle", args=[group.pk]), {"consume_throttle_tps": ""})
    group.refresh_from_db()
    assert group.consume_throttle_tps is None


def test_reported_failures_over_the_threshold_raise_a_warning_naming_them(group, token):
    default_threshold(WarningKind.CLIENT_CONSUME_FAILURES, failures=3, window_minutes=5)
    token_row = ConsumerToken.objects.get()
    consumer_reports.accept(token_row, {"reports": [report(costs=[1.0] * 10, failures={"ValueError": 2})]})
    quiet = evaluate(group.cluster, timezone.now())
    assert WarningKind.CLIENT_CONSUME_FAILURES in quiet.evaluated and not quiet.of_kind(
        WarningKind.CLIENT_CONSUME_FAILURES
    )

    consumer_reports.accept(token_row, {"reports": [report(costs=[1.0] * 5, failures={"TimeoutError": 1},
                                                           minute=minute(-2).isoformat())]})  # fmt: skip
    (condition,) = evaluate(group.cluster, timezone.now()).of_kind(WarningKind.CLIENT_CONSUME_FAILURES)

    assert condition.subject_name == "GID_ORDERS"
    details = condition.details
    assert (details["failed_messages"], details["consumed"], details["threshold"]) == (3, 15, 3)
    assert details["failures"] == {"ValueError": 2, "TimeoutError": 1} and details["clients"] == ["10.1.2.3@4711"]


def test_a_consume_report_may_carry_the_minute_s_trace_counts(api):
    counts = {"written": 8, "dropped": 0, "failed": 2}
    batch = {"reports": [report(trace=counts), report(costs=(), client_id="10.1.2.4@1", trace=counts)]}

    assert api.post(URL, batch, format="json").status_code == 202
    refused = api.post(URL, {"reports": [report(trace={"written": "8"})]}, format="json")
    assert refused.status_code == 400 and "trace" in refused.json()["reports"]["0"]

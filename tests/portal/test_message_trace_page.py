"""A message's trace on its page and in the API, on the real sandbox cluster: trace messages are written to the
cluster's trace topic over the wire, bodies in TraceDataEncoder's layout (the 4.9 layouts of
monitor/trace/records.py), keyed by the message id and keys as a tracing client keys them. The page shows the
send, each group's consume attempts, names the subscribed groups that have not consumed the message, marks slow
legs; the API gives the same; a member of another team sees the trace but no body; a custom trace topic is read."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from monitor.messages.send import send_message
from monitor.remoting.admin import MQAdmin
from monitor.trace.records import CONTENT_SPLITOR, FIELD_SPLITOR, RMQ_SYS_TRACE_TOPIC
from portal.models import Cluster, ConsumerGroup, Subscription
from stats.models import TraceClientMinute
from stats.models.tracing import PRODUCER
from stats.store.tracing import store_trace_minutes
from tests.portal.message_world import create_group, create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401
from tests.support.factories import unique

BODY = b'{"order": 7, "secret": "card-4242"}'
SENT_AT = 1795308792062


def record(*fields) -> str:
    return CONTENT_SPLITOR.join(str(field) for field in fields)


def pub(sent, group="PG_ORDERS", cost=12, at=SENT_AT) -> str:
    """Pub, 4.9: type, time, region, group, topic, msgId, tags, keys, storeHost, bodyLength, cost, msgType,
    offsetMsgId, success."""
    return record(
        "Pub", at, "DefaultRegion", group, sent.topic, sent.msg_id, "TagA", "order-7",
        "127.0.0.1:10911", len(BODY), cost, 0, sent.offset_msg_id, "true",
    )  # fmt: skip


def sub_before(sent, group, request, retry=0, at=SENT_AT + 1000) -> str:
    return record("SubBefore", at, "DefaultRegion", group, request, sent.msg_id, retry, "order-7")


def sub_after(sent, group, request, cost=5, success="true", code=0, at=SENT_AT + 1005) -> str:
    return record("SubAfter", request, sent.msg_id, cost, success, "order-7", code, at, group)


def write_trace(sandbox, trace_topic: str, sent, *records: str) -> None:
    """One trace message as AsyncTraceDispatcher sends it: the records joined by FIELD_SPLITOR, keyed by the
    traced message's id and keys."""
    with MQAdmin(sandbox.namesrv_addr) as admin:
        send_message(admin, trace_topic, FIELD_SPLITOR.join(records).encode(), keys=[sent.msg_id, "order-7"])


@pytest.fixture
def sent(sandbox, live_topic):
    return send(sandbox, live_topic.name, BODY, keys=["order-7"], tags="TagA")


@pytest.fixture
def audit_group(cluster, sandbox, team, live_topic):
    """A second group subscribed to the topic, which has not consumed the message."""
    name = unique("MSG_AUDIT_")
    create_group(sandbox, name)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=name)
    Subscription.objects.create(consumer_group=group, topic=live_topic)
    return group


@pytest.fixture
def traced(sandbox, cluster, sent, live_group, audit_group):
    """A slow send, then one failed and one successful attempt of ``live_group``; nothing of ``audit_group``."""
    write_trace(
        sandbox,
        cluster.trace_topic,
        sent,
        pub(sent, cost=1500),
        sub_before(sent, live_group.name, "REQ1"),
        sub_after(sent, live_group.name, "REQ1", cost=30, success="false", code=2),
        sub_before(sent, live_group.name, "REQ2", retry=1, at=SENT_AT + 11_000),
        sub_after(sent, live_group.name, "REQ2", cost=4, at=SENT_AT + 11_004),
    )
    return sent


def page(client, user, cluster, topic_name, msg_id):
    client.force_login(user)
    response = client.get(reverse("message-detail", args=[cluster.pk, topic_name, msg_id]))
    assert response.status_code == 200
    return response


def api_trace(user, cluster, topic_name, msg_id):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(user)
    return api.get(reverse("api:message-trace", args=[cluster.pk, topic_name, msg_id]))


def test_the_page_shows_the_send_each_attempt_and_names_the_group_that_has_not_consumed_it(
    client, cluster, member, live_topic, live_group, audit_group, traced
):
    response = page(client, member, cluster, live_topic.name, traced.offset_msg_id)
    trace = response.context["trace"]

    (send_leg,) = trace["pubs"]
    assert send_leg | {"producer_group": "PG_ORDERS", "cost_ms": 1500, "success": True} == send_leg
    assert send_leg["store_host"] == "127.0.0.1:10911" and send_leg["msg_type"] == "Normal_Msg" and send_leg["slow"]
    (consumer,) = trace["consumers"]
    assert consumer["consumer_group"] == live_group.name
    first, second = consumer["attempts"]
    assert (first["retry_times"], first["success"], first["context_name"]) == (0, False, "EXCEPTION")
    assert not first["slow"]
    assert (second["retry_times"], second["success"], second["cost_ms"]) == (1, True, 4)
    assert trace["missing"] == [{"consumer_group": audit_group.name, "broker_says_consumed": False}]

    html = response.content.decode()
    assert f"Not consumed by group {audit_group.name} yet." in html
    assert 'class="slow"' in html and "PG_ORDERS" in html and "EXCEPTION" in html


def test_the_api_gives_the_same_trace(client, cluster, member, live_topic, traced):
    shown = page(client, member, cluster, live_topic.name, traced.offset_msg_id).context["trace"]

    response = api_trace(member, cluster, live_topic.name, traced.offset_msg_id)

    assert response.status_code == 200 and response.json() == shown
    assert response.json()["found"] and response.json()["slow_threshold_ms"] == 1000


def test_a_member_of_another_team_sees_the_trace_but_no_body(client, cluster, outsider, live_topic, traced):
    response = page(client, outsider, cluster, live_topic.name, traced.offset_msg_id)

    html = response.content.decode()
    assert response.context["trace"]["pubs"][0]["producer_group"] == "PG_ORDERS"
    assert 'id="metadata-only"' in html and "card-4242" not in html
    api = api_trace(outsider, cluster, live_topic.name, traced.offset_msg_id)
    assert api.status_code == 200 and api.json()["consumers"] and "card-4242" not in api.content.decode()


def test_a_cluster_with_a_custom_trace_topic_is_read_from_that_topic(
    client, cluster, sandbox, member, live_topic, sent
):
    custom = unique("ORDERS_TRACE_")
    create_topic(sandbox, custom, queues=1)
    Cluster.objects.filter(pk=cluster.pk).update(trace_topic=custom)
    write_trace(sandbox, RMQ_SYS_TRACE_TOPIC, sent, pub(sent, group="PG_DEFAULT_TOPIC"))
    write_trace(sandbox, custom, sent, pub(sent, group="PG_CUSTOM_TOPIC"))

    trace = page(client, member, cluster, live_topic.name, sent.offset_msg_id).context["trace"]

    assert trace["trace_topic"] == custom
    assert [leg["producer_group"] for leg in trace["pubs"]] == ["PG_CUSTOM_TOPIC"]


def test_a_message_without_trace_says_so_and_how_to_switch_tracing_on(
    client, cluster, member, live_topic, live_group, sent
):
    response = page(client, member, cluster, live_topic.name, sent.offset_msg_id)

    trace = response.context["trace"]
    assert not trace["found"] and trace["trace_topic_exists"] and trace["topic_trace_enabled"] is False
    html = response.content.decode()
    assert f"No trace record of this message in {RMQ_SYS_TRACE_TOPIC}." in html
    assert "switch message trace on" in html and "docs/trace.md" in html
    assert "Not consumed by group" not in html  # nothing traced: no group is blamed
    assert not trace["topic_traced"]
    assert "No SDK client of this topic reported writing trace records in the last few minutes." in html


def test_a_message_without_trace_of_a_topic_sdk_clients_trace_says_they_do(
    client, cluster, member, live_topic, live_group, sent
):
    store_trace_minutes([TraceClientMinute(
        cluster_id=cluster.pk, role=PRODUCER, group="PG_OTHER", topic=live_topic.name, client_id="10.9.9.9@1",
        client_addr="10.9.9.9", minute=timezone.now().replace(second=0, microsecond=0), written=10, dropped=0,
        failed=0, updated_at=timezone.now(),
    )])  # fmt: skip

    response = page(client, member, cluster, live_topic.name, sent.offset_msg_id)

    assert response.context["trace"]["topic_traced"]
    assert "SDK clients of this topic write trace records now" in response.content.decode()


def test_a_trace_topic_the_cluster_does_not_have_is_named(client, cluster, member, live_topic, sent):
    Cluster.objects.filter(pk=cluster.pk).update(trace_topic=unique("NO_SUCH_TRACE_"))

    trace = page(client, member, cluster, live_topic.name, sent.offset_msg_id).context["trace"]

    assert not trace["found"] and not trace["trace_topic_exists"]


def test_the_trace_of_a_message_the_topic_does_not_hold_is_404(cluster, member, live_topic):
    response = api_trace(member, cluster, live_topic.name, "0" * 31 + "X")
    assert response.status_code == 404

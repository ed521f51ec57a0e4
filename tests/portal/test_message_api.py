"""The message API on the real sandbox cluster: searches (start, status, hits, cancel), a message with its body for
those who may see bodies and metadata only for everyone else, its tracks and resend, the operations (an application,
or done at once by a portal admin), dead letters, the reset preview, diagnostics, the test message and the streamed
export. Hostile input (bad ids, huge offsets, NUL, a wrong cluster) gets 400 or 404, never 500."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Application, ApplicationKind, ApplicationState, AuditEntry, MessageSearch
from portal.services.messages.searches import run_search
from tests.portal.message_world import create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401


def logged_in(user) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_login(user)
    return client


def message(cluster, topic_name, msg_id, suffix=""):
    return reverse(f"api:message-{suffix or 'detail'}", args=[cluster.pk, topic_name, msg_id])


def test_a_search_is_started_followed_and_its_hits_read_page_by_page(cluster, sandbox, member, live_topic):
    client = logged_in(member)
    key = f"api-{live_topic.pk}"
    sent = {send(sandbox, live_topic.name, keys=[key]).offset_msg_id for _ in range(60)}

    started = client.post(
        reverse("api:message-search-list"),
        {"cluster": cluster.pk, "topic": live_topic.name, "kind": "key", "key": key},
        format="json",
    )

    assert started.status_code == 201, started.data
    assert started.data["state"] == "queued" and started.data["finished"] is False
    run_search(started.data["id"])
    status = client.get(reverse("api:message-search-detail", args=[started.data["id"]])).data
    assert (status["state"], status["found"], status["progress"], status["finished"]) == ("done", 60, 1.0, True)
    first = client.get(reverse("api:message-search-hits", args=[started.data["id"]])).data
    second = client.get(first["next"]).data
    assert first["count"] == 60 and len(first["results"]) == 50 and len(second["results"]) == 10
    assert {hit["offset_msg_id"] for hit in first["results"] + second["results"]} == sent


def test_a_search_is_cancelled_and_is_its_requesters_alone(cluster, member, outsider, live_topic):
    search = logged_in(member).post(
        reverse("api:message-search-list"),
        {"cluster": cluster.pk, "topic": live_topic.name, "kind": "key", "key": "k"},
        format="json",
    )
    url = reverse("api:message-search-detail", args=[search.data["id"]])
    assert logged_in(outsider).get(url).status_code == 404
    assert logged_in(outsider).post(reverse("api:message-search-cancel", args=[search.data["id"]])).status_code == 404

    cancelled = logged_in(member).post(reverse("api:message-search-cancel", args=[search.data["id"]]))

    assert cancelled.status_code == 200 and cancelled.data["state"] == "cancelled"


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "key", "key": "a\x00b"},
        {"kind": "queue_offset", "broker_name": "broker-a", "queue_id": 0, "queue_offset": 2**64},
        {"kind": "queue_offset", "broker_name": "broker-a", "queue_id": 2**40, "queue_offset": 1},
        {"kind": "queue_offset", "broker_name": "broker-a", "queue_id": 0},
        {"kind": "msg_id", "key": "0" * 33},
        {"kind": "time_range", "begin": "yesterday"},
        {"kind": "everything"},
        {"kind": "key", "key": "k", "cluster": 2**63},
        {"kind": "key", "key": "k", "topic": "bad\x00topic"},
    ],
)
def test_hostile_search_requests_get_400(cluster, member, live_topic, body):
    request = {"cluster": cluster.pk, "topic": live_topic.name, **body}
    response = logged_in(member).post(reverse("api:message-search-list"), request, format="json")
    assert response.status_code == 400, response.content
    assert not MessageSearch.objects.exists()


def test_the_owning_team_reads_the_body_and_another_team_sees_metadata_only(
    cluster, sandbox, member, outsider, live_topic
):
    sent = send(sandbox, live_topic.name, b'{"amount": 12.5}', tags="Paid", keys=["order-7"])
    url = message(cluster, live_topic.name, sent.offset_msg_id)

    owned = logged_in(member).get(url)

    assert owned.status_code == 200 and owned.data["body_visible"] is True
    assert json.loads(owned.data["body"]["json"]) == {"amount": 12.5}
    assert owned.data["body"]["hex"] == b'{"amount": 12.5}'.hex()
    fields = owned.data["fields"]
    assert (fields["offsetMsgId"], fields["msgId"], fields["tags"], fields["keys"]) == (
        sent.offset_msg_id,
        sent.msg_id,
        "Paid",
        "order-7",
    )
    for name in ("commitLogOffset", "storeTimestamp", "bornTimestamp", "bodyCRC", "properties", "sysFlag"):
        assert name in fields
    assert AuditEntry.objects.filter(action="message.body_viewed", actor=member).count() == 1

    other = logged_in(outsider).get(url)

    assert other.status_code == 200 and other.data["body_visible"] is False and other.data["body"] is None
    assert other.data["fields"]["keys"] == "order-7"
    assert not AuditEntry.objects.filter(action="message.body_viewed", actor=outsider).exists()


@pytest.mark.parametrize("msg_id", ["x", "0" * 31, "Z" * 32, "00" * 40, "0A%00B"])
def test_malformed_message_ids_are_not_found(cluster, member, live_topic, msg_id):
    assert logged_in(member).get(message(cluster, live_topic.name, msg_id)).status_code == 404


def test_a_message_on_another_cluster_or_topic_or_gone_is_not_found(cluster, sandbox, member, live_topic):
    sent = send(sandbox, live_topic.name)
    client = logged_in(member)
    wrong_cluster = reverse("api:message-detail", args=[2**62, live_topic.name, sent.offset_msg_id])
    assert client.get(wrong_cluster).status_code == 404
    assert client.get(message(cluster, "%DLQ%NOBODY", sent.offset_msg_id)).status_code in (403, 404)
    assert client.get(message(cluster, live_topic.name, "7F000001" + "0" * 24)).status_code == 404
    assert client.get(message(cluster, live_topic.name, sent.offset_msg_id, "tracks")).status_code == 200


def test_anonymous_clients_are_refused(cluster, sandbox, live_topic):
    sent = send(sandbox, live_topic.name)
    anonymous = APIClient()
    assert anonymous.get(message(cluster, live_topic.name, sent.offset_msg_id)).status_code == 401
    assert anonymous.post(reverse("api:message-search-list"), {}, format="json").status_code == 401


def test_a_resend_is_an_application_for_a_member_and_done_at_once_for_an_admin(
    cluster, sandbox, member, portal_admin, live_topic
):
    sent = send(sandbox, live_topic.name, b"again")

    done = logged_in(portal_admin).post(
        message(cluster, live_topic.name, sent.offset_msg_id, "resend"), {"to": "origin"}, format="json"
    )
    applied = logged_in(member).post(
        message(cluster, live_topic.name, sent.offset_msg_id, "resend"), {"to": "origin"}, format="json"
    )

    assert done.status_code == 201 and done.data["state"] == ApplicationState.APPROVED
    assert applied.status_code == 201 and applied.data["state"] == ApplicationState.PENDING
    assert applied.data["kind"] == ApplicationKind.MESSAGE_RESEND
    assert applied.data["payload"]["msg_ids"] == [sent.offset_msg_id]


def test_group_operations_go_through_applications_and_refuse_other_kinds(member, outsider, live_group, live_topic):
    client = logged_in(member)
    url = reverse("api:message-operation-list")

    paused = client.post(url, {"kind": "group_pause", "consumer_group": live_group.pk, "payload": {}}, format="json")

    assert paused.status_code == 201 and paused.data["kind"] == "group_pause" and paused.data["state"] == "pending"
    not_an_operation = {"kind": "topic_delete", "topic": live_topic.pk, "payload": {}}
    assert client.post(url, not_an_operation, format="json").status_code == 400
    no_target = {"kind": "offset_reset", "payload": {"topic": live_topic.name, "when": "newest"}}
    assert client.post(url, no_target, format="json").status_code == 400
    refused = logged_in(outsider).post(
        url, {"kind": "group_resume", "consumer_group": live_group.pk, "payload": {}}, format="json"
    )
    assert refused.status_code == 403
    assert Application.objects.count() == 1


def test_the_reset_preview_lists_every_queue_before_and_after(
    cluster, sandbox, member, outsider, live_group, live_topic
):
    for _ in range(5):
        send(sandbox, live_topic.name)
    url = reverse("api:consumer-group-messages-reset-preview", args=[live_group.pk])

    preview = logged_in(member).post(url, {"topic": live_topic.name, "when": "newest"}, format="json")

    assert preview.status_code == 200 and len(preview.data) == 8
    assert sum(queue["target_offset"] for queue in preview.data) == 5
    assert {"broker_name", "queue_id", "min_offset", "max_offset", "current_offset"} <= set(preview.data[0])
    assert not Application.objects.exists()
    assert logged_in(outsider).post(url, {"topic": live_topic.name, "when": "newest"}, format="json").status_code == 403
    for hostile in ({"topic": live_topic.name, "when": "soon"}, {"topic": "x\x00", "when": "newest"}):
        assert logged_in(member).post(url, hostile, format="json").status_code == 400


def test_dead_letters_come_with_their_original_topic(sandbox, member, live_group, live_topic):
    dlq = f"%DLQ%{live_group.name}"
    create_topic(sandbox, dlq, queues=1)
    original = send(sandbox, live_topic.name)
    send(sandbox, dlq, b"dead", properties={"RETRY_TOPIC": live_topic.name, "ORIGIN_MESSAGE_ID": original.msg_id})
    url = reverse("api:consumer-group-messages-dead-letters", args=[live_group.pk])

    (entry,) = logged_in(member).get(url, {"which": "dlq"}).data

    assert (entry["original_topic"], entry["original_msg_id"]) == (live_topic.name, original.msg_id)
    assert logged_in(member).get(url, {"which": "retry"}).data == []
    assert logged_in(member).get(url, {"which": "everything"}).status_code == 400
    assert logged_in(member).get(url, {"newest": str(2**70)}).status_code == 400


def test_diagnostics_of_a_group_with_no_client_are_empty_and_a_stack_needs_a_client(member, live_group):
    client = logged_in(member)
    assert client.get(reverse("api:consumer-group-messages-clients", args=[live_group.pk])).data == []
    stack = reverse("api:consumer-group-messages-client-stack", args=[live_group.pk])
    assert client.get(stack).status_code == 400
    assert client.get(stack, {"client": "a\x00b"}).status_code == 400
    assert client.get(stack, {"client": "127.0.0.1@nobody"}).status_code == 502


def test_an_owner_sends_a_test_message_that_can_then_be_read(cluster, member, outsider, live_topic):
    url = reverse("api:topic-messages-test-message", args=[live_topic.pk])
    assert logged_in(outsider).post(url, {"body": "hi"}, format="json").status_code == 403

    sent = logged_in(member).post(url, {"body": "hello", "tags": "T", "keys": ["k1"]}, format="json")

    assert sent.status_code == 201 and sent.data["queue_offset"] >= 0
    read = logged_in(member).get(message(cluster, live_topic.name, sent.data["offset_msg_id"]))
    assert read.data["body"]["text"] == "hello" and read.data["fields"]["msgId"] == sent.data["msg_id"]
    assert logged_in(member).post(url, {"body": ""}, format="json").status_code == 400


def test_the_export_streams_csv_and_refuses_a_backwards_range(sandbox, member, live_topic):
    begin = timezone.now() - dt.timedelta(seconds=2)
    for _ in range(2):
        send(sandbox, live_topic.name, b"=cmd|calc")
    end = timezone.now() + dt.timedelta(seconds=2)
    url = reverse("api:topic-messages-export", args=[live_topic.pk])

    exported = logged_in(member).get(url, {"begin": begin.isoformat(), "end": end.isoformat(), "output": "csv"})

    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    rows = b"".join(exported.streaming_content).decode().splitlines()
    assert len(rows) == 3 and all("'=cmd|calc" in row for row in rows[1:])  # no formula for a spreadsheet
    backwards = {"begin": end.isoformat(), "end": begin.isoformat()}
    assert logged_in(member).get(url, backwards).status_code == 400


def test_the_schema_documents_the_message_endpoints(db):
    paths = APIClient().get(reverse("api:schema"), {"format": "json"}).json()["paths"]
    for path in (
        "/api/v1/message-searches/",
        "/api/v1/message-searches/{id}/hits/",
        "/api/v1/message-searches/{id}/cancel/",
        "/api/v1/messages/{cluster_pk}/{topic_name}/{msg_id}/",
        "/api/v1/messages/{cluster_pk}/{topic_name}/{msg_id}/tracks/",
        "/api/v1/messages/{cluster_pk}/{topic_name}/{msg_id}/resend/",
        "/api/v1/message-operations/",
        "/api/v1/consumer-groups/{id}/dead-letters/",
        "/api/v1/consumer-groups/{id}/reset-preview/",
        "/api/v1/consumer-groups/{id}/clients/",
        "/api/v1/consumer-groups/{id}/clients/stack/",
        "/api/v1/topics/{id}/test-message/",
        "/api/v1/topics/{id}/export/",
    ):
        assert path in paths, path

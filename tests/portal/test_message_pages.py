"""The message pages, on the real sandbox cluster: a search started from its form, its progress endpoint, its hits
linking to message pages; the message page with its fields, properties, body (or "metadata only") and track; the
resend, offset-reset preview and group operations as applications (an admin's at once); dead letters with their
original topic; the diagnostics of a real C++ consumer; the test message and the streamed export. Hostile input
gets 400 or 404, never 500."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import Application, ApplicationKind, ApplicationState, AuditEntry, MessageSearch, SearchState
from portal.services.messages.searches import run_search
from tests.portal.message_world import create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401
from tests.support.waiting import wait_for


@pytest.fixture
def as_user(client):
    def log_in(user):
        client.force_login(user)
        return client

    return log_in


def message_url(cluster, topic_name, msg_id):
    return reverse("message-detail", args=[cluster.pk, topic_name, msg_id])


def test_a_search_started_from_its_form_lists_every_hit_linking_to_its_message(
    as_user, cluster, sandbox, member, live_topic
):
    client = as_user(member)
    key = f"page-{live_topic.pk}"
    sent = [send(sandbox, live_topic.name, keys=[key]) for _ in range(3)]

    response = client.post(reverse("message-search", args=[live_topic.pk]), {"kind": "key", "key": key})

    search = MessageSearch.objects.get()
    assert response.status_code == 302 and response.url == reverse("message-search-detail", args=[search.pk])
    running = client.get(response.url).content.decode()
    assert reverse("message-search-status", args=[search.pk]) in running  # the page polls while it is not done
    run_search(search.pk)  # what the worker does
    status = client.get(reverse("message-search-status", args=[search.pk])).json()
    assert status == {**status, "state": "done", "found": 3, "progress": 1.0, "finished": True}
    page = client.get(reverse("message-search-detail", args=[search.pk])).content.decode()
    for result in sent:
        assert message_url(cluster, live_topic.name, result.offset_msg_id) in page
    assert reverse("message-search-status", args=[search.pk]) not in page
    assert key in client.get(reverse("message-search", args=[live_topic.pk])).content.decode()  # recent searches


def test_a_running_search_is_cancelled_from_its_page(as_user, cluster, member, live_topic):
    client = as_user(member)
    client.post(reverse("message-search", args=[live_topic.pk]), {"kind": "key", "key": "k"})
    search = MessageSearch.objects.get()

    client.post(reverse("message-search-cancel", args=[search.pk]))

    assert client.get(reverse("message-search-status", args=[search.pk])).json()["state"] == SearchState.CANCELLED


def test_a_search_is_its_requesters_alone(as_user, cluster, member, outsider, live_topic):
    as_user(member).post(reverse("message-search", args=[live_topic.pk]), {"kind": "key", "key": "k"})
    search = MessageSearch.objects.get()
    client = as_user(outsider)
    for name in ("message-search-detail", "message-search-status"):
        assert client.get(reverse(name, args=[search.pk])).status_code == 404
    assert client.post(reverse("message-search-cancel", args=[search.pk])).status_code == 404


@pytest.mark.parametrize(
    "form",
    [
        {"kind": "key", "key": "a\x00b"},
        {"kind": "queue_offset", "broker_name": "broker-a", "queue_id": "0", "queue_offset": str(2**64)},
        {"kind": "queue_offset", "broker_name": "broker-a", "queue_id": "99999999999", "queue_offset": "1"},
        {"kind": "msg_id", "key": "not-an-id"},
        {"kind": "body"},
        {"kind": "time_range", "begin": "2026-13-45T99:00"},
    ],
)
def test_hostile_search_input_comes_back_as_form_errors(as_user, member, live_topic, form):
    response = as_user(member).post(reverse("message-search", args=[live_topic.pk]), form)
    assert response.status_code == 200 and response.context["form"].errors
    assert not MessageSearch.objects.exists()


def test_the_message_page_shows_every_field_and_the_body_as_json(
    as_user, cluster, sandbox, member, live_topic, live_group
):
    sent = send(sandbox, live_topic.name, b'{"order": 42, "paid": true}', tags="TagA", keys=["order-42"])

    response = as_user(member).get(message_url(cluster, live_topic.name, sent.offset_msg_id))

    assert response.status_code == 200
    page = response.content.decode()
    for shown in (sent.offset_msg_id, sent.msg_id, "TagA", "order-42", "UNIQ_KEY", "&quot;order&quot;: 42"):
        assert shown in page
    assert response.context["fields"]["queueOffset"] == sent.queue_offset
    assert 'id="metadata-only"' not in page
    assert AuditEntry.objects.filter(action="message.body_viewed", actor=member).count() == 1


def test_a_member_of_another_team_sees_metadata_only(as_user, cluster, sandbox, outsider, live_topic):
    sent = send(sandbox, live_topic.name, b"secret payload", keys=["k-1"])

    response = as_user(outsider).get(message_url(cluster, live_topic.name, sent.offset_msg_id))

    page = response.content.decode()
    assert response.status_code == 200 and 'id="metadata-only"' in page
    assert "secret payload" not in page and b"secret payload".hex() not in page.replace(" ", "")
    assert "k-1" in page
    assert not AuditEntry.objects.filter(action="message.body_viewed").exists()


@pytest.mark.parametrize("msg_id", ["zz", "0" * 31, "G" * 32, "0A" * 40])
def test_malformed_message_ids_are_pages_that_do_not_exist(as_user, cluster, member, live_topic, msg_id):
    assert as_user(member).get(message_url(cluster, live_topic.name, msg_id)).status_code == 404


def test_a_message_asked_for_on_another_topic_or_cluster_is_not_found(
    as_user, cluster, sandbox, member, live_topic, team
):
    sent = send(sandbox, live_topic.name)
    client = as_user(member)
    other = f"{live_topic.name}_OTHER"
    create_topic(sandbox, other)
    live_topic.__class__.objects.create(cluster=cluster, team=team, name=other, queue_nums=4)
    assert client.get(message_url(cluster, other, sent.offset_msg_id)).status_code == 404
    assert client.get(reverse("message-detail", args=[2**62, live_topic.name, sent.offset_msg_id])).status_code == 404
    unknown = "7F0000010000" + "0" * 7 + "1" * 13
    assert client.get(message_url(cluster, live_topic.name, unknown)).status_code == 404


def test_an_admin_resends_at_once_and_a_member_applies_for_a_resend(
    as_user, cluster, sandbox, member, portal_admin, live_topic
):
    sent = send(sandbox, live_topic.name, b"again", keys=["resend-me"])
    url = reverse("message-resend", args=[cluster.pk, live_topic.name, sent.offset_msg_id])

    as_user(portal_admin).post(url, {"to": "origin"})

    done = Application.objects.get()
    assert done.state == ApplicationState.APPROVED and done.applicant == portal_admin

    response = as_user(member).post(url, {"to": "origin", "reason": "lost downstream"})

    applied = Application.objects.exclude(pk=done.pk).get()
    assert response.status_code == 302 and response.url == applied.get_absolute_url()
    assert (applied.kind, applied.state, applied.payload["msg_ids"]) == (
        ApplicationKind.MESSAGE_RESEND,
        ApplicationState.PENDING,
        [sent.offset_msg_id],
    )


def test_the_offset_reset_shows_a_preview_per_queue_before_anything_is_submitted(
    as_user, cluster, sandbox, member, live_topic, live_group
):
    for _ in range(6):
        send(sandbox, live_topic.name)
    client = as_user(member)
    url = reverse("group-offset-reset", args=[live_group.pk])
    form = {"topic": live_topic.name, "to": "newest", "reason": "skip the backlog"}

    preview = client.post(url, {**form, "preview": ""})

    assert preview.status_code == 200 and not Application.objects.exists()
    rows = preview.context["preview"]
    assert len(rows) == 2 * 4  # every queue of both masters
    assert sum(queue.target_offset for queue, _change in rows) == 6
    assert all(queue.target_offset == queue.max_offset for queue, _change in rows)
    assert 'id="reset-preview"' in preview.content.decode()

    confirmed = client.post(url, {**form, "confirm": ""})

    applied = Application.objects.get()
    assert confirmed.status_code == 302 and applied.kind == ApplicationKind.OFFSET_RESET
    assert applied.payload["when"] == "newest" and applied.payload["topic"] == live_topic.name


def test_the_reset_form_asks_for_a_time_and_a_whole_queue(as_user, member, live_group, live_topic):
    url = reverse("group-offset-reset", args=[live_group.pk])
    response = as_user(member).post(url, {"topic": live_topic.name, "to": "time", "queue_id": "1", "preview": ""})
    assert set(response.context["form"].errors) == {"timestamp", "queue_id"}


def test_only_the_owning_team_and_admins_reach_the_group_operations(as_user, outsider, live_group):
    client = as_user(outsider)
    for name in ("group-offset-reset", "group-redeliver", "group-settings"):
        assert client.get(reverse(name, args=[live_group.pk])).status_code == 403
    assert client.post(reverse("group-operation", args=[live_group.pk, "pause"])).status_code == 403
    assert client.get(reverse("group-dead-letters", args=[live_group.pk])).status_code == 200  # looking is open


def test_a_member_applies_to_deliver_a_past_range_again_to_the_group(as_user, member, live_group, live_topic):
    form = {"topic": live_topic.name, "begin": "2026-11-20T10:00:00", "end": "2026-11-20T09:00:00"}
    url = reverse("group-redeliver", args=[live_group.pk])
    assert "end" in as_user(member).post(url, form).context["form"].errors

    as_user(member).post(url, {**form, "end": "2026-11-20T11:00:00", "reason": "the billing bug is fixed"})

    applied = Application.objects.get()
    assert applied.kind == ApplicationKind.REDELIVER_RANGE and applied.payload["topic"] == live_topic.name


def test_pause_and_resume_are_applications_and_an_unknown_operation_is_not_found(as_user, member, live_group):
    client = as_user(member)
    client.post(reverse("group-operation", args=[live_group.pk, "pause"]), {"reason": "incident"})
    client.post(reverse("group-operation", args=[live_group.pk, "skip-retry-backlog"]))
    assert set(Application.objects.values_list("kind", flat=True)) == {
        ApplicationKind.GROUP_PAUSE,
        ApplicationKind.SKIP_RETRY_BACKLOG,
    }
    assert client.post(reverse("group-operation", args=[live_group.pk, "drop-all"])).status_code == 404


def test_the_settings_form_shows_the_brokers_values_and_asks_only_for_changes(as_user, member, live_group):
    client = as_user(member)
    url = reverse("group-settings", args=[live_group.pk])
    current = client.get(url).context["form"].initial
    assert current["retry_max_times"] == 16 and current["retry_queue_nums"] == 1

    client.post(
        url,
        {
            **current,
            "consume_broadcast_enable": "on" if current["consume_broadcast_enable"] else "",
            "retry_max_times": "3",
            "reason": "fail fast",
        },
    )

    assert Application.objects.get().payload == {"retry_max_times": 3}


def test_dead_letters_show_their_original_topic_and_id_and_a_selection_is_resent(
    as_user, cluster, sandbox, member, live_topic, live_group
):
    dlq = f"%DLQ%{live_group.name}"
    create_topic(sandbox, dlq, queues=1)
    original = send(sandbox, live_topic.name, b"failed 17 times")
    letter = send(
        sandbox,
        dlq,
        b"failed 17 times",
        properties={"RETRY_TOPIC": live_topic.name, "ORIGIN_MESSAGE_ID": original.offset_msg_id},
    )
    client = as_user(member)

    page = client.get(reverse("group-dead-letters", args=[live_group.pk]), {"which": "dlq"})

    (entry,) = page.context["entries"]
    assert (entry.msg_id, entry.original_topic, entry.original_msg_id) == (
        letter.offset_msg_id,
        live_topic.name,
        original.offset_msg_id,
    )
    assert message_url(cluster, dlq, letter.offset_msg_id) in page.content.decode()
    shown = client.get(message_url(cluster, dlq, letter.offset_msg_id))  # %DLQ% travels in the URL as %25DLQ%25
    assert shown.status_code == 200 and shown.context["fields"]["properties"]["RETRY_TOPIC"] == live_topic.name
    assert shown.context["may_see_body"]  # the group's team reads its dead letters
    client.post(
        reverse("group-dead-letters-resend", args=[live_group.pk]), {"ids": [letter.offset_msg_id], "to": "origin"}
    )
    applied = Application.objects.get()
    assert applied.kind == ApplicationKind.DEAD_LETTER_RESEND and applied.payload["msg_ids"] == [letter.offset_msg_id]


def test_malformed_dead_letter_ids_are_refused_before_anything_is_asked(as_user, member, live_group):
    url = reverse("group-dead-letters-resend", args=[live_group.pk])
    for ids in (["zz"], ["a\x00b"], []):
        response = as_user(member).post(url, {"ids": ids, "to": "origin"})
        assert response.status_code == 302 and response.url == reverse("group-dead-letters", args=[live_group.pk])
    assert not Application.objects.exists()


CPP_CONSUMER = r"""
import sys
from rocketmq.client import PushConsumer

consumer = PushConsumer(sys.argv[1])
consumer.set_namesrv_addr(sys.argv[2])
consumer.subscribe(sys.argv[3], lambda message: None, sys.argv[4] if len(sys.argv) > 4 else "*")
consumer.start()
print("STARTED", flush=True)
sys.stdin.readline()
consumer.shutdown()
"""


def test_a_real_cpp_consumers_diagnostics_say_it_sends_no_stack_and_the_track_says_consumed(
    as_user, cluster, sandbox, member, live_topic, live_group
):
    process = subprocess.Popen(
        [sys.executable, "-c", CPP_CONSUMER, live_group.name, sandbox.namesrv_addr, live_topic.name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().strip() == "STARTED"
        client = as_user(member)
        url = reverse("group-clients", args=[live_group.pk])
        clients = wait_for(lambda: client.get(url).context["clients"], timeout=30)
        (cpp,) = clients
        assert cpp["language"] == "CPP" and not cpp["sends_thread_stack"]
        info = wait_for(lambda: client.get(url).context["clients"][0]["running_info"], timeout=30)
        topics = {sub["topic"] for sub in info["subscriptions"]}
        assert topics == {live_topic.name, f"%RETRY%{live_group.name}"}  # a push consumer also reads its retries
        stack = client.get(reverse("group-client-stack", args=[live_group.pk]), {"client": cpp["client_id"]})
        assert stack.context["stack"] is None and 'id="no-stack"' in stack.content.decode()
        sent = send(sandbox, live_topic.name, b"consume me")

        def track():
            tracks = client.get(message_url(cluster, live_topic.name, sent.offset_msg_id)).context["tracks"]
            return [(t.consumer_group, t.track_type.name) for t in tracks if t.track_type.name == "CONSUMED"]

        assert wait_for(track, timeout=30) == [(live_group.name, "CONSUMED")]
    finally:
        process.communicate("stop\n", timeout=30)
    assert (
        as_user(member).get(reverse("group-client-stack", args=[live_group.pk]), {"client": "\x00"}).status_code == 400
    )


def test_an_owner_sends_a_test_message_and_is_shown_its_page(as_user, cluster, member, outsider, live_topic):
    url = reverse("topic-send", args=[live_topic.pk])
    assert as_user(outsider).get(url).status_code == 403

    response = as_user(member).post(url, {"body": '{"hello": "world"}', "tags": "TEST", "keys": "probe-1 probe-2"})

    result = response.context["result"]
    assert response.status_code == 200 and result.topic == live_topic.name
    assert message_url(cluster, live_topic.name, result.offset_msg_id) in response.content.decode()
    shown = as_user(member).get(message_url(cluster, live_topic.name, result.offset_msg_id))
    assert shown.context["fields"]["keys"] == "probe-1 probe-2" and shown.context["fields"]["tags"] == "TEST"


def test_the_export_streams_a_time_range_with_bodies_only_for_those_who_may_see_them(
    as_user, sandbox, member, outsider, live_topic
):
    begin = timezone.now() - dt.timedelta(seconds=2)
    for number in range(3):
        send(sandbox, live_topic.name, json.dumps({"n": number}).encode())
    end = timezone.now() + dt.timedelta(seconds=2)
    query = {"begin": begin.strftime("%Y-%m-%dT%H:%M:%S"), "end": end.strftime("%Y-%m-%dT%H:%M:%S"), "output": "jsonl"}
    url = reverse("topic-export", args=[live_topic.pk])

    owned = as_user(member).get(url, query)

    assert owned.streaming and owned["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in owned["Content-Disposition"]
    lines = [json.loads(line) for line in b"".join(owned.streaming_content).decode().splitlines()]
    assert sorted(json.loads(line["body"])["n"] for line in lines) == [0, 1, 2]
    other = as_user(outsider).get(url, {**query, "output": "csv"})
    rows = b"".join(other.streaming_content).decode().splitlines()
    assert len(rows) == 4 and '"n"' not in "".join(rows)
    assert as_user(member).get(url, {**query, "end": "yesterday"}).status_code == 200  # the form again, with errors


def test_the_topic_and_group_pages_link_to_the_message_tools(as_user, member, outsider, live_topic, live_group):
    topic_page = as_user(member).get(reverse("topic-detail", args=[live_topic.pk])).content.decode()
    for name in ("message-search", "topic-export", "topic-send"):
        assert reverse(name, args=[live_topic.pk]) in topic_page
    assert (
        reverse("topic-send", args=[live_topic.pk])
        not in as_user(outsider).get(reverse("topic-detail", args=[live_topic.pk])).content.decode()
    )
    group_page = as_user(member).get(reverse("consumer-group-detail", args=[live_group.pk])).content.decode()
    for name in ("group-dead-letters", "group-clients", "group-offset-reset", "group-settings"):
        assert reverse(name, args=[live_group.pk]) in group_page

"""A message operation's progress and outcome where the applicant and the admins look: the application's page (a
progress card polled while it runs, the messages one by one with links to their pages, paged) and the API
(``operation_progress``, the paged items, run again). Failed messages are run again by a portal admin only, and a
message whose send failed after all arrived is not sent a second time. On the sandbox cluster."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from monitor.messages import resend as wire_resend
from monitor.remoting.codes import RequestCode
from monitor.remoting.errors import RemotingTimeoutError
from portal.models import ApplicationKind, AuditEntry, MessageOperationItem, OperationItemState
from portal.services.applications import approve, submit
from portal.services.messages import items
from portal.tasks import run_message_operation
from portal.web import paging
from tests.portal.message_world import create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401
from tests.portal.test_message_operations import copies

RANGE_SIZE = 25


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def retry_topic(sandbox, live_group) -> str:
    name = f"%RETRY%{live_group.name}"
    create_topic(sandbox, name, queues=1)
    return name


@pytest.fixture
def redelivery(sandbox, member, team, portal_admin, live_topic, live_group, retry_topic, monkeypatch,
               django_capture_on_commit_callbacks):  # fmt: skip
    """25 messages of the topic re-delivered to the group, approved: planned, its task queued but not run yet
    (``run()`` runs it, in this process, as the worker would)."""
    begin = timezone.now() - dt.timedelta(seconds=1)
    for n in range(RANGE_SIZE):
        send(sandbox, live_topic.name, f"order {n}".encode())
    end = timezone.now() + dt.timedelta(seconds=1)
    payload = {"topic": live_topic.name, "begin": begin.isoformat(), "end": end.isoformat()}
    application = submit(
        member, kind=ApplicationKind.REDELIVER_RANGE, team=team, cluster=None, payload=payload,
        topic=None, consumer_group=live_group,
    )  # fmt: skip
    monkeypatch.setattr(items, "start_task", run_message_operation)
    with django_capture_on_commit_callbacks() as queued:
        approve(application, by=portal_admin)

    def run():
        for callback in queued:
            callback()
        queued.clear()

    application.run = run
    return application


def counts(html: str) -> dict[str, int]:
    return {name: int(value) for name, value in re.findall(r"data-(sent|failed|pending|total)>(\d+)<", html)}


def test_the_application_page_follows_a_redelivery_until_every_message_is_sent(
    client, member, live_topic, retry_topic, redelivery, monkeypatch
):
    client.force_login(member)
    page_url = reverse("application-detail", args=[redelivery.pk])
    progress_url = reverse("application-progress", args=[redelivery.pk])

    waiting = client.get(page_url).content.decode()
    assert counts(waiting) == {"sent": 0, "failed": 0, "pending": RANGE_SIZE, "total": RANGE_SIZE}
    assert f'data-progress-url="{progress_url}"' in waiting and "js/operations.js" in waiting
    polled = client.get(progress_url).json()
    assert (polled["pending"], polled["fraction"], polled["running"]) == (RANGE_SIZE, 0.0, True)

    redelivery.run()

    assert client.get(progress_url).json() == {
        "total": RANGE_SIZE, "sent": RANGE_SIZE, "failed": 0, "pending": 0, "fraction": 1.0, "running": False,
    }  # fmt: skip
    done = client.get(page_url).content.decode()
    assert counts(done) == {"sent": RANGE_SIZE, "failed": 0, "pending": 0, "total": RANGE_SIZE}
    assert "data-progress-url" not in done and "Send what is left again" not in done
    first = MessageOperationItem.objects.get(application=redelivery, index=0)
    source_page = reverse("message-detail", args=[redelivery.cluster_id, live_topic.name, first.source_id])
    copy_page = reverse("message-detail", args=[redelivery.cluster_id, retry_topic, first.sent_msg_id])
    assert f'href="{source_page}"' in done and f'href="{copy_page}"' in done
    assert client.get(copy_page).status_code == 200  # the copy's page is there: the link leads somewhere

    monkeypatch.setattr(paging, "PAGE_SIZE", 10)
    last = client.get(page_url, {"page": 3}).content.decode()
    assert re.findall(r'<td class="num">(\d+)</td>\s*<td class="mono">', last) == [str(n) for n in range(20, 25)]
    assert "Page 3 of 3" in last


def test_the_api_shows_the_progress_and_the_items_page_by_page(member, redelivery, retry_topic):
    api = api_client(member)
    detail_url = reverse("api:application-detail", args=[redelivery.pk])
    items_url = reverse("api:application-items", args=[redelivery.pk])
    assert api.get(detail_url).json()["operation_progress"] == {
        "total": RANGE_SIZE, "sent": 0, "failed": 0, "pending": RANGE_SIZE,
    }  # fmt: skip

    redelivery.run()

    detail = api.get(detail_url).json()
    assert detail["operation_progress"] == {"total": RANGE_SIZE, "sent": RANGE_SIZE, "failed": 0, "pending": 0}
    assert detail["payload"]["outcome"] == {"messages": RANGE_SIZE, "sent_by_approval": False}
    listed = api.get(items_url).json()
    assert listed["count"] == RANGE_SIZE
    assert [item["index"] for item in listed["results"]] == list(range(RANGE_SIZE))
    assert {item["state"] for item in listed["results"]} == {"sent"}
    assert all(item["target_topic"] == retry_topic and item["sent_msg_id"] for item in listed["results"])


def test_failed_messages_are_run_again_by_an_admin_and_nothing_is_sent_twice(
    sandbox, client, member, portal_admin, redelivery, retry_topic, monkeypatch, django_capture_on_commit_callbacks
):
    real_resend = wire_resend.resend
    timed_out = RemotingTimeoutError("broker-a", RequestCode.SEND_MESSAGE_V2, 3)

    def flaky_resend(admin, msg, *, uniq_key, **kwargs):
        index = MessageOperationItem.objects.get(application=redelivery, uniq_key=uniq_key).index
        if index == 3:  # the broker stored it, but the answer never came
            real_resend(admin, msg, uniq_key=uniq_key, **kwargs)
            raise timed_out
        if index == 7:  # never arrived
            raise timed_out
        return real_resend(admin, msg, uniq_key=uniq_key, **kwargs)

    monkeypatch.setattr(items.wire_resend, "resend", flaky_resend)
    redelivery.run()
    monkeypatch.setattr(items.wire_resend, "resend", real_resend)

    page_url = reverse("application-detail", args=[redelivery.pk])
    client.force_login(member)
    as_member = client.get(page_url).content.decode()
    assert counts(as_member) == {"sent": RANGE_SIZE - 2, "failed": 2, "pending": 0, "total": RANGE_SIZE}
    assert "timed out" in as_member and "Send what is left again" not in as_member
    assert client.post(reverse("application-run-again", args=[redelivery.pk])).status_code == 403
    assert api_client(member).post(reverse("api:application-run-again", args=[redelivery.pk])).status_code == 403

    client.force_login(portal_admin)
    assert "Send what is left again" in client.get(page_url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):  # the run it queues, as the worker runs it
        response = api_client(portal_admin).post(reverse("api:application-run-again", args=[redelivery.pk]))
    assert response.status_code == 202

    assert response.json()["id"] == redelivery.pk
    assert AuditEntry.objects.filter(action="application.run_again", actor=portal_admin).count() == 1
    sent = MessageOperationItem.objects.filter(application=redelivery)
    assert {item.state for item in sent} == {OperationItemState.SENT}
    assert all(copies(sandbox, retry_topic, item.uniq_key) == 1 for item in sent)


def test_an_admin_is_offered_a_run_again_only_when_a_running_operation_stalled(
    sandbox, client, portal_admin, redelivery, retry_topic, django_capture_on_commit_callbacks
):
    client.force_login(portal_admin)
    page_url = reverse("application-detail", args=[redelivery.pk])
    run_again = reverse("application-run-again", args=[redelivery.pk])
    assert f'action="{run_again}"' not in client.get(page_url).content.decode()
    refused = api_client(portal_admin).post(reverse("api:application-run-again", args=[redelivery.pk]))
    assert refused.status_code == 400  # its task is queued: two runs at once could both send a message

    # The worker never picked the task up.
    long_ago = timezone.now() - dt.timedelta(hours=1)
    MessageOperationItem.objects.filter(application=redelivery).update(updated_at=long_ago)

    assert f'action="{run_again}"' in client.get(page_url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(run_again).status_code == 302
    assert items.progress(redelivery).sent == RANGE_SIZE
    redelivery.run()  # the lost task turns up after all: it finds nothing left to send
    assert all(copies(sandbox, retry_topic, item.uniq_key) == 1 for item in redelivery.message_items.all())


def test_an_offset_reset_shows_each_queue_before_and_after(
    sandbox, client, member, team, portal_admin, live_topic, live_group
):
    for _ in range(6):
        send(sandbox, live_topic.name)
    application = submit(
        member, kind=ApplicationKind.OFFSET_RESET, team=team, cluster=None,
        payload={"topic": live_topic.name, "when": "newest"}, topic=None, consumer_group=live_group,
    )  # fmt: skip
    approve(application, by=portal_admin)

    queues = application.payload["outcome"]["queues"]
    assert sum(queue["offset"] - (queue["previous_offset"] or 0) for queue in queues) == 6
    client.force_login(member)
    page = client.get(reverse("application-detail", args=[application.pk])).content.decode()
    assert "Offset before" in page and "no client online" in page
    moved = re.findall(r'<td class="num">(\d+)</td></tr>', page)
    assert sum(int(value) for value in moved) == 6


def test_group_operations_show_what_the_brokers_have_now(client, member, team, portal_admin, live_group):
    asked = {"retry_max_times": 3, "consume_broadcast_enable": False}
    settings = submit(
        member, kind=ApplicationKind.GROUP_SETTINGS, team=team, cluster=None, payload=asked, topic=None,
        consumer_group=live_group,
    )  # fmt: skip
    pause = submit(
        member, kind=ApplicationKind.GROUP_PAUSE, team=team, cluster=None, payload={}, topic=None,
        consumer_group=live_group,
    )  # fmt: skip
    approve(settings, by=portal_admin)
    approve(pause, by=portal_admin)

    client.force_login(member)
    settings_page = client.get(reverse("application-detail", args=[settings.pk])).content.decode()
    assert re.search(r"<dt>Max retry times</dt><dd>3</dd>", settings_page)  # asked for, and what the brokers have
    assert re.search(r"<dt>Retry queues</dt><dd>1</dd>", settings_page)  # not asked for: as it was
    assert "data-progress-url" not in settings_page
    pause_page = client.get(reverse("application-detail", args=[pause.pk])).content.decode()
    assert "<dt>Consumption on the brokers</dt><dd>paused</dd>" in pause_page

"""Operations on messages and consumer groups as applications: each kind validated when filed, carried out on the
real sandbox cluster when approved, idempotent when run again after a crash, and done directly by portal admins."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from monitor.messages import groups as wire_groups
from monitor.messages.resend import already_sent
from monitor.remoting.admin import MQAdmin
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    MessageOperationItem,
    OperationItemState,
)
from portal.services.applications import approve, messages, submit
from portal.services.messages import items
from portal.services.messages.direct import act_directly
from portal.services.messages.operations import operation_progress, preview_offset_reset, run_operation_again
from portal.tasks import run_message_operation
from tests.portal.message_world import (  # noqa: F401
    create_topic,
    live_group_fixture,
    live_topic_fixture,
    send,
)

K = ApplicationKind


def apply(user, team, kind, payload, *, topic=None, consumer_group=None) -> Application:
    return submit(user, kind=kind, team=team, cluster=None, payload=payload, topic=topic, consumer_group=consumer_group)


def errors_of(user, team, kind, payload, **target) -> set[str]:
    with pytest.raises(ValidationError) as raised:
        apply(user, team, kind, payload, **target)
    return set(raised.value.message_dict)


def copies(sandbox, topic: str, uniq_key: str) -> int:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        return len(admin.query_message_by_uniq_key(topic, uniq_key))


def committed(sandbox, group: str, topic: str) -> dict[tuple[str, int], int]:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        stats = admin.examine_consume_stats(group, topic)
    return {(mq.broker_name, mq.queue_id): w.consumer_offset for mq, w in stats.offset_table.items()}


def max_offsets(sandbox, topic: str) -> dict[tuple[str, int], int]:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        table = admin.examine_topic_stats(topic).offset_table
    return {(mq.broker_name, mq.queue_id): o.max_offset for mq, o in table.items()}


@pytest.fixture
def retry_and_dlq(sandbox, live_group):
    """The group's %RETRY% and %DLQ% topics exist on the masters (the broker creates them on a consumer's first
    send-back)."""
    create_topic(sandbox, f"%RETRY%{live_group.name}", queues=1)
    create_topic(sandbox, f"%DLQ%{live_group.name}", queues=1)


# --- validation --------------------------------------------------------------------------------------------------


def test_message_resends_are_validated_per_field(member, team, live_topic):
    assert errors_of(member, team, K.MESSAGE_RESEND, {"msg_ids": []}, topic=live_topic) == {"msg_ids"}
    assert errors_of(
        member, team, K.MESSAGE_RESEND, {"msg_ids": ["XYZ"], "to": "elsewhere", "body": "x"}, topic=live_topic
    ) == {"msg_ids", "to", "body"}
    assert errors_of(member, team, K.MESSAGE_RESEND, {"msg_ids": ["A" * 32], "to": "retry"}, topic=live_topic) == {
        "group"
    }


def test_group_operations_are_validated_per_field(member, team, live_group):
    group = {"consumer_group": live_group}
    assert errors_of(member, team, K.OFFSET_RESET, {"topic": "OTHER_TOPIC", "when": "yesterday"}, **group) == {
        "topic",
        "when",
    }
    future = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    bad_queue = {"broker_name": "", "queue_id": -1}
    assert errors_of(member, team, K.OFFSET_RESET, {"when": future, "queue": bad_queue}, **group) == {
        "topic",
        "when",
        "queue",
    }
    assert errors_of(member, team, K.REDELIVER_RANGE, {"begin": "2026-01-02T00:00:00+00:00"}, **group) == {
        "topic",
        "end",
    }
    assert errors_of(member, team, K.GROUP_SETTINGS, {}, **group) == {"__all__"}
    assert errors_of(member, team, K.GROUP_SETTINGS, {"retry_max_times": 1000, "broker_id": "1"}, **group) == {
        "retry_max_times",
        "broker_id",
    }
    assert errors_of(member, team, K.GROUP_PAUSE, {"now": True}, **group) == {"now"}
    assert errors_of(member, team, K.DEAD_LETTER_RESEND, {"msg_ids": "A" * 32}, **group) == {"msg_ids"}


def test_another_teams_member_cannot_apply_for_a_groups_operation(outsider, other_team, live_group):
    with pytest.raises(PermissionDenied):
        apply(outsider, other_team, K.GROUP_PAUSE, {}, consumer_group=live_group)


# --- resends -----------------------------------------------------------------------------------------------------


def test_an_approved_resend_sends_a_copy_once_even_when_run_again_after_a_crash(
    sandbox, member, team, portal_admin, live_topic
):
    original = send(sandbox, live_topic.name, b"resend me", keys=["order-7"])
    application = apply(member, team, K.MESSAGE_RESEND, {"msg_ids": [original.offset_msg_id]}, topic=live_topic)

    approve(application, by=portal_admin)

    (item,) = MessageOperationItem.objects.filter(application=application)
    assert application.state == ApplicationState.APPROVED and item.state == OperationItemState.SENT
    assert item.target_topic == live_topic.name and len(item.uniq_key) == 32
    assert application.payload["outcome"] == {"messages": 1, "sent_by_approval": True}
    assert copies(sandbox, live_topic.name, item.uniq_key) == 1
    assert AuditEntry.objects.filter(action="topic.messages_resent", object_id=str(live_topic.pk)).exists()

    # The worker died after the send, before it recorded it: the next run finds the copy and sends nothing.
    MessageOperationItem.objects.filter(pk=item.pk).update(state=OperationItemState.SENDING, sent_msg_id="")
    assert run_message_operation(application.pk) == {"total": 1, "sent": 1, "failed": 0}
    assert copies(sandbox, live_topic.name, item.uniq_key) == 1
    item.refresh_from_db()
    assert item.state == OperationItemState.SENT and item.sent_msg_id


def test_a_resend_to_a_groups_retry_topic_carries_the_original_topic(
    sandbox, member, team, portal_admin, live_topic, live_group, retry_and_dlq
):
    original = send(sandbox, live_topic.name, b"again for one group")
    payload = {"msg_ids": [original.offset_msg_id], "to": "retry", "group": live_group.name}

    approve(apply(member, team, K.MESSAGE_RESEND, payload, topic=live_topic), by=portal_admin)

    item = MessageOperationItem.objects.get()
    with MQAdmin(sandbox.namesrv_addr) as admin:
        copy = already_sent(admin, f"%RETRY%{live_group.name}", item.uniq_key)
    assert copy is not None and copy.body == b"again for one group"
    assert copy.properties["RETRY_TOPIC"] == live_topic.name


def test_dead_letters_are_resent_to_their_original_topic(
    sandbox, member, team, portal_admin, live_topic, live_group, retry_and_dlq
):
    dlq = f"%DLQ%{live_group.name}"
    letters = [send(sandbox, dlq, f"dead {n}".encode(), properties={"RETRY_TOPIC": live_topic.name}) for n in range(3)]
    payload = {"msg_ids": [letter.offset_msg_id for letter in letters], "to": "origin"}

    approve(apply(member, team, K.DEAD_LETTER_RESEND, payload, consumer_group=live_group), by=portal_admin)

    sent = MessageOperationItem.objects.order_by("index")
    assert [item.target_topic for item in sent] == [live_topic.name] * 3
    assert all(copies(sandbox, live_topic.name, item.uniq_key) == 1 for item in sent)


def test_a_message_of_another_topic_makes_the_resend_invalid_and_leaves_it_pending(
    sandbox, member, team, portal_admin, live_topic, live_group
):
    stranger = send(sandbox, live_topic.name, b"not a dead letter")
    payload = {"msg_ids": [stranger.offset_msg_id]}
    application = apply(member, team, K.DEAD_LETTER_RESEND, payload, consumer_group=live_group)

    with pytest.raises(ValidationError):
        approve(application, by=portal_admin)

    assert application.state == ApplicationState.PENDING and stranger.offset_msg_id in application.last_error
    assert not MessageOperationItem.objects.exists()


def test_a_big_redelivery_is_sent_by_its_task_item_by_item_and_a_rerun_sends_nothing_twice(
    sandbox, member, team, portal_admin, live_topic, live_group, retry_and_dlq, monkeypatch,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    begin = timezone.now() - dt.timedelta(seconds=1)
    range_size = messages.INLINE_ITEMS + 5
    for n in range(range_size):
        send(sandbox, live_topic.name, f"past {n}".encode())
    end = timezone.now() + dt.timedelta(seconds=1)
    payload = {"topic": live_topic.name, "begin": begin.isoformat(), "end": end.isoformat()}
    application = apply(member, team, K.REDELIVER_RANGE, payload, consumer_group=live_group)
    assert run_message_operation.name == items.RUN_TASK
    monkeypatch.setattr(items, "start_task", run_message_operation)  # the worker, in this process

    retry = f"%RETRY%{live_group.name}"

    with django_capture_on_commit_callbacks() as callbacks:
        approve(application, by=portal_admin)
    assert application.payload["outcome"] == {"messages": range_size, "sent_by_approval": False}
    assert operation_progress(application).pending == range_size  # planned; the approval sent nothing

    # A first run died right after sending item 0, before recording it (item 0 "sending", the rest pending).
    first = MessageOperationItem.objects.get(application=application, index=0)
    others = MessageOperationItem.objects.filter(application=application).exclude(pk=first.pk)
    others.update(state=OperationItemState.SENT)
    items.run(application, to="retry", group=live_group.name)
    others.update(state=OperationItemState.PENDING)
    MessageOperationItem.objects.filter(pk=first.pk).update(state=OperationItemState.SENDING)
    before = max_offsets(sandbox, retry)
    for callback in callbacks:  # the task, as the approval's commit queued it
        callback()

    progress = operation_progress(application)
    assert (progress.total, progress.sent, progress.done) == (range_size, range_size, True)
    assert sum(max_offsets(sandbox, retry).values()) - sum(before.values()) == range_size - 1
    assert all(copies(sandbox, retry, item.uniq_key) == 1 for item in application.message_items.all())


def test_only_admins_run_an_approved_message_operation_again(
    sandbox, member, team, portal_admin, live_topic, live_group, monkeypatch, django_capture_on_commit_callbacks
):
    original = send(sandbox, live_topic.name, b"once")
    resend = apply(member, team, K.MESSAGE_RESEND, {"msg_ids": [original.offset_msg_id]}, topic=live_topic)
    approve(resend, by=portal_admin)
    pause = act_directly(portal_admin, K.GROUP_PAUSE, payload={}, consumer_group=live_group)
    queued = []
    monkeypatch.setattr(items, "start_task", queued.append)

    with pytest.raises(PermissionDenied):
        run_operation_again(member, resend)
    with pytest.raises(ValidationError):
        run_operation_again(portal_admin, pause)
    with django_capture_on_commit_callbacks(execute=True):
        run_operation_again(portal_admin, resend)

    assert queued == [resend.pk]
    assert run_message_operation(resend.pk) == {"total": 1, "sent": 1, "failed": 0}  # nothing left to send
    assert copies(sandbox, live_topic.name, resend.message_items.get().uniq_key) == 1


# --- consumer offsets --------------------------------------------------------------------------------------------


def test_a_reset_to_the_newest_message_is_previewed_and_skips_the_backlog_of_an_offline_group(
    sandbox, member, team, portal_admin, live_topic, live_group
):
    for _ in range(6):
        send(sandbox, live_topic.name)
    newest = max_offsets(sandbox, live_topic.name)

    preview = preview_offset_reset(member, live_group, live_topic.name, "newest")
    assert {(row.broker_name, row.queue_id): row.target_offset for row in preview} == newest

    application = apply(
        member, team, K.OFFSET_RESET, {"topic": live_topic.name, "when": "newest"}, consumer_group=live_group
    )
    approve(application, by=portal_admin)

    assert application.payload["outcome"]["online"] is False
    assert committed(sandbox, live_group.name, live_topic.name) == newest
    assert AuditEntry.objects.filter(action="consumergroup.offsets_reset").exists()


def test_a_reset_of_one_queue_to_a_time_moves_only_that_queue(
    sandbox, member, team, portal_admin, live_topic, live_group
):
    first = send(sandbox, live_topic.name)
    for _ in range(5):
        send(sandbox, live_topic.name, queue=None)
    queue = {"broker_name": first.broker_name, "queue_id": first.queue_id}
    before = timezone.now() - dt.timedelta(minutes=5)

    (row,) = preview_offset_reset(member, live_group, live_topic.name, before, queue=queue)
    assert (row.broker_name, row.queue_id, row.target_offset) == (first.broker_name, first.queue_id, 0)

    payload = {"topic": live_topic.name, "when": before.isoformat(), "queue": queue}
    approve(apply(member, team, K.OFFSET_RESET, payload, consumer_group=live_group), by=portal_admin)

    assert committed(sandbox, live_group.name, live_topic.name).get((first.broker_name, first.queue_id)) == 0


def test_the_reset_preview_is_for_the_groups_team_and_admins(outsider, portal_admin, live_topic, live_group):
    with pytest.raises(PermissionDenied):
        preview_offset_reset(outsider, live_group, live_topic.name, "newest")
    assert preview_offset_reset(portal_admin, live_group, live_topic.name, "newest")
    with pytest.raises(ValidationError):
        preview_offset_reset(portal_admin, live_group, "NOT_SUBSCRIBED", "newest")


def test_skipping_the_retry_backlog_moves_the_group_past_its_retry_topic(
    sandbox, member, team, portal_admin, live_group, retry_and_dlq
):
    retry = f"%RETRY%{live_group.name}"
    for _ in range(4):
        send(sandbox, retry, b"retry me")

    approve(apply(member, team, K.SKIP_RETRY_BACKLOG, {}, consumer_group=live_group), by=portal_admin)

    assert committed(sandbox, live_group.name, retry) == max_offsets(sandbox, retry)


# --- consumer-group settings -------------------------------------------------------------------------------------


def group_config(sandbox, group: str):
    with MQAdmin(sandbox.namesrv_addr) as admin:
        return wire_groups.group_settings(admin, group)


def test_a_group_is_paused_and_resumed_through_approval(sandbox, member, team, portal_admin, live_group):
    approve(apply(member, team, K.GROUP_PAUSE, {}, consumer_group=live_group), by=portal_admin)
    assert group_config(sandbox, live_group.name).consume_enable is False

    approve(apply(member, team, K.GROUP_RESUME, {}, consumer_group=live_group), by=portal_admin)
    assert group_config(sandbox, live_group.name).consume_enable is True
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"consumergroup.paused", "consumergroup.resumed"} <= actions


def test_group_settings_change_only_what_is_asked(sandbox, member, team, portal_admin, live_group):
    payload = {"retry_max_times": 3, "consume_broadcast_enable": False}
    application = apply(member, team, K.GROUP_SETTINGS, payload, consumer_group=live_group)

    approve(application, by=portal_admin)

    config = group_config(sandbox, live_group.name)
    assert (config.retry_max_times, config.consume_broadcast_enable, config.retry_queue_nums) == (3, False, 1)
    assert application.payload["outcome"]["settings"]["retry_max_times"] == 3


# --- admins acting directly --------------------------------------------------------------------------------------


def test_an_admin_acts_directly_in_one_call_with_the_whole_audit_trail(sandbox, portal_admin, live_group):
    application = act_directly(portal_admin, K.GROUP_PAUSE, payload={}, consumer_group=live_group)

    assert application.state == ApplicationState.APPROVED and application.team == live_group.team
    assert application.applicant == portal_admin == application.decided_by
    assert group_config(sandbox, live_group.name).consume_enable is False
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"application.submitted", "application.approved", "consumergroup.paused"} <= actions


def test_only_admins_act_directly(member, live_group):
    with pytest.raises(PermissionDenied):
        act_directly(member, K.GROUP_PAUSE, payload={}, consumer_group=live_group)
    assert not Application.objects.exists()

"""Message searches: validated when filed, run into stored hits with progress, cancellable, safe to run again after a
crash, and failing into the search's row rather than the worker. On the real sandbox cluster."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from portal.models import MessageSearch, SearchKind, SearchState
from portal.services.messages import searches
from portal.services.messages.searches import cancel_search, hits, run_search, start_search
from portal.tasks import run_message_search
from tests.portal.message_world import live_topic_fixture, send  # noqa: F401


def _key_search(user, cluster, topic, key):
    return MessageSearch.objects.create(
        cluster=cluster, topic=topic, topic_name=topic.name, requested_by=user, kind=SearchKind.KEY, key=key
    )


def test_criteria_are_validated_with_every_problem_named(cluster, member, topic):
    with pytest.raises(ValidationError) as raised:
        start_search(member, cluster, kind=SearchKind.QUEUE_OFFSET, topic=topic.name, queue_id=-1)
    assert set(raised.value.message_dict) == {"broker_name", "queue_id", "queue_offset"}

    later = timezone.now()
    with pytest.raises(ValidationError) as raised:
        start_search(
            member, cluster, kind=SearchKind.TIME_RANGE, topic=topic.name, begin=later, end=later - dt.timedelta(1)
        )
    assert set(raised.value.message_dict) == {"end"}

    with pytest.raises(ValidationError) as raised:
        start_search(member, cluster, kind=SearchKind.MSG_ID, topic="bad topic!", key="not-hex")
    assert set(raised.value.message_dict) == {"topic", "key"}

    with pytest.raises(ValidationError) as raised:
        start_search(member, cluster, kind="body", topic=topic.name)
    assert "kind" in raised.value.message_dict
    assert not MessageSearch.objects.exists()


def test_only_signed_in_users_search_and_unregistered_topics_are_for_admins(
    cluster, member, portal_admin, outsider, topic, django_user_model
):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(PermissionDenied):
        start_search(AnonymousUser(), cluster, kind=SearchKind.KEY, topic=topic.name, key="k")
    with pytest.raises(PermissionDenied):
        start_search(member, cluster, kind=SearchKind.KEY, topic="NOT_REGISTERED", key="k")

    assert start_search(outsider, cluster, kind=SearchKind.KEY, topic=topic.name, key="k").topic == topic
    assert start_search(portal_admin, cluster, kind=SearchKind.KEY, topic="NOT_REGISTERED", key="k").topic is None


def test_a_search_by_key_finds_every_message_with_progress_and_no_cap(cluster, sandbox, member, live_topic):
    key = f"order-{live_topic.pk}"
    sent = {send(sandbox, live_topic.name, keys=[key]).offset_msg_id for _ in range(70)}
    send(sandbox, live_topic.name, keys=["another-key"])
    search = _key_search(member, cluster, live_topic, key)

    finished = run_search(search.pk)

    assert finished.state == SearchState.DONE and finished.error == ""
    assert finished.found == 70 and finished.progress == 1.0
    assert {hit.offset_msg_id for hit in hits(finished)} == sent
    assert finished.started_at <= finished.finished_at


def test_a_run_again_after_a_crash_writes_no_duplicate_hit(cluster, sandbox, member, live_topic):
    key = f"rerun-{live_topic.pk}"
    for _ in range(5):
        send(sandbox, live_topic.name, keys=[key])
    search = _key_search(member, cluster, live_topic, key)
    run_search(search.pk)
    MessageSearch.objects.filter(pk=search.pk).update(state=SearchState.RUNNING)  # the worker died before the end

    again = run_search(search.pk)

    assert again.state == SearchState.DONE and again.found == 5 and hits(again).count() == 5


def test_a_time_range_search_with_one_queue_finds_only_that_queues_messages(cluster, sandbox, member, live_topic):
    begin = timezone.now() - dt.timedelta(seconds=1)
    results = [send(sandbox, live_topic.name) for _ in range(12)]
    end = timezone.now() + dt.timedelta(seconds=1)
    first = results[0]
    search = start_search(
        member,
        cluster,
        kind=SearchKind.TIME_RANGE,
        topic=live_topic.name,
        broker_name=first.broker_name,
        queue_id=first.queue_id,
        begin=begin,
        end=end,
    )

    finished = run_search(search.pk)

    expected = {r.offset_msg_id for r in results if (r.broker_name, r.queue_id) == (first.broker_name, first.queue_id)}
    assert finished.state == SearchState.DONE
    assert {hit.offset_msg_id for hit in hits(finished)} == expected
    assert {hit.broker_name for hit in hits(finished)} == {first.broker_name}


def test_a_search_by_queue_offset_or_id_finds_the_one_message(cluster, sandbox, member, live_topic):
    sent = send(sandbox, live_topic.name, tags="TagA")
    by_offset = start_search(
        member,
        cluster,
        kind=SearchKind.QUEUE_OFFSET,
        topic=live_topic.name,
        broker_name=sent.broker_name,
        queue_id=sent.queue_id,
        queue_offset=sent.queue_offset,
    )
    by_uniq = start_search(member, cluster, kind=SearchKind.MSG_ID, topic=live_topic.name, key=sent.msg_id)
    beyond = start_search(
        member,
        cluster,
        kind=SearchKind.QUEUE_OFFSET,
        topic=live_topic.name,
        broker_name=sent.broker_name,
        queue_id=sent.queue_id,
        queue_offset=sent.queue_offset + 1000,
    )

    for search in (by_offset, by_uniq):
        (hit,) = hits(run_search(search.pk))
        assert (hit.offset_msg_id, hit.uniq_key, hit.tags) == (sent.offset_msg_id, sent.msg_id, "TagA")
    assert run_search(beyond.pk).state == SearchState.DONE and not hits(beyond).exists()


def test_cancel_stops_a_queued_search_at_once_and_a_running_one_at_its_next_slice(
    cluster, sandbox, member, live_topic, monkeypatch
):
    queued = _key_search(member, cluster, live_topic, "k")
    assert cancel_search(member, queued).state == SearchState.CANCELLED
    assert run_search(queued.pk).state == SearchState.CANCELLED

    begin = timezone.now() - dt.timedelta(seconds=1)
    for _ in range(10):
        send(sandbox, live_topic.name)
    running = MessageSearch.objects.create(
        cluster=cluster,
        topic=live_topic,
        topic_name=live_topic.name,
        requested_by=member,
        kind=SearchKind.TIME_RANGE,
        begin_time=begin,
        end_time=timezone.now() + dt.timedelta(seconds=1),
    )
    monkeypatch.setattr(searches, "ROW_INTERVAL_SECONDS", 0)
    added = searches._Run.add

    def add_then_cancel(run, msg):  # the user presses cancel once the first message is found
        added(run, msg)
        cancel_search(member, running)

    monkeypatch.setattr(searches._Run, "add", add_then_cancel)

    finished = run_search(running.pk)

    assert finished.state == SearchState.CANCELLED and finished.finished_at is not None
    assert 1 <= finished.found < 10 and finished.found == hits(finished).count()


def test_only_the_requester_or_an_admin_cancels(cluster, member, outsider, portal_admin, topic):
    search = _key_search(member, cluster, topic, "k")
    with pytest.raises(PermissionDenied):
        cancel_search(outsider, search)
    assert cancel_search(portal_admin, search).state == SearchState.CANCELLED


def test_a_failing_search_ends_failed_with_the_error_and_the_worker_sees_nothing(cluster, portal_admin):
    search = MessageSearch.objects.create(
        cluster=cluster, topic_name="NO_SUCH_TOPIC_ANYWHERE", requested_by=portal_admin, kind=SearchKind.KEY, key="k"
    )

    finished = run_search(search.pk)

    assert finished.state == SearchState.FAILED
    assert "NO_SUCH_TOPIC_ANYWHERE" in finished.error and finished.finished_at is not None


def test_a_started_search_runs_in_its_task_when_the_transaction_commits(
    cluster, sandbox, member, live_topic, monkeypatch, django_capture_on_commit_callbacks
):
    key = f"task-{live_topic.pk}"
    send(sandbox, live_topic.name, keys=[key])
    assert run_message_search.name == searches.RUN_TASK
    monkeypatch.setattr(searches, "enqueue", run_message_search)  # the worker, in this process

    with django_capture_on_commit_callbacks(execute=True):
        search = start_search(member, cluster, kind=SearchKind.KEY, topic=live_topic.name, key=key)

    search.refresh_from_db()
    assert search.state == SearchState.DONE and search.found == 1


def test_searches_are_their_requesters(cluster, member, outsider, portal_admin, topic):
    search = _key_search(member, cluster, topic, "k")
    assert list(searches.visible_searches(member)) == [search]
    assert not searches.visible_searches(outsider).exists()
    assert list(searches.visible_searches(portal_admin)) == [search]

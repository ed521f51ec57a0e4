"""Message searches: validated and filed by a user, run by a Celery task that streams ``monitor.messages.search``
into stored hits, with progress, found count and cancel.

A search is never capped: a key with thousands of messages and a day of a busy topic are found whole, in slices
(the wire layer's business), and stored in batches. The task may run a search again after its worker died: hits are
unique per (search, broker, commit-log offset) and written with ``ignore_conflicts``, and ``found`` is counted from
the stored rows, so a re-run writes no duplicate and counts right. Whatever goes wrong ends the search ``failed``
with the error's text; the worker never sees the exception.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections.abc import Iterator

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from monitor.messages import search as wire_search
from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import MessageExt
from portal.celery import app as celery_app
from portal.models import (
    Cluster,
    ConsumerGroup,
    MessageSearch,
    MessageSearchHit,
    SearchKind,
    SearchState,
    Topic,
)
from portal.models.messages import FINISHED_SEARCH_STATES
from portal.models.people import is_portal_admin
from portal.models.validation import validate_topic_name
from portal.services.messages.wire import broker_names_by_addr, cluster_admin
from stats.keys import DLQ_PREFIX, RETRY_PREFIX

logger = logging.getLogger(__name__)

RUN_TASK = "portal.tasks.run_message_search"
# Hits are written this many at a time (and at every progress report).
HIT_BATCH = 500
# The search row is written (progress) and read (cancel) at most this often while a search runs.
ROW_INTERVAL_SECONDS = 0.5
_HEX = frozenset("0123456789abcdefABCDEF")
_ID_LENGTHS = (32, 56)  # a UNIQ_KEY or an IPv4 offset id; an IPv6 offset id


def visible_searches(user):
    """The searches the user may follow: their own (portal admins: everyone's)."""
    return MessageSearch.objects.visible_to(user).select_related("cluster", "requested_by")


def hits(search: MessageSearch):
    """The search's hits in store-time order (page them with Django's Paginator: there is no cap)."""
    return search.hits.all()


def owning_group(cluster: Cluster, topic_name: str) -> ConsumerGroup | None:
    """The registered group a %RETRY% or %DLQ% topic belongs to, else None."""
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        if topic_name.startswith(prefix):
            return ConsumerGroup.objects.filter(cluster=cluster, name=topic_name.removeprefix(prefix)).first()
    return None


def check_topic_visible(user, cluster: Cluster, topic_name: str) -> Topic | None:
    """The registered topic named ``topic_name`` (None for a group's retry or dead-letter topic, or a topic the
    registry does not hold), after checking the user may see it: a registered topic through ``visible_to``, a
    retry/DLQ topic through its group's, anything else only portal admins. Raises PermissionDenied."""
    if not (user and user.is_authenticated and user.is_active):
        raise PermissionDenied
    topic = Topic.objects.filter(cluster=cluster, name=topic_name).first()
    if topic is not None:
        if not Topic.objects.visible_to(user).filter(pk=topic.pk).exists():
            raise PermissionDenied
        return topic
    group = owning_group(cluster, topic_name)
    if group is not None and ConsumerGroup.objects.visible_to(user).filter(pk=group.pk).exists():
        return None
    if not is_portal_admin(user):
        raise PermissionDenied
    return None


def _int_or_none(value, field: str, errors: dict, minimum: int = 0) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not minimum <= number < 1 << 63:
        errors.setdefault(field, []).append(_("Enter a whole number of at least %(min)d.") % {"min": minimum})
        return None
    return number


def _clean_criteria(kind, topic_name, key, broker_name, queue_id, queue_offset, begin, end) -> dict:
    """The criteria of a search, normalized; ValidationError keyed by field with every problem at once."""
    errors: dict[str, list] = {}
    topic_name = str(topic_name or "").strip()
    try:
        validate_topic_name(topic_name, new=False)
    except ValidationError as exc:
        errors["topic"] = exc.messages
    if kind not in SearchKind.values:
        errors["kind"] = [_("Choose what to search by.")]
    key = str(key or "").strip()
    broker_name = str(broker_name or "").strip()
    queue_id = _int_or_none(queue_id, "queue_id", errors)
    queue_offset = _int_or_none(queue_offset, "queue_offset", errors)
    if kind in (SearchKind.KEY, SearchKind.UNIQUE_KEY, SearchKind.MSG_ID):
        if not key:
            errors["key"] = [_("Enter what to search for.")]
        elif len(key) > 255:
            errors["key"] = [_("At most 255 characters.")]
        elif kind != SearchKind.KEY and (len(key) not in _ID_LENGTHS or not set(key) <= _HEX):
            errors["key"] = [_("A message id is 32 hexadecimal characters (56 for an IPv6 store host).")]
    if kind == SearchKind.QUEUE_OFFSET:
        if not broker_name:
            errors.setdefault("broker_name", []).append(_("Choose the broker."))
        if queue_id is None and "queue_id" not in errors:
            errors["queue_id"] = [_("Enter the queue id.")]
        if queue_offset is None and "queue_offset" not in errors:
            errors["queue_offset"] = [_("Enter the queue offset.")]
    if kind == SearchKind.TIME_RANGE:
        if begin is None:
            errors["begin"] = [_("Enter when the range begins.")]
        if end is None:
            errors["end"] = [_("Enter when the range ends.")]
        if queue_id is not None and not broker_name:
            errors.setdefault("broker_name", []).append(_("A queue id needs its broker."))
    for name, value in (("begin", begin), ("end", end)):
        if value is not None and (not isinstance(value, dt.datetime) or timezone.is_naive(value)):
            errors[name] = [_("Enter a date and time with its time zone.")]
    if (
        isinstance(begin, dt.datetime)
        and isinstance(end, dt.datetime)
        and "begin" not in errors
        and "end" not in errors
    ) and begin >= end:
        errors["end"] = [_("The range must end after it begins.")]
    if errors:
        raise ValidationError(errors)
    return {
        "kind": kind,
        "topic_name": topic_name,
        "key": key,
        "broker_name": broker_name,
        "queue_id": queue_id,
        "queue_offset": queue_offset,
        "begin_time": begin,
        "end_time": end,
    }


def start_search(
    user,
    cluster: Cluster,
    *,
    kind: str,
    topic: str,
    key: str = "",
    broker_name: str = "",
    queue_id: int | None = None,
    queue_offset: int | None = None,
    begin: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> MessageSearch:
    """Validate a search (ValidationError keyed by field), check the user may see the topic (PermissionDenied), file
    it queued and start its task when the transaction commits."""
    criteria = _clean_criteria(kind, topic, key, broker_name, queue_id, queue_offset, begin, end)
    registered = check_topic_visible(user, cluster, criteria["topic_name"])
    with transaction.atomic():
        search = MessageSearch.objects.create(cluster=cluster, topic=registered, requested_by=user, **criteria)
        transaction.on_commit(functools.partial(enqueue, search.pk))
    return search


def enqueue(search_id: int) -> None:
    """Hand the search to its task, by name (services do not import the task module)."""
    celery_app.signature(RUN_TASK, args=[search_id]).delay()


def cancel_search(user, search: MessageSearch) -> MessageSearch:
    """Stop a search: a queued one ends cancelled at once, a running one at its next slice (its hits so far stay).
    Only its requester and portal admins may; a finished search is left as it is."""
    if not visible_searches(user).filter(pk=search.pk).exists():
        raise PermissionDenied
    now = timezone.now()
    MessageSearch.objects.filter(pk=search.pk, state=SearchState.QUEUED).update(
        state=SearchState.CANCELLED, cancel_requested=True, finished_at=now
    )
    MessageSearch.objects.filter(pk=search.pk, state=SearchState.RUNNING).update(cancel_requested=True)
    search.refresh_from_db()
    return search


def _millis(value: dt.datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _moment(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC)


def _messages(admin: MQAdmin, search: MessageSearch, progress, cancelled) -> Iterator[MessageExt]:
    topic = search.topic_name
    if search.kind == SearchKind.KEY:
        yield from wire_search.by_key(
            admin,
            topic,
            search.key,
            _millis(search.begin_time) or 0,
            _millis(search.end_time),
            progress=progress,
            cancelled=cancelled,
        )
    elif search.kind == SearchKind.UNIQUE_KEY:
        yield from wire_search.by_unique_key(
            admin,
            topic,
            search.key,
            _millis(search.begin_time) or 0,
            _millis(search.end_time),
            progress=progress,
            cancelled=cancelled,
        )
    elif search.kind == SearchKind.MSG_ID:
        yield from (msg for msg in wire_search.by_id(admin, search.key, topic) if msg.topic == topic)
    elif search.kind == SearchKind.QUEUE_OFFSET:
        try:
            yield wire_search.by_queue_offset(admin, topic, search.broker_name, search.queue_id, search.queue_offset)
        except wire_search.MessageNotFound:
            return
    else:
        yield from wire_search.by_time_range(
            admin,
            topic,
            _millis(search.begin_time),
            _millis(search.end_time),
            broker_name=search.broker_name or None,
            queue_id=search.queue_id,
            progress=progress,
            cancelled=cancelled,
        )


def hit_for(search: MessageSearch, msg: MessageExt, brokers: dict[str, str]) -> MessageSearchHit:
    """A hit as stored: the message's broker is the one whose address stored it (its store host otherwise)."""
    return MessageSearchHit(
        search=search,
        broker_name=brokers.get(msg.store_host, msg.store_host),
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        offset_msg_id=msg.msg_id,
        uniq_key=(msg.uniq_key or "")[:128],
        keys=" ".join(msg.keys)[:1024],
        tags=(msg.tags or "")[:255],
        store_time=_moment(msg.store_timestamp),
        born_time=_moment(msg.born_timestamp),
        store_host=msg.store_host[:64],
        born_host=msg.born_host[:64],
        body_size=len(msg.body),
        reconsume_times=msg.reconsume_times,
    )


class _Run:
    """One run of one search: buffers hits, writes progress and reads the cancel flag, each at most every
    ROW_INTERVAL_SECONDS."""

    def __init__(self, search: MessageSearch, brokers: dict[str, str]):
        self.search = search
        self.brokers = brokers
        self.pending: list[MessageSearchHit] = []
        self.last_write = 0.0
        self.last_read = 0.0

    def add(self, msg: MessageExt) -> None:
        self.pending.append(hit_for(self.search, msg, self.brokers))
        if len(self.pending) >= HIT_BATCH:
            self.flush()

    def flush(self, **fields) -> None:
        if self.pending:
            MessageSearchHit.objects.bulk_create(self.pending, ignore_conflicts=True)
            self.pending = []
        found = self.search.hits.count()
        MessageSearch.objects.filter(pk=self.search.pk).update(found=found, **fields)
        self.last_write = time.monotonic()

    def progress(self, report) -> None:
        if time.monotonic() - self.last_write >= ROW_INTERVAL_SECONDS:
            self.flush(progress=max(0.0, min(1.0, report.done)), note=str(report.note)[:255])

    def cancelled(self) -> bool:
        if time.monotonic() - self.last_read < ROW_INTERVAL_SECONDS:
            return False
        self.last_read = time.monotonic()
        return MessageSearch.objects.filter(pk=self.search.pk, cancel_requested=True).exists()


def _claim(search_id: int) -> MessageSearch | None:
    """Take a queued search, or one left running by a worker that died (the task is delivered again then)."""
    now = timezone.now()
    claimed = MessageSearch.objects.filter(
        Q(state=SearchState.QUEUED) | Q(state=SearchState.RUNNING), pk=search_id, cancel_requested=False
    ).update(state=SearchState.RUNNING, started_at=now, error="")
    if not claimed:
        MessageSearch.objects.filter(pk=search_id, cancel_requested=True).exclude(
            state__in=FINISHED_SEARCH_STATES
        ).update(state=SearchState.CANCELLED, finished_at=now)
        return None
    return MessageSearch.objects.select_related("cluster").get(pk=search_id)


def _finish(run: _Run | None, search: MessageSearch, state: str, **fields) -> None:
    if run is not None:
        run.flush()
    MessageSearch.objects.filter(pk=search.pk).update(state=state, finished_at=timezone.now(), **fields)


def run_search(search_id: int) -> MessageSearch | None:
    """Run one search to its end (the task's body): done, cancelled or failed with the error's text. Returns the
    search as it ended, or None if there was nothing to run (gone, finished, or cancelled before it started)."""
    search = _claim(search_id)
    if search is None:
        return MessageSearch.objects.filter(pk=search_id).first()
    run = None
    try:
        with cluster_admin(search.cluster, _("Searching messages")) as admin:
            run = _Run(search, broker_names_by_addr(admin))
            for msg in _messages(admin, search, run.progress, run.cancelled):
                run.add(msg)
        _finish(run, search, SearchState.DONE, progress=1.0, note="")
    except wire_search.SearchCancelled:
        _finish(run, search, SearchState.CANCELLED)
    except ValidationError as exc:
        _finish(run, search, SearchState.FAILED, error=" ".join(exc.messages))
    except Exception as exc:  # a search's failure is its own: recorded on the row, never the worker's
        logger.exception("message search %s failed", search_id)
        _finish(run, search, SearchState.FAILED, error=str(exc) or type(exc).__name__)
    search.refresh_from_db()
    return search

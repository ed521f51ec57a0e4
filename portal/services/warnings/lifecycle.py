"""The warning lifecycle: compare what the rules see now with the open warnings, and record transitions.

``reconcile`` is called after each evaluation of a cluster (``portal.tasks.evaluate_warnings``):

- a condition with no open warning opens one -> ``fired`` event;
- a condition whose warning is open and was last notified at least the subject's ``repeat_seconds`` ago ->
  ``repeated`` event (not while someone has acknowledged the warning: they know);
- an open warning of an *evaluated* kind with no condition any more -> ``resolved`` event. Kinds the rules could not
  evaluate (no data, or their rule failed) and subjects whose judging failed (``Evaluation.unjudged``) keep their
  warnings as they are.

Every transition is claimed with a conditional write — the partial unique index "one open warning per subject" for
firing, ``UPDATE ... WHERE state = open AND last_notified_at = <as read>`` for repeating, ``WHERE state = open`` for
resolving — so two reconciles of the same cluster racing each other (a slow task and its successor) record each
transition once. Running it again with the same evaluation and time changes nothing. Each event's delivery is
enqueued once its transaction commits.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal import access
from portal.celery import app as celery_app
from portal.models import Broker, Cluster, ConsumerGroup, ProducerGroup, Topic
from portal.models.warnings import SubjectType, Transition, Warning, WarningEvent, WarningState
from portal.services import audit
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.services.warnings.summaries import english
from portal.services.warnings.thresholds import Thresholds, thresholds_for

DELIVER_TASK = "portal.tasks.deliver_warning_event"
# Rows written per statement when refreshing what open warnings show (their latest summary and details).
_REFRESH_BATCH = 500


@dataclasses.dataclass
class Reconciled:
    """The events one reconcile recorded."""

    fired: list[WarningEvent] = dataclasses.field(default_factory=list)
    repeated: list[WarningEvent] = dataclasses.field(default_factory=list)
    resolved: list[WarningEvent] = dataclasses.field(default_factory=list)

    @property
    def events(self) -> list[WarningEvent]:
        return [*self.fired, *self.repeated, *self.resolved]

    def counts(self) -> dict[str, int]:
        return {"fired": len(self.fired), "repeated": len(self.repeated), "resolved": len(self.resolved)}


def stored_summary(condition: Condition) -> str:
    """The text kept with the warning and its events: the English wording of the condition's figures (what the
    list's text search matches, and what a reader of the table sees). Pages and notifications word the figures
    again in each reader's language."""
    return english(condition.kind, condition.subject_name, condition.details, condition.summary)


def snapshot_of(condition: Condition) -> dict:
    return {"summary": stored_summary(condition), "details": condition.details, "severity": condition.severity}


def _snapshot_of_warning(warning: Warning) -> dict:
    return {"summary": warning.summary, "details": warning.details, "severity": warning.severity}


def _key(warning: Warning) -> tuple[str, str, str]:
    return (warning.kind, warning.subject_type, warning.subject_name)


def _open_warnings(cluster: Cluster) -> dict[tuple[str, str, str], Warning]:
    return {_key(w): w for w in Warning.objects.filter(cluster=cluster, state=WarningState.OPEN)}


def _enqueue_delivery(event_id: int) -> None:
    """Hand the event to the delivery task, by name (services do not import the task module)."""
    celery_app.signature(DELIVER_TASK, args=[event_id]).delay()


def _record_event(warning: Warning, transition: str, at: dt.datetime, snapshot: dict) -> WarningEvent:
    event = WarningEvent.objects.create(
        warning=warning, transition=transition, at=at, summary=snapshot["summary"], snapshot=snapshot
    )
    transaction.on_commit(functools.partial(_enqueue_delivery, event.pk))
    return event


def _topic_of(condition: Condition) -> str | None:
    """The topic a group's condition concerns (``details["topic"]``, when the rule names one)."""
    topic = condition.details.get("topic") if isinstance(condition.details, dict) else None
    return topic if isinstance(topic, str) else None


class _Links:
    """The registry rows new warnings point at: the subject's own row, and for a group's warning also the topic its
    details name (the subject stays the group), looked up in one query per subject type for the whole batch."""

    def __init__(self, cluster: Cluster, conditions: list[Condition]):
        names: dict[str, set[str]] = {}
        for condition in conditions:
            names.setdefault(condition.subject_type, set()).add(condition.subject_name)
            if (topic := _topic_of(condition)) is not None:
                names.setdefault(SubjectType.TOPIC, set()).add(topic)
        self.rows = {
            SubjectType.TOPIC: self._by_name(Topic, cluster, names.get(SubjectType.TOPIC)),
            SubjectType.CONSUMER_GROUP: self._by_name(ConsumerGroup, cluster, names.get(SubjectType.CONSUMER_GROUP)),
            SubjectType.PRODUCER_GROUP: self._by_name(ProducerGroup, cluster, names.get(SubjectType.PRODUCER_GROUP)),
            SubjectType.BROKER: {},
        }
        if names.get(SubjectType.BROKER):
            for broker in Broker.objects.filter(cluster=cluster):
                self.rows[SubjectType.BROKER][f"{broker.broker_name}@{broker.broker_id}"] = broker
                if broker.is_master:
                    self.rows[SubjectType.BROKER][broker.broker_name] = broker

    @staticmethod
    def _by_name(model, cluster: Cluster, names: set[str] | None) -> dict:
        if not names:
            return {}
        return {row.name: row for row in model.objects.filter(cluster=cluster, name__in=names)}

    def fields_for(self, condition: Condition) -> dict:
        fields: dict = {"host": condition.subject_name if condition.subject_type == SubjectType.SERVER else ""}
        topic = _topic_of(condition)
        if topic is not None:
            fields["topic"] = self.rows[SubjectType.TOPIC].get(topic)
        if condition.subject_type in self.rows:
            fields[condition.subject_type] = self.rows[condition.subject_type].get(condition.subject_name)
        return fields


def _fire(cluster: Cluster, condition: Condition, now: dt.datetime, links: _Links) -> WarningEvent | None:
    with transaction.atomic():
        try:
            with transaction.atomic():
                warning = Warning.objects.create(
                    kind=condition.kind,
                    cluster=cluster,
                    subject_type=condition.subject_type,
                    subject_name=condition.subject_name,
                    severity=condition.severity,
                    state=WarningState.OPEN,
                    opened_at=now,
                    last_seen_at=now,
                    last_notified_at=now,
                    summary=stored_summary(condition),
                    details=condition.details,
                    **links.fields_for(condition),
                )
        except IntegrityError:  # another reconcile opened it since we looked
            return None
        return _record_event(warning, Transition.FIRED, now, snapshot_of(condition))


def _repeat_if_due(warning: Warning, condition: Condition, now: dt.datetime, repeat: dt.timedelta):
    if warning.acknowledged_at is not None or now - warning.last_notified_at < repeat:
        return None
    snapshot = snapshot_of(condition)
    with transaction.atomic():
        claimed = Warning.objects.filter(
            pk=warning.pk, state=WarningState.OPEN, last_notified_at=warning.last_notified_at
        ).update(
            last_notified_at=now,
            last_seen_at=now,
            summary=snapshot["summary"],
            details=condition.details,
            severity=condition.severity,
        )
        if not claimed:  # resolved or repeated by another reconcile since we looked
            return None
        warning.last_notified_at = warning.last_seen_at = now
        warning.summary, warning.details, warning.severity = snapshot["summary"], condition.details, condition.severity
        return _record_event(warning, Transition.REPEATED, now, snapshot)


def _resolve(warning: Warning, now: dt.datetime) -> WarningEvent | None:
    with transaction.atomic():
        claimed = Warning.objects.filter(pk=warning.pk, state=WarningState.OPEN).update(
            state=WarningState.RESOLVED, resolved_at=now
        )
        if not claimed:
            return None
        warning.state, warning.resolved_at = WarningState.RESOLVED, now
        return _record_event(warning, Transition.RESOLVED, now, _snapshot_of_warning(warning))


def _refresh(warning: Warning, condition: Condition, now: dt.datetime) -> bool:
    """Bring an open warning's shown state up to date with its condition; True when something changed."""
    summary = stored_summary(condition)
    if now <= warning.last_seen_at and (warning.summary, warning.details, warning.severity) == (
        summary,
        condition.details,
        condition.severity,
    ):
        return False
    warning.last_seen_at = max(now, warning.last_seen_at)
    warning.summary, warning.details, warning.severity = summary, condition.details, condition.severity
    return True


def _active_conditions(evaluation: Evaluation, thresholds: Thresholds) -> dict[tuple[str, str, str], Condition]:
    """The evaluation's conditions by identity, leaving out those of subjects whose kind is switched off."""
    active = {}
    for condition in evaluation.conditions:
        if thresholds.get(condition.kind, condition.subject_type, condition.subject_name)["enabled"]:
            active[condition.key] = condition
    return active


def reconcile(cluster: Cluster, evaluation: Evaluation, now: dt.datetime | None = None) -> Reconciled:
    """Record the transitions ``evaluation`` (taken at ``now``) implies for ``cluster``'s warnings."""
    now = now or timezone.now()
    thresholds = thresholds_for(cluster)
    conditions = _active_conditions(evaluation, thresholds)
    evaluated = {str(kind) for kind in evaluation.evaluated}
    unjudged = evaluation.unjudged
    open_now = _open_warnings(cluster)
    links = _Links(cluster, [c for key, c in conditions.items() if key not in open_now])
    result = Reconciled()
    refreshed: list[Warning] = []

    for key, condition in conditions.items():
        warning = open_now.get(key)
        if warning is None:
            if event := _fire(cluster, condition, now, links):
                result.fired.append(event)
            continue
        repeat = dt.timedelta(seconds=thresholds.get(*key)["repeat_seconds"])
        if event := _repeat_if_due(warning, condition, now, repeat):
            result.repeated.append(event)
        elif _refresh(warning, condition, now):
            refreshed.append(warning)

    for key, warning in open_now.items():
        if (
            key not in conditions
            and warning.kind in evaluated
            and key not in unjudged
            and (event := _resolve(warning, now))
        ):
            result.resolved.append(event)

    # Only what the pages show changes here (never the state), so a concurrent transition is not undone.
    Warning.objects.bulk_update(
        refreshed, ["last_seen_at", "summary", "details", "severity"], batch_size=_REFRESH_BATCH
    )
    return result


def acknowledge(warning: Warning, user) -> bool:
    """``user`` says they are on it: the warning stops repeating (its resolution is still announced). Only an open,
    not yet acknowledged warning can be acknowledged (``portal.access.can_acknowledge`` decides who may: else
    PermissionDenied); returns whether this call did it (False: someone else was first)."""
    if not access.can_acknowledge(user, warning):
        raise PermissionDenied
    now = timezone.now()
    with transaction.atomic():
        claimed = Warning.objects.filter(pk=warning.pk, state=WarningState.OPEN, acknowledged_at__isnull=True).update(
            acknowledged_by=user, acknowledged_at=now
        )
        if claimed:
            warning.acknowledged_by, warning.acknowledged_at = user, now
            audit.record(user, "warning.acknowledged", warning, cluster=warning.cluster)
    return bool(claimed)

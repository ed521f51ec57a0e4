"""Parameters of the warning rules: built-in defaults, the defaults portal admins set, and the overrides an owning
team sets for one topic, consumer group or producer group.

The rules (``monitor/warnings``) ask ``thresholds_for(cluster).get(kind, subject_type, subject_name)`` for every
subject they judge; everything is loaded in two queries up front so evaluating 10,000 groups costs no query each.
Precedence, lowest first: ``BUILTIN`` < the admin's default row < the subject's override row; each row holds only
the keys it changes.

Parameters per kind (every kind also has ``enabled`` (bool) and ``repeat_seconds``, the interval between repeated
notifications while a warning stays open, default 3600):

- consumer_lag: ``messages`` (10,000) AND ``seconds`` (300) behind — both must be exceeded.
- client_blocked: ``seconds`` (10) a queue goes unconsumed while messages wait.
- offset_moved, subscription_mismatch: nothing to tune (any OFFSET_MOVED_EVENT / any mismatch counts).
- consume_failures: ``retries_per_hour`` (100) messages sent back for retry (SNDBCK_PUT_NUMS) in the last hour.
- dead_letters: ``messages_per_hour`` (1) messages reaching the group's %DLQ% topic in the last hour.
- produce_errors: ``exceptions`` (1) send exceptions reported by the SDK within ``window_minutes`` (5).
- traffic_surge: this minute's messages over ``factor`` (3.0) × the mean of the last ``baseline_minutes`` (60),
  ignored below ``min_per_minute`` (100) messages.
- traffic_drop: this minute's messages under ``factor`` (0.2) × the baseline mean of ``baseline_minutes`` (60),
  judged only when the baseline is at least ``min_baseline_per_minute`` (100).
- nameserver_down, broker_down: ``grace_seconds`` (120) of failed probes before it counts (one lost probe is not an
  alarm).
- slave_lag: ``bytes`` (100 MiB) of commit log the slave is behind its master.
- server_cpu: ``percent`` (90) busy; server_memory: ``percent`` (90) used; server_disk: ``percent`` (90) of any
  mount used; server_load: ``load1`` (10.0) one-minute load average; server_tcp: ``established`` (10,000)
  established TCP connections.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import Cluster, ConsumerGroup, ProducerGroup, Topic
from portal.models.warnings import (
    KIND_SUBJECT,
    SubjectType,
    ThresholdScope,
    WarningKind,
    WarningThreshold,
)
from portal.services import audit


@dataclasses.dataclass(frozen=True)
class Param:
    """One tunable parameter: its name, type (int, float or bool), default, bounds and a label for forms."""

    name: str
    type: type
    default: int | float | bool
    label: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False


def _common() -> list[Param]:
    return [
        Param("enabled", bool, True, _("warn about this")),
        Param("repeat_seconds", int, 3600, _("repeat the notification every (seconds)"), minimum=60, maximum=7 * 86400),
    ]


PARAMS: dict[str, list[Param]] = {
    WarningKind.CONSUMER_LAG: [
        Param("messages", int, 10_000, _("messages behind"), minimum=1),
        Param("seconds", int, 300, _("time behind (seconds)"), minimum=1),
    ],
    WarningKind.CLIENT_BLOCKED: [Param("seconds", int, 10, _("queue not consumed for (seconds)"), minimum=1)],
    WarningKind.OFFSET_MOVED: [],
    WarningKind.SUBSCRIPTION_MISMATCH: [],
    WarningKind.CONSUME_FAILURES: [
        Param("retries_per_hour", int, 100, _("messages sent back for retry per hour"), minimum=1)
    ],
    WarningKind.DEAD_LETTERS: [
        Param("messages_per_hour", int, 1, _("messages reaching the dead letter queue per hour"), minimum=1)
    ],
    WarningKind.PRODUCE_ERRORS: [
        Param("exceptions", int, 1, _("send exceptions"), minimum=1),
        Param("window_minutes", int, 5, _("within (minutes)"), minimum=1, maximum=1440),
    ],
    WarningKind.TRAFFIC_SURGE: [
        Param("factor", float, 3.0, _("times the baseline"), minimum=1, exclusive_minimum=True),
        Param("baseline_minutes", int, 60, _("baseline over (minutes)"), minimum=5, maximum=1440),
        Param("min_per_minute", int, 100, _("ignore below (messages per minute)"), minimum=0),
    ],
    WarningKind.TRAFFIC_DROP: [
        Param(
            "factor",
            float,
            0.2,
            _("fraction of the baseline"),
            minimum=0,
            maximum=1,
            exclusive_minimum=True,
            exclusive_maximum=True,
        ),
        Param("baseline_minutes", int, 60, _("baseline over (minutes)"), minimum=5, maximum=1440),
        Param("min_baseline_per_minute", int, 100, _("judge only from a baseline of (messages per minute)"), minimum=1),
    ],
    WarningKind.NAMESERVER_DOWN: [Param("grace_seconds", int, 120, _("grace period (seconds)"), minimum=0)],
    WarningKind.BROKER_DOWN: [Param("grace_seconds", int, 120, _("grace period (seconds)"), minimum=0)],
    WarningKind.SLAVE_LAG: [Param("bytes", int, 100 * 1024 * 1024, _("bytes behind the master"), minimum=1)],
    WarningKind.SERVER_CPU: [Param("percent", float, 90.0, _("CPU busy (%)"), minimum=0, maximum=100)],
    WarningKind.SERVER_MEMORY: [Param("percent", float, 90.0, _("memory used (%)"), minimum=0, maximum=100)],
    WarningKind.SERVER_DISK: [Param("percent", float, 90.0, _("disk used (%)"), minimum=0, maximum=100)],
    WarningKind.SERVER_LOAD: [Param("load1", float, 10.0, _("one-minute load average"), minimum=0)],
    WarningKind.SERVER_TCP: [Param("established", int, 10_000, _("established TCP connections"), minimum=1)],
}
for _kind in PARAMS:
    PARAMS[_kind] = PARAMS[_kind] + _common()
del _kind

BUILTIN: dict[str, dict] = {kind: {p.name: p.default for p in params} for kind, params in PARAMS.items()}

# Which override scope a kind's subjects can have (cluster-level kinds only have defaults).
_SCOPE_OF_SUBJECT = {
    SubjectType.TOPIC: ThresholdScope.TOPIC,
    SubjectType.CONSUMER_GROUP: ThresholdScope.CONSUMER_GROUP,
    SubjectType.PRODUCER_GROUP: ThresholdScope.PRODUCER_GROUP,
}
_TARGET_FIELD = {
    ThresholdScope.TOPIC: "topic",
    ThresholdScope.CONSUMER_GROUP: "consumer_group",
    ThresholdScope.PRODUCER_GROUP: "producer_group",
}
_SCOPE_OF_MODEL = {
    Topic: ThresholdScope.TOPIC,
    ConsumerGroup: ThresholdScope.CONSUMER_GROUP,
    ProducerGroup: ThresholdScope.PRODUCER_GROUP,
}


def override_scope(kind: str) -> str | None:
    """The scope an owning team may override ``kind`` in (None: admins' defaults only)."""
    return _SCOPE_OF_SUBJECT.get(KIND_SUBJECT[kind])


def kinds_for(entry) -> list[str]:
    """The kinds whose thresholds can be overridden on ``entry`` (a Topic, ConsumerGroup or ProducerGroup)."""
    scope = _SCOPE_OF_MODEL[type(entry)]
    return [kind for kind in WarningKind.values if override_scope(kind) == scope]


def _check_number(param: Param, value) -> str | None:
    """An error message for ``value`` as ``param``, or None when it is acceptable."""
    if param.type is bool:
        return None if isinstance(value, bool) else str(_("Enter true or false."))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(_("Enter a number."))
    if param.type is int and not float(value).is_integer():
        return str(_("Enter a whole number."))
    if param.minimum is not None and (value <= param.minimum if param.exclusive_minimum else value < param.minimum):
        template = _("Must be more than {limit}.") if param.exclusive_minimum else _("Must be at least {limit}.")
        return str(format_lazy(template, limit=param.minimum))
    if param.maximum is not None and (value >= param.maximum if param.exclusive_maximum else value > param.maximum):
        template = _("Must be less than {limit}.") if param.exclusive_maximum else _("Must be at most {limit}.")
        return str(format_lazy(template, limit=param.maximum))
    return None


def validate_params(kind: str, params) -> dict:
    """``params`` checked against ``kind``'s parameters and normalised (ints as int, floats as float); raises
    ValidationError keyed by parameter name (unknown names under their own key too). Missing keys are fine: they
    are inherited."""
    if kind not in PARAMS:
        raise ValidationError({"kind": _("Unknown warning type.")})
    if not isinstance(params, dict):
        raise ValidationError({"params": _("Enter an object of parameter values.")})
    known = {p.name: p for p in PARAMS[kind]}
    errors: dict[str, str] = {}
    cleaned: dict = {}
    for name, value in params.items():
        param = known.get(name)
        if param is None:
            errors[name] = str(_("Unknown parameter for this warning type."))
            continue
        message = _check_number(param, value)
        if message:
            errors[name] = message
        else:
            cleaned[name] = param.type(value)
    if errors:
        raise ValidationError(errors)
    return cleaned


def validate_threshold(threshold: WarningThreshold) -> None:
    """Model-level checks of a threshold row: the scope matches the target and the kind, and the params are valid
    (normalised in place)."""
    if threshold.kind not in PARAMS:
        raise ValidationError({"kind": _("Unknown warning type.")})
    targets = {scope: getattr(threshold, f"{field}_id") for scope, field in _TARGET_FIELD.items()}
    if threshold.scope == ThresholdScope.DEFAULT:
        if any(targets.values()):
            raise ValidationError({"scope": _("A default threshold has no topic or group.")})
    else:
        if override_scope(threshold.kind) != threshold.scope:
            raise ValidationError({"scope": _("This warning type cannot be overridden for this kind of subject.")})
        field = _TARGET_FIELD[threshold.scope]
        if not targets[threshold.scope] or any(v for s, v in targets.items() if s != threshold.scope):
            raise ValidationError({field: _("Choose exactly the one subject this override is for.")})
    threshold.params = validate_params(threshold.kind, threshold.params)


class Thresholds:
    """The effective parameters of every rule for one cluster (see the module docstring for the precedence)."""

    def __init__(self, defaults: dict[str, dict], overrides: dict[tuple[str, str, str], dict]):
        self._defaults = defaults
        self._overrides = overrides

    def get(self, kind: str, subject_type: str | None = None, subject_name: str | None = None) -> dict:
        """The parameters for ``kind`` on the subject (the defaults when no subject is given); a fresh dict."""
        params = {**BUILTIN[kind], **self._defaults.get(kind, {})}
        if subject_type is not None:
            params.update(self._overrides.get((kind, subject_type, subject_name), {}))
        return params

    def default(self, kind: str) -> dict:
        return self.get(kind)


def _rows_params(rows: Iterable[WarningThreshold]) -> Iterable[tuple[WarningThreshold, dict]]:
    """Each row with its params, leaving out a stored value that no longer validates (a parameter renamed or its
    bounds tightened in a later version must not break evaluation; the pages show the row for correction)."""
    for row in rows:
        params = row.params if isinstance(row.params, dict) else {}
        kept = {}
        for name, value in params.items():
            try:
                kept.update(validate_params(row.kind, {name: value}))
            except ValidationError:
                continue
        yield row, kept


def thresholds_for(cluster: Cluster) -> Thresholds:
    """All thresholds that apply to ``cluster``'s subjects, in two queries (defaults, then this cluster's
    overrides with their subjects' names)."""
    defaults = {
        row.kind: params for row, params in _rows_params(WarningThreshold.objects.filter(scope=ThresholdScope.DEFAULT))
    }
    rows = WarningThreshold.objects.filter(
        Q(topic__cluster=cluster) | Q(consumer_group__cluster=cluster) | Q(producer_group__cluster=cluster)
    ).select_related("topic", "consumer_group", "producer_group")
    overrides = {}
    for row, params in _rows_params(rows):
        target = row.target
        subject_type = KIND_SUBJECT[row.kind]
        overrides[(row.kind, subject_type, target.name)] = params
    return Thresholds(defaults, overrides)


def set_default(kind: str, params: dict, *, by) -> WarningThreshold:
    """Portal admins set the default parameters of ``kind`` for every subject (replacing the previous default)."""
    if not access.can_administer(by):
        raise PermissionDenied
    return _save(WarningThreshold(kind=kind, scope=ThresholdScope.DEFAULT), params, by=by, cluster=None)


def set_override(kind: str, entry, params: dict, *, by) -> WarningThreshold:
    """The owning team (or a portal admin) sets ``kind``'s parameters for one topic/consumer group/producer group;
    an empty ``params`` removes the override."""
    if not access.can_change(by, entry):
        raise PermissionDenied
    scope = _SCOPE_OF_MODEL[type(entry)]
    threshold = WarningThreshold(kind=kind, scope=scope, **{_TARGET_FIELD[scope]: entry})
    return _save(threshold, params, by=by, cluster=entry.cluster)


def _existing(threshold: WarningThreshold):
    lookup = {"kind": threshold.kind, "scope": threshold.scope}
    if threshold.scope != ThresholdScope.DEFAULT:
        field = _TARGET_FIELD[threshold.scope]
        lookup[f"{field}_id"] = getattr(threshold, f"{field}_id")
    return WarningThreshold.objects.select_for_update().filter(**lookup).first()


def _save(threshold: WarningThreshold, params: dict, *, by, cluster) -> WarningThreshold:
    threshold.params = params
    threshold.updated_by = by
    threshold.full_clean(validate_unique=False, validate_constraints=False)
    with transaction.atomic():
        existing = _existing(threshold)
        before = audit.snapshot(existing) if existing else None
        if existing is not None:
            if not threshold.params and threshold.scope != ThresholdScope.DEFAULT:
                audit.record(by, "warningthreshold.deleted", existing, before=before, cluster=cluster)
                existing.delete()
                return existing
            existing.params = threshold.params
            existing.updated_by = by
            existing.save(update_fields=["params", "updated_by", "updated_at"])
            threshold = existing
        else:
            threshold.save()
        audit.record(
            by,
            "warningthreshold.updated" if before else "warningthreshold.created",
            threshold,
            before=before,
            after=audit.snapshot(threshold),
            cluster=cluster,
        )
    return threshold

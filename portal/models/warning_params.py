"""The parameters of each warning kind's rule: names, built-in defaults, accepted ranges, and their validation.

Pure definitions the ``WarningThreshold`` model validates with (its ``clean()``), the thresholds service
(``portal/services/warnings/thresholds.py``) resolves and the pages render; kept beside the models so no model
imports a service.

Parameters per kind, default and accepted range in brackets (every kind also has ``enabled`` (bool) and
``repeat_seconds``, the interval between repeated notifications while a warning stays open: 3600, 60 to 604,800):

- consumer_lag: ``messages`` (10,000; 1 to 10**12) AND ``seconds`` (300; 1 to 604,800) behind — both must be
  exceeded.
- client_blocked: ``seconds`` (10; 1 to 86,400) a queue goes unconsumed while messages wait.
- offset_moved, subscription_mismatch: nothing to tune (any OFFSET_MOVED_EVENT / any mismatch counts).
- consume_failures: ``retries_per_hour`` (100; 1 to 10**12) messages sent back for retry (SNDBCK_PUT_NUMS) in the
  last hour.
- dead_letters: ``messages_per_hour`` (1; 1 to 10**12) messages reaching the group's %DLQ% topic in the last hour.
- produce_errors: ``exceptions`` (1; 1 to 10**12) send exceptions reported by the SDK within ``window_minutes``
  (5; 1 to 1,440).
- trace_failures: ``records`` (1; 1 to 10**12) trace records of the topic its SDK clients dropped (their trace
  buffer was full) or failed to write to the trace topic within ``window_minutes`` (5; 1 to 1,440).
- traffic_surge: this minute's messages over ``factor`` (3.0; more than 1, at most 1,000) × the mean of the last
  ``baseline_minutes`` (60; 5 to 1,440), ignored below ``min_per_minute`` (100; 0 to 10**12) messages.
- traffic_drop: this minute's messages under ``factor`` (0.2; more than 0 and less than 1) × the baseline mean of
  ``baseline_minutes`` (60; 5 to 1,440), judged only when the baseline is at least ``min_baseline_per_minute``
  (100; 1 to 10**12).
- nameserver_down, broker_down: ``grace_seconds`` (120; 0 to 86,400) of failed probes before it counts (one lost
  probe is not an alarm).
- slave_lag: ``bytes`` (100 MiB; 1 to 2**50, 1 PiB) of commit log the slave is behind its master.
- server_cpu: ``percent`` (90) busy; server_memory: ``percent`` (90) used; server_disk: ``percent`` (90) of any
  mount used (0 to 100 each); server_load: ``load1`` (10.0; 0 to 10,000) one-minute load average; server_tcp:
  ``established`` (10,000; 1 to 10**8) established TCP connections.

Every number must be finite and in its range (:func:`validate_params`, called by the model's ``clean()``, so the
pages and anything else saving a threshold share it); a stored value outside it (written before the bounds, or
around validation) is ignored with a log line when the thresholds are loaded, so it never reaches the rules.
"""

from __future__ import annotations

import dataclasses
import math

from django.core.exceptions import ValidationError
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal.models.registry import ConsumerGroup, ProducerGroup, Topic
from portal.models.warning_kinds import KIND_SUBJECT, SubjectType, ThresholdScope, WarningKind

# Upper bounds of the parameters (issue 15): nothing sensible lies past them, and an unbounded number would reach
# the rules' date arithmetic (a timedelta of 10**30 seconds raises OverflowError).
MINUTE_SECONDS = 60
DAY_SECONDS = 86_400
MAX_MESSAGES = 10**12  # a trillion messages: more than a cluster stores
MAX_BYTES = 2**50  # 1 PiB of commit log
MAX_BASELINE_MINUTES = 1440  # the rules read one day of collected minutes (portal.services.warnings.rules.base.HISTORY)


@dataclasses.dataclass(frozen=True)
class Param:
    """One tunable parameter: its name, type (int, float or bool), default, bounds and a label for forms. A number
    always has both bounds, so whatever is stored stays in the range the rules can compute with."""

    name: str
    type: type
    default: int | float | bool
    label: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False

    def __post_init__(self):
        if self.type is not bool and (self.minimum is None or self.maximum is None):
            raise TypeError(f"threshold parameter {self.name} needs a minimum and a maximum")

    @property
    def range_text(self) -> str:
        """The accepted range, for people: "From 1 to 604,800.", "More than 0 and less than 1." ("" for a bool)."""
        if self.type is bool:
            return ""
        template = _RANGE_TEXT[self.exclusive_minimum, self.exclusive_maximum]
        return str(format_lazy(template, low=_number(self.minimum), high=_number(self.maximum)))


_RANGE_TEXT = {
    (False, False): _("From {low} to {high}."),
    (True, False): _("More than {low}, at most {high}."),
    (False, True): _("At least {low}, less than {high}."),
    (True, True): _("More than {low} and less than {high}."),
}


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


def _common() -> list[Param]:
    return [
        Param("enabled", bool, True, _("warn about this")),
        Param(
            "repeat_seconds",
            int,
            3600,
            _("repeat the notification every (seconds)"),
            minimum=MINUTE_SECONDS,
            maximum=7 * DAY_SECONDS,
        ),
    ]


def _messages(name: str, default: int, label, minimum: int = 1) -> Param:
    return Param(name, int, default, label, minimum=minimum, maximum=MAX_MESSAGES)


def _baseline() -> Param:
    return Param("baseline_minutes", int, 60, _("baseline over (minutes)"), minimum=5, maximum=MAX_BASELINE_MINUTES)


def _percent(label) -> Param:
    return Param("percent", float, 90.0, label, minimum=0, maximum=100)


def _grace() -> Param:
    return Param("grace_seconds", int, 120, _("grace period (seconds)"), minimum=0, maximum=DAY_SECONDS)


PARAMS: dict[str, list[Param]] = {
    WarningKind.CONSUMER_LAG: [
        _messages("messages", 10_000, _("messages behind")),
        Param("seconds", int, 300, _("time behind (seconds)"), minimum=1, maximum=7 * DAY_SECONDS),
    ],
    WarningKind.CLIENT_BLOCKED: [
        Param("seconds", int, 10, _("queue not consumed for (seconds)"), minimum=1, maximum=DAY_SECONDS)
    ],
    WarningKind.OFFSET_MOVED: [],
    WarningKind.SUBSCRIPTION_MISMATCH: [],
    WarningKind.CONSUME_FAILURES: [_messages("retries_per_hour", 100, _("messages sent back for retry per hour"))],
    WarningKind.DEAD_LETTERS: [
        _messages("messages_per_hour", 1, _("messages reaching the dead letter queue per hour"))
    ],
    WarningKind.CLIENT_CONSUME_FAILURES: [
        _messages("failures", 10, _("failed messages")),
        Param("window_minutes", int, 5, _("within (minutes)"), minimum=1, maximum=MAX_BASELINE_MINUTES),
    ],
    WarningKind.PRODUCE_ERRORS: [
        _messages("exceptions", 1, _("send exceptions")),
        Param("window_minutes", int, 5, _("within (minutes)"), minimum=1, maximum=MAX_BASELINE_MINUTES),
    ],
    WarningKind.TRACE_FAILURES: [
        _messages("records", 1, _("trace records dropped or not written")),
        Param("window_minutes", int, 5, _("within (minutes)"), minimum=1, maximum=MAX_BASELINE_MINUTES),
    ],
    WarningKind.TRAFFIC_SURGE: [
        Param("factor", float, 3.0, _("times the baseline"), minimum=1, maximum=1000, exclusive_minimum=True),
        _baseline(),
        _messages("min_per_minute", 100, _("ignore below (messages per minute)"), minimum=0),
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
        _baseline(),
        _messages("min_baseline_per_minute", 100, _("judge only from a baseline of (messages per minute)")),
    ],
    WarningKind.NAMESERVER_DOWN: [_grace()],
    WarningKind.BROKER_DOWN: [_grace()],
    WarningKind.SLAVE_LAG: [
        Param("bytes", int, 100 * 1024 * 1024, _("bytes behind the master"), minimum=1, maximum=MAX_BYTES)
    ],
    WarningKind.SERVER_CPU: [_percent(_("CPU busy (%)"))],
    WarningKind.SERVER_MEMORY: [_percent(_("memory used (%)"))],
    WarningKind.SERVER_DISK: [_percent(_("disk used (%)"))],
    WarningKind.SERVER_LOAD: [Param("load1", float, 10.0, _("one-minute load average"), minimum=0, maximum=10_000)],
    WarningKind.SERVER_TCP: [
        Param("established", int, 10_000, _("established TCP connections"), minimum=1, maximum=10**8)
    ],
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
TARGET_FIELD = {
    ThresholdScope.TOPIC: "topic",
    ThresholdScope.CONSUMER_GROUP: "consumer_group",
    ThresholdScope.PRODUCER_GROUP: "producer_group",
}
SCOPE_OF_MODEL = {
    Topic: ThresholdScope.TOPIC,
    ConsumerGroup: ThresholdScope.CONSUMER_GROUP,
    ProducerGroup: ThresholdScope.PRODUCER_GROUP,
}


def override_scope(kind: str) -> str | None:
    """The scope an owning team may override ``kind`` in (None: admins' defaults only)."""
    return _SCOPE_OF_SUBJECT.get(KIND_SUBJECT[kind])


def kinds_for(entry) -> list[str]:
    """The kinds whose thresholds can be overridden on ``entry`` (a Topic, ConsumerGroup or ProducerGroup)."""
    scope = SCOPE_OF_MODEL[type(entry)]
    return [kind for kind in WarningKind.values if override_scope(kind) == scope]


def _check_number(param: Param, value) -> str | None:
    """An error message for ``value`` as ``param``, or None when it is acceptable."""
    if param.type is bool:
        return None if isinstance(value, bool) else str(_("Enter true or false."))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(_("Enter a number."))
    if isinstance(value, float) and not math.isfinite(value):
        return str(_("Enter a finite number."))
    # An int is compared as it is (float() of a huge one raises OverflowError; the bounds below refuse it).
    if param.type is int and isinstance(value, float) and not value.is_integer():
        return str(_("Enter a whole number."))
    if param.minimum is not None and (value <= param.minimum if param.exclusive_minimum else value < param.minimum):
        template = _("Must be more than {limit}.") if param.exclusive_minimum else _("Must be at least {limit}.")
        return str(format_lazy(template, limit=_number(param.minimum)))
    if param.maximum is not None and (value >= param.maximum if param.exclusive_maximum else value > param.maximum):
        template = _("Must be less than {limit}.") if param.exclusive_maximum else _("Must be at most {limit}.")
        return str(format_lazy(template, limit=_number(param.maximum)))
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


def validate_threshold(threshold) -> None:
    """Model-level checks of a threshold row: the scope matches the target and the kind, and the params are valid
    (normalised in place)."""
    if threshold.kind not in PARAMS:
        raise ValidationError({"kind": _("Unknown warning type.")})
    targets = {scope: getattr(threshold, f"{field}_id") for scope, field in TARGET_FIELD.items()}
    if threshold.scope == ThresholdScope.DEFAULT:
        if any(targets.values()):
            raise ValidationError({"scope": _("A default threshold has no topic or group.")})
    else:
        if override_scope(threshold.kind) != threshold.scope:
            raise ValidationError({"scope": _("This warning type cannot be overridden for this kind of subject.")})
        field = TARGET_FIELD[threshold.scope]
        if not targets[threshold.scope] or any(v for s, v in targets.items() if s != threshold.scope):
            raise ValidationError({field: _("Choose exactly the one subject this override is for.")})
    threshold.params = validate_params(threshold.kind, threshold.params)

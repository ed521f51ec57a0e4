"""What a warning rule reports: one Condition per subject that is unhealthy right now, gathered in an Evaluation.

Rules in this package only *observe*: they read stored stats and the thresholds and return conditions. Opening,
repeating and resolving warnings (and telling people) is `portal.services.warnings.reconcile`'s job, which compares
the conditions with the open warnings of the kinds in `Evaluation.evaluated`. A kind whose data could not be read
(no collection has run, the stats are too old) is left out of `evaluated`, so its open warnings are neither
resolved nor repeated on the strength of missing data.

Identity of a warning = (kind, subject_type, subject_name) within a cluster (subject types and kinds:
:mod:`portal.models.warnings`). ``subject_name`` is how RocketMQ names the subject: the topic name, the
consumer/producer group name, one broker as ``broker-a@0`` (broker name and broker id, :func:`broker_subject`; a
slave's lag is the slave's subject), the name server address ``host:port``, the server host (as its brokers are
registered, e.g. ``10.0.0.5``). A rule keeps the subject stable while the condition lasts (a lagging group is one
subject however many of its queues lag), so the lifecycle repeats at most once per interval instead of flapping.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from portal.models.warnings import Severity, SubjectType, WarningKind

__all__ = [
    "Condition",
    "Evaluation",
    "RuleFailure",
    "Severity",
    "SubjectType",
    "broker_subject",
    "parse_broker_subject",
]


def broker_subject(broker_name: str, broker_id: int) -> str:
    """The subject name of one broker instance: ``broker-a@0`` for the master, ``broker-a@1`` for its slave."""
    return f"{broker_name}@{broker_id}"


def parse_broker_subject(subject_name: str) -> tuple[str, int]:
    """``broker-a@1`` -> ("broker-a", 1): the inverse of :func:`broker_subject` (to find the Broker row)."""
    name, _, broker_id = subject_name.rpartition("@")
    return name, int(broker_id)


@dataclasses.dataclass(frozen=True)
class Condition:
    """One unhealthy subject as seen now.

    details: the JSON-able figures saying why (which queues, how far behind, how fast it is moving), kept on the
    warning and as each event's snapshot; the summary people read is worded from the kind and these figures, in
    their language, by ``portal.services.warnings.summaries``. Rules set no ``summary``: it is only the text shown
    for a condition whose details are not its kind's figures (one made by hand, by a script or a test).
    severity: a :class:`~portal.models.warnings.Severity` value; rules raise it to critical when a subject is
    far past its threshold or has stopped altogether.
    """

    kind: WarningKind
    subject_type: SubjectType
    subject_name: str
    summary: str = ""
    details: dict[str, Any] = dataclasses.field(default_factory=dict)
    severity: Severity = Severity.WARNING

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity reconcile matches open warnings on."""
        return (str(self.kind), str(self.subject_type), self.subject_name)


@dataclasses.dataclass(frozen=True)
class RuleFailure:
    """A rule that raised while judging: ``rule`` is the kind (or the family, when it failed as a whole), the subject
    is set when one subject's judging failed; ``error`` is the exception as logged."""

    rule: str
    subject_type: str | None
    subject_name: str | None
    error: str

    @property
    def key(self) -> tuple[str, str, str] | None:
        """The identity of the warning left unjudged (None: no single subject)."""
        if self.subject_type is None or self.subject_name is None:
            return None
        return (self.rule, str(self.subject_type), self.subject_name)


@dataclasses.dataclass
class Evaluation:
    """The result of evaluating every rule for one cluster at one instant.

    conditions: every condition found. evaluated: the kinds whose data was read, so an open warning of such a kind
    with no condition any more is resolved; kinds not in it are left alone. failures: every rule error of this
    evaluation (the count ops watch); a subject whose judging failed is :attr:`unjudged`, and its open warning is
    left alone like those of a kind not evaluated.
    """

    conditions: list[Condition] = dataclasses.field(default_factory=list)
    evaluated: set[WarningKind] = dataclasses.field(default_factory=set)
    failures: list[RuleFailure] = dataclasses.field(default_factory=list)

    @property
    def unjudged(self) -> set[tuple[str, str, str]]:
        """The (kind, subject_type, subject_name) whose judging failed."""
        return {failure.key for failure in self.failures if failure.key is not None}

    def add(self, kind: WarningKind, conditions: list[Condition] | None = None) -> None:
        """Record that ``kind`` was evaluated, with the conditions it produced (possibly none)."""
        self.evaluated.add(kind)
        if conditions:
            self.conditions.extend(conditions)

    def of_kind(self, kind: WarningKind) -> list[Condition]:
        return [c for c in self.conditions if c.kind == kind]

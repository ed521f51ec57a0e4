"""What every rule family is given (:class:`Context`: the cluster, the instant, its thresholds and which minutes
were collected, and :meth:`Context.judging`, the one guard around judging a subject or a kind). Rules keep figures,
never sentences: ``portal.services.warnings.summaries`` words them in each reader's language."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import F, QuerySet

from portal.models import Cluster
from portal.services.warnings.rules.conditions import Condition, RuleFailure
from portal.services.warnings.thresholds import Thresholds, thresholds_for
from stats.models import ClusterMinute
from stats.queries.traffic import MINUTE, latest_minute

# How far back the collected minutes are listed: the longest baseline a traffic rule may be given (1 day).
HISTORY = dt.timedelta(days=1)
# Rows per IN (...) list: SQLite's oldest limit on bound parameters is 999.
CHUNK = 900

logger = logging.getLogger("portal.services.warnings.rules")


@dataclass
class Context:
    """One evaluation of one cluster at ``now``. ``minute`` is the cluster's latest collected minute if it is
    recent enough to stand for now (None: collection is not running, and the kinds read from it are not
    evaluated); ``collected`` every collected minute of the last day up to it, oldest first, and ``partial`` those
    of them with a broker down (the only minutes with NULL figures). ``failures``: the rule errors so far."""

    cluster: Cluster
    now: dt.datetime
    thresholds: Thresholds
    minute: dt.datetime | None = None
    collected: list[dt.datetime] = field(default_factory=list)
    partial: set[dt.datetime] = field(default_factory=set)
    failures: list[RuleFailure] = field(default_factory=list)

    @classmethod
    def load(cls, cluster: Cluster, now: dt.datetime) -> Context:
        minute = latest_minute(cluster.pk, now)
        context = cls(cluster=cluster, now=now, thresholds=thresholds_for(cluster), minute=minute)
        if context.minute is not None:
            for moment, brokers_down in (
                ClusterMinute.objects.filter(
                    cluster_id=cluster.pk, minute__gt=context.minute - HISTORY, minute__lte=context.minute
                )
                .order_by("minute")
                .values_list("minute", "brokers_down")
            ):
                context.collected.append(moment)
                if brokers_down:
                    context.partial.add(moment)
        return context

    @property
    def cluster_id(self) -> int:
        return self.cluster.pk

    def params(self, kind: str, subject_type: str | None = None, subject_name: str | None = None) -> dict:
        return self.thresholds.get(kind, subject_type, subject_name)

    def collected_between(self, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
        """Collected minutes in (start, end]."""
        return [moment for moment in self.collected if start < moment <= end]

    def judging(self, rule: str, subject_type: str | None = None, subject_name: str | None = None) -> _Judging:
        """The guard around judging one subject of ``rule`` (a kind), or the whole kind (or family) without a
        subject: ``with ctx.judging(kind, subject_type, name): ...`` in the loop over subjects. An exception inside
        is logged with what was judged, kept in :attr:`failures` and swallowed, so the next subject, the other kinds
        and the other families are still judged. One bad subject (a stored threshold or figure the rule cannot
        compute with, a bug on a rare path) thus costs only its own verdict: its open warning is left as it is, and
        a kind that failed as a whole is not evaluated."""
        return _Judging(self, rule, subject_type, subject_name)

    def each_kind(self, rules: dict[str, Callable[[], list[Condition]]]) -> dict[str, list[Condition]]:
        """Run each kind's rule under its own :meth:`judging`: the kinds judged, with their conditions (a kind
        whose rule raised is left out, so it is not evaluated)."""
        found = {}
        for kind, rule in rules.items():
            with self.judging(kind):
                found[kind] = rule()
        return found


class _Judging:
    """:meth:`Context.judging` (a class, not a generator: it is entered once per subject, 10,000s of times)."""

    __slots__ = ("context", "rule", "subject_name", "subject_type")

    def __init__(self, context: Context, rule: str, subject_type: str | None, subject_name: str | None):
        self.context, self.rule, self.subject_type, self.subject_name = context, rule, subject_type, subject_name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        subject = f"{self.subject_type} {self.subject_name}" if self.subject_type is not None else "every subject"
        logger.error(
            "warning rule %s failed for %s on cluster %s",
            self.rule,
            subject,
            self.context.cluster.name,
            exc_info=(kind, error, traceback),
        )
        self.context.failures.append(
            RuleFailure(
                str(self.rule),
                None if self.subject_type is None else str(self.subject_type),
                self.subject_name,
                f"{type(error).__name__}: {error}",
            )
        )
        return True


def cluster_rows(model, cluster_id: int) -> QuerySet:
    """``model``'s rows of one cluster, selected so that no index is used for the cluster: every stats table's
    unique index leads with ``cluster_id``, and SQLite walks a cluster's whole retained history through it rather
    than the few minutes a rule asks for (each rule's query filters on ``minute``, whose own index serves it)."""
    return model.objects.alias(in_cluster=F("cluster_id") + 0).filter(in_cluster=cluster_id)


def chunks(values: Iterable, size: int = CHUNK) -> Iterator[list]:
    batch = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


__all__ = [
    "MINUTE",
    "Context",
    "chunks",
    "cluster_rows",
    "iso",
]

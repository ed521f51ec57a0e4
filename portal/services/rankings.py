"""Rankings as the portal shows them: one cluster's ranking of one kind for one window, optionally narrowed to a
team's topics or groups, with each ranked name linked to its registry entry where the viewer may see one.

The Spark rankings job ranks whole clusters (:mod:`stats.models.rankings`); a team's ranking is the cluster's rows
of the team's subjects (its entries the viewer may see, by ``portal.access``'s ``visible_to``), numbered again
1, 2, 3... Used alike by the rankings page and the API."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models import Cluster, ConsumerGroup, ProducerGroup, Team, Topic
from stats.models import RANKING_SUBJECT, Ranking, RankingKind
from stats.queries import rankings as queries
from stats.queries.history import has_demo_history

SUBJECT_MODELS = {"topic": Topic, "consumer_group": ConsumerGroup, "producer_group": ProducerGroup}

# What a ranking's value counts, per kind (growth and shrink: the change in messages a day against the 7 days
# before; its detail holds both figures).
UNITS = {
    RankingKind.TOPIC_TRAFFIC_DAY: _("messages"),
    RankingKind.TOPIC_TRAFFIC_7D: _("messages"),
    RankingKind.TOPIC_GROWTH: _("messages a day"),
    RankingKind.TOPIC_SHRINK: _("messages a day"),
    RankingKind.CONSUMER_LAG_TIME: _("seconds"),
    RankingKind.CONSUMER_FAILURES: _("messages sent back"),
    RankingKind.PRODUCER_EXCEPTIONS: _("exceptions"),
}
DEFAULT_KIND = RankingKind.TOPIC_TRAFFIC_DAY
# What a ranking reads before its window: growth and shrink compare the day with the 7 days before it (the
# rankings job's baseline).
BASELINE = {RankingKind.TOPIC_GROWTH: dt.timedelta(days=7), RankingKind.TOPIC_SHRINK: dt.timedelta(days=7)}


@dataclass(frozen=True)
class Window:
    """A ranked window; ``day`` its last UTC day (the day it was ranked after), to name it by."""

    start: dt.datetime
    end: dt.datetime

    @property
    def day(self) -> dt.date:
        return (self.end.astimezone(dt.UTC) - dt.timedelta(microseconds=1)).date()


@dataclass(frozen=True)
class Selection:
    """Which ranking is shown: the window it covers (``window_end`` None when the cluster has no ranking of this
    kind yet; ``rows`` is then empty), when it was computed, and ``windows``, those there are to choose from,
    latest first. ``demo_history``: the minutes it was computed from (its window, and the baseline before it for
    growth and shrink) include the demo's generated history (``manage.py demo``), not only measured ones."""

    cluster: Cluster
    kind: RankingKind
    team: Team | None
    windows: list[Window]
    window_start: dt.datetime | None
    window_end: dt.datetime | None
    computed_at: dt.datetime | None
    rows: QuerySet[Ranking]
    demo_history: bool = False

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def subject_kind(self) -> str:
        return RANKING_SUBJECT[self.kind]


@dataclass(frozen=True)
class RankedSubject:
    """One row as shown: ``position`` in the list shown, ``rank`` in the whole cluster, ``entry`` the registry
    entry it names (None: not registered, or not visible to the viewer), ``share`` its value's size against the
    largest value on the page (0..100, for the bar)."""

    position: int
    rank: int
    subject: str
    value: float
    detail: dict
    entry: Topic | ConsumerGroup | ProducerGroup | None
    share: float


def select(
    user, *, cluster: Cluster, kind: str, team: Team | None = None, window_end: dt.datetime | None = None
) -> Selection:
    """The ranking of ``kind`` in ``cluster`` for the window ending at ``window_end`` (the latest if None or no
    ranking ends then), narrowed to ``team``'s entries of the ranked kind when a team is given."""
    kind = RankingKind(kind)
    windows = [Window(start, end) for start, end in queries.windows(cluster.pk, kind)]
    chosen = next((window for window in windows if window.end == window_end), None)
    if chosen is None and window_end is not None and timezone.is_aware(window_end):
        start = queries.window_start(cluster.pk, kind, window_end)  # older than the windows offered
        chosen = Window(start, window_end) if start is not None else None
    if chosen is None and windows:
        chosen = windows[0]
    if chosen is None:
        return Selection(cluster, kind, team, windows, None, None, None, Ranking.objects.none())
    subjects = None
    if team is not None:
        model = SUBJECT_MODELS[RANKING_SUBJECT[kind]]
        subjects = model.objects.visible_to(user).filter(cluster=cluster, team=team).values("name")
    rows = queries.ranking(cluster.pk, kind, chosen.end, subjects=subjects)
    generated = has_demo_history(cluster.pk, chosen.start - BASELINE.get(kind, dt.timedelta()), chosen.end)
    return Selection(
        cluster, kind, team, windows, chosen.start, chosen.end, queries.computed_at(chosen.end), rows, generated
    )


def shown(user, selection: Selection, rows) -> list[RankedSubject]:
    """``rows`` (a page of ``selection.rows``) with their registry entries and bar lengths."""
    rows = list(rows)
    model = SUBJECT_MODELS[selection.subject_kind]
    entries = {
        entry.name: entry
        for entry in model.objects.visible_to(user)
        .filter(cluster=selection.cluster, name__in=[row.subject for row in rows])
        .select_related("team")
    }
    largest = max((abs(row.value) for row in rows), default=0)
    return [
        RankedSubject(
            position=row.position,
            rank=row.rank,
            subject=row.subject,
            value=row.value,
            detail=row.detail,
            entry=entries.get(row.subject),
            share=100.0 * abs(row.value) / largest if largest else 0.0,
        )
        for row in rows
    ]

"""Reading the rankings back (:mod:`stats.models.rankings`): which windows a cluster has, one ranking as ordered
rows, and a topic's traffic rank as an expression the topic list sorts by.

A narrowed ranking (a team's topics) is the cluster's rows filtered to its subjects; ``position`` numbers the rows
that are left 1, 2, 3... in rank order (a window function, so it holds across pages of a long list)."""

from __future__ import annotations

import datetime as dt

from django.db.models import F, IntegerField, OuterRef, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from stats.models import JobRun, JobState, Ranking, RankingKind

# The job (``sparkjobs``) that writes the rankings, as its runs are recorded.
RANKINGS_JOB = "rankings"
# How many of a cluster's ranked windows (days) a page offers to choose from.
WINDOW_CHOICES = 14


def windows(cluster_id: int, kind: str) -> list[tuple[dt.datetime, dt.datetime]]:
    """The windows (start, end) ``kind`` was ranked for in the cluster, latest first (at most WINDOW_CHOICES)."""
    ranked = (
        Ranking.objects.filter(cluster_id=cluster_id, kind=kind)
        .order_by("-window_end")
        .values_list("window_start", "window_end")
        .distinct()
    )
    return list(ranked[:WINDOW_CHOICES])


def window_start(cluster_id: int, kind: str, window_end: dt.datetime) -> dt.datetime | None:
    """The start of the window ``kind`` was ranked for that ends at ``window_end`` (None: there is none)."""
    return (
        Ranking.objects.filter(cluster_id=cluster_id, kind=kind, window_end=window_end)
        .values_list("window_start", flat=True)
        .first()
    )


def ranking(cluster_id: int, kind: str, window_end: dt.datetime, *, subjects=None) -> QuerySet[Ranking]:
    """The rows of one ranking, best first, each with ``position``: its place among the rows returned (equal to
    ``rank`` unless ``subjects``, names or a values subquery, narrows it)."""
    rows = Ranking.objects.filter(cluster_id=cluster_id, kind=kind, window_end=window_end)
    if subjects is not None:
        rows = rows.filter(subject__in=subjects)
    return rows.annotate(position=Window(RowNumber(), order_by=[F("rank").asc(), F("subject").asc()])).order_by(
        "rank", "subject"
    )


def computed_at(window_end: dt.datetime) -> dt.datetime | None:
    """When the rankings of the day ending at ``window_end`` were last computed: the finish of the latest
    successful run of the rankings job over that day."""
    run = (
        JobRun.objects.filter(job=RANKINGS_JOB, window_end=window_end, state=JobState.SUCCEEDED)
        .order_by("-finished_at")
        .first()
    )
    return run.finished_at if run else None


def topic_rank(kind: str = RankingKind.TOPIC_TRAFFIC_DAY) -> Subquery:
    """For a queryset of topics (``cluster_id`` and ``name`` columns): the topic's rank in its cluster's latest
    ``kind`` ranking, NULL if that ranking does not list it (no traffic) or the cluster has none."""
    latest = (
        Ranking.objects.filter(cluster_id=OuterRef(OuterRef("cluster_id")), kind=kind)
        .order_by("-window_end")
        .values("window_end")[:1]
    )
    return Subquery(
        Ranking.objects.filter(
            cluster_id=OuterRef("cluster_id"), kind=kind, subject=OuterRef("name"), window_end=Subquery(latest)
        ).values("rank")[:1],
        output_field=IntegerField(),
    )

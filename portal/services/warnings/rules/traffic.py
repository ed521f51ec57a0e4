"""Topic traffic rules: a surge or a drop of a topic's production (TOPIC_PUT_NUMS, :class:`stats.models.TopicMinute`)
against its own recent baseline.

The recent rate is the mean per minute of the last :data:`RECENT` (a few minutes, so one odd minute neither fires
nor resolves a warning), the baseline the mean per minute of the ``baseline_minutes`` before it. Both count only
minutes the cluster was collected in (a collected minute without a row had no traffic; a minute whose figure is
NULL, its broker down, counts for neither). Small traffic never warns: a surge needs at least ``min_per_minute``
messages a minute, a drop a baseline of at least ``min_baseline_per_minute``. A cluster collected for less than
half of the baseline has no baseline yet: the kinds are then not evaluated.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, chunks, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition, SubjectType
from stats.models import TopicMinute

RECENT = dt.timedelta(minutes=3)
TOPIC = SubjectType.TOPIC
KINDS = (WarningKind.TRAFFIC_SURGE, WarningKind.TRAFFIC_DROP)


@dataclass(frozen=True)
class _Rates:
    recent: float  # messages per minute
    recent_minutes: int
    baseline: float
    baseline_minutes: int


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    if ctx.minute is None:
        return {}
    minute = ctx.minute
    split = minute - RECENT
    recent_collected = len(ctx.collected_between(split, minute))
    default_baseline = {kind: int(ctx.params(kind)["baseline_minutes"]) for kind in KINDS}
    judged = {kind: b for kind, b in default_baseline.items() if _baseline_collected(ctx, split, b) >= b / 2}
    if not judged:
        return {}
    widest = max(judged.values())
    stats = {(topic, widest): sums for topic, sums in _sums(ctx, split, widest).items()}
    params = {(kind, topic): ctx.params(kind, TOPIC, topic) for kind in judged for topic, _ in stats}
    # Topics given another baseline by their owners: their sums over their own window.
    other: dict[int, set[str]] = {}
    for (_kind, topic), p in params.items():
        if int(p["baseline_minutes"]) != widest:
            other.setdefault(int(p["baseline_minutes"]), set()).add(topic)
    for baseline, topics in other.items():
        for topic, sums in _sums(ctx, split, baseline, topics).items():
            stats[topic, baseline] = sums
    results: dict[str, list[Condition]] = {kind: [] for kind in judged}
    baseline_collected: dict[int, int] = {}
    for (kind, topic), p in sorted(params.items()):
        with ctx.judging(kind, TOPIC, topic):
            if not p.get("enabled", True):
                continue
            baseline = int(p["baseline_minutes"])
            if baseline not in baseline_collected:
                baseline_collected[baseline] = _baseline_collected(ctx, split, baseline)
            rates = _rates(stats.get((topic, baseline)), recent_collected, baseline_collected[baseline], baseline)
            if rates is None:
                continue
            judge = _surge if kind == WarningKind.TRAFFIC_SURGE else _drop
            condition = judge(topic, rates, p, minute)
            if condition is not None:
                results[kind].append(condition)
    return results


def _baseline_collected(ctx: Context, split: dt.datetime, baseline: int) -> int:
    return len(ctx.collected_between(split - dt.timedelta(minutes=baseline), split))


def _sums(
    ctx: Context, split: dt.datetime, baseline: int, topics: set[str] | None = None
) -> dict[str, tuple[int, int, int, int]]:
    """By topic: (recent sum, recent gaps, baseline sum, baseline gaps) over the recent window and ``baseline``
    minutes before it; one aggregate query (per batch of topics when ``topics`` is given), and one more over the
    minutes a broker was down in, the only ones with gaps."""
    start = split - dt.timedelta(minutes=baseline)
    recent = Q(minute__gt=split)
    queryset = cluster_rows(TopicMinute, ctx.cluster_id).filter(minute__gt=start, minute__lte=ctx.minute)
    batches = [None] if topics is None else [set(batch) for batch in chunks(sorted(topics))]
    partial = [moment for moment in ctx.partial if start < moment <= ctx.minute]
    found: dict[str, tuple[int, int, int, int]] = {}
    for batch in batches:
        rows = queryset if batch is None else queryset.filter(topic__in=batch)
        sums = rows.values("topic").annotate(
            recent=Sum("put_nums", filter=recent), base=Sum("put_nums", filter=~recent)
        )
        gaps: dict[str, tuple[int, int]] = {}
        if partial:
            for row in (
                rows.filter(minute__in=partial, put_nums__isnull=True)
                .values("topic")
                .annotate(recent=Count("pk", filter=recent), base=Count("pk", filter=~recent))
            ):
                gaps[row["topic"]] = (row["recent"], row["base"])
        for row in sums:
            recent_gaps, base_gaps = gaps.get(row["topic"], (0, 0))
            found[row["topic"]] = (row["recent"] or 0, recent_gaps, row["base"] or 0, base_gaps)
    return found


def _rates(
    sums: tuple[int, int, int, int] | None, recent_collected: int, baseline_collected: int, baseline: int
) -> _Rates | None:
    if sums is None:
        return None
    recent_sum, recent_gaps, base_sum, base_gaps = sums
    recent_minutes = recent_collected - recent_gaps
    baseline_minutes = baseline_collected - base_gaps
    if recent_minutes <= 0 or baseline_minutes < baseline / 2:
        return None
    return _Rates(recent_sum / recent_minutes, recent_minutes, base_sum / baseline_minutes, baseline_minutes)


def _details(rates: _Rates, params: dict, minute: dt.datetime) -> dict:
    return {
        "minute": iso(minute),
        "recent_per_minute": rates.recent,
        "recent_minutes": rates.recent_minutes,
        "baseline_per_minute": rates.baseline,
        "baseline_minutes": rates.baseline_minutes,
        "ratio": rates.recent / rates.baseline if rates.baseline else None,
        "thresholds": {name: value for name, value in params.items() if name not in ("enabled", "repeat_seconds")},
    }


def _surge(topic: str, rates: _Rates, params: dict, minute: dt.datetime) -> Condition | None:
    if rates.recent < params["min_per_minute"] or rates.recent <= params["factor"] * rates.baseline:
        return None
    return Condition(WarningKind.TRAFFIC_SURGE, TOPIC, topic, details=_details(rates, params, minute))


def _drop(topic: str, rates: _Rates, params: dict, minute: dt.datetime) -> Condition | None:
    if rates.baseline < params["min_baseline_per_minute"] or rates.recent >= params["factor"] * rates.baseline:
        return None
    return Condition(WarningKind.TRAFFIC_DROP, TOPIC, topic, details=_details(rates, params, minute))

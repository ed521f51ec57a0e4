"""Probe history of name servers and brokers for charts: the answering latency per minute (a gap where a probe
failed or none was made) and the outages (runs of failed probes), which charts shade with the error.

Ranges longer than six hours (:func:`stats.queries.source.resolution_for`) are drawn per bucket of the rollup
resolution: the average latency of the bucket's answered probes, averaged in SQL (a gap where none answered), and
outages less than a bucket apart joined into one (the chart could not show what is between them), so a week is 169
points and at most as many shaded spans however often a node flapped."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Avg, Max, Q, QuerySet

from stats.charts import Point
from stats.models import RESOLUTION_LENGTH, BrokerProbe, NameServerProbe, Resolution
from stats.queries.source import bucket_starts, by_bucket, resolution_for
from stats.queries.traffic import MINUTE, minutes


@dataclass(frozen=True)
class Outage:
    """Failed probes from ``start`` to the minute before ``end`` (None: still failing at the end of the range);
    ``error`` is the first failed probe's."""

    start: dt.datetime
    end: dt.datetime | None
    error: str


@dataclass(frozen=True)
class ProbeHistory:
    latency_ms: list[Point]
    outages: list[Outage]


def _history(probes: list[dict], since: dt.datetime, until: dt.datetime) -> ProbeHistory:
    """``probes``: one entity's probe rows (minute, ok, latency_ms, error) in the range."""
    by_minute = {probe["minute"]: probe for probe in probes}
    latency = [
        (moment, by_minute[moment]["latency_ms"] if moment in by_minute and by_minute[moment]["ok"] else None)
        for moment in minutes(since, until)
    ]
    return ProbeHistory(latency_ms=latency, outages=_outages(probes))


def _outages(probes: list[dict]) -> list[Outage]:
    """Runs of failed probes among one entity's probes (minute, ok, error)."""
    outages: list[Outage] = []
    start = error = None
    last_failed = None
    for probe in sorted(probes, key=lambda row: row["minute"]):
        if probe["ok"]:
            if start is not None:
                outages.append(Outage(start, last_failed + MINUTE, error))
                start = None
            continue
        # a minute without a probe between two failed ones does not end the outage: nothing says it was up
        if start is None:
            start, error = probe["minute"], probe["error"]
        last_failed = probe["minute"]
    if start is not None:
        outages.append(Outage(start, None, error))
    return outages


def _joined(outages: list[Outage], apart: dt.timedelta) -> list[Outage]:
    """Outages less than ``apart`` apart joined into one (with the first one's error)."""
    joined: list[Outage] = []
    for outage in outages:
        last = joined[-1] if joined else None
        if last is not None and last.end is not None and outage.start - last.end < apart:
            joined[-1] = Outage(last.start, outage.end, last.error)
        else:
            joined.append(outage)
    return joined


def _bucketed(
    probes: QuerySet, key: tuple[str, ...], since: dt.datetime, until: dt.datetime, resolution: Resolution
) -> dict[tuple, ProbeHistory]:
    """By ``key`` values: each entity's history per bucket (see the module's docstring)."""
    starts = bucket_starts(since, until, resolution)
    in_range = probes.filter(minute__gte=since, minute__lte=until)
    latency: dict[tuple, dict[dt.datetime, float]] = {}
    for (*entity, start), row in by_bucket(
        in_range.filter(ok=True), resolution, key=key, latency_ms=Avg("latency_ms")
    ).items():
        latency.setdefault(tuple(entity), {})[start] = row["latency_ms"]
    rows: dict[tuple, list[dict]] = {}
    for row in in_range.values(*key, "minute", "ok", "error"):
        rows.setdefault(tuple(row[name] for name in key), []).append(row)
    apart = RESOLUTION_LENGTH[resolution]
    return {
        entity: ProbeHistory(
            latency_ms=[(start, latency.get(entity, {}).get(start)) for start in starts],
            outages=_joined(_outages(entity_rows), apart),
        )
        for entity, entity_rows in rows.items()
    }


def broker_health(
    cluster_id: int, broker_name: str, broker_id: int, since: dt.datetime, until: dt.datetime
) -> ProbeHistory:
    broker = {"cluster_id": cluster_id, "broker_name": broker_name, "broker_id": broker_id}
    if resolution := resolution_for(since, until):
        history = _bucketed(BrokerProbe.objects.filter(**broker), (), since, until, resolution).get(())
        return history or ProbeHistory([(start, None) for start in bucket_starts(since, until, resolution)], [])
    probes = BrokerProbe.objects.filter(**broker, minute__gte=since, minute__lte=until).values(
        "minute", "ok", "latency_ms", "error"
    )
    return _history(list(probes), since, until)


def cluster_health(cluster_id: int, since: dt.datetime, until: dt.datetime) -> dict[str, ProbeHistory]:
    """Each name server (by address) and broker (``broker_name[broker_id]``) probed in the range, sorted."""
    if resolution := resolution_for(since, until):
        servers = _bucketed(
            NameServerProbe.objects.filter(cluster_id=cluster_id), ("address",), since, until, resolution
        )
        brokers = _bucketed(
            BrokerProbe.objects.filter(cluster_id=cluster_id), ("broker_name", "broker_id"), since, until, resolution
        )
        named = {address: history for (address,), history in servers.items()}
        named.update({f"{name}[{broker_id}]": history for (name, broker_id), history in brokers.items()})
        return dict(sorted(named.items()))
    rows: dict[str, list[dict]] = {}
    for probe in NameServerProbe.objects.filter(cluster_id=cluster_id, minute__gte=since, minute__lte=until).values(
        "address", "minute", "ok", "latency_ms", "error"
    ):
        rows.setdefault(probe["address"], []).append(probe)
    for probe in BrokerProbe.objects.filter(cluster_id=cluster_id, minute__gte=since, minute__lte=until).values(
        "broker_name", "broker_id", "minute", "ok", "latency_ms", "error"
    ):
        rows.setdefault(f"{probe['broker_name']}[{probe['broker_id']}]", []).append(probe)
    return {name: _history(probes, since, until) for name, probes in sorted(rows.items())}


def latest_broker_probes(cluster_id: int) -> dict[tuple[str, int], BrokerProbe]:
    """By (broker name, broker id): each broker's latest probe, up or down, with what it last reported."""
    latest = (
        BrokerProbe.objects.filter(cluster_id=cluster_id)
        .values("broker_name", "broker_id")
        .annotate(latest=Max("minute"))
    )
    which = Q()
    for row in latest:
        which |= Q(broker_name=row["broker_name"], broker_id=row["broker_id"], minute=row["latest"])
    if not which:
        return {}
    return {
        (probe.broker_name, probe.broker_id): probe
        for probe in BrokerProbe.objects.filter(which, cluster_id=cluster_id)
    }

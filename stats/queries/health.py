"""Probe history of name servers and brokers for charts: the answering latency per minute (a gap where a probe
failed or none was made) and the outages (runs of failed probes), which charts shade with the error."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Max, Q

from stats.charts import Point
from stats.models import BrokerProbe, NameServerProbe
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
    return ProbeHistory(latency_ms=latency, outages=outages)


def broker_health(
    cluster_id: int, broker_name: str, broker_id: int, since: dt.datetime, until: dt.datetime
) -> ProbeHistory:
    probes = BrokerProbe.objects.filter(
        cluster_id=cluster_id, broker_name=broker_name, broker_id=broker_id, minute__gte=since, minute__lte=until
    ).values("minute", "ok", "latency_ms", "error")
    return _history(list(probes), since, until)


def cluster_health(cluster_id: int, since: dt.datetime, until: dt.datetime) -> dict[str, ProbeHistory]:
    """Each name server (by address) and broker (``broker_name[broker_id]``) probed in the range, sorted."""
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

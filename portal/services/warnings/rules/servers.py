"""Server rules: CPU, memory, disk per file system, load and TCP connections of the hosts the cluster's brokers
run on (:mod:`stats.models.servers`, read over SSH every five minutes).

Each host is judged on its latest reading of the last :data:`FRESH` (a slot that failed to read keeps the one
before standing, so one failed SSH login does not resolve a warning). CPU, a one-second reading, must be over its
threshold in :data:`CPU_SAMPLES` readings in a row. The kinds are not evaluated for a cluster without server access
or without any reading in the last :data:`FRESH`.
"""

from __future__ import annotations

from collections import defaultdict

from monitor.collect.servers import broker_hosts
from monitor.models import ServerAccess
from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, iso
from portal.services.warnings.rules.conditions import Condition, SubjectType
from stats.models import SERVER_SLOT, ServerDiskSample, ServerSample

FRESH = 3 * SERVER_SLOT
CPU_SAMPLES = 2
KINDS = (
    WarningKind.SERVER_CPU,
    WarningKind.SERVER_MEMORY,
    WarningKind.SERVER_DISK,
    WarningKind.SERVER_LOAD,
    WarningKind.SERVER_TCP,
)
SERVER = SubjectType.SERVER


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    if not ServerAccess.objects.filter(cluster=ctx.cluster).exists():
        return {}
    hosts = broker_hosts(ctx.cluster)
    readings: dict[str, list[dict]] = defaultdict(list)
    for row in (
        ServerSample.objects.filter(host__in=hosts, minute__gt=ctx.now - FRESH, minute__lte=ctx.now, error="")
        .order_by("host", "-minute")
        .values()
    ):
        readings[row["host"]].append(row)
    if not readings:
        return {}
    latest = {host: rows[0] for host, rows in readings.items()}
    disks: dict[str, list[dict]] = defaultdict(list)
    for disk in (
        ServerDiskSample.objects.filter(host__in=list(latest), minute__in={row["minute"] for row in latest.values()})
        .order_by("mount")
        .values()
    ):
        if disk["minute"] == latest[disk["host"]]["minute"]:
            disks[disk["host"]].append(disk)
    params = {kind: ctx.params(kind) for kind in KINDS}
    results: dict[str, list[Condition]] = {kind: [] for kind in KINDS}
    for host in sorted(latest):
        for kind, judge in JUDGES.items():
            if not params[kind].get("enabled", True):
                continue
            with ctx.judging(kind, SERVER, host):
                condition = judge(host, readings[host], disks.get(host, []), params[kind])
                if condition is not None:
                    results[kind].append(condition)
    return results


def _condition(kind: str, host: str, reading: dict, **details) -> Condition:
    return Condition(kind, SERVER, host, details={"host": host, "minute": iso(reading["minute"]), **details})


def _cpu(host: str, rows: list[dict], disks: list[dict], params: dict) -> Condition | None:
    recent = [row for row in rows if row["cpu_percent"] is not None][:CPU_SAMPLES]
    if len(recent) < CPU_SAMPLES or any(row["cpu_percent"] < params["percent"] for row in recent):
        return None
    latest = recent[0]
    return _condition(
        WarningKind.SERVER_CPU,
        host,
        latest,
        cpu_percent=[row["cpu_percent"] for row in recent],
        cpu_iowait_percent=latest["cpu_iowait_percent"],
        # the readings over the threshold cover this long, up to the end of the latest one's slot
        span_seconds=(recent[0]["minute"] - recent[-1]["minute"] + SERVER_SLOT).total_seconds(),
        load1=latest["load1"],
        threshold_percent=params["percent"],
    )


def _memory(host: str, rows: list[dict], disks: list[dict], params: dict) -> Condition | None:
    latest = rows[0]
    if not latest["mem_total"] or latest["mem_used"] is None:
        return None
    percent = 100.0 * latest["mem_used"] / latest["mem_total"]
    if percent < params["percent"]:
        return None
    return _condition(
        WarningKind.SERVER_MEMORY,
        host,
        latest,
        used_percent=percent,
        mem_used=latest["mem_used"],
        mem_total=latest["mem_total"],
        swap_used=latest["swap_used"],
        threshold_percent=params["percent"],
    )


def _disk(host: str, rows: list[dict], disks: list[dict], params: dict) -> Condition | None:
    full = []
    for disk in disks:
        usable = disk["used"] + disk["available"]
        percent = 100.0 * disk["used"] / usable if usable else None
        if percent is not None and percent >= params["percent"]:
            full.append((percent, disk))
    if not full:
        return None
    full.sort(key=lambda item: -item[0])
    return _condition(
        WarningKind.SERVER_DISK,
        host,
        rows[0],
        mounts={
            disk["mount"]: {"used_percent": percent, "used": disk["used"], "available": disk["available"]}
            for percent, disk in full
        },
        threshold_percent=params["percent"],
    )


def _load(host: str, rows: list[dict], disks: list[dict], params: dict) -> Condition | None:
    latest = rows[0]
    if latest["load1"] is None or latest["load1"] < params["load1"]:
        return None
    return _condition(
        WarningKind.SERVER_LOAD,
        host,
        latest,
        load1=latest["load1"],
        load5=latest["load5"],
        load15=latest["load15"],
        cpu_percent=latest["cpu_percent"],
        threshold=params["load1"],
    )


def _tcp(host: str, rows: list[dict], disks: list[dict], params: dict) -> Condition | None:
    latest = rows[0]
    if latest["tcp_established"] is None or latest["tcp_established"] < params["established"]:
        return None
    return _condition(
        WarningKind.SERVER_TCP,
        host,
        latest,
        established=latest["tcp_established"],
        time_wait=latest["tcp_time_wait"],
        total=latest["tcp_total"],
        threshold=params["established"],
    )


JUDGES = {
    WarningKind.SERVER_CPU: _cpu,
    WarningKind.SERVER_MEMORY: _memory,
    WarningKind.SERVER_DISK: _disk,
    WarningKind.SERVER_LOAD: _load,
    WarningKind.SERVER_TCP: _tcp,
}

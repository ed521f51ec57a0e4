"""Cluster health rules, from the per-minute probes (:mod:`stats.models.health`): a name server or broker down, and a
slave falling behind its master.

Every probe already retries quickly (PROBE_ATTEMPTS within PROBE_TIMEOUT each), and on top of that a server is
only down once its probes have failed for ``grace_seconds``: probe rounds in a row, a round counting for the minute
it stands for, so with the default of 120 s one lost round is not an alarm and two are. Only servers probed in the
latest round are judged (a broker removed from the registry and no longer listed stops being probed, and its
warning ends). The kinds are not evaluated when the probes have stopped (no round in the last few minutes).

A slave's lag is the distance between its commit log's end and its master's (``commitLogMaxOffset`` of each, read
in the same round): past ``bytes`` it warns, with the trend since the previous round.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Max

from portal.models import Broker
from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition, Severity, SubjectType, broker_subject
from stats.models import BrokerProbe, NameServerProbe
from stats.queries.traffic import FRESH_FOR, MINUTE

MASTER_ID = 0
# Probes read besides the grace period, to find where a run of failures began.
MARGIN = dt.timedelta(minutes=10)


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    results: dict[str, list[Condition]] = {}
    with ctx.judging(WarningKind.NAMESERVER_DOWN):
        results.update(nameserver_conditions(ctx))
    with ctx.judging(f"{WarningKind.BROKER_DOWN}, {WarningKind.SLAVE_LAG}"):
        results.update(broker_conditions(ctx))
    return results


def _latest_round(ctx: Context, model) -> dt.datetime | None:
    recent = cluster_rows(model, ctx.cluster_id).filter(minute__gte=ctx.now - FRESH_FOR, minute__lte=ctx.now)
    latest = recent.aggregate(latest=Max("minute"))
    return latest["latest"]


def _failing_run(probes: list[dict]) -> tuple[dt.datetime, int] | None:
    """(first failed minute, failed rounds) of the failures ending with the latest probe (None: it answered).
    ``probes`` oldest first."""
    if not probes or probes[-1]["ok"]:
        return None
    first, rounds = probes[-1]["minute"], 0
    for probe in reversed(probes):
        if probe["ok"]:
            break
        first, rounds = probe["minute"], rounds + 1
    return first, rounds


def _down_for(run: tuple[dt.datetime, int], latest: dt.datetime) -> float:
    """Seconds a run of failed rounds covers: from its first round to the end of the latest."""
    return (latest - run[0] + MINUTE).total_seconds()


def nameserver_conditions(ctx: Context) -> dict[str, list[Condition]]:
    latest = _latest_round(ctx, NameServerProbe)
    if latest is None:
        return {}
    params = ctx.params(WarningKind.NAMESERVER_DOWN)
    if not params.get("enabled", True):
        return {WarningKind.NAMESERVER_DOWN: []}
    since = latest - dt.timedelta(seconds=params["grace_seconds"]) - MARGIN
    probes: dict[str, list[dict]] = defaultdict(list)
    for probe in (
        cluster_rows(NameServerProbe, ctx.cluster_id)
        .filter(minute__gte=since, minute__lte=latest)
        .order_by("minute")
        .values("address", "minute", "ok", "attempts", "error")
    ):
        probes[probe["address"]].append(probe)
    judged = [address for address, rows in probes.items() if rows[-1]["minute"] == latest]
    down = {}
    for address in sorted(judged):
        run = _failing_run(probes[address])
        if run is not None and _down_for(run, latest) >= params["grace_seconds"]:
            down[address] = run
    conditions = []
    for address, (first, rounds) in down.items():
        with ctx.judging(WarningKind.NAMESERVER_DOWN, SubjectType.NAMESERVER, address):
            probe = probes[address][-1]
            everything = len(down) == len(judged)
            details = {
                "address": address,
                "down_since": iso(first),
                "failed_rounds": rounds,
                "attempts": probe["attempts"],
                "error": probe["error"],
                "latest_probe": iso(latest),
                "grace_seconds": params["grace_seconds"],
                "all_down": everything,
                "answering": [a for a in judged if a not in down],  # the name servers clients fall back on
            }
            severity = Severity.CRITICAL if everything else Severity.WARNING
            conditions.append(
                Condition(
                    WarningKind.NAMESERVER_DOWN, SubjectType.NAMESERVER, address, details=details, severity=severity
                )
            )
    return {WarningKind.NAMESERVER_DOWN: conditions}


def broker_conditions(ctx: Context) -> dict[str, list[Condition]]:
    """broker_down and slave_lag, from one read of the broker probes."""
    latest = _latest_round(ctx, BrokerProbe)
    if latest is None:
        return {}
    down_params = ctx.params(WarningKind.BROKER_DOWN)
    lag_params = ctx.params(WarningKind.SLAVE_LAG)
    since = latest - dt.timedelta(seconds=down_params["grace_seconds"]) - MARGIN
    probes: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for probe in (
        cluster_rows(BrokerProbe, ctx.cluster_id)
        .filter(minute__gte=since, minute__lte=latest)
        .order_by("minute")
        .values(
            "broker_name",
            "broker_id",
            "minute",
            "address",
            "listed",
            "ok",
            "attempts",
            "error",
            "role",
            "commit_log_max_offset",
        )
    ):
        probes[probe["broker_name"], probe["broker_id"]].append(probe)
    judged = {key: rows for key, rows in probes.items() if rows[-1]["minute"] == latest}
    down = []
    if down_params.get("enabled", True):
        roles = {
            (name, broker_id): role
            for name, broker_id, role in Broker.objects.filter(cluster=ctx.cluster).values_list(
                "broker_name", "broker_id", "role"
            )
        }
        for key, rows in sorted(judged.items()):
            with ctx.judging(WarningKind.BROKER_DOWN, SubjectType.BROKER, broker_subject(*key)):
                run = _failing_run(rows)
                if run is not None and _down_for(run, latest) >= down_params["grace_seconds"]:
                    down.append(_down_condition(key, rows, run, latest, down_params, roles.get(key, "")))
    lagging = []
    if lag_params.get("enabled", True):
        for (name, broker_id), rows in sorted(judged.items()):
            master = judged.get((name, MASTER_ID))
            if broker_id != MASTER_ID and master is not None:
                with ctx.judging(WarningKind.SLAVE_LAG, SubjectType.BROKER, broker_subject(name, broker_id)):
                    condition = _slave_lag_condition(name, broker_id, rows, master, lag_params)
                    if condition is not None:
                        lagging.append(condition)
    return {WarningKind.BROKER_DOWN: down, WarningKind.SLAVE_LAG: lagging}


def _role(broker_id: int, rows: list[dict], registered: str) -> str:
    """Its role as it last reported it, else as the registry knows it."""
    roles = [row["role"] for row in rows if row["ok"] and row["role"]]
    if roles:
        return roles[-1]
    return registered or ("master" if broker_id == MASTER_ID else "slave")


def _down_condition(
    key: tuple[str, int],
    rows: list[dict],
    run: tuple[dt.datetime, int],
    latest: dt.datetime,
    params: dict,
    registered_role: str,
) -> Condition:
    name, broker_id = key
    probe = rows[-1]
    first, rounds = run
    master = broker_id == MASTER_ID
    details = {
        "broker_name": name,
        "broker_id": broker_id,
        "role": _role(broker_id, rows, registered_role),
        "address": probe["address"],
        "listed": probe["listed"],
        "down_since": iso(first),
        "failed_rounds": rounds,
        "attempts": probe["attempts"],
        "error": probe["error"],
        "latest_probe": iso(latest),
        "grace_seconds": params["grace_seconds"],
    }
    severity = Severity.CRITICAL if master else Severity.WARNING
    return Condition(
        WarningKind.BROKER_DOWN, SubjectType.BROKER, broker_subject(name, broker_id), details=details, severity=severity
    )


def _behind(slave: dict, master: dict) -> int | None:
    if not (slave["ok"] and master["ok"]):
        return None
    if slave["commit_log_max_offset"] is None or master["commit_log_max_offset"] is None:
        return None
    return master["commit_log_max_offset"] - slave["commit_log_max_offset"]


def _slave_lag_condition(
    name: str, broker_id: int, rows: list[dict], master_rows: list[dict], params: dict
) -> Condition | None:
    slave, master = rows[-1], master_rows[-1]
    behind = _behind(slave, master)
    if behind is None or behind <= params["bytes"]:
        return None
    # The trend since the previous round both answered in.
    masters = {row["minute"]: row for row in master_rows}
    previous = next(
        (
            (row["minute"], _behind(row, masters[row["minute"]]))
            for row in reversed(rows[:-1])
            if row["minute"] in masters and _behind(row, masters[row["minute"]]) is not None
        ),
        None,
    )
    subject = broker_subject(name, broker_id)
    change = None
    if previous is not None:
        minutes = (slave["minute"] - previous[0]) / MINUTE
        change = (behind - previous[1]) / minutes
    details = {
        "address": slave["address"],
        "master_address": master["address"],
        "behind_bytes": behind,
        "master_commit_log_max_offset": master["commit_log_max_offset"],
        "slave_commit_log_max_offset": slave["commit_log_max_offset"],
        "change_bytes_per_minute": change,
        "minute": iso(slave["minute"]),
        "threshold_bytes": params["bytes"],
    }
    severity = Severity.WARNING
    return Condition(WarningKind.SLAVE_LAG, SubjectType.BROKER, subject, details=details, severity=severity)

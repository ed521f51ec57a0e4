"""Consumer groups whose clients do not all subscribe alike (RocketMQ's inconsistent subscription)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, chunks, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition
from portal.services.warnings.rules.consumers.group_state import CARRY, GROUP, GroupHealth, enabled
from stats.models import ClientMinute, GroupMinute


def subscription_conditions(ctx: Context, health: dict[str, GroupHealth]) -> list[Condition]:
    """Groups whose clients do not all subscribe alike (judged by the collector from each client's own report).
    A group whose clients could not all be asked this minute keeps its latest verdict of the last few minutes, as
    long as the same clients are online (one that left may have been the odd one out)."""
    minute = ctx.minute
    judged: dict[str, dt.datetime] = {g: minute for g, h in health.items() if h.consistent is False}
    unknown = [g for g, h in health.items() if h.consistent is None and h.clients and h.clients > 1]
    for batch in chunks(unknown):
        rows = (
            cluster_rows(GroupMinute, ctx.cluster_id)
            .filter(
                group__in=batch,
                minute__gte=minute - CARRY,
                minute__lt=minute,
                subscription_consistent__isnull=False,
            )
            .order_by("group", "-minute")
            .values_list("group", "minute", "subscription_consistent")
        )
        verdicts: dict[str, tuple[dt.datetime, bool]] = {}
        for group, moment, consistent in rows:
            verdicts.setdefault(group, (moment, consistent))
        judged.update({group: moment for group, (moment, consistent) in verdicts.items() if not consistent})
    judged = {g: m for g, m in judged.items() if enabled(ctx.params(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, g))}
    if not judged:
        return []
    clients: dict[str, list[tuple[str, dict, str]]] = defaultdict(list)
    online: dict[str, set[str]] = defaultdict(set)
    for batch in chunks(sorted(judged)):
        rows = (
            cluster_rows(ClientMinute, ctx.cluster_id)
            .filter(group__in=batch, minute__in={minute, *judged.values()})
            .values_list("group", "minute", "client_id", "subscription", "error")
        )
        for group, moment, client_id, subscription, error in rows:
            if judged.get(group) == moment:
                clients[group].append((client_id, subscription, error))
            if moment == minute:
                online[group].add(client_id)
    judged = {
        g: m for g, m in judged.items() if m == minute or {client[0] for client in clients.get(g, [])} == online[g]
    }
    conditions = []
    for group, moment in sorted(judged.items()):
        with ctx.judging(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, group):
            members = sorted(clients.get(group, []), key=lambda member: member[0])
            details = {
                "minute": iso(moment),
                "verdict_carried": moment != minute,  # not all clients reachable now: an earlier minute's verdict
                "clients": [
                    {"client_id": client_id, "subscription": subscription, "error": error}
                    for client_id, subscription, error in members
                ],
            }
            conditions.append(Condition(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, group, details=details))
    return conditions

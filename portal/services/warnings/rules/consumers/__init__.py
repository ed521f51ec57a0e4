"""Consumer group rules: lag (:mod:`.lag`), blocked queues and offset errors (:mod:`.queues`), subscriptions that
differ (:mod:`.subscriptions`), retries and dead letters (:mod:`.failures`), and the failures SDK consumers report
themselves (:mod:`.client_reports`, judged whether or not the collection ran).

They read the cluster's latest collected minute (:mod:`stats.models.traffic`) with a few set-based queries for
the whole cluster, never one per group. Where a figure could not be read this minute (its master was down: the
value is NULL), the latest figure known within :data:`~.group_state.CARRY` stands in, so a broker outage does not
resolve and re-fire every consumer warning of the cluster. What every one of them reads first, each group's state
in the latest minute, is :mod:`.group_state`.
"""

from __future__ import annotations

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context
from portal.services.warnings.rules.conditions import Condition
from portal.services.warnings.rules.consumers import (
    client_reports,
    failures,
    group_state,
    lag,
    queues,
    subscriptions,
)


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    """Every consumer kind; only the clients' own reports when the cluster has no recent collection."""
    reported = ctx.each_kind(
        {WarningKind.CLIENT_CONSUME_FAILURES: lambda: client_reports.client_failure_conditions(ctx)}
    )
    if ctx.minute is None:
        return reported
    health = group_state.group_health(ctx)
    return reported | ctx.each_kind(
        {
            WarningKind.CONSUMER_LAG: lambda: lag.lag_conditions(ctx, health),
            WarningKind.CLIENT_BLOCKED: lambda: queues.blocked_conditions(ctx),
            WarningKind.OFFSET_MOVED: lambda: queues.offset_moved_conditions(ctx),
            WarningKind.SUBSCRIPTION_MISMATCH: lambda: subscriptions.subscription_conditions(ctx, health),
            WarningKind.CONSUME_FAILURES: lambda: failures.failure_conditions(ctx),
            WarningKind.DEAD_LETTERS: lambda: failures.dead_letter_conditions(ctx, health),
        }
    )

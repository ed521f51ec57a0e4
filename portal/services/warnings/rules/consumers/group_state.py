"""What every consumer rule shares: each group's state in the latest collected minute (its ``GroupMinute``: clients
online, message model, whether its clients subscribe alike), the subject type, and how long a figure not read this
minute is carried over."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from portal.services.warnings.rules.base import Context, cluster_rows
from portal.services.warnings.rules.conditions import SubjectType
from stats.models import GroupMinute

# A value not read this minute is taken from the latest minute it was read in, if that is this recent.
CARRY = dt.timedelta(minutes=5)
# Queues listed in a condition's details (the summary names the first few).
QUEUES_IN_DETAILS = 20

GROUP = SubjectType.CONSUMER_GROUP


@dataclass
class GroupHealth:
    clients: int | None
    message_model: str
    consistent: bool | None


def group_health(ctx: Context) -> dict[str, GroupHealth]:
    """GroupMinute of the latest minute by group (a group without a row had no client online)."""
    rows = (
        cluster_rows(GroupMinute, ctx.cluster_id)
        .filter(minute=ctx.minute)
        .values_list("group", "clients", "message_model", "subscription_consistent")
    )
    return {group: GroupHealth(clients, model, consistent) for group, clients, model, consistent in rows}


def enabled(params: dict) -> bool:
    return bool(params.get("enabled", True))

"""Consumer clients as the latest collection saw them, for many groups at once (the registry sync reads what the
clients of the groups it imported subscribe; one group's page reads them through
:func:`stats.queries.traffic.group_now`)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from stats.models import ClientMinute
from stats.queries.traffic import latest_minute

# Group names per query: well under SQLite's bound-parameter limit.
BATCH_SIZE = 500


def latest_clients(
    cluster_id: int, groups: Iterable[str], now: dt.datetime
) -> tuple[dt.datetime | None, dict[str, list[ClientMinute]]]:
    """The cluster's latest collected minute (None: no recent collection, nothing known) and the online clients of
    each of ``groups`` then, by group name (a group with no client online is left out)."""
    minute = latest_minute(cluster_id, now)
    if minute is None:
        return None, {}
    names = sorted(set(groups))
    found: dict[str, list[ClientMinute]] = defaultdict(list)
    for start in range(0, len(names), BATCH_SIZE):
        rows = ClientMinute.objects.filter(
            cluster_id=cluster_id, minute=minute, group__in=names[start : start + BATCH_SIZE]
        ).order_by("group", "client_id")
        for row in rows:
            found[row.group].append(row)
    return minute, dict(found)

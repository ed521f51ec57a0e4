"""Each client's lag in a broadcasting group: every client of such a group consumes every message and keeps its own
offsets, so the group has as many lags as clients (its own lag, :class:`stats.models.ConsumeMinute`, is its
furthest-behind client's). Read for one group's page and for every group of a cluster at a /metrics scrape."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from stats.models import ClientMinute, ClientQueueLagMinute, ConsumeMinute, GroupMinute

BROADCASTING = "BROADCASTING"


@dataclass(frozen=True)
class ClientLag:
    """One client's lag on one topic: messages behind summed over its queues (None: unknown, the queues' ends could
    not be read), and how many of its queues are behind."""

    group: str
    topic: str
    client_id: str
    address: str
    lag: int | None
    queues_behind: int


def broadcast_client_lags(cluster_id: int, minute: dt.datetime, groups: Iterable[str] | None = None) -> list[ClientLag]:
    """Every answering client of the cluster's broadcasting groups (``groups``: only these) in ``minute``, on every
    topic it subscribes to or is behind on, by group, topic and client id. A client that did not answer has no lag
    known and is left out. Three queries whatever the number of groups."""
    at = Q(cluster_id=cluster_id, minute=minute)
    broadcasting = GroupMinute.objects.filter(at, message_model=BROADCASTING).values("group")
    if groups is not None:
        broadcasting = broadcasting.filter(group__in=list(groups))
    scope = at & Q(group__in=broadcasting)
    clients = {
        (group, client_id): (address, subscription)
        for group, client_id, address, subscription in ClientMinute.objects.filter(scope, error="").values_list(
            "group", "client_id", "address", "subscription"
        )
    }
    behind = {
        (row["group"], row["topic"], row["client_id"]): (row["lag"], row["queues"])
        for row in ClientQueueLagMinute.objects.filter(scope)
        .values("group", "topic", "client_id")
        .annotate(lag=Sum("lag"), queues=Count("pk"))
    }
    unknown = set(ConsumeMinute.objects.filter(scope, lag__isnull=True).values_list("group", "topic"))
    pairs = {(group, topic, client_id) for (group, client_id), (_, sub) in clients.items() for topic in sub}
    pairs |= {key for key in behind if (key[0], key[2]) in clients}
    lags = []
    for group, topic, client_id in sorted(pairs):
        lag, queues = behind.get((group, topic, client_id), (0, 0))
        lags.append(
            ClientLag(
                group=group,
                topic=topic,
                client_id=client_id,
                address=clients[group, client_id][0],
                lag=None if (group, topic) in unknown else lag,
                queues_behind=queues,
            )
        )
    return lags

"""What an SDK client asks the portal for at start and then every minute (``GET /api/v1/client-bootstrap/`` with
its group's token): where its cluster's name servers are and the group's client settings, so that an application
needs only the portal's URL, its group and the token, and follows what the portal changes (name servers moved, a
consumption throttle set or lifted) within a minute.

A consumer group's throttle is for the whole group; each SDK client takes an equal share of it, counting the
clients that reported consumption in the last :data:`CLIENT_WINDOW` (itself included), so that N clients together
stay near the group's rate.
"""

from __future__ import annotations

import datetime as dt
import math

from django.utils import timezone

from portal.models import ConsumerToken
from portal.models.client_tokens import ClientToken
from stats.models import ConsumerClientMinute

REFRESH_SECONDS = 60
CLIENT_WINDOW = dt.timedelta(minutes=3)


def bootstrap(token: ClientToken, client_id: str = "", *, now: dt.datetime | None = None) -> dict:
    group = token.group
    answer = {
        "cluster": group.cluster.name,
        "namesrv_addr": group.cluster.namesrv_addr,
        "group": group.name,
        "refresh_seconds": REFRESH_SECONDS,
        # Message trace: the topics whose trace switch is on, and where their records go.
        "trace_topic": group.cluster.trace_topic,
        "traced_topics": sorted(group.topics.filter(trace_enabled=True).values_list("name", flat=True)),
    }
    if isinstance(token, ConsumerToken):
        answer.update(_consumer_settings(group, client_id, now or timezone.now()))
    else:
        answer["topics"] = sorted(group.topics.values_list("name", flat=True))
    return answer


def _consumer_settings(group, client_id: str, now: dt.datetime) -> dict:
    throttle = group.consume_throttle_tps
    share = None
    if throttle is not None:
        clients = set(
            ConsumerClientMinute.objects.filter(
                cluster_id=group.cluster_id, consumer_group=group.name, minute__gte=now - CLIENT_WINDOW
            )
            .values_list("client_id", flat=True)
            .distinct()
        )
        if client_id:
            clients.add(client_id)
        share = max(1, math.ceil(throttle / max(1, len(clients))))
    return {
        "message_model": group.message_model,
        "subscriptions": [
            {"topic": topic, "tag_expression": expression}
            for topic, expression in group.subscriptions.order_by("topic__name").values_list(
                "topic__name", "tag_expression"
            )
        ],
        "throttle_tps": throttle,
        "client_throttle_tps": share,
    }

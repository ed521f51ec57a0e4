"""Who consumes: each group's online clients (GET_CONSUMER_CONNECTION_LIST, one request per group to one master
that holds it) and what each client reports about itself (GET_CONSUMER_RUNNING_INFO, relayed by that master to
the client: its subscription and its view of every queue it holds).

From the clients' own reports: whether a group's clients all subscribe alike (a client with another subscription
makes the broker's rebalancing hand queues to clients that filter their messages away), which queues are blocked
(the client has consumed nothing there for longer than the threshold while messages wait), and, for a
broadcasting group, how far each client is behind (broadcasting consumers keep their offsets themselves).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from monitor.collect.requests import UNREACHABLE, BrokerDown, Requests
from monitor.remoting import body as b
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import ProtocolError, RemotingError
from stats.models import BlockedQueueMinute, ClientMinute

logger = logging.getLogger(__name__)


@dataclass
class GroupClients:
    """What one group's connection request and its clients' running info said. ``online`` is None when the
    broker could not tell (it failed); ``infos`` maps client ids to their running info or the error asking it."""

    group: str
    online: bool | None = None
    connection: b.ConsumerConnection | None = None
    infos: dict[str, b.ConsumerRunningInfo | str] = field(default_factory=dict)

    @property
    def broadcasting(self) -> bool:
        return self.connection is not None and self.connection.message_model is b.MessageModel.BROADCASTING

    def subscriptions(self) -> dict[str, dict[str, str]]:
        """Each answering client's subscription, ``{topic: expression}``."""
        return {
            client_id: {sub.topic: sub.sub_string for sub in info.subscription_set}
            for client_id, info in self.infos.items()
            if isinstance(info, b.ConsumerRunningInfo)
        }

    def expression_types(self) -> dict[str, dict[str, str]]:
        """Each answering client's expression type per topic, ``{topic: "TAG" | "SQL92"}``: the same expression
        string means different things in each (the portal's registry models only TAG)."""
        return {
            client_id: {sub.topic: sub.expression_type for sub in info.subscription_set}
            for client_id, info in self.infos.items()
            if isinstance(info, b.ConsumerRunningInfo)
        }

    def consistent(self) -> bool | None:
        """Whether every client subscribes to the same topics with the same expressions (None: no client
        answered, or one could not be asked)."""
        if not self.infos or any(not isinstance(info, b.ConsumerRunningInfo) for info in self.infos.values()):
            return None
        return len({tuple(sorted(sub.items())) for sub in self.subscriptions().values()}) == 1


async def read_group_clients(
    admin: AsyncMQAdmin, requests: Requests, group: str, addr: str, *, running_info_timeout: float
) -> GroupClients:
    """The group's connections from the master at ``addr``, then each client's running info through it."""
    found = GroupClients(group)
    try:
        found.connection = await requests.send(addr, lambda: admin.get_consumer_connection_list(addr, group))
    except RemotingError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            found.online = False
        else:
            logger.warning("connections of group %s from %s: %s", group, addr, exc)
        return found
    except (BrokerDown, ProtocolError, *UNREACHABLE) as exc:
        logger.warning("connections of group %s from %s: %s", group, addr, exc)
        return found
    found.online = bool(found.connection.connection_set)
    for connection in found.connection.connection_set:
        client_id = connection.client_id
        try:
            found.infos[client_id] = await requests.send(
                addr,
                lambda client_id=client_id: admin.get_consumer_running_info(group, client_id, broker_addr=addr),
                timeout=running_info_timeout,
                strike=False,
            )
        except (RemotingError, BrokerDown, ProtocolError, *UNREACHABLE) as exc:
            found.infos[client_id] = str(exc) or type(exc).__name__
    return found


def client_rows(cluster_id: int, minute: dt.datetime, clients: GroupClients) -> list[ClientMinute]:
    if clients.connection is None:
        return []
    subscriptions, expression_types = clients.subscriptions(), clients.expression_types()
    rows = []
    for connection in clients.connection.connection_set:
        info = clients.infos.get(connection.client_id)
        rows.append(
            ClientMinute(
                cluster_id=cluster_id,
                group=clients.group,
                client_id=connection.client_id,
                minute=minute,
                address=connection.client_addr,
                language=connection.language or "",
                version=connection.version,
                subscription=subscriptions.get(connection.client_id, {}),
                expression_types=expression_types.get(connection.client_id, {}),
                error=info if isinstance(info, str) else "",
            )
        )
    return rows


def blocked_rows(
    cluster_id: int,
    minute: dt.datetime,
    clients: GroupClients,
    lags: dict[tuple[str, str, int], int],
    *,
    now_ms: int,
    threshold_ms: int,
) -> list[BlockedQueueMinute]:
    """Queues a client holds, has not consumed from for longer than ``threshold_ms``, while messages wait for it:
    messages cached in the client, or a backlog on the broker (``lags``: (topic, broker name, queue id) ->
    messages behind, for the group)."""
    rows = []
    for client_id, info in clients.infos.items():
        if not isinstance(info, b.ConsumerRunningInfo):
            continue
        for mq, queue in info.mq_table.items():
            lag = lags.get((mq.topic, mq.broker_name, mq.queue_id))
            waiting = queue.cached_msg_count > 0 or (lag or 0) > 0
            last = queue.last_consume_timestamp
            if queue.dropped or not waiting or last <= 0 or now_ms - last <= threshold_ms:
                continue
            rows.append(
                BlockedQueueMinute(
                    cluster_id=cluster_id,
                    group=clients.group,
                    topic=mq.topic,
                    broker_name=mq.broker_name,
                    queue_id=mq.queue_id,
                    client_id=client_id,
                    minute=minute,
                    last_consumed_at=dt.datetime.fromtimestamp(last / 1000, tz=dt.UTC),
                    cached_messages=queue.cached_msg_count,
                    lag=lag,
                )
            )
    return rows


def client_position(queue: b.ProcessQueueInfo) -> int | None:
    """Where a client is in a queue by its own account: the first message it holds unconsumed, else its committed
    offset; None when it reports neither (the C++ client reports -1, as an unsigned 64-bit number, until it has
    committed anything)."""
    positions = []
    if queue.cached_msg_count > 0:
        positions.append(queue.cached_msg_min_offset)
    if 0 <= queue.commit_offset < 2**63:
        positions.append(queue.commit_offset)
    return min(positions) if positions else None


def broadcast_progress(
    clients: GroupClients, topic: str, ends: dict[tuple[str, str, int], int]
) -> dict[tuple[str, str, int], dict[str, tuple[int, int]]]:
    """A broadcasting group's progress on ``topic``, from its clients' own accounts: (topic, broker name, queue id)
    -> client id -> (queue end, position). ``ends`` are the queues' ends as the brokers report them; queues whose
    end or position is unknown are left out."""
    progress: dict[tuple[str, str, int], dict[str, tuple[int, int]]] = {}
    for client_id, info in clients.infos.items():
        if not isinstance(info, b.ConsumerRunningInfo):
            continue
        for mq, queue in info.mq_table.items():
            if mq.topic != topic:
                continue
            where = (mq.topic, mq.broker_name, mq.queue_id)
            end, position = ends.get(where), client_position(queue)
            if end is not None and position is not None:
                progress.setdefault(where, {})[client_id] = (end, position)
    return progress

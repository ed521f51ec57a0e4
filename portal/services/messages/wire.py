"""The wire client for a cluster's message work, with wire errors turned into ClusterOperationError (a message fit
to show a user) as ``cluster_ops`` does for registry changes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError

from monitor.messages import search as wire_search
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingClientError, RemotingError
from monitor.remoting.message import MessageExt
from portal.models import Cluster
from portal.services.cluster_ops import ClusterOperationError, admin_for


@contextmanager
def cluster_admin(cluster: Cluster, what: str) -> Iterator[MQAdmin]:
    """An open wire client for ``cluster``; a wire error inside the block becomes ClusterOperationError saying
    ``what`` failed on which cluster, and RocketMQ's reason. ``monitor.messages`` raises ValueError for a request
    the cluster cannot carry out (a queue the topic does not have, a message that names no original topic): that
    becomes a ValidationError, the request's fault."""
    try:
        with admin_for(cluster) as admin:
            yield admin
    except RemotingClientError as exc:
        raise ClusterOperationError(f"{what} on cluster {cluster.name}: {exc}") from exc
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


def broker_names_by_addr(admin: MQAdmin) -> dict[str, str]:
    """Every broker address the name servers list (masters and slaves) -> its broker name: a message names its store
    host, a hit names its broker."""
    info = admin.examine_broker_cluster_info()
    return {addr: name for name, data in info.broker_addr_table.items() for addr in data.broker_addrs.values()}


def message_on_topic(admin: MQAdmin, msg_id: str, topic: str) -> MessageExt | None:
    """The message ``msg_id`` (an offset id, or a UNIQ_KEY of ``topic``) if it is on ``topic``; None if the broker
    has no such message (the store rolled past it, or it never was), or it is another topic's."""
    try:
        found = wire_search.by_id(admin, msg_id, topic)
    except RemotingError as exc:
        if exc.code == ResponseCode.SYSTEM_ERROR and "can not find message" in (exc.remark or ""):
            return None
        raise
    return next((msg for msg in found if msg.topic == topic), None)

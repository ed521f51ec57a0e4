"""The only portal code that acts on a live cluster, through the wire client (``monitor.remoting``).

Each operation does what RocketMQ 4.9.4's mqadmin does for a whole cluster, and is idempotent, so an approval that
failed halfway is simply run again:

- a topic is created (or updated: ``UPDATE_AND_CREATE_TOPIC`` is an upsert) on every master, read and write queue
  counts equal, permission read+write; an ordered topic also gets its ``ORDER_TOPIC_CONFIG`` entry
  (``brokerName:queueNums;...``) on every name server, as ``updateTopic -c ... -o true`` does, because that is what
  makes a topic ordered (a 4.9.4 broker ignores the request's order flag and takes it from the name server at its
  next registration; 5.x also takes it from the request, which carries it too). Routes carry the layout to clients
  only where the name servers run with ``orderMessageEnable=true`` (off by default);
- a topic is deleted on every master and then on every name server, the order ``deleteTopic -c`` uses, so that a
  master's periodic registration cannot put the route back;
- a subscription group is created on every master; deleting one deletes it (with its consumer offsets) on every
  master and then its ``%RETRY%`` and ``%DLQ%`` topics, as ``deleteSubGroup -c`` does.

Slaves are never written to: a 4.9.4 slave refuses every topic and group change ("Can't modify topic or
subscription group from slave broker") and copies its master's tables instead (SlaveSynchronize: every 10 s on
4.9.4, every minute on 5.x), so a change on the masters reaches the slaves by itself. (mqadmin's deleteTopic does
send to slaves, and so fails on them.)

"Every master" is what the name server lists, plus a check against the brokers the portal discovered: a master
the registry knows but the name server no longer lists is down (a name server forgets a broker whose connection
drops), and acting without it would leave that broker without the topic, so that is an error too, as is a cluster
with no master at all. Wire errors become :class:`ClusterOperationError` naming the broker and RocketMQ's reason.

The brownfield sync (``portal/services/sync.py``) reads what the masters hold through :func:`read_registry_tables`,
which returns each read's error instead of raising it: a master that cannot be read says nothing about its tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import (
    ProtocolError,
    RemotingClientError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)
from portal.models import Broker, BrokerRole, Cluster
from stats.keys import dlq_topic, retry_topic

logger = logging.getLogger(__name__)

# A connection attempt may take as long as a request, but never more than this.
MAX_CONNECT_TIMEOUT = 3.0
# Errors that mean "not there" rather than "said no".
UNREACHABLE = (RemotingConnectError, RemotingTimeoutError, RemotingClosedError)
# How often, and how far apart, a broker that cannot tell its version yet is asked again (see _version).
RUNTIME_INFO_ATTEMPTS = 6
RUNTIME_INFO_PAUSE = 0.5


class ClusterOperationError(Exception):
    """A cluster operation failed; ``str()`` is a message fit to show a user (it names the broker or name server)."""


class NameServerUnreachable(ClusterOperationError):
    """No name server of the cluster answered."""


def admin_for(cluster: Cluster) -> MQAdmin:
    """A wire client for the cluster's name servers, signing with its ACL credentials if it has them; use it as a
    context manager. Requests time out after ``settings.ROCKETMQ_REQUEST_TIMEOUT`` seconds."""
    acl = AclCredentials(cluster.acl_access_key, cluster.acl_secret_key) if cluster.acl_enabled else None
    timeout = settings.ROCKETMQ_REQUEST_TIMEOUT
    return MQAdmin(cluster.namesrv_addr, acl=acl, timeout=timeout, connect_timeout=min(timeout, MAX_CONNECT_TIMEOUT))


@contextmanager
def _failing_as(message: str) -> Iterator[None]:
    """Turn a wire error into a ClusterOperationError: ``message`` says what failed where, RocketMQ says why."""
    try:
        yield
    except RemotingClientError as exc:
        raise ClusterOperationError(f"{message}: {exc}") from exc


def _cluster_info(admin: MQAdmin, cluster: Cluster) -> b.ClusterInfo:
    try:
        return admin.examine_broker_cluster_info()
    except RemotingClientError as exc:
        addresses = cluster.namesrv_addr or _("none configured")
        raise NameServerUnreachable(
            _("No name server of cluster %(cluster)s answered (%(addresses)s): %(error)s")
            % {"cluster": cluster.name, "addresses": addresses, "error": exc}
        ) from exc


def _masters(admin: MQAdmin, cluster: Cluster) -> dict[str, str]:
    """broker name -> master address, for every master the name server lists; raises if there is none, or if a
    master the portal discovered is missing."""
    info = _cluster_info(admin, cluster)
    masters = {name: data.master_addr for name, data in info.broker_addr_table.items() if data.master_addr}
    if not masters:
        raise ClusterOperationError(
            _("The name servers of cluster %(cluster)s list no master broker.") % {"cluster": cluster.name}
        )
    known = set(cluster.brokers.filter(present=True, broker_id=0).values_list("broker_name", flat=True))
    absent = sorted(known - set(masters))
    if absent:
        raise ClusterOperationError(
            _(
                "The master of %(brokers)s is not registered in the name servers of cluster %(cluster)s (down?); "
                "nothing was changed. If the broker was removed for good, sync the cluster first."
            )
            % {"brokers": ", ".join(absent), "cluster": cluster.name}
        )
    return dict(sorted(masters.items()))


def _on_broker(broker_name: str, addr: str) -> str:
    return f"{broker_name} ({addr})"


# --- brokers ------------------------------------------------------------------------------------------------------


def _identity(admin: MQAdmin, broker_id: int, addr: str) -> tuple[str, str | None] | None:
    """(role, version) as the broker itself reports them (its brokerRole setting and its runtime info), or None if it
    does not answer; the version is None while a broker that has just started cannot tell it yet. A broker that
    refuses to answer (e.g. the ACL credentials are wrong) raises."""
    try:
        role = admin.get_broker_config(addr).get("brokerRole", "")
        version = _version(admin, addr)
    except UNREACHABLE as exc:
        logger.warning("broker %s (id %s) did not answer: %s", addr, broker_id, exc)
        return None
    except ProtocolError as exc:  # it answered, but with bytes no broker sends: its identity stays unknown
        logger.warning("broker %s (id %s) answered unreadably: %s", addr, broker_id, exc)
        return None
    if role not in BrokerRole.values:
        role = BrokerRole.SLAVE if broker_id else ""
    return role, version


def _version(admin: MQAdmin, addr: str) -> str | None:
    """The broker's version from its runtime info. A 4.9.4 broker answers that request with SYSTEM_ERROR
    (NoSuchElementException: its store has not sampled yet) for about a second after it boots: asked again a few
    times, then None (unknown). It answered the request before, so that error is not a refusal."""
    for attempt in range(RUNTIME_INFO_ATTEMPTS):
        if attempt:
            time.sleep(RUNTIME_INFO_PAUSE)
        try:
            table = admin.fetch_broker_runtime_stats(addr)
        except RemotingError as exc:
            if exc.code != ResponseCode.SYSTEM_ERROR:
                raise
            logger.info("runtime info of broker %s not read yet: %s", addr, exc)
            continue
        return b.BrokerRuntimeInfo.from_kvtable(table).broker_version_desc or ""
    return None


def discover_brokers(cluster: Cluster) -> list[Broker]:
    """Upsert the cluster's Broker rows from what the name servers list, with each broker's role and version as it
    reports them; brokers no longer listed are kept with ``present=False``. A listed broker that does not answer
    keeps its last known role and version (a slave's role is known from its id), one just started that cannot tell
    its version yet keeps its last known version. Returns the listed brokers.

    Raises NameServerUnreachable if no name server answers, ClusterOperationError if a broker refuses to answer."""
    with admin_for(cluster) as admin:
        info = _cluster_info(admin, cluster)
        listed = []
        for broker_name, data in sorted(info.broker_addr_table.items()):
            for broker_id, addr in sorted(data.broker_addrs.items()):
                with _failing_as(
                    _("Broker %(broker)s refused to describe itself") % {"broker": _on_broker(broker_name, addr)}
                ):
                    identity = _identity(admin, broker_id, addr)
                listed.append((data.cluster, broker_name, broker_id, addr, identity))
    now = timezone.now()
    brokers = []
    with transaction.atomic():
        for cluster_name, broker_name, broker_id, addr, identity in listed:
            fields = {"cluster_name": cluster_name, "address": addr, "present": True, "last_seen_at": now}
            if identity is not None:
                fields["role"], version = identity
                if version is not None:
                    fields["version"] = version
            elif broker_id:
                fields["role"] = BrokerRole.SLAVE
            broker, _created = Broker.objects.update_or_create(
                cluster=cluster, broker_name=broker_name, broker_id=broker_id, defaults=fields
            )
            brokers.append(broker)
        cluster.brokers.exclude(pk__in=[broker.pk for broker in brokers]).update(present=False)
    return brokers


# --- topics -------------------------------------------------------------------------------------------------------


def create_topic(cluster: Cluster, name: str, queue_nums: int, ordered: bool) -> None:
    """Create or update the topic on every master (``updateTopic -c``); for an ordered topic also record its
    queues in the name servers' ORDER_TOPIC_CONFIG."""
    config = b.TopicConfig(
        topic_name=name,
        read_queue_nums=queue_nums,
        write_queue_nums=queue_nums,
        perm=b.PermName.PERM_READ | b.PermName.PERM_WRITE,
        order=ordered,
    )
    with admin_for(cluster) as admin:
        masters = _masters(admin, cluster)
        for broker_name, addr in masters.items():
            with _failing_as(
                _("Creating topic %(topic)s on broker %(broker)s failed")
                % {"topic": name, "broker": _on_broker(broker_name, addr)}
            ):
                admin.create_and_update_topic_config(addr, config)
        if ordered:
            order_conf = ";".join(f"{broker_name}:{queue_nums}" for broker_name in masters)
            with _failing_as(
                _("Topic %(topic)s was created, but recording it as ordered in the name servers failed")
                % {"topic": name}
            ):
                admin.put_kv_config(ORDER_TOPIC_NAMESPACE, name, order_conf)


def _delete_topic(admin: MQAdmin, masters: dict[str, str], name: str) -> None:
    for broker_name, addr in masters.items():
        with _failing_as(
            _("Deleting topic %(topic)s on broker %(broker)s failed")
            % {"topic": name, "broker": _on_broker(broker_name, addr)}
        ):
            admin.delete_topic_in_broker([addr], name)
    with _failing_as(_("Deleting the route of topic %(topic)s in the name servers failed") % {"topic": name}):
        admin.delete_topic_in_name_server(name)
        # An ordered topic's queue layout outlives the topic otherwise, and a new topic of the same name would
        # come back ordered. Deleting a key that is not there succeeds.
        admin.delete_kv_config(ORDER_TOPIC_NAMESPACE, name)


def delete_topic(cluster: Cluster, name: str) -> None:
    """Delete the topic on every master, then its route and any ORDER_TOPIC_CONFIG entry on every name server
    (``deleteTopic -c``)."""
    with admin_for(cluster) as admin:
        _delete_topic(admin, _masters(admin, cluster), name)


# --- subscription groups -----------------------------------------------------------------------------------------


def create_subscription_group(cluster: Cluster, name: str, broadcasting: bool) -> None:
    """Create or update the subscription group on every master (``updateSubGroup -c``)."""
    config = b.SubscriptionGroupConfig(group_name=name, consume_broadcast_enable=broadcasting)
    with admin_for(cluster) as admin:
        for broker_name, addr in _masters(admin, cluster).items():
            with _failing_as(
                _("Creating consumer group %(group)s on broker %(broker)s failed")
                % {"group": name, "broker": _on_broker(broker_name, addr)}
            ):
                admin.create_and_update_subscription_group_config(addr, config)


def delete_subscription_group(cluster: Cluster, name: str) -> None:
    """Delete the subscription group and its consumer offsets on every master, then its retry and dead-letter topics
    on the masters and the name servers (``deleteSubGroup -c ... -r true``)."""
    with admin_for(cluster) as admin:
        masters = _masters(admin, cluster)
        for broker_name, addr in masters.items():
            with _failing_as(
                _("Deleting consumer group %(group)s on broker %(broker)s failed")
                % {"group": name, "broker": _on_broker(broker_name, addr)}
            ):
                admin.delete_subscription_group(addr, name, remove_offset=True)
        for topic in (retry_topic(name), dlq_topic(name)):
            _delete_topic(admin, masters, topic)


@dataclass
class MasterTables:
    """What one master holds: its topic configs by name and its subscription groups' names, or the error that kept
    them from being read."""

    broker: Broker
    topics: dict[str, b.TopicConfig] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    error: RemotingClientError | None = None


@dataclass
class RegistryTables:
    """The name servers' ordered topics (``ORDER_TOPIC_CONFIG``; empty with ``ordered_error`` set when they could
    not be read) and each master's tables."""

    ordered_topics: set[str]
    ordered_error: RemotingClientError | None
    masters: list[MasterTables]


def read_registry_tables(cluster: Cluster, masters: list[Broker]) -> RegistryTables:
    """GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG of every master in ``masters``, and the ordered
    topics, as mqadmin's ``topicList``/``consumerProgress`` read them; read errors are returned, never raised."""
    with admin_for(cluster) as admin:
        try:
            ordered, ordered_error = _ordered_topics(admin), None
        except RemotingClientError as exc:
            ordered, ordered_error = set(), exc
        tables = []
        for master in masters:
            try:
                topics = admin.get_all_topic_config(master.address).topic_config_table
                groups = admin.get_all_subscription_group(master.address).subscription_group_table
            except RemotingClientError as exc:
                tables.append(MasterTables(master, error=exc))
                continue
            tables.append(MasterTables(master, topics=dict(topics), groups=list(groups)))
    return RegistryTables(ordered, ordered_error, tables)


def _ordered_topics(admin: MQAdmin) -> set[str]:
    """Topics with an ORDER_TOPIC_CONFIG entry in the name servers: that entry, not the broker's flag, is what makes
    a 4.x topic ordered (``updateTopic -o true`` writes it)."""
    try:
        return set(admin.get_kv_list_by_namespace(ORDER_TOPIC_NAMESPACE).table)
    except RemotingError as exc:
        if exc.code == ResponseCode.QUERY_NOT_FOUND:  # no ordered topic at all
            return set()
        raise

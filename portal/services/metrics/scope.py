"""What one scrape exposes: each cluster's registry (topics, consumer groups and their subscriptions, brokers) and
the latest collected minute standing for "now" (:func:`stats.queries.traffic.latest_minute`, at most five minutes
old). Every family is filtered through the registry read here, so a deleted topic or group has no series from the
next scrape on, whatever its stored history; a cluster whose collection stopped has no traffic series at all, only
its collection health (a stale figure exposed as current would hide the outage)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from portal.models import Broker, Cluster, ConsumerGroup, MessageModel, ProducerGroup, Subscription, Topic
from stats.queries.traffic import latest_minute


@dataclass
class ClusterScope:
    cluster_id: int
    name: str
    minute: dt.datetime | None
    topics: set[str] = field(default_factory=set)
    #: group name -> message model (CLUSTERING / BROADCASTING)
    groups: dict[str, str] = field(default_factory=dict)
    #: (group, topic) of every registered subscription
    subscriptions: set[tuple[str, str]] = field(default_factory=set)
    producer_groups: set[str] = field(default_factory=set)
    #: (broker name, broker id) -> address
    brokers: dict[tuple[str, int], str] = field(default_factory=dict)

    def message_model_ordinal(self, group: str) -> str:
        """The exporter's ``msgModel`` label: the Java enum's ordinal (BROADCASTING 0, CLUSTERING 1)."""
        return "0" if self.groups.get(group) == MessageModel.BROADCASTING else "1"


def scopes(now: dt.datetime) -> list[ClusterScope]:
    """Every cluster with its registry, in five queries whatever the number of clusters (plus one per cluster for
    its latest minute)."""
    by_id = {
        cluster.pk: ClusterScope(cluster.pk, cluster.name, latest_minute(cluster.pk, now))
        for cluster in Cluster.objects.order_by("name").only("pk", "name")
    }
    for cluster_id, name in Topic.objects.values_list("cluster_id", "name").iterator(chunk_size=5000):
        if cluster_id in by_id:
            by_id[cluster_id].topics.add(name)
    for cluster_id, name, model in ConsumerGroup.objects.values_list("cluster_id", "name", "message_model").iterator(
        chunk_size=5000
    ):
        if cluster_id in by_id:
            by_id[cluster_id].groups[name] = model
    for cluster_id, group, topic in Subscription.objects.values_list(
        "consumer_group__cluster_id", "consumer_group__name", "topic__name"
    ).iterator(chunk_size=5000):
        if cluster_id in by_id:
            by_id[cluster_id].subscriptions.add((group, topic))
    for cluster_id, name in ProducerGroup.objects.values_list("cluster_id", "name").iterator(chunk_size=5000):
        if cluster_id in by_id:
            by_id[cluster_id].producer_groups.add(name)
    for cluster_id, broker_name, broker_id, address in Broker.objects.filter(present=True).values_list(
        "cluster_id", "broker_name", "broker_id", "address"
    ):
        if cluster_id in by_id:
            by_id[cluster_id].brokers[broker_name, broker_id] = address
    return list(by_id.values())

"""The families rocketmq-exporter (apache/rocketmq-exporter, ``RMQMetricsCollector``) also exposes, under its names
and units, built from the latest collected minute of each cluster, so its dashboards and alert rules keep working.

Where the stored data differs from what the exporter read, the labels say only what is known (docs/prometheus.md
lists each difference): topic traffic is stored per topic, not per broker, so ``rocketmq_producer_*`` and
``rocketmq_consumer_*`` have no ``broker`` label; ``cluster`` is the portal's cluster name; broker families carry
``broker_id`` too (slaves serve consumers); the runtime families drop the exporter's ``boottime`` label (a new series
at every restart) for ``mqcloud_broker_uptime_seconds``. Rates are per second over the brokers' last minute, as the
portal's charts draw them (a count per minute / 60). In a collected minute, a registered topic or subscription with
no row of its own had no traffic and no lag, and is exposed as 0 (so ``sum(...) < 1`` alerts can fire); a figure
the collector could not read (its broker was down) is left out, never 0.

Broadcasting groups, whose clients keep their own offsets and so each have a lag, get one ``rocketmq_group_diff``
series per answering client, labelled as the exporter labels a client (``clientId``, ``clientAddr``, as in its
``rocketmq_client_consume_*``); the exporter itself leaves broadcasting groups out of ``rocketmq_group_diff``.
Judge a group with ``max by (cluster, group, topic)``: its furthest-behind client, as the portal's lag warning does.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily

from portal.services.metrics.scope import ClusterScope
from stats.keys import dlq_topic, retry_topic
from stats.models import BrokerMinute, ConsumeMinute, GroupMinute, TopicMinute
from stats.queries.broadcast import ClientLag, broadcast_client_lags
from stats.queries.health import latest_broker_probes
from stats.queries.traffic import FRESH_FOR

TOPIC_LABELS = ["cluster", "topic"]
GROUP_LABELS = ["cluster", "topic", "group"]
DIFF_LABELS = ["cluster", "group", "topic", "countOfOnlineConsumers", "msgModel"]
#: A broadcasting group's diff series are per client: the exporter's labels of a client.
CLIENT_DIFF_LABELS = [*DIFF_LABELS, "clientId", "clientAddr"]
BROKER_LABELS = ["cluster", "brokerIP", "broker", "broker_id"]
RUNTIME_LABELS = [*BROKER_LABELS, "broker_version"]

#: rocketmq_brokeruntime_* name -> (BrokerProbe field, help)
RUNTIME = {
    "rocketmq_brokeruntime_msg_put_total_today_now": ("msg_put_total_today", "Messages stored today."),
    "rocketmq_brokeruntime_msg_gettotal_today_now": ("msg_get_total_today", "Messages served to consumers today."),
    "rocketmq_brokeruntime_put_tps10": ("put_tps", "Messages stored per second over the last 10 seconds."),
    "rocketmq_brokeruntime_gettransfered_tps10": ("get_tps", "Messages served per second over the last 10 seconds."),
    "rocketmq_brokeruntime_commitlog_disk_ratio": ("commit_log_disk_ratio", "Share of the commit log disk used."),
    "rocketmq_brokeruntime_consumequeue_disk_ratio": (
        "consume_queue_disk_ratio",
        "Share of the consume queue disk used.",
    ),
    "rocketmq_brokeruntime_dispatch_behind_bytes": ("dispatch_behind_bytes", "Commit log bytes not dispatched yet."),
    "rocketmq_brokeruntime_commitlog_maxoffset": ("commit_log_max_offset", "Where the broker's commit log ends."),
    "rocketmq_brokeruntime_put_latency_99": ("put_latency99_ms", "99th percentile of store latency, ms."),
    "rocketmq_brokeruntime_send_threadpool_queue_size": ("send_queue_size", "Send requests waiting."),
    "rocketmq_brokeruntime_pull_threadpoolqueue_size": ("pull_queue_size", "Pull requests waiting."),
}


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def topic_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    tps = _gauge("rocketmq_producer_tps", "Messages stored per second for the topic (TOPIC_PUT_NUMS).", TOPIC_LABELS)
    size = _gauge(
        "rocketmq_producer_message_size", "Bytes stored per second for the topic (TOPIC_PUT_SIZE).", TOPIC_LABELS
    )
    for scope in scopes:
        if scope.minute is None:
            continue
        rows = {
            topic: (put_nums, put_size)
            for topic, put_nums, put_size in TopicMinute.objects.filter(
                cluster_id=scope.cluster_id, minute=scope.minute
            ).values_list("topic", "put_nums", "put_size")
        }
        for topic in sorted(scope.topics):
            put_nums, put_size = rows.get(topic, (0, 0))
            if put_nums is not None:
                tps.add_metric([scope.name, topic], put_nums / 60)
            if put_size is not None:
                size.add_metric([scope.name, topic], put_size / 60)
    yield tps
    yield size


def _consumed_pairs(scope: ClusterScope) -> dict[tuple[str, str], dict]:
    """(group, topic) -> the stored row's figures, for registered groups on registered topics or their own retry
    topic, plus zeros for registered subscriptions without a row."""
    pairs: dict[tuple[str, str], dict] = {}
    for row in ConsumeMinute.objects.filter(cluster_id=scope.cluster_id, minute=scope.minute).values(
        "group", "topic", "get_size", "consume_tps", "sndbck_nums", "lag", "lag_seconds"
    ):
        group, topic = row["group"], row["topic"]
        if group in scope.groups and (topic in scope.topics or topic == retry_topic(group)):
            pairs[group, topic] = row
    zero = {"get_size": 0, "consume_tps": 0.0, "sndbck_nums": 0, "lag": 0, "lag_seconds": 0.0}
    for pair in scope.subscriptions:
        pairs.setdefault(pair, zero)
    return pairs


def _client_lags(scope: ClusterScope) -> dict[tuple[str, str], list[ClientLag]]:
    """(group, topic) -> each answering client's lag, for registered broadcasting groups."""
    lags: dict[tuple[str, str], list[ClientLag]] = {}
    for lag in broadcast_client_lags(scope.cluster_id, scope.minute):
        if lag.group in scope.groups and lag.lag is not None:
            lags.setdefault((lag.group, lag.topic), []).append(lag)
    return lags


def consumer_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    tps = _gauge("rocketmq_consumer_tps", "Messages consumed per second (masters and slaves).", GROUP_LABELS)
    size = _gauge("rocketmq_consumer_message_size", "Bytes consumed per second (GROUP_GET_SIZE).", GROUP_LABELS)
    sndbck = _gauge("rocketmq_send_back_nums", "Messages sent back for retry in the minute.", GROUP_LABELS)
    latency = _gauge(
        "rocketmq_group_get_latency_by_storetime",
        "How long the oldest unconsumed message has waited, ms (from the store time of the last one consumed).",
        GROUP_LABELS,
    )
    diff = _gauge("rocketmq_group_diff", "Messages stored but not consumed yet.", DIFF_LABELS)
    retry = _gauge("rocketmq_group_retrydiff", "Messages of the group's retry topic not consumed yet.", DIFF_LABELS)
    dlq = _gauge("rocketmq_group_dlqdiff", "Messages in the group's dead letter queue.", DIFF_LABELS)
    dlq_offset = _gauge("rocketmq_topic_dlq_offset", "Dead letters ever stored for the group.", ["cluster", "group"])
    count = _gauge("rocketmq_group_count", "Online consumer clients of the group.", ["cluster", "group"])
    for scope in scopes:
        if scope.minute is None:
            continue
        health = {
            row["group"]: row
            for row in GroupMinute.objects.filter(cluster_id=scope.cluster_id, minute=scope.minute).values(
                "group", "clients", "dlq_total"
            )
            if row["group"] in scope.groups
        }
        per_client = _client_lags(scope)
        for (group, topic), row in sorted(_consumed_pairs(scope).items()):
            labels = [scope.name, topic, group]
            if row["consume_tps"] is not None:
                tps.add_metric(labels, row["consume_tps"])
            if row["get_size"] is not None:
                size.add_metric(labels, row["get_size"] / 60)
            if row["sndbck_nums"]:  # as the exporter: only groups whose SNDBCK_PUT_NUMS stats key exists
                sndbck.add_metric(labels, row["sndbck_nums"])
            if row["lag_seconds"] is not None:
                latency.add_metric(labels, row["lag_seconds"] * 1000)
            if row["lag"] is not None:
                clients = str((health.get(group) or {}).get("clients") or 0)
                family = retry if topic == retry_topic(group) else diff
                diff_labels = [scope.name, group, topic, clients, scope.message_model_ordinal(group)]
                if (group, topic) not in per_client:
                    family.add_metric(diff_labels, row["lag"])
                for client in per_client.get((group, topic), ()):
                    values = [*diff_labels, client.client_id, client.address]
                    family.add_sample(family.name, dict(zip(CLIENT_DIFF_LABELS, values, strict=True)), client.lag)
        for group, row in sorted(health.items()):
            if row["clients"] is not None:
                count.add_metric([scope.name, group], row["clients"])
            if row["dlq_total"] is not None:
                clients = str(row["clients"] or 0)
                labels = [scope.name, group, dlq_topic(group), clients, scope.message_model_ordinal(group)]
                dlq.add_metric(labels, row["dlq_total"])
                dlq_offset.add_metric([scope.name, group], row["dlq_total"])
    yield from (tps, size, sndbck, latency, diff, retry, dlq, dlq_offset, count)


def broker_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    put = _gauge("rocketmq_broker_tps", "Messages the broker stored per second (BROKER_PUT_NUMS).", BROKER_LABELS)
    get = _gauge("rocketmq_broker_qps", "Messages the broker served per second (BROKER_GET_NUMS).", BROKER_LABELS)
    for scope in scopes:
        if scope.minute is None:
            continue
        for name, broker_id, put_nums, get_nums in BrokerMinute.objects.filter(
            cluster_id=scope.cluster_id, minute=scope.minute
        ).values_list("broker_name", "broker_id", "put_nums", "get_nums"):
            address = scope.brokers.get((name, broker_id))
            if address is None:
                continue
            labels = [scope.name, address, name, str(broker_id)]
            if put_nums is not None:
                put.add_metric(labels, put_nums / 60)
            if get_nums is not None:
                get.add_metric(labels, get_nums / 60)
    yield put
    yield get


def runtime_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    """The broker's own runtime figures from its latest probe (GET_BROKER_RUNTIME_INFO), when that probe answered
    and is as fresh as the cluster's latest minute."""
    families = {name: _gauge(name, documentation, RUNTIME_LABELS) for name, (_, documentation) in RUNTIME.items()}
    for scope in scopes:
        if scope.minute is None:
            continue
        for (name, broker_id), probe in sorted(latest_broker_probes(scope.cluster_id).items()):
            address = scope.brokers.get((name, broker_id))
            if address is None or not probe.ok or probe.minute < scope.minute - FRESH_FOR:
                continue
            labels = [scope.name, address, name, str(broker_id), probe.version]
            for metric, (attribute, _) in RUNTIME.items():
                value = getattr(probe, attribute)
                if value is not None:
                    families[metric].add_metric(labels, value)
    yield from families.values()

"""Our own families about the platform rather than the traffic, under ``mqcloud_``: how each cluster's collection
went, whether each broker and name server answered its probe, the broker hosts' server stats, and the open warnings
by type and severity (every pair exposed, 0 included, so an alert on them never waits for a first series)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from django.db.models import Count, Max
from prometheus_client.core import GaugeMetricFamily

from portal.models import Severity, Warning, WarningKind, WarningState
from portal.services.metrics.scope import ClusterScope
from stats.models import SERVER_SLOT, ClusterMinute, NameServerProbe, ServerDiskSample, ServerSample
from stats.queries.health import latest_broker_probes
from stats.queries.traffic import FRESH_FOR

#: mqcloud_server_* name -> (ServerSample field, help)
SERVER = {
    "mqcloud_server_cpu_percent": ("cpu_percent", "Share of the CPUs busy, percent."),
    "mqcloud_server_cpu_iowait_percent": ("cpu_iowait_percent", "Share of the CPUs waiting for I/O, percent."),
    "mqcloud_server_load1": ("load1", "Load average over 1 minute."),
    "mqcloud_server_load5": ("load5", "Load average over 5 minutes."),
    "mqcloud_server_load15": ("load15", "Load average over 15 minutes."),
    "mqcloud_server_memory_total_bytes": ("mem_total", "Memory."),
    "mqcloud_server_memory_used_bytes": ("mem_used", "Memory used (total minus available)."),
    "mqcloud_server_swap_total_bytes": ("swap_total", "Swap."),
    "mqcloud_server_swap_used_bytes": ("swap_used", "Swap used."),
    "mqcloud_server_network_receive_bytes_per_second": ("net_in_bytes_per_s", "Bytes received per second."),
    "mqcloud_server_network_transmit_bytes_per_second": ("net_out_bytes_per_s", "Bytes sent per second."),
    "mqcloud_server_disk_read_bytes_per_second": ("disk_read_bytes_per_s", "Bytes read per second."),
    "mqcloud_server_disk_write_bytes_per_second": ("disk_write_bytes_per_s", "Bytes written per second."),
    "mqcloud_server_disk_busy_percent": ("disk_busy_percent", "The busiest disk's busy time, percent."),
    "mqcloud_server_tcp_established": ("tcp_established", "Established TCP connections."),
    "mqcloud_server_tcp_time_wait": ("tcp_time_wait", "TCP sockets in TIME_WAIT."),
    "mqcloud_server_tcp_total": ("tcp_total", "TCP sockets."),
}


def collection_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    """The latest collection of each cluster, however old (its timestamp tells how old: alert on
    ``time() - mqcloud_collection_last_minute_timestamp_seconds``)."""
    families = {
        "seconds": GaugeMetricFamily(
            "mqcloud_collection_cycle_seconds", "How long the latest collection cycle took.", labels=["cluster"]
        ),
        "brokers_down": GaugeMetricFamily(
            "mqcloud_collection_brokers_down", "Brokers the latest collection could not read.", labels=["cluster"]
        ),
        "brokers": GaugeMetricFamily(
            "mqcloud_collection_brokers", "Brokers the latest collection read or tried.", labels=["cluster"]
        ),
        "requests": GaugeMetricFamily(
            "mqcloud_collection_requests", "Requests the latest collection sent.", labels=["cluster"]
        ),
    }
    last = GaugeMetricFamily(
        "mqcloud_collection_last_minute_timestamp_seconds", "The latest collected minute.", labels=["cluster"]
    )
    names = {scope.cluster_id: scope.name for scope in scopes}
    latest = ClusterMinute.objects.filter(demo_history=False).values("cluster_id").annotate(latest=Max("minute"))
    wanted = {row["cluster_id"]: row["latest"] for row in latest if row["cluster_id"] in names}
    rows = ClusterMinute.objects.filter(cluster_id__in=wanted, minute__in=set(wanted.values()))
    for row in rows.values("cluster_id", "minute", *families):
        if wanted.get(row["cluster_id"]) != row["minute"]:
            continue
        name = names[row["cluster_id"]]
        last.add_metric([name], row["minute"].timestamp())
        for field, family in families.items():
            if row[field] is not None:
                family.add_metric([name], row[field])
    yield last
    yield from families.values()


def probe_families(scopes: list[ClusterScope], now: dt.datetime) -> Iterator[GaugeMetricFamily]:
    labels = ["cluster", "brokerIP", "broker", "broker_id"]
    up = GaugeMetricFamily("mqcloud_broker_up", "Whether the broker answered its latest probe.", labels=labels)
    latency = GaugeMetricFamily("mqcloud_broker_probe_latency_ms", "The latest probe's latency.", labels=labels)
    uptime = GaugeMetricFamily("mqcloud_broker_uptime_seconds", "How long the broker has run.", labels=labels)
    nameserver_up = GaugeMetricFamily(
        "mqcloud_nameserver_up", "Whether the name server answered its latest probe.", labels=["cluster", "address"]
    )
    for scope in scopes:
        for (name, broker_id), probe in sorted(latest_broker_probes(scope.cluster_id).items()):
            address = scope.brokers.get((name, broker_id))
            if address is None or now - probe.minute > FRESH_FOR:
                continue
            values = [scope.name, address, name, str(broker_id)]
            up.add_metric(values, 1 if probe.ok else 0)
            if probe.latency_ms is not None:
                latency.add_metric(values, probe.latency_ms)
            if probe.runtime_seconds is not None:
                uptime.add_metric(values, probe.runtime_seconds)
        newest = NameServerProbe.objects.filter(cluster_id=scope.cluster_id, minute__gte=now - FRESH_FOR).aggregate(
            latest=Max("minute")
        )["latest"]
        for address, ok in NameServerProbe.objects.filter(cluster_id=scope.cluster_id, minute=newest).values_list(
            "address", "ok"
        ):
            nameserver_up.add_metric([scope.name, address], 1 if ok else 0)
    yield from (up, latency, uptime, nameserver_up)


def server_families(scopes: list[ClusterScope], now: dt.datetime) -> Iterator[GaugeMetricFamily]:
    """The latest sample of each broker host of the registry, if taken in the last two slots."""
    families = {name: GaugeMetricFamily(name, doc, labels=["host"]) for name, (_, doc) in SERVER.items()}
    fs_labels = ["host", "mount"]
    fs_size = GaugeMetricFamily("mqcloud_server_filesystem_size_bytes", "File system size.", labels=fs_labels)
    fs_used = GaugeMetricFamily("mqcloud_server_filesystem_used_bytes", "File system used.", labels=fs_labels)
    fs_avail = GaugeMetricFamily("mqcloud_server_filesystem_avail_bytes", "File system available.", labels=fs_labels)
    hosts = {address.rpartition(":")[0].strip("[]") for scope in scopes for address in scope.brokers.values()}
    recent = ServerSample.objects.filter(host__in=hosts, minute__gte=now - 2 * SERVER_SLOT)
    latest = {row["host"]: row["latest"] for row in recent.values("host").annotate(latest=Max("minute"))}
    for row in recent.filter(minute__in=set(latest.values())).values(
        "host", "minute", *(f for f, _ in SERVER.values())
    ):
        if latest[row["host"]] != row["minute"]:
            continue
        for name, (field, _) in SERVER.items():
            if row[field] is not None:
                families[name].add_metric([row["host"]], row[field])
    disks = ServerDiskSample.objects.filter(host__in=latest, minute__in=set(latest.values()))
    for host, minute, mount, size, used, available in disks.values_list(
        "host", "minute", "mount", "size", "used", "available"
    ):
        if latest[host] == minute:
            fs_size.add_metric([host, mount], size)
            fs_used.add_metric([host, mount], used)
            fs_avail.add_metric([host, mount], available)
    yield from families.values()
    yield from (fs_size, fs_used, fs_avail)


def warning_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    family = GaugeMetricFamily(
        "mqcloud_warnings_open", "Open warnings by type and severity.", labels=["cluster", "kind", "severity"]
    )
    counts = {
        (row["cluster_id"], row["kind"], row["severity"]): row["n"]
        for row in Warning.objects.filter(state=WarningState.OPEN)
        .values("cluster_id", "kind", "severity")
        .annotate(n=Count("id"))
    }
    for scope in scopes:
        for kind in WarningKind.values:
            for severity in Severity.values:
                family.add_metric([scope.name, kind, severity], counts.get((scope.cluster_id, kind, severity), 0))
    yield family

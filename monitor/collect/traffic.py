"""The per-minute collection of a cluster: production, consumption, consumer progress, clients and offset errors.

:func:`collect_cluster` claims the cluster's lease (one collection of a cluster at a time), runs one
:class:`~monitor.collect.cycle.Cycle` (which reads the cluster in a few waves of requests), turns its readings into
the minute's rows (:mod:`monitor.collect.rows`) and writes them, the collector's memory and the lease at the end, in
one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitor.collect import lease
from monitor.collect.cycle import Cycle
from monitor.collect.memory import Memory
from monitor.collect.rows import Target, minute_samples
from portal.models import Cluster
from stats.store.traffic import MinuteSamples, store_minute

logger = logging.getLogger(__name__)


@dataclass
class CollectReport:
    """What one collection did. ``ran`` is False when another collection of the cluster held the lease."""

    cluster: str
    minute: dt.datetime | None = None
    ran: bool = True
    brokers: int = 0
    brokers_down: list[str] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    rows: int = 0

    def counts(self) -> dict[str, int | float]:
        return {
            "ran": int(self.ran),
            "brokers": self.brokers,
            "brokers_down": len(self.brokers_down),
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "rows": self.rows,
        }


def collect_cluster(cluster: Cluster, *, now: dt.datetime | None = None) -> CollectReport:
    """Collect one minute of ``cluster`` (the minute ``now`` falls in, default the current one) and store it.
    Does nothing, with ``ran=False``, while another collection of the cluster holds the lease."""
    report = CollectReport(cluster=cluster.name)
    claimed = lease.claim(cluster)
    if claimed is None:
        report.ran = False
        logger.info("collection of cluster %s skipped: another collection is running", cluster.name)
        return report
    token, memory_data = claimed
    try:
        now = now or timezone.now()
        started = time.perf_counter()
        cycle = Cycle(cluster, Memory(memory_data, now.timestamp()), now)
        with _collector_paused():
            readings = asyncio.run(cycle.run(_registered_targets(cluster)))
            samples = minute_samples(readings, blocked_ms=int(settings.CONSUMER_BLOCKED_SECONDS * 1000))
        report.minute = readings.minute
        report.brokers = len(readings.targets)
        report.brokers_down = sorted(readings.down)
        report.requests = readings.requests
        report.seconds = samples.cluster.seconds = time.perf_counter() - started
        report.rows = _row_count(samples)
        with transaction.atomic():
            store_minute(samples)
            lease.release(cluster, token, memory=cycle.memory.dump())
    except BaseException as exc:
        lease.release(cluster, token, memory=None, error=f"{type(exc).__name__}: {exc}")
        raise
    logger.info("collection of cluster %s: %s", cluster.name, report.counts())
    return report


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while a cycle reads: decoding a large cluster's whole-table
    answers allocates millions of objects, each allocation burst triggering collections of a heap that only grows
    during the cycle (it doubles the time). What a cycle allocates is freed by reference counting; the few cycles
    it leaves (frames, exceptions) are collected when it is done."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _row_count(samples: MinuteSamples) -> int:
    kinds = (samples.brokers, samples.topics, samples.consumes, samples.queue_lags, samples.groups, samples.clients)
    return 1 + sum(len(rows) for rows in kinds) + len(samples.blocked) + len(samples.events)


def _registered_targets(cluster: Cluster) -> list[Target]:
    """The brokers the registry knows are present; the cycle adds those the name servers list besides."""
    return [
        Target(broker.broker_name, broker.broker_id, broker.address)
        for broker in cluster.brokers.filter(present=True).order_by("broker_name", "broker_id")
    ]


__all__ = ["CollectReport", "collect_cluster"]

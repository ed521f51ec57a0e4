"""Writing server stats: what one reading of a host holds, and the upsert that stores a collection run."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from django.db import transaction

from stats.models import ServerDiskSample, ServerSample


@dataclass(frozen=True)
class DiskUse:
    """One mounted file system, in bytes."""

    mount: str
    size: int
    used: int
    available: int


@dataclass(frozen=True)
class ServerStats:
    """One reading of a host; the fields mean what the same-named :class:`~stats.models.ServerSample` columns mean,
    and None is a value that could not be read."""

    cpu_percent: float | None = None
    cpu_iowait_percent: float | None = None
    load1: float | None = None
    load5: float | None = None
    load15: float | None = None
    mem_total: int | None = None
    mem_used: int | None = None
    swap_total: int | None = None
    swap_used: int | None = None
    net_in_bytes_per_s: float | None = None
    net_out_bytes_per_s: float | None = None
    disk_read_bytes_per_s: float | None = None
    disk_write_bytes_per_s: float | None = None
    disk_busy_percent: float | None = None
    tcp_established: int | None = None
    tcp_time_wait: int | None = None
    tcp_total: int | None = None
    disks: tuple[DiskUse, ...] = ()


SERVER_METRICS = tuple(f.name for f in fields(ServerStats) if f.name != "disks")


def store_server_samples(minute: dt.datetime, *, stats: Mapping[str, ServerStats], errors: Mapping[str, str]) -> None:
    """Store one collection run: ``stats`` by host for the hosts read, ``errors`` by host for the others.

    Idempotent per (host, slot): a host read again in the same slot has its values (and file systems) replaced by
    the newer reading; a failed attempt records its error but keeps values an earlier attempt in the slot read."""
    samples = [
        ServerSample(host=host, minute=minute, error="", **{name: getattr(stat, name) for name in SERVER_METRICS})
        for host, stat in stats.items()
    ]
    failures = [ServerSample(host=host, minute=minute, error=message) for host, message in errors.items()]
    disks = [
        ServerDiskSample(host=host, minute=minute, **asdict(disk))
        for host, stat in stats.items()
        for disk in stat.disks
    ]
    with transaction.atomic():
        ServerSample.objects.bulk_create(
            samples, update_conflicts=True, unique_fields=["host", "minute"], update_fields=[*SERVER_METRICS, "error"]
        )
        ServerSample.objects.bulk_create(
            failures, update_conflicts=True, unique_fields=["host", "minute"], update_fields=["error"]
        )
        for host, stat in stats.items():  # file systems unmounted since an earlier reading in this slot
            ServerDiskSample.objects.filter(host=host, minute=minute).exclude(
                mount__in=[disk.mount for disk in stat.disks]
            ).delete()
        ServerDiskSample.objects.bulk_create(
            disks,
            update_conflicts=True,
            unique_fields=["host", "minute", "mount"],
            update_fields=["size", "used", "available"],
        )

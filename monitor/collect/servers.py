"""Server stats of the hosts a cluster's brokers run on, read over SSH (every five minutes, by the beat).

One run logs in to each host once, with the cluster's :class:`~monitor.models.ServerAccess`, runs the constant
:data:`~monitor.collect.procfs.SERVER_COMMAND` and stores what it read under the five-minute slot the run is for. Hosts
are read concurrently (a bounded pool of threads that only do SSH; the database is touched before and after, in the
calling thread), each with short timeouts, so a dead host costs the others nothing. A host that fails gets its
error recorded and no values (a gap); it never fails the run.

Host keys are trusted on first use: a host seen for the first time has its key pinned (:class:`PinnedHostKey`),
and from then on any other key is refused before the private key is offered.
"""

from __future__ import annotations

import datetime as dt
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import paramiko

from monitor.collect.procfs import SERVER_COMMAND, parse_server_output
from monitor.models import PinnedHostKey, ServerAccess
from monitor.ssh import HostKey, SSHError, host_key_changed, load_private_key, run_command
from portal.models import Broker, Cluster
from portal.models.crypto import SecretUnreadable
from stats.models import slot_start
from stats.store.servers import ServerStats, store_server_samples

logger = logging.getLogger(__name__)

SSH_TIMEOUT_SECONDS = 10.0
MAX_PARALLEL_HOSTS = 8


@dataclass
class ServerCollection:
    """What one run did: the slot it stored under, the hosts read, and the error of each host that was not."""

    minute: dt.datetime
    collected: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Reading:
    host: str
    stats: ServerStats | None = None
    new_host_key: HostKey | None = None  # seen on first contact, to be pinned
    error: str = ""


def broker_hosts(cluster: Cluster) -> list[str]:
    """The distinct hosts of the cluster's brokers (those the name server still lists), from their ``ip:port``."""
    return sorted({broker.host for broker in Broker.objects.filter(cluster=cluster, present=True).only("address")})


def collect_server_stats(cluster: Cluster, at: dt.datetime) -> ServerCollection | None:
    """Read the server stats of every broker host of ``cluster`` now and store them under the slot ``at`` falls in
    (the slot the run was scheduled for: a run delayed or repeated still writes its own slot). None when the
    cluster has no server access set up."""
    access = ServerAccess.objects.filter(cluster=cluster).first()
    if access is None:
        return None
    run = ServerCollection(minute=slot_start(at))
    stats = {}
    for reading in _read_all(access, broker_hosts(cluster)):
        error = reading.error or (_pin(reading.host, access.port, reading.new_host_key) if reading.new_host_key else "")
        if error:
            run.errors[reading.host] = error
        else:
            stats[reading.host] = reading.stats
    run.collected = sorted(stats)
    store_server_samples(run.minute, stats=stats, errors=run.errors)
    return run


def _read_all(access: ServerAccess, hosts: list[str]) -> list[_Reading]:
    if not hosts:
        return []
    try:
        private_key = load_private_key(access.private_key)
    except (SecretUnreadable, ValueError) as exc:
        return [_Reading(host, error=f"the stored private key cannot be used: {exc}") for host in hosts]
    pins = {
        pin.host: HostKey(pin.key_type, pin.public_key)
        for pin in PinnedHostKey.objects.filter(host__in=hosts, port=access.port)
    }
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_HOSTS, len(hosts))) as pool:
        return list(pool.map(lambda host: _read(host, access, private_key, pins.get(host)), hosts))


def _read(host: str, access: ServerAccess, private_key: paramiko.PKey, pinned: HostKey | None) -> _Reading:
    """One host's reading, or its error (runs in a worker thread: no database here)."""
    try:
        output, host_key = run_command(
            host,
            access.port,
            username=access.username,
            private_key=private_key,
            command=SERVER_COMMAND,
            pinned=pinned,
            timeout=SSH_TIMEOUT_SECONDS,
        )
        stats = parse_server_output(output)
    except SSHError as exc:
        return _Reading(host, error=str(exc))
    except ValueError as exc:
        return _Reading(host, error=f"unreadable output from {host}: {exc}")
    except Exception as exc:  # a bug must not cost the other hosts their samples; it is logged with its traceback
        logger.exception("reading server stats of %s failed", host)
        return _Reading(host, error=f"internal error reading {host}: {exc!r}")
    return _Reading(host, stats=stats, new_host_key=host_key if pinned is None else None)


def _pin(host: str, port: int, seen: HostKey) -> str:
    """Pin the key a host showed on first contact; "" when pinned, the error when a concurrent run pinned another."""
    pin, created = PinnedHostKey.objects.get_or_create(
        host=host,
        port=port,
        defaults={"key_type": seen.key_type, "public_key": seen.public_key, "fingerprint": seen.fingerprint},
    )
    pinned = HostKey(pin.key_type, pin.public_key)
    if not created and pinned != seen:
        return str(host_key_changed(host, port, pinned=pinned, seen=seen))
    return ""

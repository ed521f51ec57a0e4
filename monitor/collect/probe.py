"""Health probes: is each name server and broker of a cluster answering, how fast, and what a broker says about
itself (version, role, runtime figures).

Every probe has a short timeout and a couple of quick retries, and all of a cluster's probes run at once, so a
round ends within ``PROBE_TIMEOUT * PROBE_ATTEMPTS`` seconds however many servers are down. The brokers probed
are those the registry knows and those the name servers list: a stopped broker drops out of the name servers'
tables at once, and must still show as down rather than vanish.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from monitor.remoting import body as b
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.errors import ProtocolError, RemotingClientError
from portal.models import BrokerRole, Cluster
from stats.models import BrokerProbe, NameServerProbe
from stats.store.health import store_probes

logger = logging.getLogger(__name__)

MASTER_ID = 0
SLAVE_ROLE = "SLAVE"
RETRY_PAUSE = 0.2
# What a broker says of itself is stored in bounded columns: longer text is cut, never allowed to fail the round.
VERSION_MAX_LENGTH = BrokerProbe._meta.get_field("version").max_length
NAME_MAX_LENGTH = min(BrokerProbe._meta.get_field(name).max_length for name in ("broker_name", "address"))


@dataclass
class Answer:
    """How one probe went: the value of the answering attempt (None if none answered)."""

    value: Any = None
    latency_ms: float | None = None
    attempts: int = 0
    error: str = ""


async def _probe(call, *, timeout: float, attempts: int) -> Answer:
    answer = Answer()
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(RETRY_PAUSE)
        answer.attempts += 1
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                answer.value = await call()
        except (RemotingClientError, TimeoutError) as exc:
            answer.error = str(exc) or f"no answer in {timeout:g} s"
            continue
        answer.latency_ms = (time.perf_counter() - started) * 1000
        answer.error = ""
        return answer
    return answer


def probe_cluster(
    cluster: Cluster, *, now: dt.datetime | None = None
) -> tuple[list[NameServerProbe], list[BrokerProbe]]:
    """Probe every name server and broker of the cluster once and store the round under ``now``'s minute."""
    minute = (now or timezone.now()).astimezone(dt.UTC).replace(second=0, microsecond=0)
    registered = {
        (broker.broker_name, broker.broker_id): broker.address for broker in cluster.brokers.order_by("broker_name")
    }
    acl = AclCredentials(cluster.acl_access_key, cluster.acl_secret_key) if cluster.acl_enabled else None
    addrs = list(cluster.name_servers.values_list("address", flat=True))
    name_servers, brokers = asyncio.run(_round(cluster.pk, minute, addrs, registered, acl))
    store_probes(name_servers, brokers)
    return name_servers, brokers


async def _round(
    cluster_id: int,
    minute: dt.datetime,
    namesrv_addrs: list[str],
    registered: dict[tuple[str, int], str],
    acl: AclCredentials | None,
) -> tuple[list[NameServerProbe], list[BrokerProbe]]:
    timeout, attempts = settings.PROBE_TIMEOUT, settings.PROBE_ATTEMPTS
    admin = AsyncMQAdmin(namesrv_addrs, acl=acl, timeout=timeout, connect_timeout=timeout)
    try:
        namesrv_answers = await asyncio.gather(
            *(
                _probe(lambda addr=addr: admin.get_name_server_config([addr]), timeout=timeout, attempts=attempts)
                for addr in namesrv_addrs
            )
        )
        listed: dict[tuple[str, int], str] = {}
        if any(answer.value is not None for answer in namesrv_answers):
            cluster_info = await _probe(admin.examine_broker_cluster_info, timeout=timeout, attempts=attempts)
            if cluster_info.value is not None:
                for name, data in cluster_info.value.broker_addr_table.items():
                    for broker_id, addr in data.broker_addrs.items():
                        if _storable(name, broker_id, addr):
                            listed[name, broker_id] = addr
                        else:
                            logger.warning(
                                "name servers list an impossible broker %.80r id %s at %.80r", name, broker_id, addr
                            )
        targets = sorted({**registered, **listed}.items())
        broker_answers = await asyncio.gather(
            *(_probe_broker(admin, addr, timeout=timeout, attempts=attempts) for _, addr in targets)
        )
    finally:
        await admin.close()
    name_servers = [
        NameServerProbe(
            cluster_id=cluster_id,
            address=addr,
            minute=minute,
            ok=answer.value is not None,
            latency_ms=answer.latency_ms,
            attempts=answer.attempts,
            error=answer.error,
        )
        for addr, answer in zip(namesrv_addrs, namesrv_answers, strict=True)
    ]
    brokers = [
        _broker_row(cluster_id, minute, name, broker_id, addr, (name, broker_id) in listed, answer)
        for ((name, broker_id), addr), answer in zip(targets, broker_answers, strict=True)
    ]
    return name_servers, brokers


def _storable(broker_name: str, broker_id: int, addr: str) -> bool:
    """Whether a broker the name servers list fits the probe's columns; one that cannot (a name or address longer
    than any real one, an id beyond a Java int) would fail the whole round's write, so it is left out."""
    return len(broker_name) <= NAME_MAX_LENGTH and len(addr) <= NAME_MAX_LENGTH and -(2**31) <= broker_id < 2**31


async def _probe_broker(admin: AsyncMQAdmin, addr: str, *, timeout: float, attempts: int) -> Answer:
    """Runtime info, then (best effort) the brokerRole setting: ``value`` is (runtime info, role or "")."""
    answer = await _probe(lambda: admin.fetch_broker_runtime_stats(addr), timeout=timeout, attempts=attempts)
    if answer.value is None:
        return answer
    role = ""
    try:
        async with asyncio.timeout(timeout):
            role = (await admin.get_broker_config(addr)).get("brokerRole", "")
    except ProtocolError as exc:  # the broker is up, but what it says about itself cannot be read
        logger.warning("brokerRole of %s not read: %s", addr, exc)
    except (RemotingClientError, TimeoutError) as exc:  # a detail: the broker answered, which is what counts
        logger.info("brokerRole of %s not read: %s", addr, exc)
    if role and role not in BrokerRole.values:
        logger.warning("broker %s reports an unknown brokerRole %r; ignored", addr, role[:40])
        role = ""
    answer.value = (b.BrokerRuntimeInfo.from_kvtable(answer.value), role)
    return answer


def _broker_row(
    cluster_id: int, minute: dt.datetime, name: str, broker_id: int, addr: str, listed: bool, answer: Answer
) -> BrokerProbe:
    row = BrokerProbe(
        cluster_id=cluster_id,
        broker_name=name,
        broker_id=broker_id,
        minute=minute,
        address=addr,
        listed=listed,
        ok=answer.value is not None,
        latency_ms=answer.latency_ms,
        attempts=answer.attempts,
        error=answer.error,
    )
    if answer.value is None:
        return row
    info, role = answer.value
    row.version = (info.broker_version_desc or "")[:VERSION_MAX_LENGTH]
    row.role = role or (SLAVE_ROLE if broker_id != MASTER_ID else "")
    row.runtime_seconds = info.runtime_seconds
    row.put_tps = info.put_tps
    row.get_tps = info.get_transfered_tps
    row.msg_put_total_today = info.msg_put_total_today_now
    row.msg_get_total_today = info.msg_get_total_today_now
    row.commit_log_disk_ratio = info.commit_log_disk_ratio
    row.consume_queue_disk_ratio = info.consume_queue_disk_ratio
    row.dispatch_behind_bytes = info.dispatch_behind_bytes
    row.commit_log_max_offset = info.commit_log_max_offset
    row.put_latency99_ms = info.put_latency99
    row.send_queue_size = info.send_thread_pool_queue_size
    row.pull_queue_size = info.pull_thread_pool_queue_size
    return row

"""What the subcommands share: the subcommand description, errors of the tool itself, option parsers, cluster
lookups, time and version formatting as the Java tools print them."""

from __future__ import annotations

import argparse
import datetime
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from monitor.remoting import body as b
from monitor.remoting.admin import RESET_TO_NOW, MQAdmin
from monitor.remoting.errors import RemotingClientError

T = TypeVar("T")
R = TypeVar("R")

# How many admin calls the listing subcommands (statsAll, consumerProgress without -g...) keep in flight.
PARALLEL_CALLS = 16


@dataclass(frozen=True)
class SubCommand:
    """One ``mqadmin`` subcommand: its options (None: only the global ones), the work (admin, args) -> plain data,
    and the table renderer.

    ``timeout`` lets a subcommand take its request timeout (seconds) from its own options, as brokerConsumeStats
    does with mqadmin's ``-t timeoutMillis``; without it the global ``--timeout`` applies.
    """

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None] | None
    run: Callable[[MQAdmin, argparse.Namespace], Any]
    render: Callable[[Any, argparse.Namespace], str]
    timeout: Callable[[argparse.Namespace], float] | None = None


class MQAdminError(Exception):
    """A failure the tool itself detects (unknown cluster, group without consume stats), worded for the operator."""


class PartialFailure(Exception):
    """Some targets of a multi-broker subcommand failed: ``result`` is what did happen (still printed), ``errors``
    says what did not, one text each naming the broker or step."""

    def __init__(self, result: Any, errors: Sequence[str]):
        self.result = result
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


# --- option values --------------------------------------------------------------------------------------------------


def java_bool(text: str) -> bool:
    """``true``/``false`` in any case. Java's Boolean.parseBoolean reads every typo as false; a tool that changes
    cluster state should refuse it instead."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def add_target(parser: argparse.ArgumentParser, what: str) -> None:
    """mqadmin's ``-b brokerAddr | -c clusterName`` pair, one of them required."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("-b", "--brokerAddr", dest="broker_addr", help=f"{what} on this broker (HOST:PORT)")
    group.add_argument("-c", "--clusterName", dest="cluster_name", help=f"{what} on every master of this cluster")


@dataclass(frozen=True)
class Timestamp:
    text: str  # as typed
    millis: int


def parse_timestamp(text: str) -> Timestamp:
    """``now``, epoch milliseconds, or local ``yyyy-MM-dd#HH:mm:ss:SSS`` (mqadmin's three forms)."""
    text = text.strip()
    if text == "now":
        return Timestamp(text, RESET_TO_NOW)
    if text.isdigit():
        return Timestamp(text, int(text))
    try:
        moment = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not now, epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None
    return Timestamp(text, int(moment.timestamp() * 1000))


def time_range(begin: Timestamp | None, end: Timestamp | None) -> tuple[int, int | None]:
    """(begin, end) epoch milliseconds of a search's ``-b``/``-e`` (or ``-s``/``-e``) options: no begin is the
    start of the store, no end (or ``now``) is now, which the search reads as None."""
    begin_ms = 0 if begin is None else begin.millis
    end_ms = None if end is None or end.millis == RESET_TO_NOW else end.millis
    if begin_ms == RESET_TO_NOW:
        begin_ms = int(time.time() * 1000)
    return begin_ms, end_ms


# --- cluster lookups ------------------------------------------------------------------------------------------------


def cluster_broker_datas(info: b.ClusterInfo, cluster: str) -> list[b.BrokerData]:
    """The broker sets of a cluster, by broker name; an unknown cluster is an error rather than mqadmin's silence."""
    names = info.cluster_addr_table.get(cluster)
    if names is None:
        known = ", ".join(sorted(info.cluster_addr_table)) or "none"
        raise MQAdminError(f"cluster [{cluster}] is not known to the name server (clusters: {known})")
    return [info.broker_addr_table[name] for name in sorted(set(names)) if name in info.broker_addr_table]


def on_each_broker(addrs: list[str], action, result) -> None:
    """Run `action(addr)` on every broker, recording the ones that succeeded in `result.brokers`; if any failed,
    raise PartialFailure with the result (what did happen) and one error per failed broker."""
    errors = []
    for addr in addrs:
        try:
            action(addr)
            result.brokers.append(addr)
        except RemotingClientError as exc:
            errors.append(str(exc))
    if errors:
        raise PartialFailure(result, errors)


def master_addrs(admin: MQAdmin, cluster: str) -> list[str]:
    return [
        bd.master_addr for bd in cluster_broker_datas(admin.examine_broker_cluster_info(), cluster) if bd.master_addr
    ]


def broker_name_of(info: b.ClusterInfo, addr: str) -> str:
    for name, bd in info.broker_addr_table.items():
        if addr in bd.broker_addrs.values():
            return name
    raise MQAdminError(f"broker {addr} is not registered in the name server")


def select_broker_addr(bd: b.BrokerData) -> str | None:
    """BrokerData.selectBrokerAddr: the master, else any member."""
    return bd.master_addr or next(iter(bd.broker_addrs.values()), None)


def parallel_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(item) for item in items]`` with up to PARALLEL_CALLS calls in flight; the first exception is raised."""
    items = list(items)
    if len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(PARALLEL_CALLS, len(items))) as pool:
        return list(pool.map(fn, items))


# --- formatting -----------------------------------------------------------------------------------------------------


def _versions() -> list[str]:
    """MQVersion.Version names by ordinal (RocketMQ 4.9.4): the 3.0.0 pre-releases, 3.0.1..3.0.15, then a SNAPSHOT
    and a release for every x.y.z from 3.1.0 to 5.9.9 except 3.3.0..3.9.0, then HIGHER_VERSION."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    for i in range(6, 10):
        names += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    names.append("V3_0_0_FINAL")
    for patch in range(1, 16):
        names += [f"V3_0_{patch}_SNAPSHOT", f"V3_0_{patch}"]
    for major, minor, patch in itertools.product(range(3, 6), range(10), range(10)):
        if (major, minor) == (3, 0) or (major == 3 and minor >= 3 and patch == 0):
            continue
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return names


_VERSION_NAMES = _versions()


def version_desc(ordinal: int) -> str:
    """MQVersion.getVersionDesc: clients report their version as this enum's ordinal (401 = V4_9_4)."""
    return _VERSION_NAMES[min(max(ordinal, 0), len(_VERSION_NAMES) - 1)]


def _local_time(millis: int) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromtimestamp(millis / 1000)
    except (OverflowError, ValueError, OSError):  # clients do send garbage timestamps (C++ lastLockTimestamp)
        return None


def human_millis(millis: int) -> str:
    """UtilAll.timeMillisToHumanString2: ``2026-11-22 00:23:40,052`` in local time; "" for an unset (0) time."""
    if millis <= 0:
        return ""
    moment = _local_time(millis)
    return (
        str(millis) if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"
    )


def format_date(millis: int) -> str:
    """UtilAll.formatDate with YYYY_MM_DD_HH_MM_SS: ``2026-11-22 00:23:40`` in local time."""
    moment = _local_time(millis)
    return str(millis) if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")

"""Cluster and broker subcommands: clusterList, brokerStatus, getBrokerConfig, getNamesrvConfig."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

from monitor.mqadmin.common import PartialFailure, SubCommand, cluster_broker_datas, parallel_map
from monitor.mqadmin.output import cell, join_blocks, render_properties, render_table
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError

# --- clusterList ----------------------------------------------------------------------------------------------------


@dataclass
class BrokerRow:
    """One broker of ``clusterList``. The figures come from its runtime info; ``error`` says why they are missing."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    version: str | None = None
    in_tps: float | None = None
    out_tps: float | None = None
    send_thread_pool_queue_size: int | None = None
    send_thread_pool_queue_head_wait_time_mills: int | None = None
    pull_thread_pool_queue_size: int | None = None
    pull_thread_pool_queue_head_wait_time_mills: int | None = None
    page_cache_lock_time_mills: int | None = None
    hours: float | None = None  # age of the oldest stored message
    earliest_message_time_stamp: int | None = None  # as the broker reports it (-1: a 4.9.4 commit log under 8 MB)
    space: float | None = None  # commit log disk usage ratio
    in_total_yest: int | None = None
    out_total_yest: int | None = None
    in_total_today: int | None = None
    out_total_today: int | None = None
    # RocketMQ 5 only: the ack thread pool (POP consumption), the timer wheel of delayed messages, activation.
    ack_thread_pool_queue_size: int | None = None
    ack_thread_pool_queue_head_wait_time_mills: int | None = None
    timer_read_behind: int | None = None
    timer_offset_behind: int | None = None
    timer_congest_num: int | None = None
    timer_enqueue_tps: float | None = None
    timer_dequeue_tps: float | None = None
    activated: bool | None = None
    error: str | None = None


@dataclass
class ClusterList:
    brokers: list[BrokerRow] = field(default_factory=list)


def _difference(later: int | None, earlier: int | None) -> int | None:
    return later - earlier if later is not None and earlier is not None else None


def _fill_runtime(admin: MQAdmin, row: BrokerRow) -> BrokerRow:
    try:
        info = b.BrokerRuntimeInfo.from_kvtable(admin.fetch_broker_runtime_stats(row.addr))
    except RemotingClientError as exc:
        row.error = str(exc)
        return row
    row.version = info.broker_version_desc
    row.in_tps = info.put_tps
    row.out_tps = info.get_transfered_tps
    row.send_thread_pool_queue_size = info.send_thread_pool_queue_size
    row.send_thread_pool_queue_head_wait_time_mills = info.send_thread_pool_queue_head_wait_time_mills
    row.pull_thread_pool_queue_size = info.pull_thread_pool_queue_size
    row.pull_thread_pool_queue_head_wait_time_mills = info.pull_thread_pool_queue_head_wait_time_mills
    row.page_cache_lock_time_mills = info.page_cache_lock_time_mills
    row.earliest_message_time_stamp = info.earliest_message_timestamp
    # earliestMessageTimeStamp is -1 until a 4.9.4 commit log holds 8 MB; mqadmin prints ~500000 hours for that.
    if info.earliest_message_timestamp is not None and info.earliest_message_timestamp > 0:
        row.hours = (time.time() * 1000 - info.earliest_message_timestamp) / 3_600_000
    row.space = info.commit_log_disk_ratio
    row.in_total_yest = _difference(info.msg_put_total_today_morning, info.msg_put_total_yesterday_morning)
    row.out_total_yest = _difference(info.msg_get_total_today_morning, info.msg_get_total_yesterday_morning)
    row.in_total_today = _difference(info.msg_put_total_today_now, info.msg_put_total_today_morning)
    row.out_total_today = _difference(info.msg_get_total_today_now, info.msg_get_total_today_morning)
    row.ack_thread_pool_queue_size = info.ack_thread_pool_queue_size
    row.ack_thread_pool_queue_head_wait_time_mills = info.ack_thread_pool_queue_head_wait_time_mills
    row.timer_read_behind = info.timer_read_behind
    row.timer_offset_behind = info.timer_offset_behind
    row.timer_congest_num = info.timer_congest_num
    row.timer_enqueue_tps = info.timer_enqueue_tps
    row.timer_dequeue_tps = info.timer_dequeue_tps
    row.activated = info.broker_active
    return row


def cluster_list(admin: MQAdmin, args: argparse.Namespace) -> ClusterList:
    """Every broker of every cluster with its runtime figures. A broker that does not answer keeps its row (an
    operator needs to see it) and makes the command fail after printing."""
    info = admin.examine_broker_cluster_info()
    rows = [
        BrokerRow(cluster, bd.broker_name, broker_id, addr)
        for cluster in sorted(info.cluster_addr_table)
        for bd in cluster_broker_datas(info, cluster)
        for broker_id, addr in sorted(bd.broker_addrs.items())
    ]
    result = ClusterList(parallel_map(lambda row: _fill_runtime(admin, row), rows))
    errors = [f"{row.broker_name}: {row.error}" for row in result.brokers if row.error]
    if errors:
        raise PartialFailure(result, errors)
    return result


def _load(tps: float | None, *pools: tuple[int | None, int | None]) -> str:
    """mqadmin's ``%9.2f(queue size,head wait ms)`` cell; RocketMQ 5 adds the ack pool to the out cell after a
    ``|``."""
    queues = "|".join(f"{cell(queue)},{cell(wait)}ms" for queue, wait in pools)
    return "" if tps is None else f"{tps:.2f}({queues})"


def _out_load(r: BrokerRow) -> str:
    pools = [(r.pull_thread_pool_queue_size, r.pull_thread_pool_queue_head_wait_time_mills)]
    if r.ack_thread_pool_queue_size is not None:
        pools.append((r.ack_thread_pool_queue_size, r.ack_thread_pool_queue_head_wait_time_mills))
    return _load(r.out_tps, *pools)


def _timer(r: BrokerRow) -> str:
    """RocketMQ 5's ``read behind-offset behind(congested in 10,000s, enqueue TPS, dequeue TPS)``."""
    if r.timer_read_behind is None:
        return ""
    return (
        f"{r.timer_read_behind}-{cell(r.timer_offset_behind)}({(r.timer_congest_num or 0) / 10000:.1f}w, "
        f"{r.timer_enqueue_tps or 0:.1f}, {r.timer_dequeue_tps or 0:.1f})"
    )


def render_cluster_list(result: ClusterList, args: argparse.Namespace) -> str:
    if args.more_stats:
        headers = ["#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday"]
        rows = [
            [r.cluster, r.broker_name, r.in_total_yest, r.out_total_yest, r.in_total_today, r.out_total_today]
            for r in result.brokers
        ]
        return render_table(headers, rows)
    # RocketMQ 5 brokers also report their timer wheel and whether they are active; those columns are added when
    # any broker does.
    five = any(r.activated is not None for r in result.brokers)
    headers = ["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)"]
    headers += [*(["#Timer(Progress)"] if five else []), "#PCWait(ms)", "#Hour", "#SPACE"]
    headers += ["#ACTIVATED"] if five else []
    rows = []
    for r in result.brokers:
        row = [r.cluster, r.broker_name, r.broker_id, r.addr, r.version]
        row.append(_load(r.in_tps, (r.send_thread_pool_queue_size, r.send_thread_pool_queue_head_wait_time_mills)))
        row += [_out_load(r), *([_timer(r)] if five else [])]
        row += [r.page_cache_lock_time_mills, r.hours, None if r.space is None else f"{r.space:.4f}"]
        rows.append([*row, *([cell(r.activated)] if five else [])])
    return render_table(headers, rows)


def _cluster_list_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--moreStats", dest="more_stats", action="store_true", help="Print more stats")


# --- brokerStatus ---------------------------------------------------------------------------------------------------


def _broker_addrs(admin: MQAdmin, cluster: str) -> list[str]:
    """Masters and slaves of a cluster (mqadmin's fetchMasterAndSlaveAddrByClusterName)."""
    info = admin.examine_broker_cluster_info()
    return [addr for bd in cluster_broker_datas(info, cluster) for _, addr in sorted(bd.broker_addrs.items())]


def broker_status(admin: MQAdmin, args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Runtime info tables by broker address; with -c of every master and slave, skipping (and then reporting)
    the ones that do not answer."""
    if args.broker_addr:
        return {args.broker_addr: admin.fetch_broker_runtime_stats(args.broker_addr).table}
    addrs = _broker_addrs(admin, args.cluster_name)

    def fetch(addr: str) -> dict[str, str] | str:
        try:
            return admin.fetch_broker_runtime_stats(addr).table
        except RemotingClientError as exc:
            return str(exc)

    answers = dict(zip(addrs, parallel_map(fetch, addrs), strict=True))
    result = {addr: table for addr, table in answers.items() if isinstance(table, dict)}
    errors = [error for error in answers.values() if isinstance(error, str)]
    if errors:
        raise PartialFailure(result, errors)
    return result


def render_broker_status(result: dict[str, dict[str, str]], args: argparse.Namespace) -> str:
    if args.broker_addr:
        return render_properties(result.get(args.broker_addr, {}), width=32, separator=": ")
    return "\n".join(f"{addr:<24} {key:<32}: {table[key]}" for addr, table in result.items() for key in sorted(table))


def _broker_status_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("-b", "--brokerAddr", dest="broker_addr", help="Broker address")
    group.add_argument("-c", "--clusterName", dest="cluster_name", help="which cluster (masters and slaves)")


# --- getBrokerConfig / getNamesrvConfig -----------------------------------------------------------------------------


@dataclass
class BrokerConfig:
    addr: str
    master_addr: str | None  # None for the master itself (or a broker given with -b)
    config: dict[str, str]


def get_broker_config(admin: MQAdmin, args: argparse.Namespace) -> list[BrokerConfig]:
    if args.broker_addr:
        return [BrokerConfig(args.broker_addr, None, admin.get_broker_config(args.broker_addr))]
    info = admin.examine_broker_cluster_info()
    targets: list[tuple[str, str | None]] = []
    for bd in cluster_broker_datas(info, args.cluster_name):
        master = bd.master_addr
        targets += [
            (addr, None if broker_id == b.MASTER_ID else master) for broker_id, addr in sorted(bd.broker_addrs.items())
        ]
    result, errors = [], []
    for addr, master in targets:
        try:
            result.append(BrokerConfig(addr, master, admin.get_broker_config(addr)))
        except RemotingClientError as exc:
            errors.append(str(exc))
    if errors:
        raise PartialFailure(result, errors)
    return result


def render_broker_config(result: list[BrokerConfig], args: argparse.Namespace) -> str:
    blocks = []
    for item in result:
        if args.broker_addr:
            title = f"============{item.addr}============"
        elif item.master_addr is None:
            title = f"============Master: {item.addr}============"
        else:
            title = f"============My Master: {item.master_addr}=====Slave: {item.addr}============"
        blocks.append(f"{title}\n{render_properties(item.config)}")
    return join_blocks(*blocks)


def get_namesrv_config(admin: MQAdmin, args: argparse.Namespace) -> dict[str, dict[str, str]]:
    return admin.get_name_server_config()


def render_namesrv_config(result: dict[str, dict[str, str]], args: argparse.Namespace) -> str:
    return join_blocks(
        *(f"============{addr}============\n{render_properties(config)}" for addr, config in result.items())
    )


COMMANDS = [
    SubCommand("clusterList", "List all of clusters", _cluster_list_args, cluster_list, render_cluster_list),
    SubCommand(
        "brokerStatus", "Fetch broker runtime status data", _broker_status_args, broker_status, render_broker_status
    ),
    SubCommand(
        "getBrokerConfig",
        "Get broker config by cluster or special broker",
        _broker_status_args,
        get_broker_config,
        render_broker_config,
    ),
    SubCommand("getNamesrvConfig", "Get configs of name server", None, get_namesrv_config, render_namesrv_config),
]

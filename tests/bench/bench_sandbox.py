"""The sandbox cluster at the size the monitor's own benchmarks load it: 2 broker names, each a master and a slave,
holding 10,000 topics and 10,000 subscription groups.

The cluster runs in a process of its own (this module run with ``serve``), as bench_wire's responder does: a
client in the same process would share its GIL and measure itself as much as the sandbox. The client creates the
20,000 objects on both masters through AsyncMQAdmin, many requests at a time (``sandbox_load_seconds``). The
server process then fakes the traffic counters a collection reads, without the traffic: a TOPIC_PUT_NUMS and a
GROUP_GET_NUMS key for topic-i and topic-i@group-i and group-i's committed offsets on topic-i's queues.

``sandbox_admin_rps`` is how many admin requests both brokers and the name server answer per second, asked
CONCURRENCY at a time over the client's multiplexed connections, in the proportions of a collection cycle: per
topic and group its topic stats, the two stats views, its group's consume stats and its route, and among them the
broker runtime info, and the whole-table requests (all topics, all groups, all consume stats, the topic list) as
often as a cycle over SAMPLED topics would ask them. Answers are counted, not decoded, so the client keeps up.
``sandbox_request_p50_ms`` / ``sandbox_request_p99_ms`` are those requests' latencies, and ``sandbox_<request>_ms``
the median of one request of a kind at a time.

Measured inside the server process: ``sandbox_register_ms``, a full registration of a changed 10,000-topic table,
with ``sandbox_register_loop_lag_ms``, the longest the master's event loop went unanswered meanwhile, and the
same for the periodic registration of an unchanged table (``sandbox_register_unchanged_*``);
``sandbox_slave_sync_ms``, one SlaveSynchronize pass after a topic changed on the master, and
``sandbox_slave_sync_unchanged_ms``, one when nothing did.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from monitor.remoting import headers as h
from monitor.remoting.admin import AsyncMQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand

TOPICS = 10_000
GROUPS = 10_000
QUEUES = 4
BROKERS = 2
CONCURRENCY = 200
LOAD_CONCURRENCY = 500
SAMPLED = 4_000
RUNTIME_EVERY = 1_000
SINGLE_REPEATS = 5
REPEATS = 5
LAG_TICK = 0.001


def _topic(index: int) -> str:
    return f"topic-{index}"


def _group(index: int) -> str:
    return f"group-{index}"


def _request(code: RequestCode, header: h.CommandHeader | None = None) -> Callable[[], RemotingCommand]:
    """A request maker: every send needs a command of its own (the client numbers each)."""
    ext = header.to_ext_fields() if header is not None else None
    return lambda: RemotingCommand.request(code, dict(ext) if ext else None)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- the server process --------------------------------------------------------------------------------------------


def _serve() -> None:
    """Run the cluster and answer the client's commands on stdin, one JSON line on stdout for each."""
    from monitor.sandbox.cluster import SandboxCluster

    with SandboxCluster(brokers=BROKERS, slaves=True) as cluster:
        masters = [cluster.broker(name) for name in cluster.broker_names]
        _reply({"namesrv": cluster.namesrv_addr, "masters": [master.addr for master in masters]})
        for line in sys.stdin:
            command = line.strip()
            if command == "traffic":
                for master in masters:
                    master.run(_fake_traffic(master), timeout=120)
                _reply({})
            elif command == "measure":
                _reply(_measure_inside(cluster, masters[0]))
            else:
                break


def _reply(answer: dict) -> None:
    print(json.dumps(answer), flush=True)


async def _fake_traffic(master) -> None:
    """The counters and offsets of each group having consumed its topic; on the broker's loop, which owns them."""
    for index in range(min(TOPICS, GROUPS)):
        topic, group = _topic(index), _group(index)
        master.stats.inc_topic_put_nums(topic)
        master.stats.inc_group_get_nums(group, topic, 1)
        for queue_id in range(QUEUES):
            master.offsets.commit(group, topic, queue_id, 0)


async def _lagging(work) -> tuple[float, float]:
    """Run ``work`` on this loop while a ticker asks for the loop every millisecond; returns how long the work
    took and the longest the ticker waited beyond its tick."""
    loop = asyncio.get_running_loop()
    lags = [0.0]
    running = True

    async def tick() -> None:
        while running:
            asked = loop.time()
            await asyncio.sleep(LAG_TICK)
            lags.append(loop.time() - asked - LAG_TICK)

    ticker = loop.create_task(tick())
    await asyncio.sleep(LAG_TICK)
    started = time.perf_counter()
    await work
    took = time.perf_counter() - started
    running = False
    await ticker
    return took, max(lags)


def _timed(broker, work) -> float:
    started = time.perf_counter()
    broker.run(work, timeout=120)
    return time.perf_counter() - started


def _measure_inside(cluster, master) -> dict[str, float]:
    """Medians of REPEATS, since a full garbage collection of the process (tens of milliseconds with this many
    objects) may fall into any one of them."""
    slave = cluster.broker(master.broker_name, 1)
    _timed(slave, slave.synchronize_from_master())  # settle: the slave holds everything the master has

    async def change_and_register() -> tuple[float, float]:
        config = master.topics.get(_topic(0))
        master.topics.update(replace(config))  # a new version: the table's body must be built again
        return await _lagging(master.register_broker_all())

    changed = [master.run(change_and_register(), timeout=120) for _ in range(REPEATS)]
    periodic = [master.run(_lagging(master.register_broker_all()), timeout=120) for _ in range(REPEATS)]
    sync = _timed(slave, slave.synchronize_from_master())
    unchanged = statistics.median(_timed(slave, slave.synchronize_from_master()) for _ in range(REPEATS))
    return {
        "sandbox_register_ms": statistics.median(took for took, _ in changed) * 1000,
        "sandbox_register_loop_lag_ms": statistics.median(lag for _, lag in changed) * 1000,
        "sandbox_register_unchanged_ms": statistics.median(took for took, _ in periodic) * 1000,
        "sandbox_register_unchanged_loop_lag_ms": statistics.median(lag for _, lag in periodic) * 1000,
        "sandbox_slave_sync_ms": sync * 1000,
        "sandbox_slave_sync_unchanged_ms": unchanged * 1000,
    }


# --- the client ----------------------------------------------------------------------------------------------------


async def _load(admin: AsyncMQAdmin, masters: list[str]) -> float:
    gate = asyncio.Semaphore(LOAD_CONCURRENCY)

    async def gated(call) -> None:
        async with gate:
            await call

    started = time.perf_counter()
    await asyncio.gather(
        *(
            gated(
                admin.create_and_update_topic_config(
                    addr, TopicConfig(topic_name=_topic(index), read_queue_nums=QUEUES, write_queue_nums=QUEUES)
                )
            )
            for index in range(TOPICS)
            for addr in masters
        ),
        *(
            gated(admin.create_and_update_subscription_group_config(addr, SubscriptionGroupConfig(_group(index))))
            for index in range(GROUPS)
            for addr in masters
        ),
    )
    return time.perf_counter() - started


def _cycle(namesrv: str, masters: list[str]) -> list[tuple[str, Callable[[], RemotingCommand]]]:
    """A collection cycle over SAMPLED topics, scaled down: (address, request maker) in the order it asks."""
    requests = []
    for index in range(SAMPLED):
        addr = masters[index % len(masters)]
        topic, group = _topic(index * (TOPICS // SAMPLED)), _group(index * (GROUPS // SAMPLED))
        requests += [
            (addr, _request(RequestCode.GET_TOPIC_STATS_INFO, h.GetTopicStatsInfoRequestHeader(topic=topic))),
            (addr, _stats_view("TOPIC_PUT_NUMS", topic)),
            (addr, _stats_view("GROUP_GET_NUMS", f"{topic}@{group}")),
            (addr, _request(RequestCode.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(consumer_group=group))),
            (namesrv, _request(RequestCode.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic=topic))),
        ]
        if index % RUNTIME_EVERY == 0:
            requests.append((addr, _request(RequestCode.GET_BROKER_RUNTIME_INFO)))
    whole = [(namesrv, _request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))]
    for addr in masters:
        whole += [
            (addr, _request(RequestCode.GET_ALL_TOPIC_CONFIG)),
            (addr, _request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)),
            (addr, _request(RequestCode.GET_BROKER_CONSUME_STATS, h.GetConsumeStatsInBrokerHeader())),
        ]
    spacing = len(requests) // len(whole)
    for position, request in enumerate(whole):
        requests.insert(position * spacing + position, request)
    return requests


def _stats_view(name: str, key: str) -> Callable[[], RemotingCommand]:
    return _request(
        RequestCode.VIEW_BROKER_STATS_DATA, h.ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
    )


async def _ask(admin: AsyncMQAdmin, addr: str, make: Callable[[], RemotingCommand]) -> float:
    """One request; its latency in seconds. A request the sandbox refuses would skew the figures, so it fails."""
    cmd = make()
    started = time.perf_counter()
    response = await admin.client.invoke(addr, cmd)
    took = time.perf_counter() - started
    if response.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"{RequestCode(cmd.code).name} to {addr} answered {response.code}: {response.remark}")
    return took


async def _throughput(admin: AsyncMQAdmin, requests: list) -> tuple[float, list[float]]:
    queue = iter(requests)
    latencies: list[float] = []

    async def worker() -> None:
        for addr, make in queue:
            latencies.append(await _ask(admin, addr, make))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return len(requests) / (time.perf_counter() - started), latencies


async def _singles(admin: AsyncMQAdmin, namesrv: str, master: str) -> dict[str, float]:
    late_topic, late_group = _topic(TOPICS - 1), _group(GROUPS - 1)
    kinds = {
        "topic_stats": (
            master,
            _request(RequestCode.GET_TOPIC_STATS_INFO, h.GetTopicStatsInfoRequestHeader(topic=late_topic)),
        ),
        "stats_view": (master, _stats_view("TOPIC_PUT_NUMS", late_topic)),
        "consume_stats": (
            master,
            _request(RequestCode.GET_CONSUME_STATS, h.GetConsumeStatsRequestHeader(consumer_group=late_group)),
        ),
        "runtime_info": (master, _request(RequestCode.GET_BROKER_RUNTIME_INFO)),
        "route": (namesrv, _request(RequestCode.GET_ROUTEINFO_BY_TOPIC, h.GetRouteInfoRequestHeader(topic=late_topic))),
        "all_topic_config": (master, _request(RequestCode.GET_ALL_TOPIC_CONFIG)),
        "all_group_config": (master, _request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)),
        "broker_consume_stats": (
            master,
            _request(RequestCode.GET_BROKER_CONSUME_STATS, h.GetConsumeStatsInBrokerHeader()),
        ),
        "topic_list": (namesrv, _request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)),
    }
    figures = {}
    for kind, (addr, make) in kinds.items():
        latencies = [await _ask(admin, addr, make) for _ in range(SINGLE_REPEATS)]
        figures[f"sandbox_{kind}_ms"] = statistics.median(latencies) * 1000
    return figures


async def _measure(server: subprocess.Popen, namesrv: str, masters: list[str]) -> dict[str, float]:
    admin = AsyncMQAdmin(namesrv, timeout=120, max_inflight=CONCURRENCY)
    try:
        figures = {"sandbox_load_seconds": await _load(admin, masters)}
        await asyncio.to_thread(_command, server, "traffic")
        inside = await asyncio.to_thread(_command, server, "measure")
        rps, latencies = await _throughput(admin, _cycle(namesrv, masters))
        figures.update(
            {
                "sandbox_admin_rps": rps,
                "sandbox_request_p50_ms": statistics.median(latencies) * 1000,
                "sandbox_request_p99_ms": _percentile(latencies, 0.99) * 1000,
            }
        )
        figures.update(await _singles(admin, namesrv, masters[0]))
        figures.update(inside)
        return figures
    finally:
        await admin.close()


def _command(server: subprocess.Popen, command: str) -> dict:
    server.stdin.write(command + "\n")
    server.stdin.flush()
    return json.loads(server.stdout.readline())


def run() -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.bench_sandbox", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(server.stdout.readline())
        return asyncio.run(_measure(server, started["namesrv"], started["masters"]))
    finally:
        server.stdin.close()
        server.wait(60)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    _serve()

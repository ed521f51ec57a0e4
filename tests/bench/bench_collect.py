"""Per-minute collection cycles of a large cluster: the sandbox of :mod:`tests.bench.bench_sandbox` (2 broker names,
master + slave each, 10,000 topics and 10,000 subscription groups, loaded over the wire by its ``_load``), in a
server process of its own.

The server fakes the traffic a collection reads, consistently: bench_sandbox's ``_fake_traffic`` counters (a put
of topic-i and a get of topic-i@group-i on each master) backed by a real stored message per topic and master,
which group-i has consumed (its offset committed, the broker's store counters moved). The brokers' stats are
sampled on a clock of the server's own, so each cycle sees windows in a known state.

The collector runs in a process of its own (``collect_peak_rss_mb`` is that process's peak), against a throwaway
database, four cycles a minute apart on its clock:

* ``collect_cycle_seconds`` / ``collect_requests``: the first cycle, with nothing remembered and every topic and
  group active in the last minute, so every stats key is asked on every master: the full cycle;
* ``collect_next_*``: the next minute, traffic over (the windows have emptied);
* ``collect_idle_*``: the minute after: every key proved idle, as most keys of a large cluster are at any moment;
  what remains is a request per group for its clients and the whole-table reads;
* ``collect_busy_*``: a minute with 1,000 of the topics and groups active again.

``sandbox_admin_rps`` (bench_sandbox) is how fast the sandbox answers; a cycle's requests divided by it is what the
sandbox alone needs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from monitor.remoting.admin import AsyncMQAdmin
from tests.bench.bench_sandbox import (
    BROKERS,
    CONCURRENCY,
    QUEUES,
    TOPICS,
    _command,
    _fake_traffic,
    _group,
    _load,
    _reply,
    _topic,
)

BUSY = 1_000
CYCLES = (("", "traffic"), ("next_", "age"), ("idle_", None), ("busy_", f"busy {BUSY}"))
SAMPLES_TO_EMPTY = 7  # a minute window keeps 7 samplings: after 7 more, it holds nothing from before


# --- the server process --------------------------------------------------------------------------------------------


def _serve() -> None:
    from monitor.sandbox.broker._common import now_ms
    from monitor.sandbox.cluster import SandboxCluster
    from monitor.sandbox.stats import DAY_SAMPLE_PERIOD_MS, MINUTE_SAMPLE_PERIOD_MS

    with SandboxCluster(brokers=BROKERS, slaves=True) as cluster:
        masters = [cluster.broker(name) for name in cluster.broker_names]
        clock = [now_ms() + DAY_SAMPLE_PERIOD_MS * 24]

        def sample(times: int = 1) -> None:
            for _ in range(times):
                clock[0] += MINUTE_SAMPLE_PERIOD_MS
                for broker in cluster.brokers.values():
                    broker.stats.tick(clock[0])

        for broker in cluster.brokers.values():  # anchor the brokers' samplers on the server's clock
            broker.stats.tick(clock[0])
        _reply({"namesrv": cluster.namesrv_addr, "masters": [master.addr for master in masters]})
        for line in sys.stdin:
            command, *args = line.split()
            if command == "traffic":
                for master in masters:
                    master.run(_fake_traffic(master), timeout=300)
                    master.run(_stored_and_consumed(master, range(TOPICS), counted=False), timeout=300)
                sample()
            elif command == "age":
                sample(SAMPLES_TO_EMPTY)
            elif command == "busy":
                for master in masters:
                    master.run(_stored_and_consumed(master, range(int(args[0])), counted=True), timeout=300)
                sample()
            else:
                break
            _reply({})


async def _stored_and_consumed(master, indexes: range, *, counted: bool) -> None:
    """A message stored for each topic (queue 0) and consumed by its group: the store, its counters and the
    group's offset move as real traffic moves them; ``counted`` adds the stats keys' counts too."""
    from monitor.sandbox.broker._common import InnerMessage

    for index in indexes:
        topic, group = _topic(index), _group(index)
        result = master.put_message(InnerMessage(topic=topic, queue_id=0, body=b"bench"))
        master.store_stats.record_get(True, 1, 0)
        master.offsets.commit(group, topic, 0, master.store.max_offset(topic, 0))
        for queue_id in range(1, QUEUES):
            master.offsets.commit(group, topic, queue_id, 0)
        if counted:
            master.stats.inc_topic_put_nums(topic)
            master.stats.inc_topic_put_size(topic, result.wrote_bytes)
            master.stats.inc_group_get_nums(group, topic, 1)
            master.stats.inc_group_get_size(group, topic, result.wrote_bytes)


# --- the collector process -----------------------------------------------------------------------------------------


def _collect(namesrv: str) -> None:
    """Register the cluster in a throwaway database and run the cycles, asking the server (on stdin/stdout, through
    the parent) for each cycle's traffic first."""
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment
    from django.utils import timezone

    from monitor.collect.traffic import collect_cluster
    from portal.models import Cluster, NameServer
    from portal.services.cluster_ops import discover_brokers

    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            cluster = Cluster.objects.create(name="bench")
            NameServer.objects.create(cluster=cluster, address=namesrv)
            discover_brokers(cluster)
            figures: dict[str, float] = {}
            start = timezone.now().replace(second=0, microsecond=0)
            for minute, (prefix, traffic) in enumerate(CYCLES):
                if traffic:
                    print(f"SERVER {traffic}", flush=True)
                    sys.stdin.readline()
                started = time.perf_counter()
                report = collect_cluster(cluster, now=start + dt.timedelta(minutes=minute))
                figures[f"collect_{prefix}cycle_seconds"] = time.perf_counter() - started
                figures[f"collect_{prefix}requests"] = report.requests
                if report.brokers_down:
                    raise RuntimeError(f"brokers down during the benchmark: {report.brokers_down}")
            figures["collect_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print("RESULT " + json.dumps(figures), flush=True)
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()


# --- the parent ----------------------------------------------------------------------------------------------------


async def _prepare(namesrv: str, masters: list[str]) -> None:
    admin = AsyncMQAdmin(namesrv, timeout=120, max_inflight=CONCURRENCY)
    try:
        await _load(admin, masters)
    finally:
        await admin.close()


def run() -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.bench_collect", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(server.stdout.readline())
        asyncio.run(_prepare(started["namesrv"], started["masters"]))
        collector = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.bench_collect", "collect", started["namesrv"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            for line in collector.stdout:
                if line.startswith("SERVER "):
                    _command(server, line[len("SERVER ") :].strip())
                    collector.stdin.write("\n")
                    collector.stdin.flush()
                elif line.startswith("RESULT "):
                    return json.loads(line[len("RESULT ") :])
            raise RuntimeError("the collector ended without a result")
        finally:
            collector.stdin.close()
            collector.wait(60)
    finally:
        server.stdin.close()
        server.wait(60)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        _serve()
    elif sys.argv[1:2] == ["collect"]:
        import os

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
        _collect(sys.argv[2])

"""One per-minute collection cycle of a large cluster: the sandbox of :mod:`tests.bench.bench_sandbox` (2 broker
names, master + slave each, 10,000 topics and 10,000 subscription groups, in a server process of its own, with a
TOPIC_PUT_NUMS and a GROUP_GET_NUMS key faked for every topic and its group, and the groups' offsets committed).

The collector runs in a process of its own too (``collect_peak_rss_mb`` is that process's peak), against a
throwaway database, three cycles a minute apart on its clock:

* ``collect_cycle_seconds`` / ``collect_requests``: the first cycle, with nothing remembered, so every stats key
  of every topic and group is asked, on every broker: the full cycle;
* ``collect_warm_*``: the next minute, when the keys the brokers said do not exist are remembered;
* ``collect_steady_*``: the minute after, when every key whose counters have not moved since is proved idle,
  which is most of a large cluster at any moment; what remains is a request per group for its clients and the
  whole-table reads.

``sandbox_admin_rps`` (bench_sandbox) is how fast the sandbox itself answers; the requests of a cycle divided by
it is what the sandbox alone needs, whatever the collector does.
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
from tests.bench.bench_sandbox import CONCURRENCY, _command, _load

CYCLES = ("", "warm_", "steady_")


def _collect(namesrv: str) -> dict[str, float]:
    """In the collector's process: register the cluster in a throwaway database and run the cycles."""
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
            for minute, prefix in enumerate(CYCLES):
                started = time.perf_counter()
                report = collect_cluster(cluster, now=start + dt.timedelta(minutes=minute))
                figures[f"collect_{prefix}cycle_seconds"] = time.perf_counter() - started
                figures[f"collect_{prefix}requests"] = report.requests
                figures[f"collect_{prefix}rows"] = report.rows
                if report.brokers_down:
                    raise RuntimeError(f"brokers down during the benchmark: {report.brokers_down}")
            figures["collect_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            return figures
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()


async def _prepare(server: subprocess.Popen, namesrv: str, masters: list[str]) -> None:
    admin = AsyncMQAdmin(namesrv, timeout=120, max_inflight=CONCURRENCY)
    try:
        await _load(admin, masters)
    finally:
        await admin.close()
    await asyncio.to_thread(_command, server, "traffic")


def run() -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.bench_sandbox", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(server.stdout.readline())
        asyncio.run(_prepare(server, started["namesrv"], started["masters"]))
        collector = subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_collect", "collect", started["namesrv"]],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        return json.loads(collector.stdout.strip().splitlines()[-1])
    finally:
        server.stdin.close()
        server.wait(60)


if __name__ == "__main__" and sys.argv[1:2] == ["collect"]:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    print(json.dumps(_collect(sys.argv[2])), flush=True)

"""Message search over the wire against a sandbox broker holding 1,000,000 messages.

The broker runs in a process of its own (this module run with ``serve``), as in bench_sandbox, so the client does
not share its GIL. Its store is filled directly (MessageStore.put_message, as the broker's SEND path stores them):
one topic of QUEUES queues, one message every 10 ms of store time (so 1,000,000 span about 2 h 47 min), each with
its own UNIQ_KEY and KEYS; every hundredth message carries the key searched for, 10,000 in all, about one a second.

``msg_query_key_ms``: monitor.messages.search.by_key finding all 10,000 messages of the key (the best of REPEATS;
a broker answers at most 64 per QUERY_MESSAGE, so this is about 160 answers of 64 plus the slicing).
``msg_scan_per_s``: monitor.messages.search.by_time_range over SCAN_WINDOW_MS of the topic (all queues), messages
found per second of wall time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

MESSAGES = 1_000_000
KEY_EVERY = 100
QUEUES = 8
STEP_MS = 10
SCAN_WINDOW_MS = 2_000_000  # 200,000 messages
REPEATS = 3
TOPIC = "BenchSearch"
KEY = "BENCH-KEY"


def _serve() -> None:
    from monitor.remoting import body as b
    from monitor.remoting.admin import MQAdmin
    from monitor.sandbox.cluster import SandboxCluster
    from monitor.sandbox.store.properties import java_properties_string
    from tests.support.waiting import wait_for

    with SandboxCluster(brokers=1, store_max_bytes=2 * 1024**3) as cluster:
        broker = cluster.broker()
        with MQAdmin(cluster.namesrv_addr) as admin:
            config = b.TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
            admin.create_and_update_topic_config(broker.addr, config)
            wait_for(lambda: admin.examine_topic_route_info(TOPIC).queue_datas, 30, "route")
        base = int(time.time() * 1000) - MESSAGES * STEP_MS - 60_000
        started = time.monotonic()
        for n in range(MESSAGES):
            keys = KEY if n % KEY_EVERY == 0 else f"order-{n}"
            properties = java_properties_string({"KEYS": keys, "UNIQ_KEY": f"{n:032X}", "TAGS": "TagA"})
            stamp = base + n * STEP_MS
            broker.store.put_message(
                TOPIC, n % QUEUES, b"x" * 100, properties, 0, 0, stamp, "127.0.0.1:5555", store_timestamp=stamp
            )
        _reply({"namesrv": cluster.namesrv_addr, "base": base, "fill_seconds": time.monotonic() - started})
        sys.stdin.readline()


def _reply(answer: dict) -> None:
    print(json.dumps(answer), flush=True)


def _measure(namesrv: str, base: int) -> dict[str, float]:
    from monitor.messages import search
    from monitor.remoting.admin import MQAdmin

    figures: dict[str, float] = {}
    with MQAdmin(namesrv, timeout=30.0) as admin:
        timings = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            found = sum(1 for _ in search.by_key(admin, TOPIC, KEY))
            timings.append(time.perf_counter() - started)
            if found != MESSAGES // KEY_EVERY:
                raise AssertionError(f"by_key found {found} of {MESSAGES // KEY_EVERY}")
        figures["msg_query_key_ms"] = min(timings) * 1000
        begin = base + (MESSAGES * STEP_MS) // 2
        started = time.perf_counter()
        scanned = sum(1 for _ in search.by_time_range(admin, TOPIC, begin, begin + SCAN_WINDOW_MS - 1))
        figures["msg_scan_per_s"] = scanned / (time.perf_counter() - started)
        if scanned != SCAN_WINDOW_MS // STEP_MS:
            raise AssertionError(f"by_time_range found {scanned} of {SCAN_WINDOW_MS // STEP_MS}")
    return figures


def run() -> dict[str, float]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.bench_messages", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(server.stdout.readline())
        return _measure(started["namesrv"], started["base"])
    finally:
        server.stdin.close()
        server.wait(60)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    _serve()

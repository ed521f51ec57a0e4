"""What message trace costs a sending application: sync-send throughput of an SDK producer whose topic is traced
against one whose topic is not, in the same run on the same sandbox cluster, in alternating rounds so both see the
same load on this shared machine (``trace_overhead_pct``: how much lower the traced producer's sends per second
are; the goal is below 5). The traced producer's records are written to a trace topic of the sandbox by its
dispatcher thread as they would be in production (packed, every half second), in the same process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import TopicConfig
from monitor.sandbox.cluster import SandboxCluster
from monitor.sdk import Message, Producer

TOPIC = "BenchTraceTopic"
TRACE_TOPIC = "BenchTraceRecords"
ROUNDS = 20
PER_ROUND = 100


def _send(producer: Producer, n: int) -> float:
    """Seconds ``n`` sync sends take."""
    started = time.perf_counter()
    for i in range(n):
        message = Message(TOPIC)
        message.set_keys(f"order-{i}")
        message.set_tags("TagA")
        message.set_body(f"bench {i}")
        producer.send_sync(message)
    return time.perf_counter() - started


def _measure() -> tuple[float, float, int]:
    with SandboxCluster(brokers=2) as sandbox:
        with MQAdmin(sandbox.namesrv_addr) as admin:
            for name in sandbox.broker_names:
                for topic in (TOPIC, TRACE_TOPIC):
                    admin.create_and_update_topic_config(sandbox.broker(name).addr, TopicConfig(topic_name=topic))
        plain = Producer("bench_untraced")
        traced = Producer("bench_traced", trace=[TOPIC], trace_topic=TRACE_TOPIC)
        for producer in (plain, traced):
            producer.set_namesrv_addr(sandbox.namesrv_addr)
            producer.start()
        dispatcher = traced.tracing.dispatcher
        try:
            _send(plain, 50)  # routes, connections
            _send(traced, 50)
            seconds = {"plain": 0.0, "traced": 0.0}
            for n in range(ROUNDS):
                order = [("plain", plain), ("traced", traced)] if n % 2 else [("traced", traced), ("plain", plain)]
                for name, producer in order:
                    seconds[name] += _send(producer, PER_ROUND)
        finally:
            plain.shutdown()
            traced.shutdown()  # writes what is still buffered
        written = dispatcher.written
    sends = ROUNDS * PER_ROUND
    return sends / seconds["plain"], sends / seconds["traced"], written


def run() -> dict[str, float]:
    home = Path(__file__).resolve().parents[2] / "var" / "bench-sdk-home"
    home.mkdir(parents=True, exist_ok=True)
    previous_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # the C++ client logs under $HOME/logs
    try:
        plain, traced, written = _measure()
    finally:
        if previous_home is not None:
            os.environ["HOME"] = previous_home
    return {
        "trace_untraced_sends_per_s": plain,
        "trace_traced_sends_per_s": traced,
        "trace_records_written": float(written),
        "trace_overhead_pct": (plain - traced) / plain * 100,
    }

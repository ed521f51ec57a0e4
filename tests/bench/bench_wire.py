"""Wire client throughput: many concurrent admin requests over one connection, against the same requests made
one at a time. The responder runs in its own process and answers with the captured GET_CONSUME_STATS frame, so
each request includes decoding a real fastjson body with MessageQueue object keys."""

import asyncio
import statistics
import subprocess
import sys
import time

from monitor.remoting.admin import AsyncMQAdmin

REQUESTS = 5000
CONCURRENCY = 200
SEQUENTIAL = 1000


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(addr: str) -> dict[str, float]:
    admin = AsyncMQAdmin([], max_inflight=CONCURRENCY, timeout=30)
    await admin.get_consume_stats(addr, "cg_test")  # connect and warm up

    latencies: list[float] = []

    async def one():
        started = time.perf_counter()
        await admin.get_consume_stats(addr, "cg_test")
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    for batch in range(0, REQUESTS, CONCURRENCY):
        await asyncio.gather(*(one() for _ in range(min(CONCURRENCY, REQUESTS - batch))))
    pipelined_seconds = time.perf_counter() - started
    pipelined = latencies[:]

    latencies.clear()
    started = time.perf_counter()
    for _ in range(SEQUENTIAL):
        await one()
    sequential_seconds = time.perf_counter() - started
    await admin.close()
    return {
        "wire_pipelined_rps": REQUESTS / pipelined_seconds,
        "wire_p50_ms": statistics.median(pipelined) * 1000,
        "wire_p99_ms": _percentile(pipelined, 0.99) * 1000,
        "wire_sequential_rps": SEQUENTIAL / sequential_seconds,
        "wire_sequential_p50_ms": statistics.median(latencies) * 1000,
        "wire_sequential_p99_ms": _percentile(latencies, 0.99) * 1000,
    }


def run() -> dict[str, float]:
    server = subprocess.Popen([sys.executable, "-m", "tests.responder", "0"], stdout=subprocess.PIPE, text=True)
    try:
        addr = server.stdout.readline().strip()
        return asyncio.run(_measure(addr))
    finally:
        server.terminate()
        server.wait(10)

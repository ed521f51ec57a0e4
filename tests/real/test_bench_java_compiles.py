"""The Java side of the ``real_admin`` benchmark (tests/bench/java/AdminBench.java) against the pinned 4.9.4 tools.

The benchmark runs only when someone asks for it; this test keeps it from rotting meanwhile: the source compiles
against the release's jars, and a very short run of its mix against the session's real broker makes every call
without an error and reports a positive rate.
"""

import asyncio

import pytest

from tests.bench.bench_real_admin import compile_admin_bench, java_client, prepare, write_mix

# The session's cluster may be started for this test, which takes minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_admin_bench_compiles_and_measures_a_real_broker(rocketmq4, tmp_path):
    classes = compile_admin_bench(rocketmq4.release)
    compiled = (classes / "AdminBench.class").stat().st_mtime_ns
    assert compile_admin_bench(rocketmq4.release) == classes  # cached by source hash: no second javac
    assert (classes / "AdminBench.class").stat().st_mtime_ns == compiled

    calls = asyncio.run(prepare(rocketmq4.namesrv_addr, rocketmq4.broker("broker-a").addr, prefix="javabench"))
    mix_file = write_mix(calls, tmp_path / "admin-bench.mix")
    with java_client(
        classes, rocketmq4.release, rocketmq4.home, rocketmq4.namesrv_addr, mix_file, tmp_path / "admin-bench.log"
    ) as java:
        measured = java.wait_ready().run(2 * len(calls), 4)  # every call of the mix twice; any failure raises
    assert measured.requests == 2 * len(calls)
    assert measured.rps > 0
    assert measured.cpu_seconds > 0

"""This project's admin client against RocketMQ's own, side by side in one run, on the same real 4.9.4 broker.

Why: the collectors read a cluster through :class:`monitor.remoting.admin.AsyncMQAdmin`; the question this answers
is whether that costs anything against what the Java tools do (``DefaultMQAdminExt`` of rocketmq-tools 4.9.4, the
client mqadmin and the original MQCloud use), and how close either gets to what the broker itself can answer.

Setup: a real name server and broker-a master (:class:`monitor.launcher.cluster.RealCluster`) holding TOPICS topics
of QUEUES queues and as many subscription groups (with their retry topics), group ``i`` having consumed a message
from each queue of topic ``i`` (sent, pulled and committed over the wire), so every stats key and offset table the
calls read exists and holds something. The mix is what a collection asks, in the Java method names: per topic,
``examineTopicStats`` (the route from the name server, then GET_TOPIC_STATS_INFO from the master),
``viewBrokerStatsData`` TOPIC_PUT_NUMS topic and GROUP_GET_NUMS topic@group, and ``examineConsumeStats`` (the route
of the group's retry topic, then GET_CONSUME_STATS), and once a round ``fetchBrokerRuntimeStats``. A "request" is
one such call, decoded by the client that made it (the two examine calls are two round trips each).

The Java side is tests/bench/java/AdminBench.java, compiled by javac against the release's jars into
var/bench/java/ (once per source and release) and run as one JVM for the whole benchmark, driven on stdin; it
reads the mix from a file this module writes, so both sides make the same calls in the same order. Both sides use
the same model: REQUESTS calls of the mix, at most CONCURRENCY in flight, each worker taking the next call when its
last one answered: CONCURRENCY threads over one DefaultMQAdminExt (its API is synchronous), CONCURRENCY coroutines
over one AsyncMQAdmin (one connection per address). CONCURRENCY is the collector's own bound per broker
(COLLECT_CONCURRENCY_PER_BROKER). Each side is first warmed up (the JVM's JIT compiles the hot paths; the Python
side opens its connections) in rounds until its rate settles; REQUESTS is then sized from the warmed-up rates to
take about TARGET_SECONDS on the slower side, in whole rounds of the mix.

Figures (medians of REPEATS measurements, the two sides alternating so that the machine's load drifts over both):

* ``wire_admin_rps`` / ``java_admin_rps``: requests per second of each side at ``admin_concurrency``;
* ``wire_vs_java_admin_ratio``: the first divided by the second (above 1: this project's client is faster);
* ``real_broker_admin_rps``: the broker's own limit for the mix, i.e. the highest rate any client reached against
  it in this run. Besides the two figures above, three saturating loads are measured (medians of LIMIT_REPEATS):
  the Java client with HIGH_FACTOR times as many threads (``java_admin_high_rps``), this project's client over
  HIGH_FACTOR connections with CONCURRENCY in flight on each (``wire_admin_high_rps``), and both of these at once
  (``both_admin_high_rps``: all their requests over the wall time from the first request sent to the last answer,
  each side's share sized from its own rate so they finish together). The highest of the five is the figure, and
  ``real_broker_admin_limit_by`` names the load that reached it. On a machine where the clients share the CPU
  with the broker (as here) this is a lower bound of what the broker answers with the CPU to itself.

``machine_load_avg`` is the higher of the 1-minute load averages before and after: the figures are noise when it
is well above the core count. The Java client spreads its work over threads (callers, Netty's I/O thread) and so
over every core it can get; this project's client runs on one thread. On a machine busy with other work that
difference weighs more, and the ratio measured there comes out lower than on a quiet one.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import select
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from monitor.launcher.cluster import RealCluster
from monitor.launcher.process import JAVA_OPENS
from monitor.launcher.releases import Release, var_dir
from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin import DEFAULT_TOPIC, AsyncMQAdmin, retry_topic
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import RemotingError

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "AdminBench.java"
JAVA_MAIN = "AdminBench"
TOPICS = 4
QUEUES = 4
HIGH_FACTOR = 4
REPEATS = 5
LIMIT_REPEATS = 3
TARGET_SECONDS = 1.5
MIN_REQUESTS = 500
WARMUP_REQUESTS = 1500
WARMUP_ROUNDS = (2, 6)  # at least, at most
WARMUP_SETTLED = 0.10  # a round within 10 % of the one before: the rate has settled
TIMEOUT = 30.0  # seconds, per call on both sides (the machine may be loaded)
START_TIMEOUT = 90.0
SETTLE_TIMEOUT = 30.0

# One call of the mix: (Java method name as the mix file spells it, its arguments).
Call = tuple[str, ...]


# --- the mix -------------------------------------------------------------------------------------------------------


def topic_name(prefix: str, index: int) -> str:
    return f"{prefix}_topic_{index}"


def group_name(prefix: str, index: int) -> str:
    return f"{prefix}_group_{index}"


def mix(prefix: str, broker_addr: str) -> list[Call]:
    """One round of the collector-like mix over the TOPICS topics and their groups."""
    calls: list[Call] = []
    for index in range(TOPICS):
        topic, group = topic_name(prefix, index), group_name(prefix, index)
        calls += [
            ("topicStats", topic),
            ("statsData", broker_addr, "TOPIC_PUT_NUMS", topic),
            ("statsData", broker_addr, "GROUP_GET_NUMS", f"{topic}@{group}"),
            ("consumeStats", group),
        ]
    calls.append(("runtime", broker_addr))
    return calls


def write_mix(calls: list[Call], path: Path) -> Path:
    path.write_text("".join("\t".join(call) + "\n" for call in calls))
    return path


def _wire_call(admin: AsyncMQAdmin, call: Call) -> Awaitable:
    kind, *args = call
    if kind == "topicStats":
        return admin.examine_topic_stats(*args)
    if kind == "statsData":
        return admin.view_broker_stats_data(*args)
    if kind == "consumeStats":
        return admin.examine_consume_stats(*args)
    if kind == "runtime":
        return admin.fetch_broker_runtime_stats(*args)
    raise ValueError(f"unknown call {call}")


async def prepare(namesrv_addr: str, broker_addr: str, prefix: str) -> list[Call]:
    """Create the topics, groups and traffic the mix reads on the master at ``broker_addr``; returns the mix, each
    call of it made once to prove it answers."""
    admin = AsyncMQAdmin(namesrv_addr, timeout=TIMEOUT)
    try:
        for index in range(TOPICS):
            topic, group = topic_name(prefix, index), group_name(prefix, index)
            config = b.TopicConfig(topic_name=topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
            await admin.create_and_update_topic_config(broker_addr, config)
            retry = b.TopicConfig(topic_name=retry_topic(group), read_queue_nums=1, write_queue_nums=1)
            await admin.create_and_update_topic_config(broker_addr, retry)
            await admin.create_and_update_subscription_group_config(broker_addr, b.SubscriptionGroupConfig(group))
            for queue_id in range(QUEUES):
                await _send(admin, broker_addr, topic, queue_id)
                consumed = await _pull(admin, broker_addr, topic, queue_id, group)
                await admin.update_consumer_offset(broker_addr, group, topic, queue_id, consumed)
        calls = mix(prefix, broker_addr)
        for call in calls:
            await _until_answered(admin, call)
        return calls
    finally:
        await admin.close()


async def _send(admin: AsyncMQAdmin, broker_addr: str, topic: str, queue_id: int) -> None:
    """One message, as a producer sends it (SEND_MESSAGE): the broker counts it under TOPIC_PUT_NUMS topic. A busy
    broker refuses a send that waited too long in its queue (SYSTEM_BUSY); producers retry that, and so does this."""
    header = h.SendMessageRequestHeader(
        producer_group="bench_real_admin_producer",
        topic=topic,
        default_topic=DEFAULT_TOPIC,
        default_topic_queue_nums=QUEUES,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="WAIT\x01true\x02",
        reconsume_times=0,
    )
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"bench")
        try:
            await admin.call(broker_addr, request)
            return
        except RemotingError as exc:  # SYSTEM_BUSY: the loaded broker's flow control; producers retry it too
            if exc.code != ResponseCode.SYSTEM_BUSY or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


async def _pull(admin: AsyncMQAdmin, broker_addr: str, topic: str, queue_id: int, group: str) -> int:
    """Pull the queue's message as ``group`` (GROUP_GET_NUMS topic@group counts it); the offset after it. The
    broker indexes a stored message a moment after the send answered, so until then the queue looks empty."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        pulled = await admin.pull_message(broker_addr, topic, queue_id, 0, group=group)
        if pulled.messages:
            return pulled.next_begin_offset
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic} queue {queue_id}: pulled {pulled.status.name} for {SETTLE_TIMEOUT:.0f} s")
        await asyncio.sleep(0.05)


async def _until_answered(admin: AsyncMQAdmin, call: Call) -> None:
    """Make ``call`` until it succeeds. Right after the setup it may not yet: the name server learns a new topic's
    route a moment after the broker created it, and a broker that started a moment ago fails
    GET_BROKER_RUNTIME_INFO (SYSTEM_ERROR NoSuchElementException) until its store statistics took their first
    sample, one second after the start."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        try:
            await _wire_call(admin, call)
            return
        except RemotingError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


# --- this project's side -------------------------------------------------------------------------------------------


async def wire_rate(admins: list[AsyncMQAdmin], calls: list[Call], requests: int, per_admin: int) -> float:
    """``requests`` calls of the mix, ``per_admin`` at a time on each admin (each its own connections)."""
    index = itertools.count()

    async def worker(admin: AsyncMQAdmin) -> None:
        while (k := next(index)) < requests:
            await _wire_call(admin, calls[k % len(calls)])

    started = time.perf_counter()
    await asyncio.gather(*(worker(admin) for admin in admins for _ in range(per_admin)))
    return requests / (time.perf_counter() - started)


# --- the Java side -------------------------------------------------------------------------------------------------


def compile_admin_bench(release: Release) -> Path:
    """AdminBench.class compiled against ``release``'s jars, in var/bench/java/<hash of source and release>/: once,
    then reused until the source changes. The folder appears whole (compiled aside, then renamed)."""
    source = JAVA_SOURCE.read_bytes()
    digest = hashlib.sha256(source + release.version.encode()).hexdigest()[:16]
    root = var_dir() / "bench" / "java"
    target = root / f"{JAVA_MAIN}-{release.version}-{digest}"
    if (target / f"{JAVA_MAIN}.class").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="javac.", dir=root))
    try:
        done = subprocess.run(
            ["javac", "-encoding", "UTF-8", "-d", str(staging), "-cp", release.classpath, str(JAVA_SOURCE)],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"javac failed on {JAVA_SOURCE}:\n{done.stdout}{done.stderr}")
        try:
            staging.rename(target)
        except OSError:  # another run compiled the same source meanwhile: theirs is as good
            if not (target / f"{JAVA_MAIN}.class").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


class JavaAdminBench:
    """The AdminBench JVM: started on a mix file, answering ``run`` commands with its measured rate."""

    def __init__(self, classes: Path, release: Release, home: Path, namesrv_addr: str, mix_file: Path, log: Path):
        self.log = log
        command = [
            "java",
            "-Xms256m",
            "-Xmx512m",
            "-XX:-UsePerfData",
            f"-Duser.home={log.parent}",
            f"-Drocketmq.client.logRoot={log.parent / 'logs'}",
            *JAVA_OPENS,
            "-cp",
            f"{release.classpath}{os.pathsep}{classes}",
            JAVA_MAIN,
            namesrv_addr,
            str(mix_file),
        ]
        with open(log, "ab") as stderr:
            self.popen = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, "ROCKETMQ_HOME": str(home)},
                start_new_session=True,
            )
        self._buffer = b""
        answer = self._answer(time.monotonic() + START_TIMEOUT)
        if answer != "ready":
            self.close()
            raise RuntimeError(f"AdminBench did not start: {answer}\n{self._log_tail()}")

    def send(self, requests: int, threads: int) -> None:
        """Start a measurement without waiting for it (see :meth:`result`)."""
        self.popen.stdin.write(f"run {requests} {threads}\n".encode())
        self.popen.stdin.flush()

    def result(self, timeout: float) -> float:
        """The rate of the measurement :meth:`send` started; any failed call fails the benchmark."""
        answer = self._answer(time.monotonic() + timeout)
        fields = dict(word.split("=", 1) for word in answer.split()[1:] if "=" in word)
        if not answer.startswith("result ") or fields.get("errors") != "0":
            raise RuntimeError(f"AdminBench: {answer}")
        return float(fields["rps"])

    def run(self, requests: int, threads: int) -> float:
        self.send(requests, threads)
        return self.result(timeout=requests * TIMEOUT / threads + TIMEOUT)

    def _answer(self, deadline: float) -> str:
        """The next line on the JVM's stdout, waited for until ``deadline`` (select on the pipe, no sleeping)."""
        fd = self.popen.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"AdminBench did not answer in time\n{self._log_tail()}")
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"AdminBench exited ({self.popen.poll()})\n{self._log_tail()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode().strip()

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        """``quit``, then the end of stdin; SIGKILL if the JVM is still there after a grace period."""
        if self.popen.poll() is None:
            try:
                self.popen.stdin.write(b"quit\n")
                self.popen.stdin.close()
            except OSError:
                pass  # already gone: nothing to tell it
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.popen.stdout.close()

    def __enter__(self) -> JavaAdminBench:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- the measurement -----------------------------------------------------------------------------------------------


async def _warm(measure: Callable[[int], Awaitable[float]]) -> float:
    """Rounds of WARMUP_REQUESTS until the rate settles; the last round's rate."""
    rates: list[float] = []
    low, high = WARMUP_ROUNDS
    while len(rates) < high:
        rates.append(await measure(WARMUP_REQUESTS))
        if len(rates) >= low and abs(rates[-1] - rates[-2]) <= WARMUP_SETTLED * rates[-2]:
            break
    return rates[-1]


def _whole_rounds(requests: float, calls: list[Call]) -> int:
    rounds = max(1, round(max(requests, MIN_REQUESTS) / len(calls)))
    return rounds * len(calls)


async def _measure(cluster: RealCluster, classes: Path, concurrency: int) -> dict[str, float | int | str]:
    broker_addr = cluster.broker("broker-a").addr
    calls = await prepare(cluster.namesrv_addr, broker_addr, prefix="bench")
    mix_file = write_mix(calls, cluster.workdir / "admin-bench.mix")
    high = concurrency * HIGH_FACTOR
    wire = AsyncMQAdmin(cluster.namesrv_addr, timeout=TIMEOUT, max_inflight=concurrency)
    wires = [AsyncMQAdmin(cluster.namesrv_addr, timeout=TIMEOUT, max_inflight=concurrency) for _ in range(HIGH_FACTOR)]
    java = JavaAdminBench(
        classes, cluster.release, cluster.home, cluster.namesrv_addr, mix_file, cluster.workdir / "admin-bench.log"
    )
    try:

        async def java_at(requests: int, threads: int = concurrency) -> float:
            return java.run(requests, threads)  # blocks the loop, which has nothing else to do meanwhile

        async def wire_at(requests: int, admins: list[AsyncMQAdmin] | None = None) -> float:
            return await wire_rate(admins or [wire], calls, requests, concurrency)

        # Warm-up, each side alone, then REQUESTS from the slower side's warmed-up rate.
        java_warm = await _warm(java_at)
        wire_warm = await _warm(wire_at)
        await java_at(WARMUP_REQUESTS, high)  # the high loads once, unmeasured
        await wire_at(WARMUP_REQUESTS, wires)  # (and the extra connections opened)
        requests = _whole_rounds(min(java_warm, wire_warm) * TARGET_SECONDS, calls)

        java_fair, wire_fair = [], []
        for repeat in range(REPEATS):  # alternating which side goes first
            if repeat % 2 == 0:
                java_fair.append(await java_at(requests))
                wire_fair.append(await wire_at(requests))
            else:
                wire_fair.append(await wire_at(requests))
                java_fair.append(await java_at(requests))

        java_high, wire_high, both = [], [], []
        for _ in range(LIMIT_REPEATS):
            java_high.append(await java_at(requests, high))
            wire_high.append(await wire_at(requests, wires))
        java_high_rps, wire_high_rps = statistics.median(java_high), statistics.median(wire_high)
        java_share = _whole_rounds(requests * java_high_rps / (java_high_rps + wire_high_rps), calls)
        wire_share = _whole_rounds(requests * wire_high_rps / (java_high_rps + wire_high_rps), calls)
        for _ in range(LIMIT_REPEATS):
            started = time.perf_counter()
            java.send(java_share, high)
            await wire_at(wire_share, wires)
            java.result(timeout=java_share * TIMEOUT / high + TIMEOUT)
            both.append((java_share + wire_share) / (time.perf_counter() - started))
    finally:
        java.close()
        for admin in (wire, *wires):
            await admin.close()

    java_rps, wire_rps = statistics.median(java_fair), statistics.median(wire_fair)
    loads = {
        f"java/{concurrency}": java_rps,
        f"wire/{concurrency}": wire_rps,
        f"java/{high}": java_high_rps,
        f"wire/{HIGH_FACTOR}x{concurrency}": wire_high_rps,
        f"java/{high}+wire/{HIGH_FACTOR}x{concurrency}": statistics.median(both),
    }
    limit_by = max(loads, key=loads.get)
    return {
        "wire_vs_java_admin_ratio": wire_rps / java_rps,
        "wire_admin_rps": wire_rps,
        "java_admin_rps": java_rps,
        "admin_concurrency": concurrency,
        "admin_requests_per_measurement": requests,
        "admin_mix_calls": len(calls),
        "java_admin_high_rps": java_high_rps,
        "wire_admin_high_rps": wire_high_rps,
        "both_admin_high_rps": statistics.median(both),
        "admin_high_concurrency": high,
        "real_broker_admin_rps": loads[limit_by],
        "real_broker_admin_limit_by": limit_by,
    }


def run() -> dict[str, float | int | str]:
    from django.conf import settings

    load_before = os.getloadavg()[0]
    with RealCluster("4", brokers=1, slaves=False) as cluster:
        classes = compile_admin_bench(cluster.release)
        figures = asyncio.run(_measure(cluster, classes, settings.COLLECT_CONCURRENCY_PER_BROKER))
    figures["machine_load_avg"] = max(load_before, os.getloadavg()[0])
    return figures

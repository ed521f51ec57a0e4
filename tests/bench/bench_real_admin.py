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

Each side is a process of its own in a session of its own, started once for the whole benchmark and driven on
stdin with the same protocol (:class:`ClientProcess`), so neither shares its CPU share with the driver: the Java
side is tests/bench/java/AdminBench.java, compiled by javac against the release's jars into var/bench/java/ (once
per source and release); the Python side is this module run with ``wire``. Both read the mix from a file this
module writes, so they make the same calls in the same order, and both use the same model: REQUESTS calls of the
mix, at most CONCURRENCY in flight, each worker taking the next call when its last one answered: CONCURRENCY
threads over one DefaultMQAdminExt (its API is synchronous), CONCURRENCY coroutines over one AsyncMQAdmin (one
connection per address). CONCURRENCY is the collector's own bound per broker (COLLECT_CONCURRENCY_PER_BROKER).
Before any round is timed each side has connected and made every call of the mix once (before it says ``ready``),
then it is warmed up in rounds until the CPU it spends per call stops falling (for the JVM, whose JIT needs tens of
thousands of calls, not before JIT_WARMUP_CALLS; see :func:`_warm`); REQUESTS is then sized from the warmed-up
rates to take about TARGET_SECONDS on the slower side, in whole rounds of the mix.

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

``wire_admin_cpu_ms_per_call`` / ``java_admin_cpu_ms_per_call`` (and ``wire_vs_java_cpu_per_call_ratio``) are the
CPU time each client's whole process spent per call in those same measurements (Python: the process's CPU time;
Java: the JVM's, its JIT compiler and garbage collector included): what each client costs, a figure that depends
far less on how busy the machine is than the rates do. ``java_warmup_calls`` / ``wire_warmup_calls`` are the calls
each warm-up took (a Java figure below JIT_WARMUP_CALLS means WARMUP_SECONDS ran out first: a colder JVM).

``machine_load_avg`` is the higher of the 1-minute load averages before and after. When it is well above the core
count the rates are noise, and the rate ratio says more about how the scheduler serves a one-thread event loop
against a JVM of dozens of threads than about the clients; the CPU figures remain comparable.
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
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

from monitor.launcher.cluster import RealCluster
from monitor.launcher.process import JAVA_OPENS
from monitor.launcher.releases import Release, var_dir
from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin import DEFAULT_TOPIC, AsyncMQAdmin, retry_topic
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import RemotingClientError, RemotingError

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "AdminBench.java"
JAVA_MAIN = "AdminBench"
TOPICS = 4
QUEUES = 4
HIGH_FACTOR = 4
REPEATS = 7
LIMIT_REPEATS = 3
TARGET_SECONDS = 1.5
MIN_REQUESTS = 500
WARMUP_ROUND = 2_000  # calls
WARMUP_SETTLED = 0.10  # CPU per call no more than 10 % below the rounds before: warm
# The JVM's JIT compiles DefaultMQAdminExt's hot paths over the first tens of thousands of calls of this mix: its CPU
# per call was measured falling from 0.6 ms (first 1,500 calls) to 0.15 ms (10,000) and 0.03-0.05 ms from about
# 40,000 on. A warm-up judged by the rates alone stops far too early: on a shared machine they jump tenfold.
JIT_WARMUP_CALLS = 50_000
WARMUP_SECONDS = 60.0  # at most, per side
TIMEOUT = 30.0  # seconds, per call on both sides (the machine may be loaded)
START_TIMEOUT = 120.0  # seconds: the JVM's start and its first call of each kind (AdminBench's prime)
SETTLE_TIMEOUT = 30.0
MAX_INFLIGHT = 1024  # the wire client's own bound per connection, kept out of the way: the workers bound it

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
    """The mix as both clients read it: one call a line, its fields separated by tabs."""
    path.write_text("".join("\t".join(call) + "\n" for call in calls))
    return path


def read_mix(path: Path) -> list[Call]:
    return [tuple(line.split("\t")) for line in path.read_text().splitlines() if line.strip()]


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
        except RemotingClientError:  # refused, or not connected yet
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


@dataclass(frozen=True)
class Round:
    """One measured run of a client: its rate, and the CPU time its whole process used meanwhile."""

    requests: int
    seconds: float
    rps: float
    cpu_seconds: float

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_seconds * 1000 / self.requests


# --- the two clients, each a process of its own ------------------------------------------------------------------


class ClientProcess:
    """One side of the comparison: a process that makes each call of the mix once, says ``ready``, then answers
    ``run REQUESTS INFLIGHT [CONNECTIONS]`` with ``result requests=N errors=E seconds=S rps=R cpu=C [error=...]``
    (C: the CPU seconds its whole process used meanwhile).

    It runs in a session of its own (its own scheduling group, as the brokers have), its stderr in ``log``; its end
    of stdin ends it, so it cannot outlive the benchmark. Answers are awaited with select on the pipe until a
    deadline, never by sleeping."""

    def __init__(self, name: str, command: list[str], log: Path, env: dict[str, str] | None = None):
        self.name = name
        self.log = log
        with open(log, "ab") as stderr:
            self.popen = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        self._buffer = b""

    def wait_ready(self, timeout: float = START_TIMEOUT) -> ClientProcess:
        answer = self._answer(time.monotonic() + timeout)
        if answer != "ready":
            raise RuntimeError(f"{self.name} did not start: {answer}\n{self._log_tail()}")
        return self

    def send(self, requests: int, inflight: int, connections: int | None = None) -> None:
        """Start a measurement without waiting for it (see :meth:`result`)."""
        command = f"run {requests} {inflight}" + (f" {connections}" if connections else "")
        self.popen.stdin.write(command.encode() + b"\n")
        self.popen.stdin.flush()

    def result(self, timeout: float) -> Round:
        """The measurement :meth:`send` started. A failed call fails the benchmark: a rate with failures in it
        says nothing."""
        answer = self._answer(time.monotonic() + timeout)
        fields = dict(word.split("=", 1) for word in answer.split()[1:] if "=" in word)
        if not answer.startswith("result ") or fields.get("errors") != "0":
            raise RuntimeError(f"{self.name}: {answer}")
        return Round(int(fields["requests"]), float(fields["seconds"]), float(fields["rps"]), float(fields["cpu"]))

    def run(self, requests: int, inflight: int, connections: int | None = None) -> Round:
        self.send(requests, inflight, connections)
        return self.result(timeout=_run_timeout(requests, inflight))

    def _answer(self, deadline: float) -> str:
        fd = self.popen.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.name} did not answer in time\n{self._log_tail()}")
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"{self.name} exited ({self.popen.poll()})\n{self._log_tail()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").strip()

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        """``quit``, then the end of stdin; SIGKILL if the process is still there after a grace period."""
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

    def __enter__(self) -> ClientProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _run_timeout(requests: int, inflight: int) -> float:
    """How long a run may take before it is a hang: every call at its full timeout, ``inflight`` at a time."""
    return requests * TIMEOUT / inflight + TIMEOUT


def java_client(classes: Path, release: Release, home: Path, namesrv_addr: str, mix_file: Path, log: Path):
    """The AdminBench JVM (RocketMQ's DefaultMQAdminExt) on ``mix_file``; ``home`` is the cluster's ROCKETMQ_HOME."""
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
    return ClientProcess("AdminBench (Java)", command, log, env={"ROCKETMQ_HOME": str(home)})


def wire_client(namesrv_addr: str, mix_file: Path, log: Path) -> ClientProcess:
    """This module as this project's client (AsyncMQAdmin) on ``mix_file``: :func:`_serve_wire`."""
    command = [sys.executable, "-m", "tests.bench.bench_real_admin", "wire", namesrv_addr, str(mix_file)]
    return ClientProcess("AsyncMQAdmin (wire)", command, log)


def compile_admin_bench(release: Release) -> Path:
    """AdminBench.class compiled against ``release``'s jars, in var/bench/java/<hash of source and release>/: once,
    then reused until the source changes (a new source's classes replace the old ones). The folder appears whole
    (compiled aside, then renamed)."""
    source = JAVA_SOURCE.read_bytes()
    digest = hashlib.sha256(source + release.version.encode()).hexdigest()[:16]
    root = var_dir() / "bench" / "java"
    target = root / f"{JAVA_MAIN}-{release.version}-{digest}"
    if not (target / f"{JAVA_MAIN}.class").is_file():
        _javac(release, root, target)
    for stale in root.glob(f"{JAVA_MAIN}-{release.version}-*"):  # earlier versions of the source
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    return target


def _javac(release: Release, root: Path, target: Path) -> None:
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


# --- this project's client process ---------------------------------------------------------------------------------


def _serve_wire(namesrv_addr: str, mix_file: str) -> None:
    """AdminBench's protocol with AsyncMQAdmin: CONNECTIONS admins (one connection per address each), INFLIGHT
    coroutines spread over them, each taking the next call when its last one answered."""
    calls = read_mix(Path(mix_file))
    loop = asyncio.new_event_loop()
    admins: list[AsyncMQAdmin] = []

    async def connect(count: int) -> None:
        while len(admins) < count:  # a new admin connects and makes each call once before it is timed
            admin = AsyncMQAdmin(namesrv_addr, timeout=TIMEOUT, max_inflight=MAX_INFLIGHT)
            for call in calls:
                await _until_answered(admin, call)
            admins.append(admin)

    try:
        loop.run_until_complete(connect(1))
        print("ready", flush=True)
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["run"] and len(words) in (3, 4):
                requests, inflight = int(words[1]), int(words[2])
                connections = int(words[3]) if len(words) == 4 else 1
                loop.run_until_complete(connect(connections))
                answer = loop.run_until_complete(_wire_round(admins[:connections], calls, requests, inflight))
            elif words[:1] == ["quit"]:
                break
            else:
                answer = f"error=unknown command: {line.strip()}"
            print(answer, flush=True)
    finally:
        for admin in admins:
            loop.run_until_complete(admin.close())
        loop.close()


async def _wire_round(admins: list[AsyncMQAdmin], calls: list[Call], requests: int, inflight: int) -> str:
    """``requests`` calls of the mix, ``inflight`` at a time spread over ``admins``; AdminBench's answer line."""
    index = itertools.count()
    errors: list[Exception] = []

    async def worker(admin: AsyncMQAdmin) -> None:
        while (k := next(index)) < requests:
            try:
                await _wire_call(admin, calls[k % len(calls)])
            except Exception as exc:  # counted and reported, as AdminBench does; the driver fails the run
                errors.append(exc)

    cpu_started = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(worker(admins[i % len(admins)]) for i in range(inflight)))
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    answer = f"result requests={requests} errors={len(errors)} seconds={seconds:.6f} rps={requests / seconds:.3f}"
    answer += f" cpu={cpu:.6f}"
    if errors:
        answer += " error=" + " ".join(f"{type(errors[0]).__name__}: {errors[0]}".split())
    return answer


# --- the measurement -----------------------------------------------------------------------------------------------


def _warm(
    client: ClientProcess, inflight: int, connections: int | None = None, min_calls: int = 0
) -> tuple[float, int]:
    """Rounds of WARMUP_ROUND calls, ``min_calls`` at least, until the CPU per call stops falling (the median of
    the last three rounds within WARMUP_SETTLED of the three before) or WARMUP_SECONDS have passed. Judged by CPU,
    not by rate: the CPU a call costs is what the JIT lowers, and it hardly moves with the machine's load. Returns
    the median rate of the last three rounds and the calls made."""
    rounds: list[Round] = []
    deadline = time.monotonic() + WARMUP_SECONDS
    while time.monotonic() < deadline or len(rounds) < 3:
        rounds.append(client.run(WARMUP_ROUND, inflight, connections))
        if len(rounds) * WARMUP_ROUND < min_calls or len(rounds) < 6:
            continue
        if _median(rounds[-3:], "cpu_ms_per_call") >= (1 - WARMUP_SETTLED) * _median(rounds[-6:-3], "cpu_ms_per_call"):
            break
    return _median(rounds[-3:], "rps"), len(rounds) * WARMUP_ROUND


def _whole_rounds(requests: float, calls: list[Call]) -> int:
    rounds = max(1, round(max(requests, MIN_REQUESTS) / len(calls)))
    return rounds * len(calls)


def _measure(cluster: RealCluster, classes: Path, concurrency: int) -> dict[str, float | int | str]:
    broker_addr = cluster.broker("broker-a").addr
    calls = asyncio.run(prepare(cluster.namesrv_addr, broker_addr, prefix="bench"))
    mix_file = write_mix(calls, cluster.workdir / "admin-bench.mix")
    high = concurrency * HIGH_FACTOR
    with (
        java_client(
            classes, cluster.release, cluster.home, cluster.namesrv_addr, mix_file, cluster.workdir / "java-admin.log"
        ) as java,
        wire_client(cluster.namesrv_addr, mix_file, cluster.workdir / "wire-admin.log") as wire,
    ):
        java.wait_ready()
        wire.wait_ready()
        # Warm-up, each side alone: Java's JIT at the high load (the same code, compiled sooner), then each side at
        # CONCURRENCY, whose rates size REQUESTS; the wire side's extra connections are opened and used once.
        _, java_jit_calls = _warm(java, high, min_calls=JIT_WARMUP_CALLS)
        java_warm, java_warm_calls = _warm(java, concurrency)
        wire_warm, wire_warm_calls = _warm(wire, concurrency)
        wire.run(WARMUP_ROUND, high, HIGH_FACTOR)
        requests = _whole_rounds(min(java_warm, wire_warm) * TARGET_SECONDS, calls)

        java_fair, wire_fair = [], []
        for repeat in range(REPEATS):  # alternating which side goes first
            if repeat % 2 == 0:
                java_fair.append(java.run(requests, concurrency))
                wire_fair.append(wire.run(requests, concurrency))
            else:
                wire_fair.append(wire.run(requests, concurrency))
                java_fair.append(java.run(requests, concurrency))

        java_high, wire_high, both = [], [], []
        for _ in range(LIMIT_REPEATS):
            java_high.append(java.run(requests, high))
            wire_high.append(wire.run(requests, high, HIGH_FACTOR))
        java_high_rps, wire_high_rps = _median(java_high, "rps"), _median(wire_high, "rps")
        java_share = _whole_rounds(requests * java_high_rps / (java_high_rps + wire_high_rps), calls)
        wire_share = _whole_rounds(requests * wire_high_rps / (java_high_rps + wire_high_rps), calls)
        for _ in range(LIMIT_REPEATS):
            started = time.perf_counter()
            java.send(java_share, high)
            wire.send(wire_share, high, HIGH_FACTOR)
            java.result(_run_timeout(java_share, high))
            wire.result(_run_timeout(wire_share, high))
            both.append((java_share + wire_share) / (time.perf_counter() - started))

    java_rps, wire_rps = _median(java_fair, "rps"), _median(wire_fair, "rps")
    java_cpu, wire_cpu = _median(java_fair, "cpu_ms_per_call"), _median(wire_fair, "cpu_ms_per_call")
    java_high_rps, wire_high_rps = _median(java_high, "rps"), _median(wire_high, "rps")
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
        "java_warmup_calls": java_jit_calls + java_warm_calls,
        "wire_warmup_calls": wire_warm_calls,
        "wire_admin_cpu_ms_per_call": wire_cpu,
        "java_admin_cpu_ms_per_call": java_cpu,
        "wire_vs_java_cpu_per_call_ratio": wire_cpu / java_cpu,
        "java_admin_high_rps": java_high_rps,
        "wire_admin_high_rps": wire_high_rps,
        "both_admin_high_rps": statistics.median(both),
        "admin_high_concurrency": high,
        "real_broker_admin_rps": loads[limit_by],
        "real_broker_admin_limit_by": limit_by,
    }


def _median(rounds: list[Round], figure: str) -> float:
    return statistics.median(getattr(r, figure) for r in rounds)


def run() -> dict[str, float | int | str]:
    from django.conf import settings

    load_before = os.getloadavg()[0]
    with RealCluster("4", brokers=1, slaves=False) as cluster:
        figures = _measure(cluster, compile_admin_bench(cluster.release), settings.COLLECT_CONCURRENCY_PER_BROKER)
    figures["machine_load_avg"] = max(load_before, os.getloadavg()[0])
    return figures


if __name__ == "__main__" and sys.argv[1:2] == ["wire"]:
    _serve_wire(*sys.argv[2:])

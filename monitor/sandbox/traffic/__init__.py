"""Traffic for a sandbox (or any test) cluster from the real C++ RocketMQ client, one process per client.

``Traffic(namesrv_addr, "demo").start()`` creates the profile's topics and subscription groups through the admin
client, on every master, as an operator would before deploying the applications, then starts each producer and
consumer as a :mod:`~monitor.sandbox.traffic.worker` process with a HOME of its own under a work folder (the C++
client logs to ``$HOME/logs/rocketmq-cpp``). A process per client keeps the caller safe from the client's
blocking calls and lets a stop always succeed: :meth:`Traffic.stop` sends every worker SIGTERM, gives them a
deadline to shut their client down, then kills what is left, and waits for all of them, so nothing is left
running. Workers also stop by themselves when the process that started them dies.

Profiles are in :mod:`~monitor.sandbox.traffic.profiles`; :meth:`Traffic.status` returns each worker's latest
counters (sent, failed, received, consumed, reconsume_later, blocked, ...), for tests and the sandbox command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Self

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin, retry_topic
from monitor.remoting.body import MASTER_ID, SubscriptionGroupConfig, TopicConfig
from monitor.remoting.errors import RemotingError
from monitor.sandbox.traffic.profiles import PROFILES, Plan, TrafficOptions, plan_for

__all__ = ["PROFILES", "Plan", "Traffic", "TrafficClient", "TrafficError", "TrafficOptions", "plan_for"]

WORKER = Path(__file__).with_name("worker.py")
# How long stop() lets the workers shut their clients down before killing them (a C++ consumer takes about a
# second; one stuck in a send to a hung broker would take a minute).
STOP_TIMEOUT = 5.0
ADMIN_TIMEOUT = 5.0
# A backlog of hundreds of sends takes about a second; a cluster that does not answer must not hold the
# consumers back for ever.
BACKLOG_TIMEOUT = 15.0
BACKLOG_POLL = 0.05
# SlaveSynchronize runs every 10 s on a 4.9.4 slave (3 s in a SandboxCluster).
SLAVE_SYNC_TIMEOUT = 30.0
SLAVE_SYNC_POLL = 0.1
_STATUS_PREFIX = "STATUS "
_STATUS_TAIL_BYTES = 8192


class TrafficError(Exception):
    """The traffic cannot run on this cluster (no broker, a profile that needs slaves, an admin call failed)."""


class TrafficClient:
    """One worker process: its spec, its HOME folder, and the process once started."""

    def __init__(self, spec: dict, home: Path):
        self.spec = spec
        self.home = home
        self.process: subprocess.Popen | None = None
        self._files: list[IO[bytes]] = []

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        out, err = open(self.home / "worker.out", "wb"), open(self.home / "worker.err", "wb")  # noqa: SIM115
        self._files = [out, err]
        # A session of its own: a Ctrl-C at the terminal reaches only the parent, which then stops the workers
        # in order instead of every client dying mid-call at once.
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(self.spec)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env={**os.environ, "HOME": str(self.home)},
            start_new_session=True,
        )

    def status(self) -> dict:
        """The worker's latest counters ({} before its first report)."""
        path = self.home / "worker.out"
        try:
            with open(path, "rb") as file:
                file.seek(max(0, path.stat().st_size - _STATUS_TAIL_BYTES))
                lines = file.read().decode(errors="replace").splitlines()
        except FileNotFoundError:
            return {}
        for line in reversed(lines):
            if line.startswith(_STATUS_PREFIX):
                try:
                    return json.loads(line[len(_STATUS_PREFIX) :])
                except ValueError:  # a line cut by the tail window or still being written
                    continue
        return {}

    def terminate(self) -> None:
        if self.running:
            self.process.terminate()

    def reap(self, deadline: float) -> None:
        """Wait for the worker until ``deadline`` (time.monotonic()), then kill it; close its files."""
        if self.process is not None:
            try:
                self.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for file in self._files:
            file.close()
        self._files = []


class Traffic:
    """Runs a profile (a name from PROFILES, or a Plan) against the cluster behind ``namesrv_addr``.

    ``acl`` signs the admin calls and the clients' requests (needed on a cluster with ACL). ``workdir`` holds the
    workers' HOME folders and logs and is kept; without it a temporary folder is used and removed on stop."""

    def __init__(
        self,
        namesrv_addr: str,
        profile: str | Plan = "steady",
        *,
        options: TrafficOptions | None = None,
        acl: AclCredentials | None = None,
        workdir: str | Path | None = None,
        stop_timeout: float = STOP_TIMEOUT,
    ):
        self.namesrv_addr = namesrv_addr
        self.options = options or TrafficOptions()
        self.plan = plan_for(profile, self.options) if isinstance(profile, str) else profile
        self.acl = acl
        self.stop_timeout = stop_timeout
        self._workdir = Path(workdir) if workdir is not None else None
        self._own_workdir: Path | None = None
        self.clients: list[TrafficClient] = []

    # --- setup -----------------------------------------------------------------------------------------------------

    def setup(self) -> None:
        """Create the plan's topics on every master, and its groups with their retry topics (as for groups that
        have run before: a brand-new group's client would only find its retry topic's route on its next periodic
        refresh, 30 s later); then wait for the slaves to copy them. A consumer sent to a slave that does not know
        its topic yet retries at once, hundreds of pulls a second, until the slave's next synchronisation."""
        plan = self.plan
        topics = dict(plan.topics)
        topics.update({retry_topic(group): 1 for group in plan.groups})
        try:
            with MQAdmin(self.namesrv_addr, acl=self.acl, timeout=ADMIN_TIMEOUT) as admin:
                brokers = admin.examine_broker_cluster_info().broker_addr_table.values()
                masters = sorted(data.broker_addrs[MASTER_ID] for data in brokers if MASTER_ID in data.broker_addrs)
                slaves = sorted(addr for data in brokers for i, addr in data.broker_addrs.items() if i != MASTER_ID)
                if not masters:
                    raise TrafficError(f"no master broker is registered with the name server {self.namesrv_addr}")
                if plan.needs_slaves and not slaves:
                    raise TrafficError("this traffic reads from slaves: the cluster has none (sandbox --slaves)")
                for addr in masters:
                    for topic, queues in topics.items():
                        config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
                        admin.create_and_update_topic_config(addr, config)
                    for group, retry_max_times in plan.groups.items():
                        config = SubscriptionGroupConfig(group_name=group, retry_max_times=retry_max_times)
                        admin.create_and_update_subscription_group_config(addr, config)
                for addr in slaves:
                    self._wait_for_slave(admin, addr, topics)
        except RemotingError as exc:
            raise TrafficError(f"setting up the traffic failed: {exc}") from exc

    def _wait_for_slave(self, admin: MQAdmin, addr: str, topics: dict[str, int]) -> None:
        deadline = time.monotonic() + SLAVE_SYNC_TIMEOUT
        while True:
            known_topics = admin.get_all_topic_config(addr).topic_config_table
            known_groups = admin.get_all_subscription_group(addr).subscription_group_table
            if set(topics) <= set(known_topics) and set(self.plan.groups) <= set(known_groups):
                return
            if time.monotonic() >= deadline:
                raise TrafficError(f"slave {addr} did not copy the topics and groups in {SLAVE_SYNC_TIMEOUT:g} s")
            time.sleep(SLAVE_SYNC_POLL)

    # --- running ---------------------------------------------------------------------------------------------------

    @property
    def workdir(self) -> Path | None:
        return self._workdir or self._own_workdir

    def start(self) -> Self:
        """Set up, then start the producers and, once their backlogs are written, the consumers (a consumer that
        started earlier would keep up with a backlog as it is written, never far enough behind to be sent to a
        slave). If anything fails, the clients already running are stopped."""
        if self.clients:
            raise RuntimeError("traffic already started")
        self.setup()
        if self._workdir is None:
            self._own_workdir = Path(tempfile.mkdtemp(prefix="sandbox-traffic-"))
        common = {
            "namesrv": self.namesrv_addr,
            "credentials": [self.acl.access_key, self.acl.secret_key] if self.acl else None,
            "parent_pid": os.getpid(),
            "status_interval": self.options.status_interval,
        }
        specs = list(enumerate(self.plan.clients))
        try:
            for role in ("producer", "consumer"):
                for n, spec in specs:
                    if spec["role"] == role:
                        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", spec["name"])
                        client = TrafficClient({**spec, **common}, self.workdir / f"{n:02d}-{slug}")
                        self.clients.append(client)
                        client.start()
                if role == "producer":
                    self._wait_for_backlogs()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_backlogs(self) -> None:
        """Until every producer has tried its backlog, or BACKLOG_TIMEOUT."""
        deadline = time.monotonic() + BACKLOG_TIMEOUT
        for client in self.clients:
            backlog = client.spec.get("backlog", 0)
            while backlog and client.running and time.monotonic() < deadline:
                status = client.status()
                if status.get("sent", 0) + status.get("failed", 0) >= backlog:
                    break
                time.sleep(BACKLOG_POLL)

    def stop(self) -> None:
        """SIGTERM to every worker at once, one shared deadline, then SIGKILL for the rest; all are waited for."""
        for client in self.clients:
            client.terminate()
        deadline = time.monotonic() + self.stop_timeout
        for client in self.clients:
            client.reap(deadline)
        self.clients = []
        if self._own_workdir is not None:
            shutil.rmtree(self._own_workdir, ignore_errors=True)
            self._own_workdir = None

    def status(self) -> dict[str, dict]:
        """Each client's latest counters, by client name ("producer pg_steady", "consumer cg_steady", ...)."""
        return {client.name: {**client.status(), "running": client.running} for client in self.clients}

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

"""A real Apache RocketMQ cluster of plain processes on 127.0.0.1: a name server and broker names, each a master
and, on request, a slave (broker id 1) copying it over HA.

``RealCluster("4", brokers=1, slaves=True)`` runs 4.9.4 (the fixtures' version); ``"5"`` runs the pinned 5.x with the
same layout (master/slave, no controller; :mod:`monitor.launcher.controller` runs 5.x in controller mode). Small
heaps, 64 MB commit-log files, everything (stores, logs, ROCKETMQ_HOME) in one folder: the given ``workdir`` (kept),
or a temporary one removed at :meth:`stop`. The API follows :class:`monitor.sandbox.cluster.SandboxCluster`
(``namesrv_addr``, ``brokers``, ``stop_broker``/``start_broker``) so a test can take either.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from monitor.launcher import mqadmin
from monitor.launcher.home import write_home, write_properties
from monitor.launcher.process import JavaProcess, LaunchError, free_port, stop_together
from monitor.launcher.releases import Release, release, resolve
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingError

CLUSTER_NAME = "DefaultCluster"
MASTER_ID = 0
SLAVE_ID = 1
NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
BOOT_SUCCESS = "boot success"
START_TIMEOUT = 180.0  # seconds: a JVM starts in 2-3 s alone, far slower on a loaded 2-core machine
# Small stores: a 64 MB commit-log file and 30,000-entry consume-queue files (4.9.4 preallocates both).
SMALL_STORE = {
    "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 30_000 * 20,
    "flushDiskType": "ASYNC_FLUSH",
    "diskMaxUsedSpaceRatio": 95,
}


@dataclass
class BrokerNode:
    """One broker process: its name, id, port (the VIP channel is port-2, HA port+1) and store."""

    name: str
    broker_id: int
    port: int
    process: JavaProcess

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ha_port(self) -> int:
        return self.port + 1


def wait_sampled(admin: MQAdmin, addrs: list[str], deadline: float) -> None:
    """Until every broker answers GET_BROKER_RUNTIME_INFO: for about a second after it registers, a broker whose
    store has not taken its first sample answers SYSTEM_ERROR (NoSuchElementException) instead."""
    waiting = list(addrs)
    while waiting:
        try:
            admin.fetch_broker_runtime_stats(waiting[0])
            waiting.pop(0)
            continue
        except RemotingError as exc:
            if time.monotonic() > deadline:
                raise LaunchError(f"broker {waiting[0]} does not describe itself: {exc}") from None
        time.sleep(0.2)


class RealCluster:
    """Name server + ``brokers`` broker names (broker-a, broker-b, ...), each a master and, with ``slaves``, a slave.

    ``acl`` (access key, secret key) turns aclEnable on with that one admin account; ``broker_config`` adds or
    overrides broker properties on every broker."""

    def __init__(
        self,
        line: str = "4",
        brokers: int = 1,
        slaves: bool = False,
        *,
        acl: tuple[str, str] | None = None,
        workdir: str | Path | None = None,
        broker_config: Mapping[str, Any] | None = None,
        namesrv_port: int = 0,
        cluster_name: str = CLUSTER_NAME,
        heap_mb: int = 256,
    ):
        if not 1 <= brokers <= 26:
            raise ValueError(f"brokers must be between 1 and 26, got {brokers}")
        self.release: Release = release(line)
        self.broker_count = brokers
        self.slaves = slaves
        self.acl = acl
        self.broker_config = dict(broker_config or {})
        self.cluster_name = cluster_name
        self.heap_mb = heap_mb
        self._namesrv_port = namesrv_port
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"rocketmq{line}-"))
        self.home = self.workdir / "home"
        self.namesrv: JavaProcess | None = None
        self.namesrv_port = 0
        self.brokers: dict[tuple[str, int], BrokerNode] = {}

    # --- addresses -------------------------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        return self.release.version

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_names(self) -> list[str]:
        return [f"broker-{chr(ord('a') + i)}" for i in range(self.broker_count)]

    def broker(self, name: str = "broker-a", broker_id: int = MASTER_ID) -> BrokerNode:
        return self.brokers[(name, broker_id)]

    def admin(self, **kwargs) -> MQAdmin:
        """This project's admin client on the cluster (signed when ACL is on)."""
        acl = AclCredentials(*self.acl) if self.acl else None
        return MQAdmin(self.namesrv_addr, acl=acl, **kwargs)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> Self:
        resolve(self.release)
        write_home(self.home, self.acl)
        try:
            self._start_servers()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_servers(self) -> None:
        self._start_namesrv()
        for name in self.broker_names:
            self._start_broker(name, MASTER_ID)
            if self.slaves:
                self._start_broker(name, SLAVE_ID)
        self.wait_registered()

    def stop(self) -> None:
        """Brokers (and proxies) first, so they unregister from a name server that is still there; then the rest."""
        stop_together(self.first_to_stop())
        stop_together(self.processes())
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def first_to_stop(self) -> list[JavaProcess]:
        return [node.process for node in self.brokers.values()]

    def stop_broker(self, name: str, broker_id: int = MASTER_ID) -> None:
        self.broker(name, broker_id).process.stop()

    def start_broker(self, name: str, broker_id: int = MASTER_ID) -> BrokerNode:
        """Start a stopped broker again on its port with its store, as an operator restarts one."""
        node = self.broker(name, broker_id)
        node.process.start()
        node.process.wait_for_log(BOOT_SUCCESS, START_TIMEOUT)
        self.wait_registered()
        return node

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- servers ---------------------------------------------------------------------------------------------------

    def _java(self, name: str, main: str, args: list[str], heap_mb: int | None = None) -> JavaProcess:
        # 5.x bundles one logback file per role in its jars; without naming it, every role picks the first one on
        # the classpath (the proxy's) and logs into the proxy's files.
        role = main.rsplit(".", 1)[-1].removesuffix("Startup").lower()
        return JavaProcess(
            name,
            main,
            args,
            classpath=self.release.classpath,
            workdir=self.workdir,
            heap_mb=heap_mb or self.heap_mb,
            env={"ROCKETMQ_HOME": str(self.home)},
            jvm_options=[f"-Drmq.logback.configurationFile=rmq.{role}.logback.xml"],
        )

    def _start_namesrv(self) -> None:
        self.namesrv_port = self._namesrv_port or free_port()
        conf = write_properties(
            self.workdir / "namesrv.properties",
            {
                "listenPort": self.namesrv_port,
                "kvConfigPath": self.workdir / "namesrv" / "kvConfig.json",
                "configStorePath": self.workdir / "namesrv" / "namesrv.properties",
                **self.namesrv_config(),
            },
        )
        self.namesrv = self._java("namesrv", NAMESRV_MAIN, ["-c", str(conf)], heap_mb=128).start()
        self.namesrv.wait_for_port(self.namesrv_port, START_TIMEOUT)

    def namesrv_config(self) -> dict[str, Any]:
        """Extra name-server properties (the controller subclass embeds its controller here)."""
        return {}

    def broker_properties(self, name: str, broker_id: int, port: int) -> dict[str, Any]:
        store = self.workdir / "store" / f"{name}-{broker_id}"
        values: dict[str, Any] = {
            "brokerClusterName": self.cluster_name,
            "brokerName": name,
            "brokerId": broker_id,
            "brokerRole": "ASYNC_MASTER" if broker_id == MASTER_ID else "SLAVE",
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "listenPort": port,
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": store,
            "storePathCommitLog": store / "commitlog",
            **SMALL_STORE,
        }
        if self.acl:
            values["aclEnable"] = True
        values.update(self.broker_config)
        return values

    def _start_broker(self, name: str, broker_id: int) -> BrokerNode:
        port = free_port(-2, 0, 1)
        label = f"{name}-{broker_id}"
        conf = write_properties(self.workdir / f"{label}.properties", self.broker_properties(name, broker_id, port))
        process = self._java(label, BROKER_MAIN, ["-c", str(conf)]).start()
        node = self.brokers[(name, broker_id)] = BrokerNode(name, broker_id, port, process)
        process.wait_for_log(BOOT_SUCCESS, START_TIMEOUT)
        return node

    def wait_registered(self, timeout: float = START_TIMEOUT) -> None:
        """Until the name server lists every running broker at its address (registration follows the boot line)."""
        expected = {(node.name, node.broker_id, node.addr) for node in self.brokers.values() if node.process.alive()}
        deadline = time.monotonic() + timeout
        seen: set = set()
        with self.admin(timeout=3.0) as admin:
            while time.monotonic() < deadline:
                try:
                    info = admin.examine_broker_cluster_info()
                    seen = {
                        (name, int(bid), addr)
                        for name, data in info.broker_addr_table.items()
                        for bid, addr in data.broker_addrs.items()
                    }
                except RemotingError:
                    seen = set()
                if expected <= seen:
                    wait_sampled(admin, [addr for *_, addr in expected], deadline)
                    return
                time.sleep(0.2)
        raise LaunchError(f"brokers not registered after {timeout:.0f} s: expected {sorted(expected)}, saw {seen}")

    # --- tools -----------------------------------------------------------------------------------------------------

    def mqadmin(self, *args: str, timeout: float = 120.0) -> mqadmin.Result:
        """Run the release's real mqadmin against this cluster's name server."""
        return mqadmin.run(self.release, self.home, [*args, "-n", self.namesrv_addr], timeout=timeout)

    def extra_lines(self) -> list[str]:
        """What ``manage.py rocketmq`` announces beyond the name server and brokers (controllers, proxies)."""
        return []

    def processes(self) -> list[JavaProcess]:
        return [p for p in (self.namesrv, *(n.process for n in self.brokers.values())) if p is not None]

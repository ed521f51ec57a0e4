"""RocketMQ 5 in controller mode: each broker name is a replica group of three brokers that a controller elects
a master from (the other two are slaves in its sync-state set), with the controller embedded in the name server
or running alone, and optionally a proxy in cluster mode serving gRPC and remoting clients.

Controller-mode brokers start with ``brokerId=-1``: the controller assigns their ids, and the master registers
with the name server as id 0. :attr:`ControllerCluster.brokers` is therefore keyed by the ids the name server
reports once the election is over (:meth:`ControllerCluster.wait_registered`), as an operator sees them in
``clusterList``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from monitor.launcher.cluster import (
    BOOT_SUCCESS,
    BROKER_MAIN,
    MASTER_ID,
    START_TIMEOUT,
    BrokerNode,
    RealCluster,
    wait_sampled,
)
from monitor.launcher.home import write_properties
from monitor.launcher.process import JavaProcess, LaunchError, free_port
from monitor.remoting.errors import RemotingError

CONTROLLER_MODES = ("embedded", "standalone")
CONTROLLER_MAIN = "org.apache.rocketmq.controller.ControllerStartup"
PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
REPLICAS = 3
DLEDGER_GROUP = "mqcloud-controller"
CONTROLLER_BOOT = "boot success"
PROXY_BOOT = "rocketmq-proxy startup successfully"
SETTLE_SECONDS = 5.0  # how long the elected view must stay the same before the cluster counts as up


class ControllerCluster(RealCluster):
    """A 5.x name server, ``brokers`` replica groups of three brokers each in controller mode, the controller
    (``controller="embedded"`` in the name server, ``"standalone"`` as its own JVM, None: embedded) and, with
    ``proxy``, a proxy in cluster mode (``proxy_addr`` remoting, ``grpc_addr`` gRPC)."""

    def __init__(self, *, controller: str | None = "embedded", proxy: bool = False, slaves: bool = False, **kwargs):
        controller = controller or "embedded"
        if controller not in CONTROLLER_MODES:
            raise ValueError(f"controller must be one of {', '.join(CONTROLLER_MODES)}, got {controller!r}")
        super().__init__("5", slaves=False, **kwargs)
        self.controller_mode = controller
        self.with_proxy = proxy
        self.controller_port = 0
        self.controller: JavaProcess | None = None
        self.proxy: JavaProcess | None = None
        self.proxy_port = 0
        self.grpc_port = 0
        self._replicas: list[BrokerNode] = []

    @property
    def controller_addr(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    @property
    def proxy_addr(self) -> str:
        return f"127.0.0.1:{self.proxy_port}"

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self):
        self.controller_port = free_port()
        return super().start()

    def _start_servers(self) -> None:
        if self.controller_mode == "standalone":
            self._start_controller()
        self._start_namesrv()
        if self.controller_mode == "embedded":
            self.namesrv.wait_for_log("ControllerManager boot success", START_TIMEOUT)
        # The replicas of a group start together: the controller elects among those that have registered.
        for name in self.broker_names:
            for replica in range(REPLICAS):
                self._replicas.append(self._start_broker(name, -1 - replica))
        for node in self._replicas:
            node.process.wait_for_log(BOOT_SUCCESS, START_TIMEOUT)
        self.wait_registered()
        if self.with_proxy:
            self._start_proxy()

    def _dledger(self, store: Path) -> dict[str, Any]:
        """One DLedger controller node: its peer port is also where brokers reach the controller."""
        return {
            "controllerType": "DLedger",
            "controllerDLegerGroup": DLEDGER_GROUP,
            "controllerDLegerPeers": f"n0-{self.controller_addr}",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": store,
            "mappedFileSize": 64 * 1024 * 1024,
        }

    def namesrv_config(self) -> dict[str, Any]:
        if self.controller_mode != "embedded":
            return {}
        return {"enableControllerInNamesrv": True, **self._dledger(self.workdir / "controller")}

    def _start_controller(self) -> None:
        store = self.workdir / "controller"
        conf = write_properties(
            self.workdir / "controller.properties",
            {**self._dledger(store), "configStorePath": store / "controller.properties"},
        )
        self.controller = self._java("controller", CONTROLLER_MAIN, ["-c", str(conf)], heap_mb=128).start()
        self.controller.wait_for_log(CONTROLLER_BOOT, START_TIMEOUT)

    def broker_properties(self, name: str, broker_id: int, port: int) -> dict[str, Any]:
        values = super().broker_properties(name, broker_id, port)
        # The negative placeholder only names the store; the controller assigns the real id.
        values["storePathRootDir"] = self.workdir / "store" / f"{name}-r{-1 - broker_id}"
        values["storePathCommitLog"] = values["storePathRootDir"] / "commitlog"
        values.update(
            brokerId=-1,
            brokerRole="ASYNC_MASTER",
            enableControllerMode=True,
            controllerAddr=self.controller_addr,
            allAckInSyncStateSet=True,
        )
        values.update(self.broker_config)
        return values

    def _start_broker(self, name: str, broker_id: int) -> BrokerNode:
        port = free_port(-2, 0, 1)
        label = f"{name}-r{-1 - broker_id}"
        conf = write_properties(self.workdir / f"{label}.properties", self.broker_properties(name, broker_id, port))
        process = self._java(label, BROKER_MAIN, ["-c", str(conf)]).start()
        return BrokerNode(name, broker_id, port, process)

    def wait_registered(self, timeout: float = START_TIMEOUT) -> None:
        """Until every replica group has an elected master (id 0) and every running replica is registered; then
        key :attr:`brokers` by the ids the name server reports."""
        by_addr = {node.addr: node for node in self._replicas if node.process.alive()}
        deadline = time.monotonic() + timeout
        registered: dict[str, tuple[str, int]] = {}
        settled_since = None
        with self.admin(timeout=3.0) as admin:
            while time.monotonic() < deadline:
                try:
                    info = admin.examine_broker_cluster_info()
                    seen = {
                        addr: (name, int(bid))
                        for name, data in info.broker_addr_table.items()
                        for bid, addr in data.broker_addrs.items()
                    }
                except RemotingError:
                    seen = {}
                masters = {name for name, bid in seen.values() if bid == MASTER_ID}
                complete = set(by_addr) <= set(seen) and masters >= set(self.broker_names)
                # A first master can lose its lease on a loaded machine and be replaced: the view must hold still.
                if not complete or seen != registered:
                    settled_since = time.monotonic() if complete else None
                registered = seen
                if settled_since is not None and time.monotonic() - settled_since >= SETTLE_SECONDS:
                    wait_sampled(admin, list(by_addr), deadline)
                    break
                time.sleep(0.5)
            else:
                raise LaunchError(f"replica groups not elected/registered after {timeout:.0f} s: saw {registered}")
        self.brokers = {}
        for addr, node in by_addr.items():
            node.broker_id = registered[addr][1]
            self.brokers[(node.name, node.broker_id)] = node

    def stop_broker(self, name: str, broker_id: int = MASTER_ID) -> None:
        self.broker(name, broker_id).process.stop()

    def start_broker(self, name: str, broker_id: int = MASTER_ID) -> BrokerNode:
        """Start a stopped replica again; after the controller's election its id may have changed."""
        node = self.broker(name, broker_id)
        node.process.start()
        node.process.wait_for_log(BOOT_SUCCESS, START_TIMEOUT)
        self.wait_registered()
        return node

    def _start_proxy(self) -> None:
        self.proxy_port, self.grpc_port = free_port(), free_port()
        conf = self.workdir / "rmq-proxy.json"
        conf.write_text(
            json.dumps(
                {
                    "rocketMQClusterName": self.cluster_name,
                    "namesrvAddr": self.namesrv_addr,
                    "proxyMode": "cluster",
                    "remotingListenPort": self.proxy_port,
                    "grpcServerPort": self.grpc_port,
                    "localServeAddr": "127.0.0.1",
                },
                indent=2,
            )
        )
        self.proxy = self._java("proxy", PROXY_MAIN, ["-pc", str(conf), "-pm", "cluster"]).start()
        self.proxy.wait_for_log(PROXY_BOOT, START_TIMEOUT)
        self.proxy.wait_for_port(self.grpc_port, START_TIMEOUT)
        self.proxy.wait_for_port(self.proxy_port, START_TIMEOUT)

    def extra_lines(self) -> list[str]:
        lines = [f"controller={self.controller_mode} addr={self.controller_addr}"]
        if self.proxy is not None:
            lines.append(f"proxy=cluster remoting={self.proxy_addr} grpc={self.grpc_addr}")
        return lines

    def first_to_stop(self) -> list[JavaProcess]:
        return [p for p in (self.proxy, *(node.process for node in self._replicas)) if p is not None]

    def processes(self) -> list[JavaProcess]:
        servers = (self.proxy, *(node.process for node in self._replicas), self.namesrv, self.controller)
        return [p for p in servers if p is not None]

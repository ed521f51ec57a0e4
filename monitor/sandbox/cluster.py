"""A whole sandbox RocketMQ cluster in one process: a name server and N broker names, each a master and, on
request, a slave that copies it, for tests and the demo.

``SandboxCluster(brokers=2, slaves=True)`` gives cluster ``DefaultCluster`` with broker-a and broker-b, each master
(id 0) plus slave (id 1), all on free ports of 127.0.0.1 and registered with the name server at
:attr:`SandboxCluster.namesrv_addr`. Brokers can be stopped and started again on their port, as an operator would
restart one (:meth:`~SandboxCluster.stop_broker`, :meth:`~SandboxCluster.start_broker`); the name server forgets a
stopped broker at once, as a real one does when the connection drops.

The other faults a monitor has to notice are one call each, aimed at ``"namesrv"``, a broker name (its master) or
``"NAME:ID"`` (:meth:`~SandboxCluster.server`): :meth:`~SandboxCluster.hang` (connections are accepted, nothing is
answered, like a hung JVM), :meth:`~SandboxCluster.slow_down`, :meth:`~SandboxCluster.drop_responses`,
:meth:`~SandboxCluster.corrupt_answers` (one request code answered with a body of the test's choosing), and
:meth:`~SandboxCluster.heal` to undo them.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, Self

from monitor.sandbox.broker import Broker
from monitor.sandbox.broker.core import MASTER_ID
from monitor.sandbox.namesrv import NameServer
from monitor.sandbox.server import RemotingServer

CLUSTER_NAME = "DefaultCluster"
SLAVE_ID = 1
# SlaveSynchronize runs every 10 s in 4.9.4; a sandbox slave catches up sooner.
DEFAULT_SLAVE_SYNC_INTERVAL = 3.0
NAMESRV = "namesrv"


class SandboxCluster:
    """Name server + ``brokers`` broker names (broker-a, broker-b, ...), each a master and, with ``slaves``, a slave.

    ``namesrv_port`` is where the name server listens (0: a free port, as the brokers always get).
    ``acl`` maps access keys to secret keys: the brokers then require every request to be signed (aclEnable).
    ``broker_config`` overrides broker.properties entries on every broker; ``slave_sync_interval`` is how often
    slaves copy their master's topics, groups and offsets; other keyword arguments go to every
    :class:`~monitor.sandbox.broker.Broker` (``delay_time_scale``, ``store_max_bytes``,
    ``suggest_slave_behind_bytes``)."""

    def __init__(
        self,
        brokers: int = 1,
        slaves: bool = False,
        acl: Mapping[str, str] | None = None,
        *,
        namesrv_port: int = 0,
        broker_config: Mapping[str, str | int | bool] | None = None,
        slave_sync_interval: float = DEFAULT_SLAVE_SYNC_INTERVAL,
        **broker_options: Any,
    ):
        if not 1 <= brokers <= len(string.ascii_lowercase):
            raise ValueError(f"brokers must be between 1 and {len(string.ascii_lowercase)}")
        self.namesrv = NameServer(port=namesrv_port)
        self.brokers: dict[tuple[str, int], Broker] = {}
        options = {"config": broker_config, "acl": acl, "slave_sync_interval": slave_sync_interval, **broker_options}
        for letter in string.ascii_lowercase[:brokers]:
            name = f"broker-{letter}"
            master = self.brokers[name, MASTER_ID] = Broker(CLUSTER_NAME, name, MASTER_ID, [], **options)
            if slaves:
                self.brokers[name, SLAVE_ID] = Broker(CLUSTER_NAME, name, SLAVE_ID, [], master=master, **options)

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

    @property
    def broker_names(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.brokers))

    def broker(self, name: str = "broker-a", broker_id: int = MASTER_ID) -> Broker:
        try:
            return self.brokers[name, broker_id]
        except KeyError:
            raise KeyError(f"no broker {name} with id {broker_id} in this cluster") from None

    def start(self) -> Self:
        """Name server first, then masters, then slaves (a slave learns its master from the name server)."""
        self.namesrv.start()
        try:
            for broker in sorted(self.brokers.values(), key=lambda broker: broker.broker_id):
                broker.namesrv_addrs[:] = [self.namesrv.addr]
                broker.config.set("namesrvAddr", self.namesrv.addr)
                broker.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Slaves, then masters, then the name server; faults are healed first, so that the brokers' goodbyes to a
        hung name server do not each wait out their timeout."""
        self.heal()
        for broker in sorted(self.brokers.values(), key=lambda broker: -broker.broker_id):
            broker.stop()
        self.namesrv.stop()

    def stop_broker(self, name: str, broker_id: int = MASTER_ID) -> None:
        self.broker(name, broker_id).stop()

    def start_broker(self, name: str, broker_id: int = MASTER_ID) -> Broker:
        """Start a stopped broker again, on the port it had, with the messages and tables it had."""
        return self.broker(name, broker_id).start()

    # --- faults ----------------------------------------------------------------------------------------------------

    def server(self, target: str) -> RemotingServer:
        """The server a fault is aimed at: ``"namesrv"``, ``"broker-a"`` (its master) or ``"broker-a:1"``."""
        if target == NAMESRV:
            return self.namesrv
        name, _, broker_id = target.partition(":")
        if broker_id and not broker_id.isdigit():
            raise KeyError(f"bad broker id in {target!r}: expected NAME or NAME:ID")
        return self.broker(name, int(broker_id) if broker_id else MASTER_ID)

    def hang(self, target: str = NAMESRV) -> None:
        """Accept connections but answer nothing, like a hung process, until :meth:`heal` (or a restart)."""
        self.server(target).pause()

    def slow_down(self, target: str, seconds: float) -> None:
        """Hold every answer of ``target`` back ``seconds``."""
        self.server(target).set_delay(seconds)

    def drop_responses(self, target: str, ratio: float) -> None:
        """Silently lose this share (0..1) of ``target``'s answers; the clients time out on them."""
        self.server(target).set_drop_ratio(ratio)

    def corrupt_answers(self, target: str, code: int, body: bytes) -> None:
        """Answer ``target``'s requests of ``code`` with ``body`` (e.g. configuration text that is not UTF-8)."""
        self.server(target).set_answer_body(code, body)

    def heal(self, target: str | None = None) -> None:
        """Undo hang, slow_down, drop_responses and corrupt_answers on ``target``, or on every server (stopped
        brokers stay stopped: :meth:`start_broker` brings them back)."""
        servers = [self.server(target)] if target is not None else [self.namesrv, *self.brokers.values()]
        for server in servers:
            if server.paused:
                server.resume()
            server.set_delay(0)
            server.set_drop_ratio(0)
            server.clear_answer_bodies()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

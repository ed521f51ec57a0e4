"""Broadcasting consumers of the collection tests: real C++ push consumers in BROADCASTING mode, each in a process of
its own (so each has a client id of its own), that either consume every message at once or hold every message in
their callbacks until they are stopped (a client that falls behind by its own account: broadcasting consumers keep
their offsets themselves)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import SubscriptionGroupConfig, TopicConfig
from monitor.sandbox.cluster import SandboxCluster
from tests.monitor.traffic_helpers import WAIT
from tests.support.waiting import wait_for

QUEUES = 4

CLIENT = r"""
import json, sys, threading
from rocketmq.client import MessageModel, PushConsumer

plan = json.loads(sys.argv[1])
consumer = PushConsumer(plan["group"], message_model=MessageModel.BROADCASTING)
consumer.set_namesrv_addr(plan["namesrv"])
release = threading.Event()


def on_message(message):
    if plan["hold"]:
        release.wait()


consumer.subscribe(plan["topic"], on_message)
consumer.start()
print("STARTED", flush=True)
sys.stdin.readline()
release.set()
consumer.shutdown()
"""


def create_topic_and_group(sandbox: SandboxCluster, topic: str, group: str) -> None:
    """``topic`` with :data:`QUEUES` queues on every master, and ``group``'s subscription group config."""
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for name in sandbox.broker_names:
            addr = sandbox.broker(name).addr
            config = TopicConfig(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
            admin.create_and_update_topic_config(addr, config)
            admin.create_and_update_subscription_group_config(addr, SubscriptionGroupConfig(group))


@contextlib.contextmanager
def broadcasting_client(sandbox: SandboxCluster, group: str, topic: str, workdir: Path, *, hold: bool) -> Iterator[str]:
    """A broadcasting consumer of ``topic``, running until the block ends; yields its client id once it is online
    and holds every queue of the topic."""
    master = sandbox.broker(sandbox.broker_names[0])
    before = set(master.consumers.get(group).client_ids()) if master.consumers.get(group) else set()
    spec = json.dumps({"namesrv": sandbox.namesrv_addr, "group": group, "topic": topic, "hold": hold})
    workdir.mkdir(parents=True, exist_ok=True)
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, spec],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": str(workdir)},
    )
    try:
        assert client.stdout.readline().strip() == "STARTED"

        def new_client() -> list[str]:
            online = master.consumers.get(group)
            return sorted(set(online.client_ids()) - before) if online else []

        (client_id,) = wait_for(new_client, what="the client online", timeout=WAIT)
        with MQAdmin(sandbox.namesrv_addr) as admin:

            def holding_every_queue() -> bool:
                info = admin.get_consumer_running_info(group, client_id, broker_addr=master.addr)
                return len([mq for mq in info.mq_table if mq.topic == topic]) == QUEUES * len(sandbox.broker_names)

            wait_for(holding_every_queue, what="the client holds every queue", timeout=WAIT)
        yield client_id
    finally:
        client.communicate("\n", timeout=30)

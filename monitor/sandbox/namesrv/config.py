"""The name server's configuration: namespaced KV config (4.9.4's KVConfigManager) and its own properties
(NamesrvConfig + NettyServerConfig) as GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG read and write them."""

from __future__ import annotations

import os
import re
from pathlib import Path

from monitor.remoting.body import KVTable
from monitor.sandbox.namesrv.routes import java_ordered

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# --- KVConfigManager -------------------------------------------------------------------------------------------------


class KVConfigManager:
    """Namespaced key/value configuration (ORDER_TOPIC_CONFIG and whatever admins put there), in memory only."""

    def __init__(self):
        self.config_table: dict[str, dict[str, str]] = {}

    def put(self, namespace: str, key: str, value: str) -> None:
        self.config_table.setdefault(namespace, {})[key] = value

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        """Remove a key; the namespace stays, even empty, as in Java."""
        self.config_table.get(namespace, {}).pop(key, None)

    def kv_list(self, namespace: str) -> bytes | None:
        """The namespace as a KVTable body, None when the namespace was never written."""
        table = self.config_table.get(namespace)
        return KVTable(table=java_ordered(table)).encode() if table is not None else None


# --- configuration ---------------------------------------------------------------------------------------------------


def default_config() -> dict[str, str | int | bool]:
    """NamesrvConfig + NettyServerConfig defaults, in the order GET_NAMESRV_CONFIG lists them (the hash order of
    the 4.9.4 name server's Properties, which depends only on this key set). Paths are the Java defaults:
    rocketmqHome from ROCKETMQ_HOME (else the sandbox package, its installation), the rest under the home
    directory, where a real name server would keep them; the sandbox itself writes nothing there."""
    user_home = os.path.expanduser("~")
    return {
        "serverSocketBacklog": 1024,
        "writeBufferHighWaterMark": 0,
        "serverWorkerThreads": 8,
        "serverSelectorThreads": 3,
        "serverChannelMaxIdleTimeSeconds": 120,
        "writeBufferLowWaterMark": 0,
        "serverSocketRcvBufSize": 0,
        "serverAsyncSemaphoreValue": 64,
        "kvConfigPath": os.path.join(user_home, "namesrv", "kvConfig.json"),
        "configStorePath": os.path.join(user_home, "namesrv", "namesrv.properties"),
        "clusterTest": False,
        "orderMessageEnable": False,
        "serverSocketSndBufSize": 0,
        "serverOnewaySemaphoreValue": 256,
        "serverCallbackExecutorThreads": 0,
        "listenPort": 9876,
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME") or str(Path(__file__).resolve().parents[1]),
        "productEnvName": "center",
        "useEpollNativeSelector": False,
        "serverPooledByteBufAllocatorEnable": True,
    }


def java_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_like(current: str | int | bool, text: str) -> str | int | bool | None:
    """MixAll.properties2Object's conversion for a field of ``current``'s type; None where Java's parse throws."""
    if isinstance(current, bool):
        return text.lower() == "true"  # Boolean.parseBoolean
    if isinstance(current, int):
        if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
            return None
        return int(text)
    return text

"""The listener container, in the spirit of the Spring Boot starter's ``@RocketMQMessageListener``: decorate a
function with its topic, consumer group, tag expression, mode (concurrent or orderly) and max reconsume times; the
container creates one SDK :class:`~monitor.sdk.consumer.Consumer` per consumer group, subscribes the group's
listeners, and starts and stops them with the application.

Configuration (:class:`Settings`) is the portal's URL and, per consumer group, its token (or a file holding it) and
optionally its thread count; the name servers come from the portal. It is read from the environment
(:meth:`Settings.from_environment`), a TOML or JSON file (:meth:`Settings.from_file`) or a mapping such as a Django
setting (:meth:`Settings.from_mapping`: ``Settings.from_mapping(django.conf.settings.MQCLOUD)``; the SDK itself does
not import Django). The mapping's shape, the file's too::

    {"portal_url": "https://mq.example.com",
     "namesrv_addr": "",                        # optional: overrides the portal's answer
     "groups": {"cg_orders": {"token": "mqc_...", "token_file": "", "thread_count": 4}}}

Environment: ``MQCLOUD_PORTAL_URL``, ``MQCLOUD_NAMESRV_ADDR`` (optional) and per group
``MQCLOUD_CONSUMER_TOKEN_<GROUP>`` or ``MQCLOUD_CONSUMER_TOKEN_FILE_<GROUP>``, the group name upper-cased with every
other character than letters and digits made ``_`` (``cg-orders`` -> ``MQCLOUD_CONSUMER_TOKEN_CG_ORDERS``);
``MQCLOUD_CONSUMER_TOKEN`` / ``_FILE`` serve every group that has no token of its own.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from monitor.sdk.consumer import Consumer

log = logging.getLogger("monitor.sdk")

CONCURRENT = "concurrent"
ORDERLY = "orderly"
MODES = (CONCURRENT, ORDERLY)


@dataclass(frozen=True)
class Listener:
    """One decorated function and where it listens."""

    function: Callable
    topic: str
    group: str
    tags: str = "*"
    mode: str = CONCURRENT
    max_reconsume_times: int | None = None


class Registry:
    """Listeners declared with :meth:`listener`; the module-level :data:`listeners` is the default one."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def listener(
        self,
        topic: str,
        group: str,
        *,
        tags: str = "*",
        mode: str = CONCURRENT,
        max_reconsume_times: int | None = None,
    ) -> Callable[[Callable], Callable]:
        """Decorate ``function(message)`` to consume ``topic`` as consumer ``group``; it returns the function as is."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if max_reconsume_times is not None and max_reconsume_times < 0:
            raise ValueError("max_reconsume_times must be 0 or more")

        def register(function: Callable) -> Callable:
            self.listeners.append(Listener(function, topic, group, tags, mode, max_reconsume_times))
            return function

        return register


listeners = Registry()
listener = listeners.listener


@dataclass(frozen=True)
class GroupSettings:
    token: str = ""
    token_file: str = ""
    thread_count: int | None = None


@dataclass(frozen=True)
class Settings:
    portal_url: str = ""
    namesrv_addr: str = ""
    groups: Mapping[str, GroupSettings] = field(default_factory=dict)
    default_group: GroupSettings = GroupSettings()

    def group(self, name: str) -> GroupSettings:
        return self.groups.get(name, self.default_group)

    @classmethod
    def from_mapping(cls, values: Mapping) -> Settings:
        unknown = set(values) - {"portal_url", "namesrv_addr", "groups"}
        if unknown:
            raise ValueError(f"unknown MQCloud settings: {', '.join(sorted(unknown))}")
        groups = {name: GroupSettings(**dict(group)) for name, group in (values.get("groups") or {}).items()}
        return cls(values.get("portal_url", ""), values.get("namesrv_addr", ""), groups)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Settings:
        """A ``.toml`` file, or JSON otherwise."""
        path = Path(path)
        text = path.read_text()
        return cls.from_mapping(tomllib.loads(text) if path.suffix == ".toml" else json.loads(text))

    @classmethod
    def from_environment(cls, group_names: Iterable[str], environ: Mapping[str, str] = os.environ) -> Settings:
        default = GroupSettings(
            environ.get("MQCLOUD_CONSUMER_TOKEN", ""), environ.get("MQCLOUD_CONSUMER_TOKEN_FILE", "")
        )
        groups = {}
        for name in group_names:
            suffix = env_suffix(name)
            token = environ.get(f"MQCLOUD_CONSUMER_TOKEN_{suffix}", "")
            token_file = environ.get(f"MQCLOUD_CONSUMER_TOKEN_FILE_{suffix}", "")
            if token or token_file:
                groups[name] = GroupSettings(token, token_file)
        return cls(environ.get("MQCLOUD_PORTAL_URL", ""), environ.get("MQCLOUD_NAMESRV_ADDR", ""), groups, default)


def env_suffix(group: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", group).upper()


class ListenerContainer:
    """Runs the listeners of a registry (default: every ``@listener``) with ``settings`` (default: from the
    environment). ``start()`` creates and starts one consumer per group and, unless ``stop_at_exit`` is False,
    registers ``stop()`` to run when the interpreter exits; also a context manager."""

    def __init__(
        self,
        settings: Settings | None = None,
        registry: Registry = listeners,
        *,
        stop_at_exit: bool = True,
        refresh: float | None = None,
    ):
        self._registry = registry
        self._settings = settings
        self._stop_at_exit = stop_at_exit
        self._refresh = refresh
        self.consumers: dict[str, Consumer] = {}

    def start(self) -> None:
        by_group: dict[str, list[Listener]] = {}
        for entry in self._registry.listeners:
            by_group.setdefault(entry.group, []).append(entry)
        settings = self._settings or Settings.from_environment(by_group)
        for group, entries in by_group.items():
            modes = {entry.mode for entry in entries}
            if len(modes) > 1:
                raise ValueError(f"the listeners of consumer group {group} mix concurrent and orderly modes")
        try:
            for group, entries in by_group.items():
                self.consumers[group] = self._start_group(group, entries, settings)
        except BaseException:
            self.stop()
            raise
        if self._stop_at_exit:
            atexit.register(self.stop)

    def _start_group(self, group: str, entries: list[Listener], settings: Settings) -> Consumer:
        options = settings.group(group)
        consumer = Consumer(
            group,
            orderly=entries[0].mode == ORDERLY,
            portal_url=settings.portal_url,
            token=options.token or None,
            token_file=options.token_file or None,
            namesrv_addr=settings.namesrv_addr or None,
            thread_count=options.thread_count,
            refresh=self._refresh,
        )
        for entry in entries:
            consumer.subscribe(entry.topic, entry.function, entry.tags, max_reconsume_times=entry.max_reconsume_times)
        consumer.start()
        log.info("consumer group %s listening to %s", group, ", ".join(entry.topic for entry in entries))
        return consumer

    def stop(self) -> None:
        """Shut every consumer down (each reports its last minute); safe to call twice."""
        consumers, self.consumers = self.consumers, {}
        for consumer in consumers.values():
            try:
                consumer.shutdown()
            except Exception:
                log.exception("shutting consumer group %s down failed", consumer.group)
        if self._stop_at_exit:
            atexit.unregister(self.stop)

    def __enter__(self) -> ListenerContainer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

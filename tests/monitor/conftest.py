"""Fixtures of the monitoring tests: real OpenSSH servers (``/usr/sbin/sshd`` run as a plain process on a free
127.0.0.1 port, with its own host key, configuration and ``authorized_keys`` in a temporary directory, by
:mod:`monitor.launcher.sshd`, which the demo uses too) and SSH keys made by ``ssh-keygen``. The sandbox's brokers
listen on 127.0.0.1, so that is the "broker host" sshd serves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.launcher.sshd import Sshd, keygen, public_key_line
from tests.support.network import free_port


@dataclass(frozen=True)
class Keys:
    client: Path  # in every server's authorized_keys unless a test says otherwise
    stranger: Path  # in no server's authorized_keys
    host_a: Path  # ed25519 host keys
    host_b: Path
    host_rsa: Path


@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory) -> Keys:
    folder = tmp_path_factory.mktemp("ssh-keys")
    return Keys(
        client=keygen(folder / "client"),
        stranger=keygen(folder / "stranger"),
        host_a=keygen(folder / "host_a"),
        host_b=keygen(folder / "host_b"),
        host_rsa=keygen(folder / "host_rsa", "rsa"),
    )


@pytest.fixture(scope="session")
def sshd(tmp_path_factory, ssh_keys) -> Sshd:
    """The session's sshd: host key ``host_a``, the ``client`` key authorized."""
    server = Sshd(
        tmp_path_factory.mktemp("sshd"),
        port=free_port(),
        host_keys=[ssh_keys.host_a],
        authorized_keys=public_key_line(ssh_keys.client),
    )
    yield server
    server.stop()


@pytest.fixture
def start_sshd(tmp_path, ssh_keys):
    """Start more servers for one test: ``start_sshd(host_keys=[...], port=..., authorized_keys=...)`` (defaults: a
    free port, the ``client`` key authorized); all are stopped when the test ends."""
    servers: list[Sshd] = []

    def start(*, host_keys: Sequence[Path], port: int | None = None, authorized_keys: str | None = None) -> Sshd:
        server = Sshd(
            tmp_path / f"sshd-{len(servers)}",
            port=port or free_port(),
            host_keys=host_keys,
            authorized_keys=authorized_keys or public_key_line(ssh_keys.client),
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def eager():
    """``.delay``/``.apply_async`` run the task at once, in this process (and raise what it raises). Every task
    module is imported first, as a worker does at start, so tasks queued by name find their task."""
    from portal.celery import app

    app.loader.import_default_modules()
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    app.conf.update(task_always_eager=False, task_eager_propagates=False)

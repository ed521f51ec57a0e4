"""Fixtures of the monitoring tests: real OpenSSH servers (``/usr/sbin/sshd`` run as a plain process on a free
127.0.0.1 port, with its own host key, configuration and ``authorized_keys`` in a temporary directory) and SSH
keys made by ``ssh-keygen``. The sandbox's brokers listen on 127.0.0.1, so that is the "broker host" sshd serves."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself, so it must be started by its absolute path
SSH_USER = getpass.getuser()
READY_DEADLINE_SECONDS = 10.0


def keygen(path: Path, key_type: str = "ed25519") -> Path:
    """A new key pair without passphrase: ``path`` (private) and ``path.pub``."""
    bits = ["-b", "2048"] if key_type == "rsa" else []
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, *bits, "-N", "", "-C", "mqcloud-test", "-f", str(path)], check=True
    )
    return path


def public_key_line(private_key: Path) -> str:
    return Path(f"{private_key}.pub").read_text().strip()


def fingerprint(private_key: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""
    out = subprocess.run(["ssh-keygen", "-lf", f"{private_key}.pub"], check=True, capture_output=True, text=True)
    return out.stdout.split()[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Keys:
    client: Path  # in every server's authorized_keys unless a test says otherwise
    stranger: Path  # in no server's authorized_keys
    host_a: Path  # ed25519 host keys
    host_b: Path
    host_rsa: Path


class Sshd:
    """One running sshd; ``log`` is its own log (``-e``, LogLevel VERBOSE: logins name the key's fingerprint)."""

    def __init__(self, workdir: Path, *, port: int, host_keys: Sequence[Path], authorized_keys: str):
        self.port = port
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "authorized_keys").write_text(authorized_keys + "\n")
        self.config = workdir / "sshd_config"
        settings = [
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            *(f"HostKey {key}" for key in host_keys),
            f"PidFile {workdir / 'sshd.pid'}",
            f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "LogLevel VERBOSE",
        ]
        self.config.write_text("\n".join(settings) + "\n")
        self.log_path = workdir / "sshd.log"
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stderr=log)
        self._wait_ready()

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.process.returncode}:\n{self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    if sock.recv(64).startswith(b"SSH-2.0-"):
                        return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"sshd did not answer on port {self.port} within {READY_DEADLINE_SECONDS} s:\n{self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


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

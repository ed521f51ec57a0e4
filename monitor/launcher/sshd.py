"""A private OpenSSH server on 127.0.0.1: ``/usr/sbin/sshd`` run as a plain process on a port of its own, with its
own host key, configuration and ``authorized_keys`` in one folder, and keys made by ``ssh-keygen``. It is what the
server-stats collection logs in to in the tests (``tests/monitor/conftest.py``) and in ``manage.py demo``, which
runs it under its supervisor (:func:`sshd_command`); :class:`Sshd` runs one as a child of the caller.

Only public-key logins, only on 127.0.0.1. As a plain user sshd can log in only that user; as root it needs its
privilege-separation directory (``/run/sshd``), which :func:`write_config` creates.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself, so it must be started by its absolute path
SSH_USER = getpass.getuser()  # the one user a private sshd can log in (itself, or any as root)
HOST = "127.0.0.1"
READY_DEADLINE_SECONDS = 10.0


def keygen(path: Path, key_type: str = "ed25519", comment: str = "mqcloud-test") -> Path:
    """A new key pair without passphrase: ``path`` (private) and ``path.pub``."""
    bits = ["-b", "2048"] if key_type == "rsa" else []
    subprocess.run(["ssh-keygen", "-q", "-t", key_type, *bits, "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path


def public_key_line(private_key: Path) -> str:
    return Path(f"{private_key}.pub").read_text().strip()


def fingerprint(private_key: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""
    out = subprocess.run(["ssh-keygen", "-lf", f"{private_key}.pub"], check=True, capture_output=True, text=True)
    return out.stdout.split()[1]


def write_config(workdir: Path, *, port: int, host_keys: Sequence[Path], authorized_keys: str) -> Path:
    """sshd's configuration (and its ``authorized_keys``) in ``workdir``: 127.0.0.1:``port``, public keys only,
    LogLevel VERBOSE (logins name the key's fingerprint). Returns the configuration file."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "authorized_keys").write_text(authorized_keys + "\n")
    config = workdir / "sshd_config"
    settings = [
        f"Port {port}",
        f"ListenAddress {HOST}",
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
    config.write_text("\n".join(settings) + "\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    return config


def sshd_command(config: Path) -> list[str]:
    """sshd in the foreground (``-D``), logging to its standard error (``-e``)."""
    return [SSHD, "-D", "-e", "-f", str(config)]


def answers(port: int) -> bool:
    """Whether an SSH server greets on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=1) as sock:
            return sock.recv(64).startswith(b"SSH-2.0-")
    except OSError:
        return False


def wait_ready(port: int, alive: Callable[[], bool], describe: Callable[[], str]) -> None:
    """Wait until the server greets; RuntimeError (with ``describe()``, its log) if it dies or stays silent."""
    deadline = time.monotonic() + READY_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"sshd exited:\n{describe()}")
        if answers(port):
            return
        time.sleep(0.02)
    raise RuntimeError(f"sshd did not answer on port {port} within {READY_DEADLINE_SECONDS} s:\n{describe()}")


class Sshd:
    """One running sshd, a child of the caller; ``log`` is its own log."""

    def __init__(self, workdir: Path, *, port: int, host_keys: Sequence[Path], authorized_keys: str):
        self.port = port
        self.config = write_config(workdir, port=port, host_keys=host_keys, authorized_keys=authorized_keys)
        self.log_path = workdir / "sshd.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(sshd_command(self.config), stderr=log)
        try:
            wait_ready(port, lambda: self.process.poll() is None, lambda: self.log)
        except RuntimeError:
            self.stop()
            raise

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

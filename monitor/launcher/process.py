"""One RocketMQ JVM as a plain process: started in its own session with its log in a file, ready when its log says
so, stopped with SIGTERM then SIGKILL so no JVM outlives its owner.

Every process started here is also remembered in a module-level registry that an ``atexit`` hook stops, so a test
session or a demo that dies on an exception still leaves no Java behind; a JVM whose starter is killed outright
gets SIGTERM from the kernel (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

# Java 17 closes the JDK internals that RocketMQ's mmap cleaner and Netty reach into.
JAVA_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
)
STOP_GRACE_SECONDS = 15.0
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec: nothing but the system call
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_running: set[JavaProcess] = set()
_running_lock = threading.Lock()


class LaunchError(RuntimeError):
    """A server did not come up; the message ends with the tail of its log."""


class JavaProcess:
    """``java -cp CLASSPATH [jvm options] MAIN ARGS`` with ``log`` receiving stdout and stderr."""

    def __init__(
        self,
        name: str,
        main_class: str,
        args: Sequence[str],
        *,
        classpath: str,
        workdir: Path,
        heap_mb: int = 256,
        jvm_options: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ):
        self.name = name
        self.main_class = main_class
        self.args = list(args)
        self.classpath = classpath
        self.workdir = Path(workdir)
        self.heap_mb = heap_mb
        self.jvm_options = list(jvm_options)
        self.env = env or {}
        self.log = self.workdir / f"{name}.log"
        self.popen: subprocess.Popen | None = None

    @property
    def command(self) -> list[str]:
        return [
            "java",
            f"-Xms{min(64, self.heap_mb)}m",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:MaxDirectMemorySize=256m",
            "-XX:-UsePerfData",
            # 5.x logs through its own bundled logback into ~/logs/rocketmqlogs: one home per server keeps them apart.
            f"-Duser.home={self.workdir / self.name}",
            "-Djava.net.preferIPv4Stack=true",
            *JAVA_OPENS,
            *self.jvm_options,
            "-cp",
            self.classpath,
            self.main_class,
            *self.args,
        ]

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> JavaProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        with open(self.log, "ab") as log:
            self.popen = subprocess.Popen(
                self.command,
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        with _running_lock:
            _running.add(self)
        return self

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 15) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_for_log(self, marker: str, timeout: float) -> None:
        """Wait until ``marker`` appears in the log (the server's own "boot success" line)."""
        self._wait(lambda: marker in self.log_text(), timeout, f"log line {marker!r}")

    def wait_for_port(self, port: int, timeout: float) -> None:
        self._wait(lambda: port_open(port), timeout, f"port {port}")

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if not self.alive():
                code = self.popen.returncode if self.popen else None
                raise LaunchError(f"{self.name} exited ({code}) before {what}:\n{self.log_tail()}")
            time.sleep(0.1)
        raise LaunchError(f"{self.name} not ready after {timeout:.0f} s (waiting for {what}):\n{self.log_tail()}")

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM to the process group (the JVM runs its shutdown hooks), SIGKILL after ``grace`` seconds."""
        stop_together([self], grace)

    def kill(self) -> None:
        """SIGKILL at once: a crashed server, as a fault to observe."""
        if self.popen is not None and self.popen.poll() is None:
            _signal_group(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
        with _running_lock:
            _running.discard(self)


def stop_together(processes: list[JavaProcess], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM to all at once (a broker's shutdown hooks take seconds), then wait; SIGKILL what is left."""
    live = [p for p in processes if p.popen is not None and p.popen.poll() is None]
    for process in live:
        _signal_group(process.popen.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in live:
        try:
            process.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process.popen.pid, signal.SIGKILL)
            process.popen.wait(5)
    with _running_lock:
        _running.difference_update(processes)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signum)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


_claimed: set[int] = set()
_claimed_lock = threading.Lock()


def free_port(*offsets: int) -> int:
    """A port P on 127.0.0.1 with P+offset free for every offset (a broker also takes P-2 and P+1), not handed out
    before by this process. Ports come from the kernel's ephemeral choice, then are checked with their neighbours."""
    offsets = offsets or (0,)
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        wanted = [port + o for o in offsets]
        if min(wanted) < 1024 or max(wanted) > 65535:
            continue
        with _claimed_lock:
            if any(p in _claimed for p in wanted) or not all(_port_free(p) for p in wanted):
                continue
            _claimed.update(wanted)
        return port
    raise LaunchError("no free port found on 127.0.0.1")


@atexit.register
def stop_all() -> None:
    """Stop every JVM this process started and has not stopped yet."""
    with _running_lock:
        leftovers = list(_running)
    stop_together(leftovers, grace=5.0)

"""Child processes run by ``manage.py demo``: started in order, watched, and stopped in reverse order.

Each child starts in its own session, so a Ctrl-C in the terminal reaches only the supervisor, which then stops
the children one by one (the web server before the workers that serve it, the cluster before the Redis...). A
child is asked to stop with SIGTERM, so it can stop its own children (gunicorn its workers, the sandbox its
traffic clients); whatever is still left of its descendants (as they were just before the stop, found in /proc)
and of its process group afterwards is killed. Children also get SIGTERM
from the kernel if the supervisor itself dies (PR_SET_PDEATHSIG), so nothing outlives a killed demo.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec: nothing but the system call
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log_path: Path
    stop_timeout: float

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Supervisor:
    """Starts children with their output in ``log_dir/<name>.log`` and stops them, last started first."""

    def __init__(self, log_dir: Path, *, stop_timeout: float = 20.0):
        self.log_dir = log_dir
        self.stop_timeout = stop_timeout
        self.children: list[Child] = []
        log_dir.mkdir(parents=True, exist_ok=True)

    def start(
        self, name: str, argv: list[str], *, env: dict[str, str] | None = None, stop_timeout: float | None = None
    ) -> Child:
        """``stop_timeout``: how long this child may take to stop on SIGTERM (default: the supervisor's)."""
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # one system call, no Python state touched
            )
        child = Child(name, process, log_path, stop_timeout or self.stop_timeout)
        self.children.append(child)
        return child

    def exited(self) -> Child | None:
        """The first child that is no longer running, if any."""
        return next((child for child in self.children if child.process.poll() is not None), None)

    def stop_all(self) -> list[str]:
        """Stop every child, newest first; returns one line per child saying how it ended."""
        lines = []
        while self.children:
            child = self.children.pop()
            lines.append(f"{child.name}: {self._stop(child)}")
        return lines

    def _stop(self, child: Child) -> str:
        process = child.process
        if process.poll() is None:
            descendants = _descendants(child.pid)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(child.stop_timeout)
                outcome = f"stopped in {time.monotonic() - started:.1f}s"
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                outcome = f"killed after {child.stop_timeout:g}s"
        else:
            descendants, outcome = [], f"had already exited with code {process.returncode}"
        # What the child left behind: its process group, and descendants that started sessions of their own.
        _quietly(os.killpg, child.pid, signal.SIGKILL)
        for pid, started in descendants:
            if _start_time(pid) == started:  # still that process, not a new one that got the pid
                _quietly(os.kill, pid, signal.SIGKILL)
        return outcome


def _quietly(send, target: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        send(target, signum)


def _stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state, ppid, ...), or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _start_time(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields else None  # field 22 of stat: start time in clock ticks since boot


def _descendants(root: int) -> list[tuple[int, str]]:
    """(pid, start time) of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            starts[int(entry.name)] = fields[19]
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append((pid, starts[pid]))
            todo.append(pid)
    return found

"""The real mqadmin (``org.apache.rocketmq.tools.command.MQAdminStartup``) of a pinned release, run as a JVM.

It reads ``ROCKETMQ_HOME/conf`` for its logging and, on ACL clusters, for the credentials it signs with
(tools.yml); :func:`run` returns what it printed. mqadmin exits 0 even when a subcommand fails (it prints the
exception), so callers judge the output, as an operator reading the terminal would. It runs in
``ROCKETMQ_HOME/mqadmin``, where the files some subcommands write land.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from monitor.launcher.process import JAVA_OPENS
from monitor.launcher.releases import Release, resolve

MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
# mqadmin waits 5 s for each answer (its own -t where a subcommand has one); on a loaded machine a server can be
# slower than that, so a run that timed out is tried again (what an operator would do), at most this often.
TIMEOUT_RETRIES = 2


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(rel: Release, home: Path, args: list[str], *, timeout: float = 120.0) -> Result:
    resolve(rel)
    command = [
        "java",
        "-Xms32m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:-UsePerfData",
        f"-Duser.home={home}",
        f"-Drocketmq.client.logRoot={home / 'logs'}",
        "-Drmq.logback.configurationFile=rmq.tools.logback.xml",
        *JAVA_OPENS,
        "-cp",
        rel.classpath,
        MQADMIN_MAIN,
        *args,
    ]
    env = {**os.environ, "ROCKETMQ_HOME": str(home)}
    # consumerStatus writes each client's running info into ./<timestamp>/<clientId>: keep that out of the caller's
    # folder (the repository, when a test runs it).
    cwd = home / "mqadmin"
    cwd.mkdir(parents=True, exist_ok=True)
    for attempt in range(1 + TIMEOUT_RETRIES):
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
        if "RemotingTimeoutException" not in done.stderr or attempt == TIMEOUT_RETRIES:
            break
    return Result(tuple(args), done.returncode, done.stdout, done.stderr)

"""The real mqadmin run in batches, and readers of what it prints, one per output shape.

:func:`run_batch` runs a list of mqadmin command lines against a :class:`~monitor.launcher.cluster.RealCluster` in
one JVM (java/MQAdminBatch.java calls the release's MQAdminStartup once per command line, as the mqadmin script
does, with the JVM options of :mod:`monitor.launcher.mqadmin`): a JVM start costs seconds on a loaded machine, a
subcommand in a warm JVM milliseconds. It runs in a folder of its own, where consumerStatus writes its files.

The readers turn mqadmin's printf output into plain data: :func:`table` (``#Header`` columns), :func:`properties`
(``====title====`` blocks of ``key = value``), :func:`colon_pairs` (brokerStatus), :func:`message` and
:func:`tracks` (printMsg), :func:`java_map` (``{k=v, ...}``) and :func:`java_json` (fastjson's pretty print).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.launcher.process import JAVA_OPENS
from monitor.remoting import fastjson

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "MQAdminBatch.java"
BATCH_TIMEOUT = 600.0  # seconds for the whole batch: every subcommand has its own 3-5 s request timeouts


@dataclass(frozen=True)
class JavaRun:
    args: tuple[str, ...]
    stdout: str
    stderr: str


def run_batch(cluster, commands: list[list[str]]) -> list[JavaRun]:
    """``mqadmin ARGS -n NAMESRV`` for each command, in order, in one JVM of the cluster's release."""
    with tempfile.TemporaryDirectory(prefix="mqadmin-batch-", dir=cluster.workdir) as folder:
        work = Path(folder)
        lines = ["\t".join([*args, "-n", cluster.namesrv_addr]) for args in commands]
        (work / "commands").write_text("\n".join(lines) + "\n")
        command = [
            "java",
            "-Xms32m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            f"-Duser.home={cluster.home}",
            f"-Drocketmq.client.logRoot={cluster.home / 'logs'}",
            "-Drmq.logback.configurationFile=rmq.tools.logback.xml",
            *JAVA_OPENS,
            "-cp",
            cluster.release.classpath,
            str(JAVA_SOURCE),
            str(work),
        ]
        env = {**os.environ, "ROCKETMQ_HOME": str(cluster.home)}
        done = subprocess.run(
            command, env=env, cwd=work, capture_output=True, text=True, timeout=BATCH_TIMEOUT, check=False
        )
        runs = []
        for i, args in enumerate(commands):
            out, err = work / f"{i}.out", work / f"{i}.err"
            if not out.exists():
                raise AssertionError(
                    f"the mqadmin batch stopped before {args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
            runs.append(JavaRun(tuple(args), out.read_text(errors="replace"), err.read_text(errors="replace")))
        return runs


# --- readers --------------------------------------------------------------------------------------------------------

_DATE_TIME = re.compile(r"\d{2}:\d{2}:\d{2}(,\d{3})?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def cells(line: str) -> list[str]:
    """Whitespace-separated cells, keeping together what mqadmin prints with spaces inside: a date and its time,
    and a parenthesised group (5.x's ``0-0(0.0w, 0.0, 0.0)``)."""
    found: list[str] = []
    for token in line.split():
        time_of_date = _DATE_TIME.fullmatch(token) and _DATE.fullmatch(found[-1]) if found else False
        if time_of_date or (found and found[-1].count("(") > found[-1].count(")")):
            found[-1] += " " + token
        else:
            found.append(token)
    return found


def _header_line(lines: list[str], first: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith("#" + first))


def headers(text: str, first: str) -> list[str]:
    """The column names (without ``#``) of the table whose header line starts with ``#first``."""
    lines = text.splitlines()
    return [name.strip() for name in lines[_header_line(lines, first)].split("#")[1:]]


def table(text: str, first: str) -> list[dict[str, str]]:
    """The rows of the table whose header line starts with ``#first``, as dicts by header name (without ``#``),
    up to the first blank line. A row shorter than the header has blank trailing cells (an empty consumer group)."""
    lines = text.splitlines()
    start = _header_line(lines, first)
    names = headers(text, first)
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        values = cells(line)
        if len(values) > len(names):
            raise AssertionError(f"more cells than the header {names} has: {line!r}")
        rows.append(dict(zip(names, values + [""] * (len(names) - len(values)), strict=True)))
    return rows


_TITLE = re.compile(r"^=+(.*?)=+$")
_PROPERTY = re.compile(r"^(\S+)\s*=  (.*)$")


def properties(text: str) -> dict[str, dict[str, str]]:
    """``====TITLE====`` blocks of ``key   =  value`` lines (getBrokerConfig, getNamesrvConfig, getConsumerConfig),
    by title."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        title = _TITLE.match(line)
        if title:
            current = blocks.setdefault(title.group(1), {})
        elif current is not None and (entry := _PROPERTY.match(line)):
            current[entry.group(1)] = entry.group(2)
    return blocks


_COLON_PAIR = re.compile(r"^(\S+?)\s*: (.*)$")
_ADDR_COLON_PAIR = re.compile(r"^(\S+)\s+(\S+?)\s*: (.*)$")


def colon_pairs(text: str) -> dict[str, str]:
    """``key   : value`` lines (brokerStatus -b)."""
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := _COLON_PAIR.match(line))}


def colon_pairs_by_addr(text: str) -> dict[str, dict[str, str]]:
    """``addr   key   : value`` lines (brokerStatus -c), by broker address."""
    tables: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if m := _ADDR_COLON_PAIR.match(line):
            tables.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return tables


_FIELD = re.compile(r"^([A-Za-z][A-Za-z ]*):\s+(.*)$")
# mqadmin 4.9.4 prints the tracks without line breaks between them.
_TRACK = re.compile(
    r"MessageTrack \[consumerGroup=(.*?), trackType=(\w+), exceptionDesc=(.*?)\](?=MessageTrack|\s*$)", re.M
)


def message(text: str) -> dict[str, str]:
    """printMsg's ``Name:   value`` lines (queryMsgById, queryMsgByOffset), by name."""
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := _FIELD.match(line))}


def tracks(text: str) -> list[tuple[str, str, str]]:
    """The MessageTrack lines after a message: (consumer group, track type, exception description)."""
    return [m.groups() for m in _TRACK.finditer(text)]


def java_map(text: str) -> dict[str, str]:
    """A Java Map's toString, ``{a=1, b=2}``; values must not contain ``", "``."""
    inner = text.strip().removeprefix("{").removesuffix("}")
    return dict(item.split("=", 1) for item in inner.split(", ")) if inner else {}


def java_json(text: str) -> Any:
    """What fastjson's pretty print wrote (integer map keys, tabs)."""
    return fastjson.loads(text[text.index("{") :])

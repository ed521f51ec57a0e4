"""A job killed for real (SIGKILL to ``manage.py sparkjob``'s whole process group, its Spark JVM included) and run
again produces the complete result: the same rows as a clean run of the window on a copy of the same database.

Everything runs as separate processes on a file-backed SQLite database in tmp_path (the test database of the other
tests lives in this process's memory, where no other process can see it): ``manage.py migrate``, a script storing
known minute data, and the command itself, whose progress lines (one per step when not on a terminal) tell when to
kill it."""

import contextlib
import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sparkjobs.extract.lake import Lake
from sparkjobs.extract.tables import MINUTE_TABLES
from stats.models import JobRun, JobState
from tests.sparkjobs.minutes import HOUR
from tests.support.spark import LOCAL_MASTER, QUICK_JVM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BASE_DIR = Path(__file__).resolve().parents[2]
DAY = HOUR.replace(hour=0)
# Known minute data in three hours of the day: the hour before HOUR, HOUR and the hour after.
DATA_HOURS = [HOUR + dt.timedelta(hours=offset) for offset in (-1, 0, 1)]
STORE = (
    "import datetime as dt\n"
    "from tests.sparkjobs.minutes import HOUR, store_hour\n"
    "for offset in (-1, 0, 1):\n"
    "    store_hour(hour=HOUR + dt.timedelta(hours=offset))\n"
)
SNAPSHOT = "import json\nfrom tests.sparkjobs.minutes import snapshot\nprint(json.dumps(snapshot(), default=str))\n"
COMMAND = ["sparkjob", "daily", "--start", f"{DAY:%Y-%m-%dT%H:%M}"]
# The progress line shown before the last data hour's first partition is exported: every partition of the hours
# before it (the first two data hours among them) is in the lake, and the Spark transforms and the load are to come.
KILL_AT = f"extract {MINUTE_TABLES[0].name} {DATA_HOURS[-1]:%Y-%m-%d %H:00}"


def environment(tmp_path: Path, database: Path, lake: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "MQCLOUD_VAR_DIR": str(tmp_path / "var"),
        "SPARK_MASTER": LOCAL_MASTER,
        "SPARK_LAKE_URL": str(lake),
        "SPARK_JAVA_OPTIONS": QUICK_JVM,
        "PYTHONUNBUFFERED": "1",  # progress lines reach the pipe as they are written
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def snapshot(env: dict[str, str]) -> dict[str, list]:
    return json.loads(manage(env, "shell", "-c", SNAPSHOT).stdout.splitlines()[-1])


def job_runs(database: Path) -> list[dict]:
    with sqlite3.connect(database) as connection:
        connection.row_factory = sqlite3.Row
        rows = connection.execute(
            f"SELECT state, worker, step, error, finished_at FROM {JobRun._meta.db_table} ORDER BY id"
        ).fetchall()
    connection.close()
    return [dict(row) for row in rows]


def partitions(lake: Path) -> dict[Path, int]:
    """The lake's partition files and their inodes (an exported partition keeps its inode; exported again, it gets
    a new one)."""
    return {path.relative_to(lake): path.stat().st_ino for path in lake.rglob("part.parquet")}


def kill_at(env: dict[str, str], line_ending: str, stderr: Path) -> tuple[subprocess.Popen, list[str]]:
    """Start the command in a process group of its own, read its progress until a line ends with
    ``line_ending``, then SIGKILL the whole group (the Python driver and the JVM it started)."""
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, "manage.py", *COMMAND],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
        )
    seen = []
    try:
        for line in process.stdout:
            seen.append(line.rstrip("\n"))
            if seen[-1].endswith(line_ending):
                break
    finally:
        with contextlib.suppress(ProcessLookupError):  # the command ended on its own
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
    assert seen and seen[-1].endswith(line_ending), (
        f"the command ended (exit {process.returncode}) without showing {line_ending!r}:\n"
        + "\n".join(seen)
        + f"\n{stderr.read_text()[-4000:]}"
    )
    return process, seen


def test_a_job_killed_mid_way_and_run_again_produces_the_complete_result(tmp_path):
    database, lake = tmp_path / "db.sqlite3", tmp_path / "lake"
    env = environment(tmp_path, database, lake)
    manage(env, "migrate", "--no-input")
    manage(env, "shell", "-c", STORE)
    clean_database = tmp_path / "clean.sqlite3"
    with sqlite3.connect(database) as source, sqlite3.connect(clean_database) as copy:
        source.backup(copy)
    source.close()
    copy.close()

    killed, progress = kill_at(env, KILL_AT, tmp_path / "killed.stderr")

    assert killed.returncode == -signal.SIGKILL
    assert any(" extract " in line for line in progress[:-1])
    # Nothing recorded its end: the run is left running, held by a process that no longer exists.
    [dead] = job_runs(database)
    assert dead["state"] == JobState.RUNNING and dead["finished_at"] is None
    assert dead["worker"].endswith(f":{killed.pid}")
    assert dead["step"].startswith("extract ")
    exported = partitions(lake)
    for hour in DATA_HOURS[:-1]:
        assert {Path(Lake.partition(spec.name, hour)) for spec in MINUTE_TABLES} <= exported.keys()
    assert not any(snapshot(env).values())  # no rollup loaded

    resumed = manage(env, *COMMAND)

    assert f"daily {DAY:%Y-%m-%d %H:%M} succeeded" in resumed.stdout
    runs = job_runs(database)
    assert [run["state"] for run in runs] == [JobState.FAILED, JobState.SUCCEEDED]
    assert f"its worker {dead['worker']} is gone" in runs[0]["error"] and runs[0]["finished_at"] is not None
    after = partitions(lake)
    assert len(after) == 24 * len(MINUTE_TABLES)
    assert {path: after[path] for path in exported} == exported  # what the killed run exported was kept
    rows = snapshot(env)
    assert rows["TopicRollup"] and rows["ProducerLatencyRollup"]

    clean_env = environment(tmp_path, clean_database, tmp_path / "clean-lake")
    manage(clean_env, *COMMAND)

    assert rows == snapshot(clean_env)

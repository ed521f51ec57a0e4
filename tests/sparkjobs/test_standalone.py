"""The same job on a real Spark cluster: a standalone master and worker started from the pip package (spark-class),
on free ports of 127.0.0.1, torn down at the end. The cluster's results equal the local session's, row for row."""

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from sparkjobs.config import SparkConfig
from sparkjobs.jobs.runner import run_job
from sparkjobs.session import spark_session
from stats.models import JobState
from tests.sparkjobs.minutes import HOUR, snapshot, store_hour
from tests.support.network import free_port
from tests.support.spark import QUICK_JVM
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SPARK_HOME = Path(pyspark.__file__).parent
READY_WITHIN_SECONDS = 120


def start(log: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with log.open("w") as output:
        # spark-class execs java: the process (and its group, which the worker's executors join) is the JVM's.
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def wait_until_logged(log: Path, text: str, process: subprocess.Popen) -> None:
    """Wait for the JVM to log ``text``; one that exits first fails at once, with the end of its log."""

    def logged() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"exited before logging {text!r}:\n{log.read_text()[-3000:]}")
        return text in log.read_text()

    wait_for(logged, READY_WITHIN_SECONDS, f"{text!r} logged", state=lambda: log.read_text()[-3000:], interval=0.2)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()


@pytest.fixture
def standalone(tmp_path):
    """A standalone cluster: one master, one worker with 2 cores; yields the master URL."""
    port = free_port()
    master = start(
        tmp_path / "master.log",
        "org.apache.spark.deploy.master.Master",
        *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())),
    )
    processes = [master]
    try:
        wait_until_logged(tmp_path / "master.log", "I have been elected leader", master)
        url = f"spark://127.0.0.1:{port}"
        worker = start(
            tmp_path / "worker.log",
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port", str(free_port())),
            *("--work-dir", str(tmp_path / "work"), url),
        )
        processes.append(worker)
        wait_until_logged(tmp_path / "worker.log", "Successfully registered with master", worker)
        yield url
    finally:
        for process in reversed(processes):
            stop(process)
        for log in sorted(tmp_path.glob("*.log")) + sorted((tmp_path / "work").rglob("stderr")):
            print(f"--- {log} (shown if the test failed)\n{log.read_text()[-4000:]}")


def test_the_same_job_on_a_standalone_cluster_gives_identical_results(spark, config, standalone, tmp_path):
    store_hour()
    run_job("hourly", HOUR, config=config, spark=spark)
    local = snapshot()
    assert sum(len(rows) for rows in local.values()) > 0

    on_cluster = SparkConfig(master=standalone, lake_url=str(tmp_path / "cluster-lake"), java_options=QUICK_JVM)
    session = spark_session(on_cluster)
    try:
        run = run_job("hourly", HOUR, config=on_cluster, spark=session)
        executors = session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver
    finally:
        session.stop()

    assert run.state == JobState.SUCCEEDED and run.master == standalone
    assert executors >= 1
    assert snapshot() == local

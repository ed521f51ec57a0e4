"""``manage.py sandbox`` end to end in a subprocess, as a demo script or the portal's tests would run it, and the
fault API (SandboxCluster.stop_broker / hang / slow_down / drop_responses / heal) seen from the admin client.

Every wait has a deadline (the line reader, process waits, polling); no assertion is about how long anything took.
"""

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError
from monitor.sandbox.cluster import SandboxCluster
from tests.support.network import free_port
from tests.support.waiting import wait_for

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"
STARTUP_DEADLINE = 30.0
STOP_DEADLINE = 15.0
BROKER_LINE = re.compile(r"broker=(\S+) id=(\d+) addr=(127\.0\.0\.1:\d+)")


class Sandbox:
    """``manage.py sandbox ARGS`` in a subprocess; its stdout lines are read on a thread so that every read can
    have a deadline, and its stderr (the cluster's log) goes to a file so that it can never fill a pipe."""

    def __init__(self, tmp_path: Path, *args: str):
        self.stderr_path = tmp_path / "sandbox.stderr"
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(MANAGE), "sandbox", *args],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def line(self) -> str:
        try:
            line = self._lines.get(timeout=STARTUP_DEADLINE)
        except queue.Empty:
            line = None
        if line is None:
            raise AssertionError(f"no line from the sandbox; stderr: {self.stderr_path.read_text()[-3000:]}")
        return line

    def start_lines(self, brokers: int) -> tuple[str, dict[tuple[str, int], str]]:
        """The name server address and {(broker name, id): address} from the first lines."""
        first = self.line()
        match = re.fullmatch(r"namesrv=(127\.0\.0\.1:(\d+))", first)
        assert match and int(match.group(2)) > 0, first
        found = {}
        for _ in range(brokers):
            name, broker_id, addr = BROKER_LINE.fullmatch(self.line()).groups()
            found[name, int(broker_id)] = addr
        return match.group(1), found

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(STOP_DEADLINE)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def sandbox(tmp_path):
    started: list[Sandbox] = []

    def start(*args: str) -> Sandbox:
        started.append(Sandbox(tmp_path, *args))
        return started[-1]

    yield start
    for process in started:
        process.kill()


def answers(call) -> bool:
    try:
        call()
    except RemotingConnectError:
        return False
    return True


# --- the command -------------------------------------------------------------------------------------------------


def test_command_runs_brokers_and_slaves_until_sigterm(sandbox):
    process = sandbox("--namesrv-port", "0", "--brokers", "2", "--slaves")
    namesrv, brokers = process.start_lines(brokers=4)
    with MQAdmin(namesrv, timeout=5.0) as admin:
        info = admin.examine_broker_cluster_info()
    assert {name: sorted(names) for name, names in info.cluster_addr_table.items()} == {
        "DefaultCluster": ["broker-a", "broker-b"]
    }
    for name in ("broker-a", "broker-b"):
        assert info.broker_addr_table[name].broker_addrs == {0: brokers[name, 0], 1: brokers[name, 1]}
    assert process.terminate() == 0


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--acl", "no-secret"], "--acl must be ACCESS_KEY:SECRET_KEY"),
        (["--traffic", "nope"], "unknown traffic profile 'nope'"),
        (["--traffic", "slave-reader"], "add --slaves"),
        (["--drop-ratio", "2"], "--drop-ratio must be between 0 and 1"),
        (["--fault-target", "broker-z"], "unknown --fault-target 'broker-z'"),
    ],
)
def test_bad_arguments_are_one_error_line(args, error):
    result = subprocess.run(
        [sys.executable, str(MANAGE), "sandbox", "--namesrv-port", "0", *args],
        capture_output=True,
        text=True,
        timeout=STARTUP_DEADLINE,
    )
    assert result.returncode != 0 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and error in result.stderr


def test_a_name_server_port_in_use_is_one_error_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, str(MANAGE), "sandbox", "--namesrv-port", str(port)],
            capture_output=True,
            text=True,
            timeout=STARTUP_DEADLINE,
        )
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"CommandError: cannot start the name server on 127.0.0.1:{port}: Address already in use"
    ]


def test_acl_makes_brokers_refuse_unsigned_admin_calls(sandbox):
    port = free_port()
    process = sandbox("--namesrv-port", str(port), "--acl", "rocketmq2:12345678")
    namesrv, brokers = process.start_lines(brokers=1)
    assert namesrv == f"127.0.0.1:{port}"
    with MQAdmin(namesrv, timeout=5.0) as unsigned, pytest.raises(RemotingError) as refused:
        unsigned.get_all_topic_config(brokers["broker-a", 0])
    assert refused.value.code == ResponseCode.SYSTEM_ERROR and "No accessKey is configured" in str(refused.value)
    with MQAdmin(namesrv, acl=AclCredentials("rocketmq2", "12345678"), timeout=5.0) as signed:
        assert "TBW102" in signed.get_all_topic_config(brokers["broker-a", 0]).topic_config_table
    assert process.terminate() == 0


def test_hung_name_server_times_out_but_the_command_still_stops_cleanly(sandbox):
    process = sandbox("--namesrv-port", "0", "--namesrv-hang")
    namesrv, brokers = process.start_lines(brokers=1)
    with MQAdmin(namesrv, timeout=0.5) as impatient, MQAdmin(namesrv) as patient:
        with pytest.raises(RemotingTimeoutError):
            impatient.examine_broker_cluster_info()
        assert patient.get_broker_config(brokers["broker-a", 0])["brokerName"] == "broker-a"  # brokers still answer
    assert process.terminate() == 0


def test_delay_switch_slows_only_its_target(sandbox):
    process = sandbox("--namesrv-port", "0", "--brokers", "2", "--delay", "0.6", "--fault-target", "broker-b")
    namesrv, brokers = process.start_lines(brokers=2)
    with MQAdmin(namesrv, timeout=0.3) as impatient:
        with pytest.raises(RemotingTimeoutError):
            impatient.get_broker_config(brokers["broker-b", 0])
        assert impatient.get_broker_config(brokers["broker-a", 0])["brokerName"] == "broker-a"
        assert impatient.examine_broker_cluster_info().broker_addr_table
    assert process.terminate() == 0


def test_traffic_runs_inside_the_command_and_stops_with_it(sandbox, tmp_path):
    process = sandbox("--namesrv-port", "0", "--traffic", "steady", "--rate", "20", "--traffic-dir", str(tmp_path))
    namesrv, _ = process.start_lines(brokers=1)
    traffic = re.fullmatch(r"traffic=steady clients=2 pids=(\d+),(\d+)", process.line())
    assert traffic, "no traffic line"
    with MQAdmin(namesrv, timeout=5.0) as admin:
        wait_for(lambda: sum(o.max_offset for o in admin.examine_topic_stats("TopicSteady").offset_table.values()))
        wait_for(lambda: admin.examine_consume_stats("cg_steady").offset_table)
    assert process.terminate() == 0
    for pid in map(int, traffic.groups()):  # the command waited for its workers: none is left behind
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# --- the fault API -----------------------------------------------------------------------------------------------


@pytest.fixture
def cluster():
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


def test_a_stopped_broker_refuses_connections_and_leaves_the_cluster_until_restarted(cluster):
    addr = cluster.broker("broker-b").addr
    with MQAdmin(cluster.namesrv_addr, timeout=2.0) as admin:
        cluster.stop_broker("broker-b")
        with pytest.raises(RemotingConnectError):
            admin.fetch_broker_runtime_stats(addr)
        assert set(admin.examine_broker_cluster_info().broker_addr_table) == {"broker-a"}
        cluster.start_broker("broker-b")
        assert admin.examine_broker_cluster_info().broker_addr_table["broker-b"].broker_addrs == {0: addr}
        # The admin client backs off after a refused connection, then connects again.
        wait_for(lambda: answers(lambda: admin.fetch_broker_runtime_stats(addr)))


def test_a_hung_name_server_accepts_but_never_answers_until_healed(cluster):
    with MQAdmin(cluster.namesrv_addr, timeout=0.5) as impatient, MQAdmin(cluster.namesrv_addr) as patient:
        cluster.hang()
        with pytest.raises(RemotingTimeoutError):
            impatient.examine_broker_cluster_info()
        cluster.heal()
        assert set(patient.examine_broker_cluster_info().broker_addr_table) == {"broker-a", "broker-b"}


def test_slow_and_lossy_servers(cluster):
    addr = cluster.broker("broker-a").addr
    with MQAdmin(cluster.namesrv_addr, timeout=0.3) as impatient, MQAdmin(cluster.namesrv_addr) as patient:
        cluster.slow_down("broker-a", 0.6)
        with pytest.raises(RemotingTimeoutError):
            impatient.get_broker_config(addr)
        assert patient.get_broker_config(addr)["brokerName"] == "broker-a"  # late, but answered
        cluster.drop_responses("namesrv", 1.0)
        with pytest.raises(RemotingTimeoutError):
            impatient.examine_broker_cluster_info()
        cluster.heal()
        assert impatient.get_broker_config(addr)["brokerName"] == "broker-a"
        assert impatient.examine_broker_cluster_info().broker_addr_table


def test_fault_targets_name_the_name_server_a_master_or_name_and_id(cluster):
    assert cluster.server("namesrv") is cluster.namesrv
    assert cluster.server("broker-b") is cluster.server("broker-b:0") is cluster.broker("broker-b", 0)
    for bad in ("broker-b:1", "broker-z", "broker-a:x"):
        with pytest.raises(KeyError):
            cluster.server(bad)

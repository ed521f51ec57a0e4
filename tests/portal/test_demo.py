"""``manage.py demo`` end to end, as ``make demo`` runs it: in a subprocess, on free ports, with its own var folder
and database. Every wait has a deadline; no assertion is about how long anything took.

The running demo is also where a task goes through a real Redis to a real Celery worker: the test creates a topic
directly on the demo's cluster, sends ``sync_registry`` to the demo's Redis, and sees the worker import it. And
where every page gets content within five minutes of the start: a week of labelled demo history, the Spark
rollups and rankings run on it by the worker, and server stats read over SSH from the demo's own sshd.
"""

import http.cookiejar
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from celery import Celery
from django.urls import reverse

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from portal.management.commands.demo import ADMIN, CATCH_UP_HOURS, DEMO_CLUSTERS, USER
from portal.tasks import sync_registry
from tests.support.network import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"
START_DEADLINE = 120.0
STOP_DEADLINE = 60.0
REAL_STOP_DEADLINE = 240.0  # the real brokers' shutdown hooks, seconds each on a loaded machine
CONTENT_DEADLINE = 300.0  # every page has content within five minutes of `make demo`
WEEK_OF_MINUTES = 7 * 24 * 60


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def descendants(root: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat:
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        children = {pid for pid, ppid in parents.items() if ppid == parent}
        found |= children
        todo.extend(children)
    return found


class Demo:
    """``manage.py demo`` in a subprocess with its output in a file."""

    def __init__(self, tmp_path: Path, cluster: str = "sandbox", **ports: int):
        self.var_dir = tmp_path / "var"
        self.database = tmp_path / "demo.sqlite3"
        self.web_port = ports.get("web", free_port())
        self.redis_port = ports.get("redis", free_port())
        self.output_path = tmp_path / "demo.out"
        env = {
            **os.environ,
            "MQCLOUD_VAR_DIR": str(self.var_dir),
            "DATABASE_URL": f"sqlite:///{self.database}",
            "DEMO_PORT": str(self.web_port),
            "DEMO_REDIS_PORT": str(self.redis_port),
            "DEMO_NAMESRV_PORT": str(ports.get("namesrv", free_port())),
            "DEMO_SSH_PORT": str(ports.get("ssh", free_port())),
            "DEMO_CLUSTER": cluster,
        }
        self.cluster_name = DEMO_CLUSTERS[cluster][0]
        self.started = time.monotonic()
        with open(self.output_path, "wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, str(MANAGE), "demo"], stdout=output, stderr=subprocess.STDOUT, env=env
            )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def ready(self) -> bool:
        assert self.process.poll() is None, f"the demo exited early:\n{self.output[-5000:]}"
        return "Press Ctrl-C" in self.output

    def query(self, sql: str, *params):
        with sqlite3.connect(self.database) as db:
            return db.execute(sql, params).fetchall()

    def stop(self, deadline: float = STOP_DEADLINE) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(deadline)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def demo(tmp_path):
    started = []

    def start(cluster: str = "sandbox", **ports) -> Demo:
        started.append(Demo(tmp_path, cluster, **ports))
        return started[-1]

    yield start
    for process in started:
        process.kill()


def signed_in(base_url: str, username: str, password: str) -> tuple[urllib.request.OpenerDirector, str]:
    """Log in through the login form as a browser would; returns the browser and the path the portal lands on."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login_url = base_url + reverse("login")
    with opener.open(login_url, timeout=10) as response:
        page = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    with opener.open(login_url, data=form.encode(), timeout=10) as response:
        return opener, urllib.parse.urlsplit(response.url).path


def log_in(base_url: str, username: str, password: str) -> str:
    return signed_in(base_url, username, password)[1]


def page(browser: urllib.request.OpenerDirector, url: str) -> str:
    with browser.open(url, timeout=30) as response:
        assert response.status == 200, url
        return response.read().decode()


def check_every_page_has_content(running_demo: Demo, cluster_id: int) -> None:
    """Within five minutes of the start: the week of demo history labelled on the charts, server stats read over
    SSH, the Spark jobs run on the history and the rankings computed from it, and every page of the navigation."""
    generated = running_demo.query(
        "SELECT COUNT(*) FROM stats_clusterminute WHERE cluster_id = ? AND demo_history", cluster_id
    )
    assert generated == [(WEEK_OF_MINUTES,)], "a week of minutes, each marked as demo history"
    read = running_demo.query("SELECT mem_total FROM stats_serversample WHERE host = '127.0.0.1' AND error = ''")
    assert read and read[0][0] > 0, "server stats read over SSH from the demo's sshd at start"

    browser, _landing = signed_in(running_demo.url, *ADMIN)
    [(topic_id,)] = running_demo.query("SELECT id FROM portal_topic WHERE name = 'TopicOrders'")
    assert "TopicOrders (demo history)" in page(browser, running_demo.url + reverse("topic-detail", args=[topic_id]))
    server = page(browser, running_demo.url + reverse("server-detail", args=["127.0.0.1"]) + "?range=1h")
    charts = [json.loads(spec) for spec in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', server)]
    assert any(y is not None for chart in charts for trace in chart["data"] for y in trace.get("y", [])), (
        "the server page charts the stats read"
    )

    remaining = CONTENT_DEADLINE - (time.monotonic() - running_demo.started)
    wait_for(
        lambda: (
            {job for (job,) in running_demo.query("SELECT job FROM stats_jobrun WHERE state = 'succeeded'")}
            == set(CATCH_UP_HOURS)
        ),
        remaining,
        "the Spark jobs of the demo history: daily rollups, rankings and hourly rollups, each run at least once",
    )
    runs = running_demo.query("SELECT job, state, error FROM stats_jobrun ORDER BY started_at")
    assert {job for job, _state, _error in runs} == set(CATCH_UP_HOURS)
    assert [(job, error) for job, state, error in runs if state == "failed"] == []
    succeeded = [job for job, state, _error in runs if state == "succeeded"]
    assert set(succeeded) == set(CATCH_UP_HOURS)
    ranking = json.loads(
        page(browser, running_demo.url + reverse("api:ranking-list") + f"?cluster={cluster_id}&kind=topic_growth")
    )
    assert ranking["results"] and all(row["demo_history"] for row in ranking["results"])
    rankings_page = page(browser, running_demo.url + reverse("rankings") + f"?cluster={cluster_id}")
    assert 'class="ranking"' in rankings_page and 'id="ranking-demo-history"' in rankings_page
    assert page(browser, running_demo.url + reverse("job-run-list")).count("badge-up") >= len(succeeded)

    dashboard = page(browser, running_demo.url + reverse("dashboard"))
    navigation = re.search(r'<nav class="nav".*?</nav>', dashboard, re.DOTALL).group(0)
    paths = sorted(set(re.findall(r'<a href="(/[^"?#]*)"', navigation)))
    assert reverse("rankings") in paths and reverse("job-run-list") in paths
    for path in paths:
        page(browser, running_demo.url + path)


def test_the_demo_runs_the_product_and_ctrl_c_stops_everything_it_started(demo):
    running_demo = demo()
    wait_for(running_demo.ready, START_DEADLINE, "the demo's banner")
    children = descendants(running_demo.process.pid)

    with urllib.request.urlopen(running_demo.url + "/healthz", timeout=10) as response:
        assert response.status == 200
    with urllib.request.urlopen(running_demo.url + reverse("login"), timeout=10) as response:
        assert 'name="password"' in response.read().decode()
    assert f"{ADMIN[0]} / {ADMIN[1]}" in running_demo.output and f"{USER[0]} / {USER[1]}" in running_demo.output
    assert log_in(running_demo.url, *USER) == reverse("dashboard")
    assert log_in(running_demo.url, *ADMIN) == reverse("dashboard")

    [(cluster_id,)] = running_demo.query("SELECT id FROM portal_cluster WHERE name = ?", running_demo.cluster_name)
    check_every_page_has_content(running_demo, cluster_id)
    brokers = running_demo.query(
        "SELECT broker_name, broker_id, address FROM portal_broker WHERE cluster_id = ? AND present", cluster_id
    )
    assert len(brokers) == 4
    topics = {name for (name,) in running_demo.query("SELECT name FROM portal_topic WHERE cluster_id = ?", cluster_id)}
    assert "TopicOrders" in topics, "the first sync imported the demo traffic's topics"
    owners = running_demo.query(
        "SELECT DISTINCT team.name FROM portal_topic JOIN portal_team team ON team.id = portal_topic.team_id "
        "WHERE cluster_id = ?",
        cluster_id,
    )
    assert owners == [("demo-team",)], "the demo team owns the demo traffic's topics"

    # Through the demo's Redis to its Celery worker: the worker's sync imports a topic created on the cluster.
    [(namesrv,)] = running_demo.query("SELECT address FROM portal_nameserver WHERE cluster_id = ?", cluster_id)
    with MQAdmin(namesrv) as admin:
        for _name, broker_id, address in brokers:
            if broker_id == 0:
                admin.create_and_update_topic_config(address, b.TopicConfig(topic_name="DEMO_WORKER_TOPIC"))
    Celery(broker=f"redis://127.0.0.1:{running_demo.redis_port}/0").send_task(sync_registry.name, args=[cluster_id])
    wait_for(
        lambda: running_demo.query("SELECT 1 FROM portal_topic WHERE name = 'DEMO_WORKER_TOPIC'"),
        60,
        "the worker's sync",
    )

    assert running_demo.stop() == 0
    wait_for(lambda: not [pid for pid in children if running(pid)], STOP_DEADLINE, "every child gone")
    assert "demo stopped" in running_demo.output


def test_a_child_that_dies_is_reported_and_stops_the_demo(demo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        failing = demo(redis=taken.getsockname()[1])  # Redis cannot listen there and exits at once

        assert failing.process.wait(START_DEADLINE) != 0
    assert "redis exited unexpectedly" in failing.output
    assert "sandbox: stopped" in failing.output, "what had started is stopped"


@pytest.mark.timeout(1200)  # JVMs, C++ clients and a first collected minute; minutes on a loaded 2-core machine
@pytest.mark.parametrize(
    ("cluster", "version", "brokers"),
    [("real", "V4_9_4", 4), ("real5", "V5_5_0", 3)],
    ids=["rocketmq-4.9.4", "rocketmq-5"],
)
def test_the_demo_runs_on_real_rocketmq_with_the_same_portal(demo, cluster, version, brokers):
    """DEMO_CLUSTER=real runs two real 4.9.4 master/slave pairs, real5 one 5.x replica group of three brokers in
    controller mode with a proxy: the portal registers them, the demo traffic's topics arrive through the sync,
    and the worker's per-minute collection stores the C++ clients' real traffic."""
    running_demo = demo(cluster)
    wait_for(running_demo.ready, 720, "the demo's banner")
    children = descendants(running_demo.process.pid)
    assert "Apache RocketMQ" in running_demo.output

    [(cluster_id,)] = running_demo.query("SELECT id FROM portal_cluster WHERE name = ?", running_demo.cluster_name)
    registered = running_demo.query(
        "SELECT broker_name, broker_id, version FROM portal_broker WHERE cluster_id = ? AND present", cluster_id
    )
    assert len(registered) == brokers
    assert {v for *_, v in registered} == {version}, "versions come from the real brokers' runtime info"
    topics = {name for (name,) in running_demo.query("SELECT name FROM portal_topic WHERE cluster_id = ?", cluster_id)}
    assert "TopicOrders" in topics
    assert log_in(running_demo.url, *USER) == reverse("dashboard")

    produced = wait_for(
        lambda: running_demo.query(
            "SELECT SUM(put_nums) FROM stats_topicminute WHERE cluster_id = ? AND topic = 'TopicOrders' "
            "AND put_nums > 0",
            cluster_id,
        )[0][0],
        240,
        "a collected minute of the demo producers' traffic",
    )
    assert produced > 0

    assert running_demo.stop(REAL_STOP_DEADLINE) == 0
    wait_for(lambda: not [pid for pid in children if running(pid)], STOP_DEADLINE, "every child gone, JVMs too")

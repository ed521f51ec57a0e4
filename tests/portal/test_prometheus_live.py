"""End to end: a real Prometheus (Debian's ``prometheus``, run as a plain process on a port of its own) scrapes a
running portal whose collector stored real sandbox traffic (a real C++ producer and a consumer left behind), with
the shipped configuration and alert rules; its PromQL answers equal what the portal's own chart queries return for
the same minute, and every panel of the shipped Grafana dashboard returns data.

What no sandbox provides is stored through the same store functions its real source uses: one producer-SDK report
(as ``POST /api/v1/producer-reports`` stores it) and one server-stats sample (as the SSH collection stores it)."""

import datetime as dt
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from monitor.collect.probe import probe_cluster
from monitor.remoting.admin import MQAdmin
from portal.models import ConsumerGroup, ProducerGroup, Subscription, Topic
from portal.services.metrics import tokens
from stats.histogram import Histogram
from stats.models import ProducerMinute, ServerDiskSample, ServerSample, slot_start
from stats.queries.producers import group_latency
from stats.queries.traffic import broker_traffic, group_traffic, latest_minute, topic_traffic
from stats.store.producers import store_producer_minutes
from tests.monitor.traffic_helpers import WAIT, collect, plan, running
from tests.support.network import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow
pytest_plugins = ["tests.monitor.fixtures_traffic"]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "prometheus"
TOPIC, GROUP, PRODUCER_GROUP = "PromOrders", "cg_prom_orders", "PID_PROM_ORDERS"


@pytest.fixture
def collected(registered, traffic_sandbox, manual_stats, team, tmp_path):
    """The registry knows the topic, the group and the producer group; the sandbox carried real traffic, the
    consumer stopped part way (so the group lags), and the collector probed the brokers and stored the minute."""
    topic = Topic.objects.create(cluster=registered, team=team, name=TOPIC, queue_nums=1)
    group = ConsumerGroup.objects.create(cluster=registered, team=team, name=GROUP)
    Subscription.objects.create(consumer_group=group, topic=topic)
    ProducerGroup.objects.create(cluster=registered, team=team, name=PRODUCER_GROUP)
    traffic_plan = plan(TOPIC, GROUP, queues=1, backlog=400, rate=1.0, threads=1, delay=0.05)
    with running(traffic_sandbox, traffic_plan, tmp_path) as run:
        run.stop_producers(at_least=400)
        with MQAdmin(traffic_sandbox.namesrv_addr) as admin:

            def committed() -> int:
                return sum(o.consumer_offset for o in admin.examine_consume_stats(GROUP, TOPIC).offset_table.values())

            wait_for(lambda: committed() >= 40, what="some consumed and committed", timeout=WAIT)
    manual_stats.sample()
    now = timezone.now()
    probe_cluster(registered, now=now)
    collect(registered, now)
    return registered


@pytest.fixture
def reported(collected):
    """One SDK report of the previous minute and one server sample of a broker host."""
    minute = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    histogram = Histogram()
    for ms in (1.2, 2.5, 2.5, 4.0, 9.0, 30.0, 250.0):
        histogram.record(ms)
    store_producer_minutes(
        [
            ProducerMinute(
                cluster_id=collected.pk,
                producer_group=PRODUCER_GROUP,
                topic=TOPIC,
                client_id="app@1",
                client_addr="127.0.0.1",
                broker_name="broker-a",
                minute=minute,
                count=7,
                exception_count=0,
                exceptions={},
                histogram=histogram.to_dict(),
                max_ms=250.0,
                updated_at=timezone.now(),
            ),
        ]
    )
    host = collected.brokers.first().host
    ServerSample.objects.create(host=host, minute=slot_start(timezone.now()), cpu_percent=37.5, mem_total=8 << 30)
    ServerDiskSample.objects.create(
        host=host, minute=slot_start(timezone.now()), mount="/", size=100, used=40, available=60
    )
    return collected


@pytest.fixture
def prometheus(reported, live_server, portal_admin, tmp_path):
    """A Prometheus scraping the live portal every five seconds with the shipped configuration (target, scheme and
    interval changed) and the shipped alert rules; yields its HTTP API's base URL."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: `make sysdeps` installs Debian's prometheus package"
    home = shutil.copytree(DOCS, tmp_path / "prometheus")
    (home / "mqcloud-scrape-token").write_text(tokens.issue(by=portal_admin, label="live test").secret)
    config = yaml.safe_load((home / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="5s", evaluation_interval="5s")
    (job,) = config["scrape_configs"]
    job.update(scheme="http", scrape_timeout="5s")
    job["static_configs"] = [{"targets": [live_server.url.removeprefix("http://")]}]
    (home / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: _targets_up(base),
            timeout=120,
            what="Prometheus scraping the portal",
            state=lambda: _get(base, "/api/v1/targets").get("data"),
        )
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def _get(base: str, path: str, **params) -> dict:
    try:
        with urllib.request.urlopen(f"{base}{path}?{urllib.parse.urlencode(params)}", timeout=10) as answer:
            return json.load(answer)
    except OSError:
        return {}


def _targets_up(base: str) -> bool:
    targets = _get(base, "/api/v1/targets").get("data", {}).get("activeTargets", [])
    return bool(targets) and all(t["health"] == "up" for t in targets)


def query(base: str, expr: str) -> dict[tuple, float]:
    answer = _get(base, "/api/v1/query", query=expr)
    assert answer.get("status") == "success", answer
    return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in answer["data"]["result"]}


def one(base: str, expr: str) -> float:
    (value,) = query(base, expr).values()
    return value


def test_prometheus_answers_what_the_portals_charts_show(prometheus, collected):
    cluster = collected
    minute = latest_minute(cluster.pk, timezone.now())
    topic = topic_traffic(cluster.pk, TOPIC, minute, minute)
    assert (
        one(prometheus, f'rocketmq_producer_tps{{cluster="collected", topic="{TOPIC}"}}') == topic.put_nums[0][1] / 60
    )
    assert topic.put_nums[0][1] > 0
    consumed = group_traffic(cluster.pk, GROUP, minute, minute)[TOPIC]
    assert one(prometheus, f'sum(rocketmq_group_diff{{group="{GROUP}", topic="{TOPIC}"}})') == consumed.lag[0][1] > 0
    assert one(prometheus, f'sum(mqcloud_queue_lag{{group="{GROUP}", topic="{TOPIC}"}})') == consumed.lag[0][1]
    assert (
        one(prometheus, f'mqcloud_consumer_lag_seconds{{group="{GROUP}", topic="{TOPIC}"}}')
        == consumed.lag_seconds[0][1]
    )
    for broker in cluster.brokers.filter(broker_id=0):
        charted = broker_traffic(cluster.pk, broker.broker_name, 0, minute, minute).put_nums[0][1]
        exposed = one(prometheus, f'rocketmq_broker_tps{{broker="{broker.broker_name}", broker_id="0"}}')
        assert exposed == charted / 60
    reported_minute = ProducerMinute.objects.get().minute
    latency = group_latency(cluster.pk, PRODUCER_GROUP, reported_minute, reported_minute).total
    p99 = one(prometheus, f'mqcloud_producer_send_latency_ms{{producer_group="{PRODUCER_GROUP}", quantile="0.99"}}')
    assert p99 == latency.p99[0][1]
    assert one(prometheus, f'mqcloud_producer_sends{{producer_group="{PRODUCER_GROUP}"}}') == latency.sends[0][1]


def test_every_grafana_panel_returns_data(prometheus):
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$cluster", ".*")
            assert query(prometheus, expr), f"{panel['title']}: {expr} returned nothing"


def test_the_shipped_alert_rules_load_on_the_real_server(prometheus):
    groups = _get(prometheus, "/api/v1/rules")["data"]["groups"]
    shipped = yaml.safe_load((DOCS / "rules" / "mqcloud-alerts.yml").read_text())["groups"]
    assert sum(len(group["rules"]) for group in groups) == sum(len(group["rules"]) for group in shipped)
    assert all(rule["health"] != "err" for group in groups for rule in group["rules"])

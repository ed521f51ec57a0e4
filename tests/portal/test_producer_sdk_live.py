"""End to end: a business application sends through the producer SDK (the real C++ client) to a sandbox cluster of
three brokers, broker-b made slow and broker-c refusing every send, and the SDK reports to a live portal over
HTTP. What the portal then shows (its queries, and the charts and tables of the producer-group and topic pages)
matches what was measured: per minute, group and broker, every percentile is within the histogram's stated error
(``stats.histogram.RELATIVE_ERROR``, under 1%) of the exact nearest-rank percentile of the send costs, the maximum
is exact, and the failed sends appear on broker-c with their exception class.

The exact costs are those the SDK measured around each call into the client (its ``add_listener`` hook hands each
attempt over as recorded); the application also times each ``send_sync`` from the outside, and every call's
attempts fit inside it. Which broker the SDK says each attempt went to is checked against where the messages were
stored."""

import datetime as dt
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.urls import reverse

from monitor.remoting.admin import MQAdmin
from monitor.sandbox.cluster import SandboxCluster
from portal.models import Cluster, NameServer, ProducerGroup, Topic
from portal.services import cluster_ops, producer_tokens
from stats.histogram import RELATIVE_ERROR
from stats.queries.producers import PERCENTILES, group_latency, topic_latency

pytestmark = pytest.mark.slow

TOPIC = "SDK_ORDERS"
GROUP = "PID_SDK_ORDERS"
QUEUES = 4
SENDS = 240
SLOW_SECONDS = 0.05
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def faulty_sandbox():
    """Three brokers of their own (faults must not leak into other tests): broker-b slow, broker-c refusing sends
    (``startAcceptSendRequestTimeStamp`` in the future: a real broker then answers every send "broker unable to
    service"), broker-a healthy."""
    with SandboxCluster(brokers=3) as sandbox:
        yield sandbox


def exact(costs: list[float], q: float) -> float:
    ordered = sorted(costs)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def wait_for_route(namesrv: str, brokers: int) -> None:
    with MQAdmin(namesrv) as admin:
        for _ in range(100):
            route = admin.examine_topic_route_info(TOPIC)
            if len(route.queue_datas) == brokers:
                return
            time.sleep(0.1)
    raise AssertionError(f"the name server never listed {TOPIC} on {brokers} brokers")


@pytest.fixture
def application_run(transactional_db, live_server, faulty_sandbox, team, member, tmp_path):
    """Register the cluster, topic and producer group, issue a token, break two brokers, run the application."""
    cluster = Cluster.objects.create(name="sdk-sandbox")
    NameServer.objects.create(cluster=cluster, address=faulty_sandbox.namesrv_addr)
    topic = Topic.objects.create(cluster=cluster, team=team, name=TOPIC, queue_nums=QUEUES)
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name=GROUP)
    group.topics.add(topic)
    cluster_ops.create_topic(cluster, TOPIC, QUEUES, ordered=False)
    wait_for_route(faulty_sandbox.namesrv_addr, 3)
    token = producer_tokens.issue(group, by=member).secret

    faulty_sandbox.slow_down("broker-b", SLOW_SECONDS)
    refusing = faulty_sandbox.broker("broker-c")
    with MQAdmin(faulty_sandbox.namesrv_addr) as admin:
        far_future_ms = int((time.time() + 10 * 365 * 86400) * 1000)
        admin.update_broker_config(refusing.addr, {"startAcceptSendRequestTimeStamp": str(far_future_ms)})
    out = tmp_path / "run.json"
    spec = {
        "namesrv": faulty_sandbox.namesrv_addr,
        "portal_url": live_server.url,
        "token": token,
        "group": GROUP,
        "topic": TOPIC,
        "sends": SENDS,
        "out": str(out),
    }
    try:
        subprocess.run(
            [sys.executable, "-m", "tests.portal.sdk_sender", json.dumps(spec)],
            cwd=REPO,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            check=True,
            timeout=600,
        )
    finally:
        faulty_sandbox.heal()
    run = json.loads(out.read_text())
    run["cluster"], run["group"], run["topic"] = cluster, group, topic
    run["stored"] = {
        name: sum(faulty_sandbox.broker(name).store.max_offset(TOPIC, queue) for queue in range(QUEUES))
        for name in faulty_sandbox.broker_names
    }
    return run


def by_minute(attempts: list[dict], broker: str | None = None) -> dict[int, list[float]]:
    costs: dict[int, list[float]] = {}
    for attempt in attempts:
        if broker is None or attempt["broker"] == broker:
            costs.setdefault(attempt["minute"], []).append(attempt["cost_ms"])
    return costs


def assert_matches(series, points: dict, costs: list[float]) -> None:
    """The portal's point of each percentile is within the histogram's error of the exact one; the max is exact."""
    for name, q in PERCENTILES.items():
        wanted = exact(costs, q)
        shown = points[name]
        assert abs(shown - wanted) <= RELATIVE_ERROR * wanted, (series, name, shown, wanted)
    assert points["max"] == max(costs), series
    assert points["sends"] == len(costs), series


def point(series, moment) -> dict:
    return {name: dict(getattr(series, name))[moment] for name in ("p50", "p90", "p99", "max", "sends", "exceptions")}


def test_the_portal_shows_the_send_latency_and_exceptions_per_broker_the_sdk_measured(application_run, client, member):
    run = application_run
    attempts = run["attempts"]
    assert run["dropped"] == 0 and run["backlog"] == 0 and run["delivered"] >= 1

    # what the application saw: broker-c refused every attempt, each send then succeeded on another broker
    failed = [a for a in attempts if a["exception"]]
    assert {a["broker"] for a in failed} == {"broker-c"}
    assert all(a["exception"] for a in attempts if a["broker"] == "broker-c")
    assert all(call["failed"] is None for call in run["calls"]) and len(run["calls"]) == SENDS
    for call in run["calls"]:
        assert sum(attempts[i]["cost_ms"] for i in call["attempts"]) <= call["cost_ms"]
    # the SDK names the broker each message was really stored on
    succeeded = {name: sum(1 for a in attempts if a["broker"] == name and not a["exception"]) for name in run["stored"]}
    assert succeeded == run["stored"] and run["stored"]["broker-c"] == 0
    assert min(a["cost_ms"] for a in attempts if a["broker"] == "broker-b") >= SLOW_SECONDS * 1000

    minutes = sorted(by_minute(attempts))
    since = dt.datetime.fromtimestamp(minutes[0], dt.UTC)
    until = dt.datetime.fromtimestamp(minutes[-1], dt.UTC)
    latency = group_latency(run["cluster"].pk, GROUP, since, until)

    for minute, costs in by_minute(attempts).items():
        moment = dt.datetime.fromtimestamp(minute, dt.UTC)
        assert_matches("group", point(latency.total, moment), costs)
        assert point(latency.total, moment)["exceptions"] == sum(1 for a in failed if a["minute"] == minute)
        for broker in ("broker-a", "broker-b", "broker-c"):
            broker_costs = by_minute(attempts, broker).get(minute)
            if broker_costs:
                assert_matches(broker, point(latency.by_broker[broker], moment), broker_costs)
        assert_matches("client", point(latency.by_client[run["client_id"]], moment), costs)
    assert latency.exceptions == {
        "broker-a": {},
        "broker-b": {},
        "broker-c": {"ProducerSendSyncFailed": len(failed)},
    }
    assert topic_latency(run["cluster"].pk, TOPIC, since, until).total == latency.total

    # the pages draw exactly these series and list the client with its last minute
    client.force_login(member)
    response = client.get(reverse("producer-group-detail", args=[run["group"].pk]))
    shown = response.context["producers"].latency
    for name in ("p50", "p90", "p99", "max"):
        drawn = dict(getattr(shown.total, name))
        for minute in minutes:
            moment = dt.datetime.fromtimestamp(minute, dt.UTC)
            assert drawn[moment] == dict(getattr(latency.total, name))[moment]
    spec = json.loads(response.context["charts"][0].spec.replace("<\\/", "</"))
    assert {trace["name"]: trace["y"] for trace in spec["data"]} == {
        name: [value for _moment, value in getattr(shown.total, name)] for name in ("p50", "p90", "p99", "max")
    }
    page = response.content.decode()
    assert run["client_id"] in page and "ProducerSendSyncFailed" in page
    [listed] = shown.clients
    assert (listed.client_id, listed.minute) == (run["client_id"], until)
    topic_page = client.get(reverse("topic-detail", args=[run["topic"].pk]))
    assert "Send latency" in [chart.title for chart in topic_page.context["charts"]]

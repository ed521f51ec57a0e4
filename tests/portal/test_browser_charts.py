"""The charts as a real browser draws them: headless Chromium (Debian's, driven by Playwright) against the portal
served by pytest-django's live server, with plotly.js from the portal's own static files. A user logs in through
the login form, opens pages with stored traffic, and the plots must hold exactly the stored numbers (gaps
included) and have drawn them. Screenshots go to test-artifacts/ for a human to look at.

Playwright's synchronous API keeps an asyncio loop on the test thread, so Django's guard against database calls
from async code is lifted while the browser runs (the calls here are plain synchronous test set-up); the live
server answers from its own thread."""

import contextlib
import datetime as dt
import zoneinfo
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.urls import reverse
from django.utils import timezone

from portal.models import (
    Broker,
    Cluster,
    ConsumerGroup,
    Membership,
    Subscription,
    Team,
    TeamRole,
    Topic,
    UserProfile,
)
from stats.models import BrokerMinute, BrokerProbe, ClusterMinute, ConsumeMinute, QueueLagMinute, TopicMinute
from stats.store.traffic import MinuteSamples, store_minute
from tests.monitor.traffic_helpers import collect, plan, running
from tests.portal.browser import ARTIFACTS
from tests.support.factories import PASSWORD, make_user

pytest_plugins = ["tests.monitor.fixtures_traffic"]

ZONE = "Asia/Shanghai"  # the viewer's zone, so that the times drawn prove the conversion


@pytest.fixture
def now():
    return timezone.now().replace(second=0, microsecond=0)


@pytest.fixture
def world(transactional_db, now):
    """A team member (viewing in Shanghai time), a cluster with a master, a topic and the group consuming it, and
    five minutes of stored traffic: 4 minutes ago not collected at all, 2 minutes ago collected without traffic."""
    team = Team.objects.create(name="payments")
    user = make_user("mia")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    UserProfile.objects.create(user=user, time_zone=ZONE)
    cluster = Cluster.objects.create(name="prod")
    master = Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a",
                                   broker_id=0, address="127.0.0.1:10911", role="ASYNC_MASTER")  # fmt: skip
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS", queue_nums=4)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=topic)
    produced = {5: 120, 3: 180, 2: None, 1: 60}  # minutes ago -> messages stored (None: collected, no row)
    for minutes_ago, count in produced.items():
        minute = now - dt.timedelta(minutes=minutes_ago)
        store_minute(
            MinuteSamples(
                cluster=ClusterMinute(cluster_id=cluster.pk, minute=minute, put_nums=count or 0, brokers=1),
                brokers=[BrokerMinute(cluster_id=cluster.pk, broker_name="broker-a", broker_id=0, minute=minute,
                                      up=True, put_nums=count or 0, get_nums=count or 0)],
                topics=[TopicMinute(cluster_id=cluster.pk, topic="ORDERS", minute=minute, put_nums=count,
                                    put_size=count * 1024)] if count else [],
                consumes=[ConsumeMinute(cluster_id=cluster.pk, group="GID_BILLING", topic="ORDERS", minute=minute,
                                        consume_tps=count / 60, lag=minutes_ago * 10,
                                        lag_seconds=minutes_ago * 30.0)] if count else [],
                queue_lags=[QueueLagMinute(cluster_id=cluster.pk, group="GID_BILLING", topic="ORDERS",
                                           broker_name="broker-a", queue_id=2, minute=minute, broker_offset=500,
                                           consumer_offset=490, lag=10)] if count else [],
            )
        )  # fmt: skip
        BrokerProbe.objects.create(cluster_id=cluster.pk, broker_name="broker-a", broker_id=0, minute=minute,
                                   address=master.address, listed=True, ok=True, latency_ms=2.0 + minutes_ago,
                                   attempts=1)  # fmt: skip
    return {"user": user, "cluster": cluster, "topic": topic, "group": group, "produced": produced}


@contextlib.contextmanager
def logged_in(browser, live_server, user):
    """A browser tab of ``user``, logged in through the login form."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id=ZONE)
    try:
        tab = context.new_page()
        tab.goto(live_server.url + reverse("login"))
        tab.fill("input[name=username]", user.username)
        tab.fill("input[name=password]", PASSWORD)
        tab.click("form[action] button[type=submit]:text('Log in')")
        tab.wait_for_url(live_server.url + reverse("dashboard"))
        yield tab
    finally:
        context.close()


@pytest.fixture
def page(browser, live_server, world):
    with logged_in(browser, live_server, world["user"]) as tab:
        yield tab


def open_charts(page, url: str, name: str) -> list[dict]:
    """Open a page, wait until every chart is drawn, save a screenshot, and return each plot's traces as plotly.js
    holds them (x, y, name)."""
    page.goto(url)
    page.wait_for_function(
        "[...document.querySelectorAll('[data-chart]')].every(figure => figure.dataset.drawn === 'true')"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    return page.evaluate(
        """[...document.querySelectorAll('[data-chart] .chart-plot')].map(
             plot => plot.data.map(trace => ({name: trace.name, x: trace.x, y: trace.y})))"""
    )


def off_the_browsers_loop(function, *args):
    """Run ``function`` on a thread of its own: code that runs an asyncio loop of its own (the collector) cannot
    start one beside Playwright's."""

    def run():
        try:
            return function(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


def at(now: dt.datetime, minutes_ago: int) -> str:
    """The x value plotly.js holds for a minute: local time of the viewer, ISO without zone."""
    return (now - dt.timedelta(minutes=minutes_ago)).astimezone(zoneinfo.ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M:00")


def test_a_topics_production_chart_draws_the_stored_minutes_with_gaps(page, live_server, world, now):
    plots = open_charts(page, live_server.url + reverse("topic-detail", args=[world["topic"].pk]), "topic-detail")

    [produced] = plots[0]
    drawn = dict(zip(produced["x"], produced["y"], strict=True))
    assert [drawn[at(now, n)] for n in (5, 4, 3, 2, 1)] == [120, None, 180, 0, 60]
    assert [value for value in produced["y"] if value] == [120, 180, 60]
    # the line really is in the SVG, broken where a minute is missing: one move per run of minutes (5; 3 to 1)
    segments = page.locator("[data-chart] >> nth=0").locator(".scatterlayer .trace path.js-line")
    assert sum(path.count("M") for path in segments.evaluate_all("paths => paths.map(p => p.getAttribute('d'))")) == 2
    assert page.locator("text=GID_BILLING").count() >= 1


def test_a_groups_charts_draw_its_lag_and_its_queue_table_lists_the_queue_behind(page, live_server, world, now):
    plots = open_charts(page, live_server.url + reverse("consumer-group-detail", args=[world["group"].pk]),
                        "consumer-group-detail")  # fmt: skip

    tps, lag, lag_time = plots
    assert [trace["name"] for trace in lag] == ["ORDERS"]
    drawn = dict(zip(lag[0]["x"], lag[0]["y"], strict=True))
    assert [drawn[at(now, n)] for n in (5, 4, 3, 1)] == [50, None, 30, 10]
    assert dict(zip(lag_time[0]["x"], lag_time[0]["y"], strict=True))[at(now, 1)] == 30.0
    assert dict(zip(tps[0]["x"], tps[0]["y"], strict=True))[at(now, 1)] == 1.0
    assert page.locator("text=Lag per queue").count() == 1


def test_the_cluster_page_draws_traffic_and_probe_latency(page, live_server, world, now):
    plots = open_charts(page, live_server.url + reverse("cluster-detail", args=[world["cluster"].pk]),
                        "cluster-detail")  # fmt: skip

    put, _get = plots[0]
    assert dict(zip(put["x"], put["y"], strict=True))[at(now, 5)] == 2.0  # 120 a minute
    [latency] = [trace for trace in plots[2] if trace["name"] == "broker-a[0]"]
    assert dict(zip(latency["x"], latency["y"], strict=True))[at(now, 1)] == 3.0


def test_who_is_lagging_now_links_to_the_lagging_groups_page(page, live_server, world):
    page.goto(live_server.url + reverse("lagging"))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lagging.png"), full_page=True)

    page.click("table >> text=GID_BILLING")

    page.wait_for_url(live_server.url + reverse("consumer-group-detail", args=[world["group"].pk]))


def test_a_topic_charts_the_traffic_a_real_collection_of_the_sandbox_stored(
    browser, live_server, registered, traffic_sandbox, manual_stats, team, member, tmp_path
):
    """End to end: real C++ client traffic on the sandbox, one real collection, the page in the browser."""
    UserProfile.objects.create(user=member, time_zone=ZONE)
    topic = Topic.objects.create(cluster=registered, team=team, name="TopicCharted", queue_nums=4)
    with running(traffic_sandbox, plan(topic.name), tmp_path) as run:
        sent = run.stop_producers(at_least=40)
    manual_stats.sample()
    report = off_the_browsers_loop(collect, registered)

    with logged_in(browser, live_server, member) as tab:
        plots = open_charts(tab, live_server.url + reverse("topic-detail", args=[topic.pk]), "topic-collected")
        lone_dots = (
            tab.locator("[data-chart] >> nth=0")
            .locator(".scatterlayer .points path.point")
            .evaluate_all("dots => dots.filter(dot => dot.getBBox().width > 0).length")
        )

    [produced] = plots[0]
    minute = report.minute.astimezone(zoneinfo.ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M:00")
    assert dict(zip(produced["x"], produced["y"], strict=True))[minute] == sent
    assert [value for value in produced["y"] if value is not None] == [sent]  # no other minute was collected
    assert lone_dots == 1  # a single minute cannot be a line; it is drawn as a dot

"""Warnings as a real browser shows them (headless Chromium driven by Playwright, the portal served by the live
server, as in test_browser_charts.py whose browser and login helpers these tests share): a team member finds their
warning through the header, reads it and acknowledges it; the group's lag chart marks the warning's period as a
shaded shape and shows its reason on hover. Screenshots go to test-artifacts/."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.celery import app as celery_app
from portal.models import (
    Cluster,
    ConsumerGroup,
    Membership,
    Subscription,
    Team,
    TeamRole,
    Topic,
    UserProfile,
    Warning,
    WarningKind,
)
from portal.models.warnings import SubjectType
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.tasks import deliver_warning_event  # noqa: F401  (registered, the lifecycle's by-name call runs eagerly)
from portal.web.monitoring import WARNING_COLOR
from stats.models import ClusterMinute, ConsumeMinute
from stats.store.traffic import MinuteSamples, store_minute
from tests.portal import test_browser_charts as charts
from tests.portal.browser import ARTIFACTS
from tests.support.factories import make_user

ZONE = charts.ZONE
SUMMARY = "GID_BILLING is 52,000 messages (14 min) behind on ORDERS; 3 of 4 queues stalled"
REASON = f"consumer lag: {SUMMARY}"


@pytest.fixture
def now():
    return timezone.now().replace(second=0, microsecond=0)


@pytest.fixture
def world(transactional_db, now):
    """A team member viewing in Shanghai time, their group lagging for the last 20 minutes of stored minutes, and
    the lag warning the rules raised 15 minutes ago (still open), delivered to the member in-app."""
    team = Team.objects.create(name="payments")
    user = make_user("mia")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    UserProfile.objects.create(user=user, time_zone=ZONE)
    cluster = Cluster.objects.create(name="prod")
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS", queue_nums=4)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=topic)
    for minutes_ago in range(20, 0, -1):
        minute = now - dt.timedelta(minutes=minutes_ago)
        store_minute(
            MinuteSamples(
                cluster=ClusterMinute(cluster_id=cluster.pk, minute=minute, brokers=1),
                consumes=[ConsumeMinute(cluster_id=cluster.pk, group="GID_BILLING", topic="ORDERS", minute=minute,
                                        consume_tps=1.0, lag=(20 - minutes_ago) * 2_600,
                                        lag_seconds=(20 - minutes_ago) * 42.0)],
            )
        )  # fmt: skip
    evaluation = Evaluation()
    evaluation.add(
        WarningKind.CONSUMER_LAG,
        [Condition(WarningKind.CONSUMER_LAG, SubjectType.CONSUMER_GROUP, "GID_BILLING", SUMMARY, {"topic": "ORDERS"})],
    )
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)  # deliver as the commit happens
    try:
        reconcile(cluster, evaluation, now - dt.timedelta(minutes=15))
    finally:
        celery_app.conf.update(task_always_eager=False, task_eager_propagates=False)
    return {"user": user, "group": group, "warning": Warning.objects.get()}


@pytest.fixture
def page(browser, live_server, world):
    with charts.logged_in(browser, live_server, world["user"]) as tab:
        yield tab


def test_a_member_follows_the_unread_count_to_their_warning_and_acknowledges_it(page, live_server, world):
    assert page.locator("header .usermenu .count.hot").inner_text() == "1"
    page.click("header .usermenu >> text=Notifications")
    page.click("table >> text=consumer lag")
    page.wait_for_url(live_server.url + reverse("warning-detail", args=[world["warning"].pk]))

    page.click("header nav >> text=Warnings")
    page.wait_for_url(live_server.url + reverse("warning-list"))
    page.screenshot(path=str(ARTIFACTS / "warning-list.png"), full_page=True)

    page.click("table >> text=consumer lag")

    page.wait_for_url(live_server.url + reverse("warning-detail", args=[world["warning"].pk]))
    assert page.locator(f"text={SUMMARY}").count() >= 1
    assert page.locator("#events td >> text=fired").count() == 1
    assert page.locator("#deliveries .badge >> text=sent").count() == 1  # in-app, to the member
    page.click("button:text('Acknowledge')")
    page.wait_for_selector("text=no longer repeated")
    page.screenshot(path=str(ARTIFACTS / "warning-detail.png"), full_page=True)
    assert page.locator(".badge >> text=acknowledged").count() == 1
    world["warning"].refresh_from_db()
    assert world["warning"].acknowledged_by == world["user"]


def test_the_groups_lag_chart_marks_the_warning_period_with_its_reason_on_hover(page, live_server, world, now):
    charts.open_charts(page, live_server.url + reverse("consumer-group-detail", args=[world["group"].pk]),
                       "warning-on-lag-chart")  # fmt: skip
    lag_chart = page.locator("[data-chart] >> nth=1")

    shapes = lag_chart.locator(".chart-plot").evaluate(
        "plot => plot._fullLayout.shapes.map(s => ({x0: s.x0, x1: s.x1, fill: s.fillcolor}))"
    )
    assert shapes == [
        {"x0": charts.at(now, 15), "x1": charts.at(now, 0), "fill": WARNING_COLOR}
    ]  # open: shaded from its opening to the chart's end
    drawn = lag_chart.locator(".layer-below .shapelayer path").evaluate_all(
        "paths => paths.map(p => p.getBBox().width)"
    )
    assert len(drawn) == 1 and drawn[0] > 0

    lag_chart.scroll_into_view_if_needed()  # the mouse only reaches what is on the screen
    marker = lag_chart.locator(".scatterlayer .trace:last-child path.point").bounding_box()
    page.mouse.move(marker["x"] + marker["width"] / 2, marker["y"] + marker["height"] / 2)  # under plotly's drag layer

    hover = lag_chart.locator(".hoverlayer")
    hover.locator(f"text={SUMMARY[:40]}").wait_for()
    assert "consumer lag: GID_BILLING is 52,000 messages" in hover.text_content()
    page.screenshot(path=str(ARTIFACTS / "warning-hover.png"), full_page=True)

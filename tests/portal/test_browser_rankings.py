"""The rankings page in a real browser: headless Chromium (Debian's, driven by Playwright) against the portal served
by pytest-django's live server. Rankings are written through the Spark jobs' one writer (``sparkjobs.load``), as the
rankings job writes them; a user logs in through the login form, reads the ranking, narrows it to a team, and
follows a ranked topic to its page. Screenshots go to test-artifacts/ for a human to look at."""

import datetime as dt
import json

import pyarrow as pa
import pytest
from django.db.models import Q
from django.urls import reverse

from portal.models import Cluster, ConsumerGroup, Membership, Team, TeamRole, Topic
from sparkjobs.load import Replacement, replace_windows
from stats.models import JobRun, JobState, Ranking, RankingKind
from tests.portal.browser import ARTIFACTS
from tests.support.factories import PASSWORD, make_user

pytestmark = pytest.mark.slow

DAY_END = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
DAY_START = DAY_END - dt.timedelta(days=1)


def load_rankings(cluster_id: int, rows: list[tuple[str, str, float, dict]]) -> None:
    """(kind, subject, value, detail) rows, ranked in the order given per kind, through the jobs' writer."""
    ranks: dict[str, int] = {}
    columns: dict[str, list] = {name: [] for name in ("cluster_id", "kind", "window_start", "window_end")}
    columns |= {"subject": [], "value": [], "rank": [], "detail": []}
    for kind, subject, value, detail in rows:
        ranks[kind] = ranks.get(kind, 0) + 1
        for name, item in zip(
            columns,
            (cluster_id, kind, DAY_START, DAY_END, subject, value, ranks[kind], json.dumps(detail)),
            strict=True,
        ):
            columns[name].append(item)
    table = pa.table(
        columns,
        schema=pa.schema(
            [
                ("cluster_id", pa.int32()),
                ("kind", pa.string()),
                ("window_start", pa.timestamp("us", tz="UTC")),
                ("window_end", pa.timestamp("us", tz="UTC")),
                ("subject", pa.string()),
                ("value", pa.float64()),
                ("rank", pa.int32()),
                ("detail", pa.string()),
            ]
        ),
    )
    replace_windows([Replacement(Ranking, Q(window_end=DAY_END), table)])


@pytest.fixture
def world(transactional_db):
    """A member of "payments"; cluster prod with its topics ranked by yesterday's traffic (two of them the team's)
    and its consumers by lag time, and the rankings job's run of that day."""
    team = Team.objects.create(name="payments")
    other = Team.objects.create(name="logistics")
    user = make_user("mia")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    cluster = Cluster.objects.create(name="prod")
    topics = {
        name: Topic.objects.create(cluster=cluster, team=owner, name=name, queue_nums=4)
        for name, owner in (("ORDERS", team), ("REFUNDS", team), ("LABELS", other))
    }
    ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    load_rankings(
        cluster.pk,
        [
            (RankingKind.TOPIC_TRAFFIC_DAY, "LABELS", 864000, {"days": 1}),
            (RankingKind.TOPIC_TRAFFIC_DAY, "ORDERS", 432000, {"days": 1}),
            (RankingKind.TOPIC_TRAFFIC_DAY, "UNREGISTERED", 1200, {"days": 1}),
            (RankingKind.TOPIC_TRAFFIC_DAY, "REFUNDS", 600, {"days": 1}),
            (RankingKind.CONSUMER_LAG_TIME, "GID_BILLING", 5400, {}),
        ],
    )
    JobRun.objects.create(
        job="rankings",
        window_start=DAY_START,
        window_end=DAY_END,
        state=JobState.SUCCEEDED,
        progress=1.0,
        started_at=DAY_END + dt.timedelta(minutes=5),
        finished_at=DAY_END + dt.timedelta(minutes=6),
        lease_expires_at=DAY_END + dt.timedelta(minutes=20),
    )
    return {"user": user, "cluster": cluster, "team": team, "topics": topics}


@pytest.fixture
def page(browser, live_server, world):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = context.new_page()
        tab.goto(live_server.url + reverse("login"))
        tab.fill("input[name=username]", world["user"].username)
        tab.fill("input[name=password]", PASSWORD)
        tab.click("form[action] button[type=submit]:text('Log in')")
        tab.wait_for_url(live_server.url + reverse("dashboard"))
        yield tab
    finally:
        context.close()


def ranking_rows(page) -> list[list[str]]:
    return page.locator("table.ranking tbody tr").evaluate_all(
        "rows => rows.map(row => [...row.querySelectorAll('td')].map(cell => cell.innerText.trim()))"
    )


def bar_widths(page) -> list[float]:
    return page.locator("table.ranking .rank-bar").evaluate_all(
        "bars => bars.map(bar => bar.getBoundingClientRect().width)"
    )


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_the_rankings_page_shows_the_written_rankings_and_narrows_them_to_a_team(page, live_server, world):
    page.click("nav.nav >> text=Rankings")
    page.wait_for_selector("table.ranking")
    screenshot(page, "rankings")

    rows = ranking_rows(page)
    assert [row[:4] for row in rows] == [
        ["1", "LABELS", "logistics", "864,000"],
        ["2", "ORDERS", "payments", "432,000"],
        ["3", "UNREGISTERED not registered", "—", "1,200"],
        ["4", "REFUNDS", "payments", "600"],
    ]
    widths = bar_widths(page)  # the bars are drawn to scale
    assert widths[0] > 200
    assert widths[1:] == [pytest.approx(widths[0] * value / 864000, abs=1) for value in (432000, 1200, 600)]
    assert (
        page.locator("#ranking-window")
        .inner_text()
        .startswith("Window: 2026-11-21 00:00 to 2026-11-22 00:00. Computed at 2026-11-22 00:06.")
    )

    page.select_option("select[name=team]", label="payments")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**team=*")
    screenshot(page, "rankings-team")
    assert [[row[0], row[1], row[5]] for row in ranking_rows(page)] == [["1", "ORDERS", "2"], ["2", "REFUNDS", "4"]]

    page.click("table.ranking >> text=ORDERS")
    page.wait_for_url(live_server.url + reverse("topic-detail", args=[world["topics"]["ORDERS"].pk]))


def test_the_kind_tabs_switch_to_the_consumers_by_lag_time(page, live_server, world):
    page.goto(live_server.url + reverse("rankings"))

    page.click("nav.ranges >> text=Consumers by lag time")
    page.wait_for_url("**kind=consumer_lag_time*")
    screenshot(page, "rankings-lag")

    assert [row[:4] for row in ranking_rows(page)] == [["1", "GID_BILLING", "payments", "5,400"]]

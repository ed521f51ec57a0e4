"""Every page a team member and a portal admin can open, in a real browser (headless Chromium, as in
test_browser_charts.py), on a 1280 px desktop and on a phone (390 px): the page itself never scrolls sideways (wide
tables scroll inside their own box), the header keeps its navigation inside it (on one line on the desktop; on a
phone the navigation scrolls within itself), and the dates in tables stay on one line.

The pages are the authorization matrix's (test_authz_pages.py, which already lists every page of the URL
configuration), opened by each actor it lets in, plus every warning's page; the data is what makes pages wide in
real life: a cluster with long names, a consumer group lagging on sixteen queues with blocked queues and clients,
and one warning of each rule family with the figures the rules keep."""

import datetime as dt
from types import SimpleNamespace

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.celery import app as celery_app
from portal.models import (
    Application,
    ApplicationKind,
    AssociationRole,
    Broker,
    ChannelKind,
    Cluster,
    ConsumerGroup,
    Membership,
    MessageSearch,
    MessageSearchHit,
    NameServer,
    Notification,
    Origin,
    ProducerGroup,
    SearchKind,
    SearchState,
    Subscription,
    Team,
    TeamRole,
    Topic,
    UserProfile,
    Warning,
)
from portal.models.warnings import SubjectType
from portal.services import consumer_tokens, producer_tokens
from portal.services.metrics import tokens as metrics_tokens
from portal.services.warnings import channels, subscriptions
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.tasks import deliver_warning_event  # noqa: F401  (registered, the lifecycle's by-name call runs eagerly)
from stats.models import (
    BlockedQueueMinute,
    BrokerMinute,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    QueueLagMinute,
    TopicMinute,
)
from stats.store.traffic import MinuteSamples, store_minute
from tests.portal import test_browser_charts as charts
from tests.portal.browser import ARTIFACTS
from tests.portal.test_authz_pages import ACTORS, MATRIX
from tests.portal.warning_snapshots import GROUP, SNAPSHOTS, TOPIC
from tests.support.factories import make_user

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
NOT_PAGES = {"healthz", "message-search-status", "application-progress", "metrics"}  # answers for machines


@pytest.fixture
def world(transactional_db):
    """What the matrix's pages are about (the names its ``args`` read), with stored minutes and open warnings."""
    now = timezone.now().replace(second=0, microsecond=0)
    team = Team.objects.create(name="payments-settlement-and-reconciliation")
    other = Team.objects.create(name="logistics")
    member, team_admin, outsider = make_user("mia"), make_user("tom"), make_user("olga")
    portal_admin = make_user("ada", staff=True)
    Membership.objects.create(team=team, user=member, role=TeamRole.MEMBER)
    Membership.objects.create(team=team, user=team_admin, role=TeamRole.ADMIN)
    Membership.objects.create(team=other, user=outsider, role=TeamRole.MEMBER)
    for user in (member, portal_admin):
        UserProfile.objects.create(user=user, time_zone=charts.ZONE)
    cluster = Cluster.objects.create(name="prod-shanghai-payments-01")
    NameServer.objects.create(cluster=cluster, address="10.0.0.2:9876")
    brokers = [
        Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name=name, broker_id=broker_id,
                              address=f"10.0.0.5:{10911 + 10 * broker_id}",
                              role="ASYNC_MASTER" if broker_id == 0 else "SLAVE")
        for name in ("broker-a", "broker-b") for broker_id in (0, 1)
    ]  # fmt: skip
    topic = Topic.objects.create(cluster=cluster, team=team, name=TOPIC, queue_nums=8)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=GROUP)
    Subscription.objects.create(consumer_group=group, topic=topic, tag_expression="TagA || TagB || TagC")
    producer = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_PAYMENT_ORDER")
    producer.topics.add(topic)
    _store_minutes(cluster, now)
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CHANGE, applicant=member, team=team, cluster=cluster, topic=topic,
        payload={"name": topic.name, "queue_nums": 16},
    )  # fmt: skip
    association = Application.objects.create(
        kind=ApplicationKind.TOPIC_ASSOCIATION, applicant=outsider, team=other, cluster=cluster, topic=topic,
        payload={"name": topic.name, "role": AssociationRole.CONSUMER},
    )  # fmt: skip
    for user in (member, portal_admin):
        Notification.objects.create(user=user, title="Your application for a topic change was approved")
    evaluation = Evaluation()
    for kind, (subject_type, subject, summary, details) in SNAPSHOTS.items():
        evaluation.add(kind, [Condition(kind, subject_type, subject, summary, details)])
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)  # deliveries as in production
    try:
        reconcile(cluster, evaluation, now - dt.timedelta(minutes=15))
    finally:
        celery_app.conf.update(task_always_eager=False, task_eager_propagates=False)
    channel = channels.create_channel(member, kind=ChannelKind.WEBHOOK, name="settlement on-call webhook",
                                      config={"url": "http://127.0.0.1:9/hook"})  # fmt: skip
    mute = subscriptions.mute(member, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP, subject_name=GROUP,
                              until=now + dt.timedelta(hours=1))  # fmt: skip
    search = MessageSearch.objects.create(cluster=cluster, topic=topic, topic_name=topic.name, requested_by=member,
                                          kind=SearchKind.KEY, key="settlement-batch-2026-11-25-0001",
                                          state=SearchState.DONE, progress=1.0, found=3, finished_at=now)  # fmt: skip
    for n in range(3):
        MessageSearchHit.objects.create(
            search=search, broker_name=f"broker-{'ab'[n % 2]}", queue_id=n, queue_offset=1_210_496_750 + n,
            commit_log_offset=98_765_432_100 + n, offset_msg_id=f"0A00000500002A9F00000016FF{n:06X}",
            uniq_key=f"0A0000150B2C18B4AAC27A5B4F{n:06X}", keys="settlement-batch-2026-11-25-0001 merchant-889911",
            tags="TagA", store_time=now, born_time=now, store_host="10.0.0.5:10911", born_host="10.0.0.21:50000",
            body_size=2048,
        )  # fmt: skip
    return SimpleNamespace(
        search=search,
        message=[cluster.pk, topic.name, "0A00000500002A9F00000016FF000000"],
        actors={"outsider": outsider, "member": member, "team_admin": team_admin, "portal_admin": portal_admin},
        team=team,
        topic=topic,
        group=group,
        producer=producer,
        producer_token=producer_tokens.issue(producer, by=member).token,
        unowned=Topic.objects.create(cluster=cluster, name="LEGACY_ORDER_EVENTS_IMPORTED", origin=Origin.IMPORTED),
        broker=brokers[0],
        consumer_token=consumer_tokens.issue(group, by=member).token,
        metrics_token=metrics_tokens.issue(by=portal_admin, label="layout").token,
        application=application,
        operation=Application.objects.create(
            kind=ApplicationKind.MESSAGE_RESEND,
            applicant=member,
            team=team,
            cluster=cluster,
            topic=topic,
            payload={"msg_ids": ["0A00000500002A9F00000016FF000000"], "to": "origin", "group": ""},
        ),
        association=association,
        warning=Warning.objects.get(kind="consumer_lag"),
        warnings=list(Warning.objects.order_by("pk")),
        channel=channel,
        mute=mute,
    )


def _store_minutes(cluster, now):
    """Ten collected minutes of the lagging group: sixteen queues behind, two blocked, two clients."""
    for minutes_ago in range(10, 0, -1):
        minute = now - dt.timedelta(minutes=minutes_ago)
        at = {"cluster_id": cluster.pk, "minute": minute}
        store_minute(
            MinuteSamples(
                cluster=ClusterMinute(**at, put_nums=24_000, get_nums=18_000, brokers=4),
                brokers=[BrokerMinute(**at, broker_name=name, broker_id=0, up=True, put_nums=12_000, get_nums=9_000)
                         for name in ("broker-a", "broker-b")],
                topics=[TopicMinute(**at, topic=TOPIC, put_nums=24_000, put_size=24_000 * 1024)],
                consumes=[ConsumeMinute(**at, group=GROUP, topic=TOPIC, consume_tps=300.0, sndbck_nums=12,
                                        lag=52_000, lag_seconds=840.0)],
                queue_lags=[QueueLagMinute(**at, group=GROUP, topic=TOPIC, broker_name=f"broker-{'ab'[n % 2]}",
                                           queue_id=n // 2, broker_offset=1_210_500_000 + n,
                                           consumer_offset=1_210_496_750, lag=3_250 + n,
                                           last_consumed_stored_at=minute - dt.timedelta(minutes=14))
                            for n in range(16)],
                groups=[GroupMinute(**at, group=GROUP, clients=2, message_model="CLUSTERING",
                                    consume_type="CONSUME_PASSIVELY", subscription_consistent=True, blocked_queues=2,
                                    dlq_nums=0, dlq_total=3)],
                clients=[ClientMinute(**at, group=GROUP, client_id=f"10.0.0.{21 + n}@12345#173926124362{n}",
                                      address=f"10.0.0.{21 + n}:50000", language="JAVA", version=401,
                                      subscription={TOPIC: "TagA || TagB || TagC"}) for n in range(2)],
                blocked=[BlockedQueueMinute(**at, group=GROUP, topic=TOPIC, broker_name="broker-a", queue_id=n,
                                            client_id="10.0.0.21@12345#1739261243620", cached_messages=1000,
                                            last_consumed_at=minute - dt.timedelta(minutes=3), lag=3_250)
                         for n in range(2)],
            )
        )  # fmt: skip


def pages_of(world, actor: str) -> list[str]:
    """The URLs of every page ``actor`` may open (200 in the matrix), and every warning's page they may see."""
    seen = ACTORS.index(actor)
    urls = [
        reverse(name, args=page.args(world))
        for name, page in sorted(MATRIX.items())
        if name not in NOT_PAGES and page.get[seen] == 200
    ]
    return urls + [reverse("warning-detail", args=[warning.pk]) for warning in world.warnings]


# Run in the page: what does not fit. Elements inside a box that scrolls on its own (a table's wrapper, the phone's
# navigation) are judged by that box.
LAYOUT_PROBLEMS = """(desktop) => {
  const problems = [];
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) problems.push(`page scrolls sideways: ${page.scrollWidth}px wide`);
  const header = document.querySelector("header").getBoundingClientRect();
  for (const part of document.querySelectorAll("header .brand, header .nav, header .usermenu")) {
    const box = part.getBoundingClientRect();
    if (box.right > header.right + 0.5 || box.bottom > header.bottom + 0.5 || box.left < header.left - 0.5)
      problems.push(`header: ${part.className} outside the header`);
  }
  const nav = document.querySelector("header .nav");
  if (nav && desktop) {
    const tops = new Set([...nav.children].filter(item => item.offsetParent !== null)
                             .map(item => Math.round(item.getBoundingClientRect().top)));
    if (tops.size > 1) problems.push(`navigation on ${tops.size} lines`);
    if (nav.scrollWidth > nav.clientWidth) problems.push("navigation cut off");
  }
  for (const time of document.querySelectorAll("table time")) {
    const lines = time.getClientRects().length;
    if (lines > 1) problems.push(`date on ${lines} lines: ${time.textContent}`);
  }
  return problems;
}"""


def layout_problems(browser, live_server, world, actor: str, viewport: dict) -> list[str]:
    """Each problem as "url: what", with a screenshot of each page that has one."""
    found = []
    with charts.logged_in(browser, live_server, world.actors[actor]) as tab:
        tab.set_viewport_size(viewport)
        for url in pages_of(world, actor):
            tab.goto(live_server.url + url)
            tab.wait_for_function(
                "[...document.querySelectorAll('[data-chart]')].every(figure => figure.dataset.drawn === 'true')"
            )
            problems = tab.evaluate(LAYOUT_PROBLEMS, viewport["width"] >= DESKTOP["width"])
            if problems:
                found += [f"{url}: {problem}" for problem in problems]
                name = url.strip("/").replace("/", "-") or "home"
                tab.screenshot(path=str(ARTIFACTS / f"layout-{actor}-{viewport['width']}-{name}.png"), full_page=True)
    return found


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop-1280", "phone-390"])
@pytest.mark.parametrize("actor", ["member", "portal_admin"])
def test_every_page_fits_the_screen_without_scrolling_sideways(browser, live_server, world, actor, viewport):
    ARTIFACTS.mkdir(exist_ok=True)
    problems = layout_problems(browser, live_server, world, actor, viewport)
    assert not problems, "\n".join(problems)

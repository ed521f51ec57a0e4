"""End to end: real C++ clients drive the sandbox cluster into a lagging consumer; the per-minute collection and the
``evaluate_warnings`` task (its deliveries run eagerly once the transaction commits) tell the group's owner exactly
once by e-mail (a real SMTP server) and webhook (a real HTTP server); evaluating again says nothing new; once a
consumer has caught up, the resolved notice arrives. Nobody else hears anything."""

import time

import pytest

from monitor.remoting.admin import MQAdmin
from monitor.sandbox.traffic import Plan
from monitor.sandbox.traffic.profiles import consumer
from portal.celery import app as celery_app
from portal.models import ConsumerGroup, Notification
from portal.models.warnings import (
    ChannelKind,
    Delivery,
    SubjectType,
    ThresholdScope,
    Warning,
    WarningKind,
    WarningState,
    WarningThreshold,
)
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import create_channel, default_channels
from portal.tasks import evaluate_warnings
from tests.monitor.traffic_helpers import WAIT, collect, plan, running
from tests.portal.warning_servers import LOCAL_RECEIVERS, SmtpServer, WebhookServer
from tests.support.waiting import wait_for

pytest_plugins = ["tests.monitor.fixtures_traffic"]

TOPIC, GROUP = "TopicWarnE2E", "cg_warn_e2e"
LAG = WarningKind.CONSUMER_LAG


@pytest.fixture
def eager():
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    celery_app.conf.update(task_always_eager=False, task_eager_propagates=False)


@pytest.fixture
def smtp(settings):
    with SmtpServer() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        yield server


@pytest.fixture
def hooks(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    with WebhookServer() as server:
        yield server


def committed(admin) -> int:
    return sum(o.consumer_offset for o in admin.examine_consume_stats(GROUP, TOPIC).offset_table.values())


def lag_and_newest_consumed(admin) -> tuple[int, int]:
    queues = admin.examine_consume_stats(GROUP, TOPIC).offset_table.values()
    return sum(o.lag for o in queues), max((o.last_timestamp or 0) for o in queues)


def evaluate_and_deliver(cluster, django_capture_on_commit_callbacks) -> dict:
    collect(cluster)
    with django_capture_on_commit_callbacks(execute=True):
        return evaluate_warnings(cluster.pk)


def test_a_lagging_consumer_tells_its_owner_once_and_again_when_it_is_over(
    registered,
    traffic_sandbox,
    tmp_path,
    team,
    member,
    outsider,
    portal_admin,
    smtp,
    hooks,
    eager,
    django_capture_on_commit_callbacks,
):
    group = ConsumerGroup.objects.create(cluster=registered, team=team, name=GROUP)
    WarningThreshold.objects.create(
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"messages": 50, "seconds": 1}
    )
    member.email, outsider.email = "mia@example.com", "olga@example.com"
    member.save()
    outsider.save()
    hook = create_channel(member, kind=ChannelKind.WEBHOOK, name="ops", config={"url": hooks.url("/hook")})
    mail = next(c for c in default_channels(member) if c.kind == ChannelKind.EMAIL)
    in_app = next(c for c in default_channels(member) if c.kind == ChannelKind.IN_APP)
    subscriptions.subscribe(member, LAG, [mail, hook, in_app])
    for kind in set(WarningKind.values) - {LAG}:  # this test is about the lag warning only
        subscriptions.subscribe(member, kind, [])

    # 400 messages, and a slow consumer stopped after consuming some of them: it lags, and has no client left.
    with running(
        traffic_sandbox, plan(TOPIC, GROUP, queues=1, backlog=400, rate=1.0, threads=1, delay=0.05), tmp_path
    ) as run:
        run.stop_producers(at_least=400)
        with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
            wait_for(lambda: committed(admin) >= 40, what="some consumed and committed", timeout=WAIT)
    with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
        lag, newest = lag_and_newest_consumed(admin)
        assert lag > 50
        # The oldest waiting message must have waited longer than the 1 s threshold.
        wait_for(lambda: time.time() * 1000 - newest > 2000, what="the backlog to age", timeout=WAIT)

    first = evaluate_and_deliver(registered, django_capture_on_commit_callbacks)

    warning = Warning.objects.get(kind=LAG, subject_name=GROUP)
    assert first["fired"] >= 1 and warning.state == WarningState.OPEN
    assert warning.subject_type == SubjectType.CONSUMER_GROUP and warning.consumer_group == group
    [mail_fired] = smtp.messages
    assert mail_fired["To"] == "mia@example.com"
    assert mail_fired["Subject"] == f"[Warning] consumer lag: {GROUP} ({registered.name})"
    assert warning.summary in mail_fired.get_content()
    [posted] = hooks.requests
    assert posted.json["event"]["transition"] == "fired" and posted.json["warning"]["id"] == warning.pk
    assert Notification.objects.filter(user=member, title=mail_fired["Subject"]).count() == 1

    # Evaluating again while the lag lasts, within the repeat interval: nothing new.
    again = evaluate_and_deliver(registered, django_capture_on_commit_callbacks)
    assert again["repeated"] == 0
    assert len(smtp.messages) == 1 and len(hooks.requests) == 1
    assert warning.events.count() == 1

    # A consumer catches up: the warning resolves and the owner hears so, once per channel.
    recovery = Plan(topics={TOPIC: 1}, groups={GROUP: 16}, clients=[consumer(GROUP, TOPIC)])
    with running(traffic_sandbox, recovery, tmp_path / "recovery"):
        with MQAdmin(traffic_sandbox.namesrv_addr) as admin:
            wait_for(lambda: lag_and_newest_consumed(admin)[0] == 0, what="the consumer to catch up", timeout=WAIT)
        evaluate_and_deliver(registered, django_capture_on_commit_callbacks)

    warning.refresh_from_db()
    assert warning.state == WarningState.RESOLVED
    assert [m["Subject"] for m in smtp.messages] == [
        f"[Warning] consumer lag: {GROUP} ({registered.name})",
        f"[Resolved] consumer lag: {GROUP} ({registered.name})",
    ]
    assert [r.json["event"]["transition"] for r in hooks.requests] == ["fired", "resolved"]
    assert all(m["To"] == "mia@example.com" for m in smtp.messages)

    # Nobody outside the subscription heard of it.
    delivered_to = set(Delivery.objects.filter(event__warning=warning).values_list("user__username", flat=True))
    assert delivered_to == {"mia"}
    assert not Notification.objects.filter(user__in=[outsider, portal_admin], title__contains=GROUP).exists()

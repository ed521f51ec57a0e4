"""The fuzz suite's world: one of everything the pages and the API act on (owned by the member's team, the
sandbox cluster registered), the three actors it fuzzes as (anonymous, a member of the owning team, a portal
admin), the values the strategies draw real ids and names from, and the report of the cases tried per target."""

import datetime as dt
from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from portal.models import (
    ApplicationKind,
    AssociationRole,
    Broker,
    BrokerRole,
    ConsumerGroup,
    Membership,
    Origin,
    ProducerGroup,
    Subscription,
    TeamRole,
    Topic,
    TopicAssociation,
)
from portal.models.warnings import ChannelKind, SubjectType, Transition, Warning, WarningEvent, WarningKind
from portal.services import applications, audit, notifications, producer_tokens, profiles
from portal.services.warnings import channels, subscriptions
from stats.models import JobRun, JobState, Ranking, RankingKind, ServerSample
from tests.fuzz import oracles, runner
from tests.support import portal_world
from tests.support.factories import make_user

# The portal tests' world, reused: pytest finds a fixture by the name it has in a conftest.
fast_password_hashing = portal_world.fast_password_hashing
sandbox = portal_world.sandbox
cluster = portal_world.cluster
team = portal_world.team
other_team = portal_world.other_team
member = portal_world.member
outsider = portal_world.outsider
portal_admin = portal_world.portal_admin
topic = portal_world.topic

SERVER_HOST = "10.0.0.7"


@pytest.fixture
def fuzz_settings(settings):
    """A cluster call that cannot succeed fails fast; throttles count nothing between examples (the cache is
    cleared before each), and nothing leaves the machine (e-mail goes to Django's test outbox)."""
    settings.ROCKETMQ_REQUEST_TIMEOUT = 0.5
    settings.WARNING_WEBHOOK_TIMEOUT = 1
    return settings


def _registry(w) -> None:
    cluster, team, topic = w.cluster, w.team, w.topic
    w.unowned_topic = Topic.objects.create(cluster=cluster, name="LEGACY_TOPIC", origin=Origin.IMPORTED)
    w.group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="PAY_BILLING")
    Subscription.objects.create(consumer_group=w.group, topic=topic)
    ConsumerGroup.objects.create(cluster=cluster, name="LEGACY_C", origin=Origin.IMPORTED)
    w.producer = ProducerGroup.objects.create(cluster=cluster, team=team, name="PAY_CHECKOUT")
    w.producer.topics.add(topic)
    ProducerGroup.objects.create(cluster=cluster, name="LEGACY_P", origin=Origin.IMPORTED)
    Topic.objects.create(cluster=cluster, team=w.other_team, name="SHIP_DISPATCHED", queue_nums=4)
    w.broker = Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
        address=f"{SERVER_HOST}:10911", role=BrokerRole.SYNC_MASTER,
    )  # fmt: skip


def _workflow(w) -> None:
    cluster, team, topic, member, outsider = w.cluster, w.team, w.topic, w.member, w.outsider
    w.application = applications.submit(
        member, kind=ApplicationKind.TOPIC_CREATE, team=team, cluster=cluster,
        payload={"name": "FUZZ_PENDING", "queue_nums": 4},
    )  # fmt: skip
    w.association = applications.submit(
        outsider, kind=ApplicationKind.TOPIC_ASSOCIATION, team=w.other_team, cluster=cluster,
        payload={"role": "consumer"}, topic=topic,
    )  # fmt: skip
    TopicAssociation.objects.create(topic=topic, user=outsider, role=AssociationRole.CONSUMER)
    audit.record(w.admin, "cluster.registered", cluster)
    for user in (member, w.admin):
        notifications.notify(user, "Welcome")


def _warnings(w) -> None:
    cluster = w.cluster
    now = timezone.now()
    w.warning = Warning.objects.create(
        kind=WarningKind.CONSUMER_LAG, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP,
        subject_name=w.group.name, consumer_group=w.group, opened_at=now, last_seen_at=now, last_notified_at=now,
        summary="PAY_BILLING is 20,000 messages behind",
    )  # fmt: skip
    WarningEvent.objects.create(warning=w.warning, transition=Transition.FIRED, at=now, summary=w.warning.summary)
    for user in (w.member, w.admin):
        # The channels a user has from the first look exist already, so a refused request that looks at them
        # creates nothing; a webhook nothing listens on fails at once when tested.
        channels.default_channels(user)
        channels.create_channel(
            user, kind=ChannelKind.WEBHOOK, name="fuzz hook", config={"url": "http://127.0.0.1:9/h"}
        )
        profiles.profile_for(user)
        subscriptions.mute(user, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP,
                           subject_name=w.group.name, until=now + dt.timedelta(hours=1))  # fmt: skip


def _stats(w) -> None:
    cluster = w.cluster
    now = timezone.now().replace(second=0, microsecond=0)
    day_end = now.replace(hour=0, minute=0)
    for kind in RankingKind.values:
        Ranking.objects.create(
            cluster_id=cluster.pk, kind=kind, window_start=day_end - dt.timedelta(days=1), window_end=day_end,
            subject="PAY_ORDER_CREATED" if kind.startswith("topic") else "PAY_BILLING", value=10.0, rank=1,
        )  # fmt: skip
    JobRun.objects.create(
        job="hourly", window_start=now - dt.timedelta(hours=1), window_end=now, state=JobState.SUCCEEDED,
        started_at=now, finished_at=now, lease_expires_at=now,
    )  # fmt: skip
    ServerSample.objects.create(host=SERVER_HOST, minute=now, cpu_percent=12.5, mem_total=2**33, mem_used=2**32)


def _choice_values() -> list[str]:
    from django.apps import apps

    values = set()
    for model in apps.get_models():
        if model._meta.app_label in ("portal", "stats"):
            for model_field in model._meta.get_fields():
                values.update(str(value) for value, _label in getattr(model_field, "choices", None) or [])
    return sorted(values)


@pytest.fixture
def world(fuzz_settings, sandbox, cluster, team, other_team, member, outsider, portal_admin, topic):
    """One of everything, the logged-in clients of the three actors, and what the strategies draw from."""
    w = SimpleNamespace(sandbox=sandbox, cluster=cluster, team=team, other_team=other_team, topic=topic,
                        member=member, outsider=outsider, admin=portal_admin)  # fmt: skip
    Membership.objects.create(team=team, user=make_user("leo"), role=TeamRole.ADMIN)
    for build in (_registry, _workflow, _warnings, _stats):
        build(w)
    w.token = producer_tokens.issue(w.producer, by=member)
    w.revoked = producer_tokens.issue(w.producer, by=member)
    producer_tokens.revoke(w.revoked.token, by=member)
    w.clients = {"anonymous": Client(raise_request_exception=False)}
    for actor, user in (("member", member), ("portal_admin", portal_admin)):
        w.clients[actor] = Client(raise_request_exception=False)
        w.clients[actor].force_login(user)
    w.baseline = oracles.Baseline.now()
    w.ids = sorted({row[0] for rows in w.baseline.rows.values() for row in rows if isinstance(row[0], int)})[:60]
    names = [topic.name, w.group.name, w.producer.name, team.name, other_team.name, "mia", "olga", "ada", "leo"]
    w.slugs = sorted({"topic", "consumer-group", "producer-group", "warning", "broker", SERVER_HOST, *names,
                      *SubjectType.values, *WarningKind.values, *ChannelKind.values})  # fmt: skip
    moment = timezone.now().replace(second=0, microsecond=0).isoformat()
    w.pool = sorted({*names, *w.slugs, *map(str, w.ids[:20]), *_choice_values(), sandbox.namesrv_addr, moment,
                     moment[:10], "http://127.0.0.1:9/h", "mia@example.com"})  # fmt: skip
    return w


def pytest_terminal_summary(terminalreporter):
    """The cases tried per target (endpoint x actor), printed and written to var/fuzz/cases.txt."""
    if not runner.CASES:
        return
    text = runner.report()
    runner.REPORT_FILE.parent.mkdir(parents=True, exist_ok=True)
    runner.REPORT_FILE.write_text(text)
    terminalreporter.write_sep("-", f"fuzz: cases tried per target (also in {runner.REPORT_FILE})")
    terminalreporter.write(text)

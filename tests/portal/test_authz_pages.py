"""The authorization matrix of the pages: for every page (business and admin), GET and POST, what each of the five
actors gets - 200 (a page, or a form shown again with its errors), a redirect to the login page, 403 (may see, may
not do), 404 (may not see), 405 (method not offered: the same for everyone signed in, whatever they may do), or
another redirect (the action was done). A guard test makes sure no page of the URL configuration is missing from the
matrix.

Every actor's request runs in its own rolled-back transaction on the same data, so a POST that acts (cancelling,
approving, removing a member) cannot change what the next actor sees. POSTs that open forms send empty or minimal
data: what is checked is who gets in, not what the form does (test_pages_*.py and test_admin_pages.py do that)."""

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from monitor.remoting.message import create_offset_msg_id
from portal.models import (
    Application,
    ApplicationKind,
    AssociationRole,
    Broker,
    ConsumerGroup,
    MessageSearch,
    Notification,
    Origin,
    ProducerGroup,
    SearchKind,
    Subscription,
    Topic,
)
from portal.models.warnings import ChannelKind, SubjectType, Warning, WarningKind
from portal.services import consumer_tokens, producer_tokens
from portal.services.metrics import tokens as metrics_tokens
from portal.services.warnings import channels, subscriptions

ACTORS = ("anonymous", "outsider", "member", "team_admin", "portal_admin")
LOGIN = "302 to login"  # any other redirect is written 302


def expect(anonymous, outsider, member, team_admin, portal_admin) -> tuple:
    return anonymous, outsider, member, team_admin, portal_admin


# Shorthands for the common rows.
OPEN = expect(200, 200, 200, 200, 200)
SIGNED_IN = expect(LOGIN, 200, 200, 200, 200)
GET_ONLY = expect(LOGIN, 405, 405, 405, 405)
GET_ONLY_PUBLIC = expect(405, 405, 405, 405, 405)
ADMIN_ONLY = expect(LOGIN, 403, 403, 403, 200)
TEAM_CHANGE = expect(LOGIN, 403, 200, 200, 200)  # the owning team (any member) and portal admins
TEAM_ADMIN = expect(LOGIN, 403, 403, 200, 200)  # team admins of the owning team and portal admins
OWN_ONLY = expect(LOGIN, 404, 200, 404, 404)  # the member's own things (warning channels): nobody else finds them


@dataclass(frozen=True)
class Page:
    get: tuple
    post: tuple
    args: Callable[[SimpleNamespace], list] = lambda world: []
    data: Callable[[SimpleNamespace], dict] = lambda world: {}


MATRIX: dict[str, Page] = {
    # --- outside the portal's pages
    "healthz": Page(get=OPEN, post=OPEN),
    # Prometheus's: a scrape token or an allowed network, never a session (test_metrics_access.py)
    "metrics": Page(get=expect(401, 401, 401, 401, 401), post=GET_ONLY_PUBLIC),
    "favicon": Page(get=expect(302, 302, 302, 302, 302), post=GET_ONLY_PUBLIC),
    "set_language": Page(get=expect(302, 302, 302, 302, 302), post=expect(302, 302, 302, 302, 302)),
    # --- account
    "login": Page(get=expect(200, 302, 302, 302, 302), post=expect(200, 302, 302, 302, 302)),
    "logout": Page(get=expect(405, 405, 405, 405, 405), post=expect(302, 302, 302, 302, 302)),
    "profile": Page(get=SIGNED_IN, post=SIGNED_IN),
    "profile-language": Page(
        get=GET_ONLY, post=expect(LOGIN, 302, 302, 302, 302), data=lambda world: {"language": "en"}
    ),
    "profile-api-token": Page(get=GET_ONLY, post=SIGNED_IN, data=lambda w: {"action": "rotate"}),
    "dashboard": Page(get=SIGNED_IN, post=GET_ONLY),
    "notification-list": Page(get=SIGNED_IN, post=expect(LOGIN, 302, 302, 302, 302), data=lambda w: {"all": "1"}),
    # --- registry: topic information is public, the rest needs a login
    "topic-list": Page(get=OPEN, post=GET_ONLY_PUBLIC),
    "topic-detail": Page(get=OPEN, post=GET_ONLY_PUBLIC, args=lambda w: [w.topic.pk]),
    "consumer-group-list": Page(get=SIGNED_IN, post=GET_ONLY),
    "consumer-group-detail": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.group.pk]),
    "producer-group-detail": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.producer.pk]),
    "entry-description": Page(
        get=TEAM_CHANGE,
        post=expect(LOGIN, 403, 302, 302, 302),
        args=lambda w: ["topic", w.topic.pk],
        data=lambda w: {"description": "orders"},
    ),
    # --- applications: anyone in a team applies; changes by the owning team, deletions by its team admins
    "apply-topic": Page(get=SIGNED_IN, post=SIGNED_IN),
    "apply-consumer-group": Page(get=SIGNED_IN, post=SIGNED_IN),
    "apply-producer-group": Page(get=SIGNED_IN, post=SIGNED_IN),
    "topic-apply-change": Page(get=TEAM_CHANGE, post=TEAM_CHANGE, args=lambda w: [w.topic.pk]),
    "topic-apply-delete": Page(get=TEAM_ADMIN, post=TEAM_ADMIN, args=lambda w: [w.topic.pk]),
    "topic-associate": Page(get=SIGNED_IN, post=SIGNED_IN, args=lambda w: [w.topic.pk]),
    # a deletion needs no more than the (optional) reason, so the empty POST files it; the topic's is refused with a
    # form error because a consumer group still subscribes to it
    "consumer-group-apply-delete": Page(
        get=TEAM_ADMIN, post=expect(LOGIN, 403, 403, 302, 302), args=lambda w: [w.group.pk]
    ),
    "producer-group-apply-delete": Page(
        get=TEAM_ADMIN, post=expect(LOGIN, 403, 403, 302, 302), args=lambda w: [w.producer.pk]
    ),
    # producer tokens: the owning team issues (the answer shows the new token) and revokes them
    "producer-token-issue": Page(
        get=GET_ONLY, post=TEAM_CHANGE, args=lambda w: [w.producer.pk], data=lambda w: {"label": "matrix"}
    ),
    "producer-token-revoke": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 302, 302, 302),
        args=lambda w: [w.producer.pk, w.producer_token.pk],
    ),
    # consumer tokens and the consumption throttle: the owning team's, as producer tokens are
    "consumer-token-issue": Page(
        get=GET_ONLY, post=TEAM_CHANGE, args=lambda w: [w.group.pk], data=lambda w: {"label": "matrix"}
    ),
    "consumer-token-revoke": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 302, 302, 302),
        args=lambda w: [w.group.pk, w.consumer_token.pk],
    ),
    "consumer-group-throttle": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 302, 302, 302),
        args=lambda w: [w.group.pk],
        data=lambda w: {"consume_throttle_tps": "50"},
    ),
    "application-list": Page(get=SIGNED_IN, post=GET_ONLY),
    # the member's application for their team: the outsider may not see it
    "application-detail": Page(get=expect(LOGIN, 404, 200, 200, 200), post=GET_ONLY, args=lambda w: [w.application.pk]),
    # only the applicant cancels; the team admin and the portal admin see it but may not (admins reject)
    "application-cancel": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 403, 403), args=lambda w: [w.application.pk]),
    # a message operation's progress is for whoever sees the application; only portal admins run it again (this one
    # is still pending: the admin is told so on its page)
    "application-progress": Page(get=expect(LOGIN, 404, 200, 200, 200), post=GET_ONLY, args=lambda w: [w.operation.pk]),
    "application-run-again": Page(
        get=GET_ONLY, post=expect(LOGIN, 404, 403, 403, 302), args=lambda w: [w.operation.pk]
    ),
    # --- teams: everyone signed in sees them; team admins manage their own team's membership
    "team-list": Page(get=SIGNED_IN, post=GET_ONLY),
    "team-detail": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.team.pk]),
    "team-member-add": Page(get=GET_ONLY, post=TEAM_ADMIN, args=lambda w: [w.team.pk]),
    "team-member-remove": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 403, 302, 302),
        args=lambda w: [w.team.pk],
        data=lambda w: {"user": w.actors["member"].pk},
    ),
    # --- admin pages (/manage/): the approval queue is also a team admin's, for associations with their topics
    "approval-queue": Page(get=expect(LOGIN, 403, 403, 200, 200), post=GET_ONLY),
    "application-approve": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 403, 302, 302),
        args=lambda w: [w.association.pk],
    ),
    "application-reject": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 403, 302, 302),
        args=lambda w: [w.association.pk],
        data=lambda w: {"reason": "not needed"},
    ),
    "cluster-list": Page(get=SIGNED_IN, post=GET_ONLY),
    "cluster-detail": Page(get=SIGNED_IN, post=ADMIN_ONLY, args=lambda w: [w.topic.cluster_id]),
    "cluster-create": Page(get=ADMIN_ONLY, post=ADMIN_ONLY, data=lambda w: {"name": ""}),
    "cluster-sync": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 403, 403, 302),
        args=lambda w: [w.topic.cluster_id],
    ),
    "unowned-list": Page(get=ADMIN_ONLY, post=GET_ONLY),
    "entry-adopt": Page(
        get=GET_ONLY,
        post=expect(LOGIN, 403, 403, 403, 302),
        args=lambda w: ["topic", w.unowned.pk],
        data=lambda w: {"team": w.team.pk},
    ),
    "audit-log": Page(get=ADMIN_ONLY, post=GET_ONLY),
    "job-run-list": Page(get=ADMIN_ONLY, post=GET_ONLY),
    # scrape tokens: portal admins only; issuing answers with the new token's page
    "metrics-token-list": Page(get=ADMIN_ONLY, post=GET_ONLY),
    "metrics-token-issue": Page(get=GET_ONLY, post=ADMIN_ONLY, data=lambda w: {"label": "matrix"}),
    "metrics-token-revoke": Page(
        get=GET_ONLY, post=expect(LOGIN, 403, 403, 403, 302), args=lambda w: [w.metrics_token.pk]
    ),
    "team-create": Page(get=ADMIN_ONLY, post=ADMIN_ONLY, data=lambda w: {"name": ""}),
    # users: portal admins only; the empty POSTs are a refused creation (200) and the member's flags cleared (302)
    "user-list": Page(get=ADMIN_ONLY, post=GET_ONLY),
    "user-create": Page(get=ADMIN_ONLY, post=ADMIN_ONLY),
    "user-detail": Page(
        get=ADMIN_ONLY,
        post=expect(LOGIN, 403, 403, 403, 302),
        args=lambda w: [w.actors["member"].pk],
    ),
    # --- monitoring: any signed-in user (a topic's traffic charts are on its page, for signed-in users only);
    # "who is lagging now" shows each their own teams' groups, portal admins every group
    "broker-detail": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.broker.pk]),
    "server-detail": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.broker.host]),
    "lagging": Page(get=SIGNED_IN, post=GET_ONLY),
    "rankings": Page(get=SIGNED_IN, post=GET_ONLY),
    # --- warnings: a warning of the team's group is the team's (and admins'); channels and mutes are personal (the
    # member's here: anyone else's are never found); the owning team overrides thresholds, admins set the defaults
    "warning-list": Page(get=SIGNED_IN, post=GET_ONLY),
    "warning-detail": Page(get=expect(LOGIN, 404, 200, 200, 200), post=GET_ONLY, args=lambda w: [w.warning.pk]),
    "warning-acknowledge": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 302, 302), args=lambda w: [w.warning.pk]),
    "warning-preferences": Page(get=SIGNED_IN, post=expect(LOGIN, 302, 302, 302, 302)),
    "mute-create": Page(get=SIGNED_IN, post=SIGNED_IN, args=lambda w: ["consumer-group", w.group.pk]),
    "mute-delete": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 404, 404), args=lambda w: [w.mute.pk]),
    "channel-list": Page(get=SIGNED_IN, post=GET_ONLY),
    "channel-create": Page(get=SIGNED_IN, post=SIGNED_IN),
    "channel-edit": Page(get=OWN_ONLY, post=OWN_ONLY, args=lambda w: [w.channel.pk]),
    "channel-test": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 404, 404), args=lambda w: [w.channel.pk]),
    "channel-enable": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 404, 404), args=lambda w: [w.channel.pk]),
    "channel-delete": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 404, 404), args=lambda w: [w.channel.pk]),
    "entry-thresholds": Page(
        get=TEAM_CHANGE,
        post=expect(LOGIN, 403, 302, 302, 302),
        args=lambda w: ["consumer-group", w.group.pk],
        data=lambda w: {"kind": "consumer_lag", "consumer_lag-messages": "20000"},
    ),
    "warning-defaults": Page(
        get=ADMIN_ONLY,
        post=expect(LOGIN, 403, 403, 403, 302),
        data=lambda w: {"kind": "consumer_lag", "consumer_lag-messages": "20000"},
    ),
    # --- messages: searching and reading need a login (a search is its requester's and admins'); acting on a
    # topic's messages or a group is the owning team's (an application; a portal admin's is done at once). The
    # matrix's topic and group exist in the registry only, so the message asked for is not found (404).
    "message-search": Page(
        get=SIGNED_IN,
        post=expect(LOGIN, 302, 302, 302, 302),
        args=lambda w: [w.topic.pk],
        data=lambda w: {"kind": "key", "key": "order-1"},
    ),
    "message-search-detail": Page(get=expect(LOGIN, 404, 200, 404, 200), post=GET_ONLY, args=lambda w: [w.search.pk]),
    "message-search-status": Page(get=expect(LOGIN, 404, 200, 404, 200), post=GET_ONLY, args=lambda w: [w.search.pk]),
    "message-search-cancel": Page(get=GET_ONLY, post=expect(LOGIN, 404, 302, 404, 302), args=lambda w: [w.search.pk]),
    "message-detail": Page(get=expect(LOGIN, 404, 404, 404, 404), post=GET_ONLY, args=lambda w: w.message),
    "message-resend": Page(get=GET_ONLY, post=expect(LOGIN, 404, 404, 404, 404), args=lambda w: w.message),
    "topic-send": Page(get=TEAM_CHANGE, post=TEAM_CHANGE, args=lambda w: [w.topic.pk]),
    "topic-export": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.topic.pk]),
    "group-dead-letters": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.group.pk]),
    "group-dead-letters-resend": Page(
        get=GET_ONLY, post=expect(LOGIN, 403, 302, 302, 302), args=lambda w: [w.group.pk]
    ),
    "group-clients": Page(get=SIGNED_IN, post=GET_ONLY, args=lambda w: [w.group.pk]),
    # without ?client= there is no client to ask
    "group-client-stack": Page(get=expect(LOGIN, 400, 400, 400, 400), post=GET_ONLY, args=lambda w: [w.group.pk]),
    "group-offset-reset": Page(get=TEAM_CHANGE, post=TEAM_CHANGE, args=lambda w: [w.group.pk]),
    "group-redeliver": Page(get=TEAM_CHANGE, post=TEAM_CHANGE, args=lambda w: [w.group.pk]),
    "group-settings": Page(get=TEAM_CHANGE, post=TEAM_CHANGE, args=lambda w: [w.group.pk]),
    "group-operation": Page(get=GET_ONLY, post=expect(LOGIN, 403, 302, 302, 302), args=lambda w: [w.group.pk, "pause"]),
}


@pytest.fixture
def world(outsider, member, team_admin, portal_admin, team, topic, sandbox):
    """One of everything the pages are about, owned by the member's team ("payments")."""
    group = ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_MATRIX")
    Subscription.objects.create(consumer_group=group, topic=topic)
    producer = ProducerGroup.objects.create(cluster=topic.cluster, team=team, name="PID_MATRIX")
    producer.topics.add(topic)
    producer_token = producer_tokens.issue(producer, by=member).token
    consumer_token = consumer_tokens.issue(group, by=member).token
    metrics_token = metrics_tokens.issue(by=portal_admin, label="matrix").token
    unowned = Topic.objects.create(cluster=topic.cluster, name="LEGACY_MATRIX", origin=Origin.IMPORTED)
    broker = Broker.objects.create(
        cluster=topic.cluster, cluster_name="DefaultCluster", broker_name="broker-matrix", broker_id=0,
        address="10.0.0.7:10911",
    )  # fmt: skip
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CHANGE,
        applicant=member,
        team=team,
        cluster=topic.cluster,
        topic=topic,
        payload={"name": topic.name, "queue_nums": 16},
    )
    operation = Application.objects.create(
        kind=ApplicationKind.MESSAGE_RESEND,
        applicant=member,
        team=team,
        cluster=topic.cluster,
        topic=topic,
        payload={"msg_ids": ["0A0000070000791F0000000000000000"], "to": "origin", "group": ""},
    )
    association = Application.objects.create(
        kind=ApplicationKind.TOPIC_ASSOCIATION,
        applicant=outsider,
        team=outsider.memberships.get().team,
        cluster=topic.cluster,
        topic=topic,
        payload={"name": topic.name, "role": AssociationRole.CONSUMER},
    )
    for user in (outsider, member, team_admin, portal_admin):
        Notification.objects.create(user=user, title="hello")
    now = timezone.now()
    warning = Warning.objects.create(
        kind=WarningKind.CONSUMER_LAG, cluster=topic.cluster, subject_type=SubjectType.CONSUMER_GROUP,
        subject_name=group.name, consumer_group=group, opened_at=now, last_seen_at=now, last_notified_at=now,
        summary="GID_MATRIX is 20,000 messages behind",
    )  # fmt: skip
    # an endpoint nothing listens on: its test fails at once, which is an answer too
    channel = channels.create_channel(member, kind=ChannelKind.WEBHOOK, name="matrix hook",
                                      config={"url": "http://127.0.0.1:9/hook"})  # fmt: skip
    mute = subscriptions.mute(member, cluster=topic.cluster, subject_type=SubjectType.CONSUMER_GROUP,
                              subject_name=group.name, until=now + dt.timedelta(hours=1))  # fmt: skip
    search = MessageSearch.objects.create(cluster=topic.cluster, topic=topic, topic_name=topic.name,
                                          requested_by=member, kind=SearchKind.KEY, key="order-1")  # fmt: skip
    # an id on a real broker of the cluster: what it holds there is no message of this topic
    message = [topic.cluster_id, topic.name, create_offset_msg_id(sandbox.broker(sandbox.broker_names[0]).addr, 0)]
    actors = {"outsider": outsider, "member": member, "team_admin": team_admin, "portal_admin": portal_admin}
    return SimpleNamespace(
        search=search,
        message=message,
        actors=actors,
        team=team,
        topic=topic,
        group=group,
        producer=producer,
        producer_token=producer_token,
        consumer_token=consumer_token,
        metrics_token=metrics_token,
        unowned=unowned,
        broker=broker,
        application=application,
        operation=operation,
        association=association,
        warning=warning,
        channel=channel,
        mute=mute,
    )


def outcome(response):
    if response.status_code == 302 and response.url.startswith(reverse("login")):
        return LOGIN
    return response.status_code


def observe(client, world, name: str, method: str) -> dict[str, object]:
    page = MATRIX[name]
    url = reverse(name, args=page.args(world))
    seen = {}
    for actor in ACTORS:
        with transaction.atomic():
            client.logout()
            if actor != "anonymous":
                client.force_login(world.actors[actor])
            response = client.get(url) if method == "GET" else client.post(url, page.data(world))
            seen[actor] = outcome(response)
            transaction.set_rollback(True)
    return seen


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_get(client, world, name):
    assert observe(client, world, name, "GET") == dict(zip(ACTORS, MATRIX[name].get, strict=True))


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_post(client, world, name):
    assert observe(client, world, name, "POST") == dict(zip(ACTORS, MATRIX[name].post, strict=True))


def page_names(resolver=None, prefix: str = "") -> set[str]:
    """Every URL name outside the API (``api/...`` has its own matrix); an unnamed page is listed by its route."""
    names = set()
    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        if route.startswith("api/"):
            continue
        if isinstance(pattern, URLResolver):
            names |= page_names(pattern, route)
        elif isinstance(pattern, URLPattern):
            names.add(pattern.name or f"<unnamed {route}>")
    return names


def test_every_page_is_in_the_matrix():
    assert page_names() == set(MATRIX)

"""The API's authorization matrix: every endpoint and method, for each of the five actors.

Conventions it pins down: a request without credentials is answered 401 with a ``WWW-Authenticate: Token``
challenge wherever a login is needed; a logged-in user gets 404 for what they may not see and 403 for what they see
but may not do (admin-only endpoints answer 403 to everyone else, whatever the object); topics, the token endpoint,
the schema and the docs are public. A guard test fails when an endpoint has no row here.
"""

import datetime as dt
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from monitor.remoting.message import create_offset_msg_id
from portal.models import (
    ApplicationKind,
    Broker,
    BrokerRole,
    ConsumerGroup,
    Membership,
    MessageSearch,
    Origin,
    ProducerGroup,
    SearchKind,
    Subscription,
    TeamRole,
    Topic,
)
from portal.models.warnings import ChannelKind, SubjectType, Warning, WarningKind
from portal.services import applications, audit, notifications
from portal.services.warnings import channels, subscriptions
from tests.support.factories import PASSWORD, make_user

ACTORS = ("anonymous", "outsider", "member", "team_admin", "portal_admin")


@dataclass(frozen=True)
class Case:
    """One endpoint and method; ``expect`` lists the status for each of ACTORS, in that order."""

    url_name: str
    method: str
    expect: tuple[int, int, int, int, int]
    kwargs: object = field(default=lambda w: {})
    data: object = field(default=lambda w: None)
    challenge: str = "Token"  # the WWW-Authenticate of a 401

    @property
    def id(self) -> str:
        return f"{self.method} {self.url_name}"


def team_topic(w):
    return {"pk": w.topic.pk}


def own_channel(w):
    return {"pk": w.channel.pk}


def lag_kind(w):
    return {"kind": "consumer_lag"}


def own_search(w):
    return {"pk": w.search.pk}


def a_message(w):
    return {"cluster_pk": w.cluster.pk, "topic_name": w.topic.name, "msg_id": w.msg_id}


def team_group(w):
    return {"pk": w.consumer_group.pk}


CASES = [
    Case("api:cluster-list", "GET", (401, 200, 200, 200, 200)),
    Case(
        "api:cluster-list",
        "POST",
        (401, 403, 403, 403, 201),
        data=lambda w: {"name": "matrix-cluster", "namesrv_addrs": [w.sandbox.namesrv_addr]},
    ),
    Case("api:cluster-detail", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.cluster.pk}),
    Case(
        "api:cluster-detail",
        "PATCH",
        (401, 403, 403, 403, 200),
        lambda w: {"pk": w.cluster.pk},
        lambda w: {"description": "the sandbox"},
    ),
    Case("api:broker-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:broker-detail", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.broker.pk}),
    Case("api:topic-list", "GET", (200, 200, 200, 200, 200)),
    Case("api:topic-detail", "GET", (200, 200, 200, 200, 200), team_topic),
    Case("api:topic-detail", "PATCH", (401, 403, 200, 200, 200), team_topic, lambda w: {"description": "orders"}),
    Case(
        "api:topic-adopt",
        "POST",
        (401, 403, 403, 403, 200),
        lambda w: {"pk": w.unowned_topic.pk},
        lambda w: {"team": w.team.pk},
    ),
    Case("api:consumer-group-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:consumer-group-detail", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.consumer_group.pk}),
    Case(
        "api:consumer-group-detail",
        "PATCH",
        (401, 403, 200, 200, 200),
        lambda w: {"pk": w.consumer_group.pk},
        lambda w: {"description": "billing"},
    ),
    Case(
        "api:consumer-group-adopt",
        "POST",
        (401, 403, 403, 403, 200),
        lambda w: {"pk": w.unowned_consumer_group.pk},
        lambda w: {"team": w.team.pk},
    ),
    Case("api:producer-group-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:producer-group-detail", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.producer_group.pk}),
    Case(
        "api:producer-group-detail",
        "PATCH",
        (401, 403, 200, 200, 200),
        lambda w: {"pk": w.producer_group.pk},
        lambda w: {"description": "checkout"},
    ),
    Case(
        "api:producer-group-adopt",
        "POST",
        (401, 403, 403, 403, 200),
        lambda w: {"pk": w.unowned_producer_group.pk},
        lambda w: {"team": w.team.pk},
    ),
    Case("api:team-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:team-list", "POST", (401, 403, 403, 403, 201), data=lambda w: {"name": "search"}),
    Case("api:team-detail", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.team.pk}),
    Case("api:team-members", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.team.pk}),
    Case(
        "api:team-members",
        "POST",
        (401, 403, 403, 201, 201),
        lambda w: {"pk": w.team.pk},
        lambda w: {"username": w.newcomer.username},
    ),
    Case(
        "api:team-member",
        "DELETE",
        (401, 403, 403, 204, 204),
        lambda w: {"pk": w.team.pk, "username": w.colleague.username},
    ),
    Case("api:application-list", "GET", (401, 200, 200, 200, 200)),
    Case(
        "api:application-list",
        "POST",
        (401, 403, 201, 201, 201),
        data=lambda w: {
            "kind": ApplicationKind.TOPIC_CREATE,
            "team": w.team.pk,
            "cluster": w.cluster.pk,
            "payload": {"name": "MATRIX_APPLIED", "queue_nums": 4},
        },
    ),
    Case("api:application-detail", "GET", (401, 404, 200, 200, 200), lambda w: {"pk": w.application.pk}),
    # An association with the team's topic, asked for by the outsider: the topic's team admins decide it too.
    Case("api:application-approve", "POST", (401, 403, 404, 200, 200), lambda w: {"pk": w.association.pk}),
    Case(
        "api:application-reject",
        "POST",
        (401, 404, 403, 403, 200),
        lambda w: {"pk": w.application.pk},
        lambda w: {"reason": "use the existing topic"},
    ),
    Case("api:application-cancel", "POST", (401, 404, 200, 403, 403), lambda w: {"pk": w.application.pk}),
    # a message operation's messages are for whoever sees the application; only portal admins run one again (this
    # application is no approved operation: 400)
    Case("api:application-items", "GET", (401, 404, 200, 200, 200), lambda w: {"pk": w.application.pk}),
    Case("api:application-run-again", "POST", (401, 404, 403, 403, 400), lambda w: {"pk": w.application.pk}),
    Case("api:audit-entry-list", "GET", (401, 403, 403, 403, 200)),
    Case("api:audit-entry-detail", "GET", (401, 403, 403, 403, 200), lambda w: {"pk": w.audit_entry.pk}),
    Case("api:notification-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:notification-detail", "GET", (401, 404, 200, 404, 404), lambda w: {"pk": w.notification.pk}),
    Case("api:notification-mark-read", "POST", (401, 200, 200, 200, 200), data=lambda w: {}),
    Case("api:ranking-list", "GET", (401, 200, 200, 200, 200), data=lambda w: {"cluster": w.cluster.pk}),
    Case(
        "api:token",
        "POST",
        (200, 200, 200, 200, 200),
        data=lambda w: {"username": w.member.username, "password": PASSWORD},
    ),
    Case("api:token", "DELETE", (401, 204, 204, 204, 204)),
    Case("api:token-rotate", "POST", (401, 201, 201, 201, 201)),
    # producers report with their group's token (test_producer_reports.py), never with a user's credentials
    Case(
        "api:producer-reports", "POST", (401, 401, 401, 401, 401), data=lambda w: {"reports": []}, challenge="Producer"
    ),
    Case("api:producer-registration", "GET", (401, 401, 401, 401, 401), challenge="Producer"),
    # SDK consumers report with their group's token (test_consumer_reports.py); the bootstrap takes either token
    Case(
        "api:consumer-reports", "POST", (401, 401, 401, 401, 401), data=lambda w: {"reports": []}, challenge="Consumer"
    ),
    Case("api:client-bootstrap", "GET", (401, 401, 401, 401, 401), challenge="Producer"),
    # warnings: one of the team's group is the team's (and admins'); channels and mutes are the member's own, never
    # found by anyone else; subscriptions are each user's own, per warning type
    Case("api:warning-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:warning-detail", "GET", (401, 404, 200, 200, 200), lambda w: {"pk": w.warning.pk}),
    Case("api:warning-acknowledge", "POST", (401, 404, 200, 200, 200), lambda w: {"pk": w.warning.pk}),
    Case("api:warning-channel-list", "GET", (401, 200, 200, 200, 200)),
    Case(
        "api:warning-channel-list",
        "POST",
        (401, 201, 201, 201, 201),
        data=lambda w: {"kind": "slack", "name": "slack", "config": {"url": "https://hooks.slack.com/services/T/B/X"}},
    ),
    Case("api:warning-channel-detail", "GET", (401, 404, 200, 404, 404), own_channel),
    Case("api:warning-channel-detail", "PATCH", (401, 404, 200, 404, 404), own_channel, lambda w: {"enabled": False}),
    Case("api:warning-channel-detail", "DELETE", (401, 404, 204, 404, 404), own_channel),
    Case("api:warning-channel-test", "POST", (401, 404, 200, 404, 404), own_channel),
    Case("api:warning-subscription-list", "GET", (401, 200, 200, 200, 200)),
    Case("api:warning-subscription-detail", "GET", (401, 200, 200, 200, 200), lag_kind),
    Case("api:warning-subscription-detail", "PUT", (401, 200, 200, 200, 200), lag_kind, lambda w: {"channels": []}),
    Case("api:warning-subscription-detail", "DELETE", (401, 204, 204, 204, 204), lag_kind),
    Case("api:warning-mute-list", "GET", (401, 200, 200, 200, 200)),
    Case(
        "api:warning-mute-list",
        "POST",
        (401, 201, 201, 201, 201),
        data=lambda w: {
            "cluster": w.cluster.pk,
            "subject_type": "consumer_group",
            "subject_name": "PAY_BILLING",
            "until": timezone.now() + dt.timedelta(hours=1),
        },
    ),
    Case("api:warning-mute-detail", "GET", (401, 404, 200, 404, 404), lambda w: {"pk": w.mute.pk}),
    Case("api:warning-mute-detail", "DELETE", (401, 404, 204, 404, 404), lambda w: {"pk": w.mute.pk}),
    # messages: a search is its requester's (and admins'); operations are the owning team's applications (a portal
    # admin's done at once). The matrix's topic and group are in the registry only: the message asked for is not
    # found (404), and what is let through to the cluster is told the topic or group is not there (502)
    Case("api:message-search-list", "GET", (401, 200, 200, 200, 200)),
    Case(
        "api:message-search-list",
        "POST",
        (401, 201, 201, 201, 201),
        data=lambda w: {"cluster": w.cluster.pk, "topic": w.topic.name, "kind": "key", "key": "order-1"},
    ),
    Case("api:message-search-detail", "GET", (401, 404, 200, 404, 200), own_search),
    Case("api:message-search-hits", "GET", (401, 404, 200, 404, 200), own_search),
    Case("api:message-search-cancel", "POST", (401, 404, 200, 404, 200), own_search),
    Case("api:message-detail", "GET", (401, 404, 404, 404, 404), a_message),
    Case("api:message-tracks", "GET", (401, 404, 404, 404, 404), a_message),
    Case("api:message-trace", "GET", (401, 404, 404, 404, 404), a_message),
    Case("api:message-resend", "POST", (401, 404, 404, 404, 404), a_message, lambda w: {"to": "origin"}),
    Case(
        "api:message-operation-list",
        "POST",
        (401, 403, 201, 201, 502),
        data=lambda w: {"kind": "group_resume", "consumer_group": w.consumer_group.pk, "payload": {}},
    ),
    Case("api:consumer-group-messages-dead-letters", "GET", (401, 200, 200, 200, 200), team_group),
    Case(
        "api:consumer-group-messages-reset-preview",
        "POST",
        (401, 403, 502, 502, 502),
        team_group,
        lambda w: {"topic": w.topic.name, "when": "newest"},
    ),
    Case("api:consumer-group-messages-clients", "GET", (401, 200, 200, 200, 200), team_group),
    # without ?client= there is no client to ask
    Case("api:consumer-group-messages-client-stack", "GET", (401, 400, 400, 400, 400), team_group),
    Case("api:topic-messages-test-message", "POST", (401, 403, 502, 502, 502), team_topic, lambda w: {"body": "hi"}),
    # without a range there is nothing to export
    Case("api:topic-messages-export", "GET", (401, 400, 400, 400, 400), team_topic),
    # time series: monitoring data, for every signed-in user (a topic's too, though the topic itself is public)
    Case("api:topic-series", "GET", (401, 200, 200, 200, 200), team_topic),
    Case("api:consumer-group-series", "GET", (401, 200, 200, 200, 200), team_group),
    Case("api:broker-series", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.broker.pk}),
    Case("api:cluster-series", "GET", (401, 200, 200, 200, 200), lambda w: {"pk": w.cluster.pk}),
    Case("api:server-series", "GET", (401, 200, 200, 200, 200), lambda w: {"host": w.broker.host}),
    Case("api:schema", "GET", (200, 200, 200, 200, 200)),
    Case("api:docs", "GET", (200, 200, 200, 200, 200)),
    Case("api:redoc", "GET", (200, 200, 200, 200, 200)),
]


@pytest.fixture
def world(sandbox, cluster, team, other_team, member, team_admin, outsider, portal_admin, topic):
    """One of everything the endpoints act on; the team owns the topic and groups, the outsider is in other_team."""
    w = SimpleNamespace(
        sandbox=sandbox, cluster=cluster, team=team, topic=topic, member=member, newcomer=make_user("nina")
    )
    w.broker = Broker.objects.create(
        cluster=cluster,
        cluster_name="DefaultCluster",
        broker_name="broker-a",
        broker_id=0,
        address="127.0.0.1:10911",
        role=BrokerRole.SYNC_MASTER,
    )
    w.unowned_topic = Topic.objects.create(cluster=cluster, name="LEGACY_TOPIC", origin=Origin.IMPORTED)
    w.consumer_group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="PAY_BILLING")
    Subscription.objects.create(consumer_group=w.consumer_group, topic=topic)
    w.unowned_consumer_group = ConsumerGroup.objects.create(cluster=cluster, name="LEGACY_C", origin=Origin.IMPORTED)
    w.producer_group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PAY_CHECKOUT")
    w.producer_group.topics.add(topic)
    w.unowned_producer_group = ProducerGroup.objects.create(cluster=cluster, name="LEGACY_P", origin=Origin.IMPORTED)
    w.colleague = make_user("leo")
    Membership.objects.create(team=team, user=w.colleague, role=TeamRole.MEMBER)
    w.application = applications.submit(
        member,
        kind=ApplicationKind.TOPIC_CREATE,
        team=team,
        cluster=cluster,
        payload={"name": "MATRIX_PENDING", "queue_nums": 4},
    )
    w.association = applications.submit(
        outsider,
        kind=ApplicationKind.TOPIC_ASSOCIATION,
        team=other_team,
        cluster=cluster,
        payload={"role": "consumer"},
        topic=topic,
    )
    w.audit_entry = audit.record(portal_admin, "cluster.registered", cluster)
    w.notification = notifications.notify(member, "Welcome")
    now = timezone.now()
    w.warning = Warning.objects.create(
        kind=WarningKind.CONSUMER_LAG, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP,
        subject_name=w.consumer_group.name, consumer_group=w.consumer_group, opened_at=now, last_seen_at=now,
        last_notified_at=now, summary="PAY_BILLING is 20,000 messages behind",
    )  # fmt: skip
    # an endpoint nothing listens on: its test fails at once, which is an answer too
    w.channel = channels.create_channel(member, kind=ChannelKind.WEBHOOK, name="matrix hook",
                                        config={"url": "http://127.0.0.1:9/hook"})  # fmt: skip
    w.search = MessageSearch.objects.create(
        cluster=cluster, topic=topic, topic_name=topic.name, requested_by=member, kind=SearchKind.KEY, key="order-1"
    )
    # an id on a real broker of the cluster: what it holds there is no message of this topic
    w.msg_id = create_offset_msg_id(sandbox.broker(sandbox.broker_names[0]).addr, 0)
    w.mute = subscriptions.mute(member, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP,
                                subject_name=w.consumer_group.name, until=now + dt.timedelta(hours=1))  # fmt: skip
    return w


def client_for(request, actor: str) -> APIClient:
    client = APIClient()
    if actor != "anonymous":
        client.force_login(request.getfixturevalue(actor))
    return client


@pytest.mark.parametrize("actor_index", range(len(ACTORS)), ids=ACTORS)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_endpoint_answers_each_actor_as_the_matrix_says(request, world, case, actor_index):
    client = client_for(request, ACTORS[actor_index])
    url = reverse(case.url_name, kwargs=case.kwargs(world))
    data = case.data(world)
    response = getattr(client, case.method.lower())(url, data, format="json")
    expected = case.expect[actor_index]
    assert response.status_code == expected, (response.status_code, getattr(response, "data", response.content))
    if expected == 401:
        assert response["WWW-Authenticate"] == case.challenge


def api_endpoints() -> set[tuple[str, str]]:
    """Every (url name, HTTP method) the API serves, from the URL resolver; OPTIONS and HEAD come with every view."""
    api = next(p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and p.namespace == "api")
    found = set()

    def walk(resolver: URLResolver) -> None:
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern)
                continue
            assert isinstance(pattern, URLPattern)
            callback = pattern.callback
            if hasattr(callback, "actions"):
                methods = callback.actions
            else:
                methods = [m for m in callback.cls.http_method_names if hasattr(callback.cls, m)]
            found.update((f"api:{pattern.name}", m.upper()) for m in methods if m not in ("options", "head"))

    walk(api)
    return found


def test_every_api_endpoint_and_method_has_a_matrix_row():
    endpoints = api_endpoints()
    covered = {(case.url_name, case.method) for case in CASES}
    assert endpoints - covered == set(), "endpoints without a row in the authorization matrix"
    assert covered - endpoints == set(), "matrix rows for endpoints that do not exist"

"""The warnings API: the warnings a user may see with the list's filters (per user told, topic, group, cluster,
type, state), one warning with its events and deliveries, acknowledging, and each user's own channels,
subscriptions and mutes. Who gets which status is the authorization matrix's (test_authz_api.py); here is what the
answers hold."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import (
    Channel,
    ChannelKind,
    Cluster,
    ConsumerGroup,
    Mute,
    Topic,
    Warning,
    WarningKind,
    WarningSubscription,
)
from portal.models.warnings import SubjectType
from portal.services.warnings import channels, subscriptions
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from tests.portal.warning_servers import LOCAL_RECEIVERS, WebhookServer

LAG = WarningKind.CONSUMER_LAG
DROP = WarningKind.TRAFFIC_DROP
BROKER_DOWN = WarningKind.BROKER_DOWN


def minutes_ago(minutes: int) -> dt.datetime:
    return timezone.now() - dt.timedelta(minutes=minutes)


@pytest.fixture
def prod(db):
    return Cluster.objects.create(name="prod")


@pytest.fixture
def billing(prod, team):
    return ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS", queue_nums=4)


def see(cluster, *conditions, at, evaluated=None):
    evaluation = Evaluation()
    for kind in evaluated or {condition.kind for condition in conditions}:
        evaluation.add(kind, [condition for condition in conditions if condition.kind == kind])
    return reconcile(cluster, evaluation, at)


def lagging() -> Condition:
    return Condition(LAG, SubjectType.CONSUMER_GROUP, "GID_BILLING", "GID_BILLING is 52,000 messages behind")


@pytest.fixture
def warnings(prod, billing, orders):
    """A lag warning of the team's group (resolved), the team's topic dropping and a broker down (both open)."""
    see(prod, lagging(), at=minutes_ago(90))
    see(prod, at=minutes_ago(60), evaluated={LAG})
    see(prod, Condition(DROP, SubjectType.TOPIC, "ORDERS", "ORDERS dropped"), at=minutes_ago(30))
    see(prod, Condition(BROKER_DOWN, SubjectType.BROKER, "broker-a", "broker-a is down"), at=minutes_ago(20))
    return {warning.kind: warning for warning in Warning.objects.all()}


def api(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def kinds(response) -> list[str]:
    assert response.status_code == 200, response.data
    return [row["kind"] for row in response.data["results"]]


def test_the_list_holds_what_the_user_may_see_open_first(warnings, member, outsider):
    assert kinds(api(member).get(reverse("api:warning-list"))) == [BROKER_DOWN, DROP, LAG]
    assert kinds(api(outsider).get(reverse("api:warning-list"))) == [BROKER_DOWN]


def test_the_list_filters_per_topic_group_cluster_type_state_and_user_told(
    warnings, prod, billing, orders, member, team_admin
):
    subscriptions.subscribe(team_admin, LAG, [])
    for event in warnings[LAG].events.all():
        deliver(event)
    client = api(member)
    url = reverse("api:warning-list")

    assert kinds(client.get(url, {"topic": orders.pk})) == [DROP]
    assert kinds(client.get(url, {"consumer_group": billing.pk})) == [LAG]
    assert kinds(client.get(url, {"cluster": prod.pk, "state": "open"})) == [BROKER_DOWN, DROP]
    assert kinds(client.get(url, {"kind": LAG})) == [LAG]
    assert kinds(client.get(url, {"notified": member.username})) == [LAG]
    assert kinds(client.get(url, {"mine": "true"})) == [DROP, LAG]
    assert kinds(client.get(url, {"ordering": "opened_at"})) == [LAG, DROP, BROKER_DOWN]
    assert client.get(url, {"state": "sleeping"}).status_code == 400


def test_who_was_told_may_be_looked_up_for_oneself_and_by_portal_admins_for_anyone(
    warnings, member, team_admin, portal_admin
):
    for event in warnings[LAG].events.all():
        deliver(event)
    url = reverse("api:warning-list")

    refused = api(team_admin).get(url, {"notified": member.username})
    assert refused.status_code == 400
    assert refused.json() == {"notified": ["You may look up only the warnings you were told of."]}
    assert kinds(api(portal_admin).get(url, {"notified": member.username})) == [LAG]
    assert kinds(api(portal_admin).get(url, {"notified": portal_admin.username})) == []
    assert api(portal_admin).get(url, {"notified": "nobody"}).status_code == 400


def test_a_warning_holds_its_events_and_the_users_own_deliveries(warnings, member, team_admin, portal_admin):
    for event in warnings[LAG].events.all():
        deliver(event)
    url = reverse("api:warning-detail", args=[warnings[LAG].pk])

    body = api(member).get(url).data

    assert [event["transition"] for event in body["events"]] == ["resolved", "fired"]
    assert {(row["user"], row["status"], row["channel_kind"]) for row in body["deliveries"]} == {
        ("mia", "sent", "in_app")
    } and len(body["deliveries"]) == 2  # told when it fired and when it ended
    everyone = api(portal_admin).get(url).data["deliveries"]
    assert {row["user"] for row in everyone} == {"mia", "tom"}


def test_acknowledging_an_open_warning_once(warnings, member, team_admin):
    url = reverse("api:warning-acknowledge", args=[warnings[DROP].pk])

    first = api(member).post(url)
    again = api(team_admin).post(url)

    assert first.status_code == 200 and first.data["acknowledged_by"] == "mia"
    assert again.status_code == 409
    assert api(member).post(reverse("api:warning-acknowledge", args=[warnings[LAG].pk])).status_code == 409
    assert api(member).post(reverse("api:warning-acknowledge", args=[warnings[BROKER_DOWN].pk])).status_code == 403


def test_channels_are_added_shown_without_secrets_tested_switched_and_deleted(member, settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    client = api(member)
    with WebhookServer() as hooks:
        bad = client.post(
            reverse("api:warning-channel-list"),
            {"kind": "dingtalk", "name": "robot", "config": {"url": "ftp://example.com/x"}},
            format="json",
        )
        assert bad.status_code == 400 and bad.data == {"config": {"url": ["Only http and https URLs are allowed."]}}

        created = client.post(
            reverse("api:warning-channel-list"),
            {"kind": "webhook", "name": "ops", "config": {"url": hooks.url("/hook/TOKEN"), "secret": "s3cret"}},
            format="json",
        )
        assert created.status_code == 201, created.data
        assert created.data["sends_to"] == hooks.url("") and "config" not in created.data
        pk = created.data["id"]

        tested = client.post(reverse("api:warning-channel-test", args=[pk]))
        assert tested.data == {"sent": True, "error": ""}
        assert len(hooks.on("/hook/TOKEN")) == 1

    listed = client.get(reverse("api:warning-channel-list")).data["results"]
    assert {row["kind"] for row in listed} == {"in_app", "webhook"}  # the built-in in-app one too
    switched = client.patch(reverse("api:warning-channel-detail", args=[pk]), {"enabled": False}, format="json")
    assert switched.data["enabled"] is False
    renamed = client.patch(reverse("api:warning-channel-detail", args=[pk]), {"name": "ops-2"}, format="json")
    assert renamed.data["name"] == "ops-2"
    assert client.delete(reverse("api:warning-channel-detail", args=[pk])).status_code == 204
    in_app = Channel.objects.get(owner=member, kind=ChannelKind.IN_APP)
    assert client.delete(reverse("api:warning-channel-detail", args=[in_app.pk])).status_code == 400


def test_subscriptions_show_the_defaults_and_take_ones_own_channels(member, outsider, portal_admin):
    client = api(member)
    rows = {row["kind"]: row for row in client.get(reverse("api:warning-subscription-list")).data}
    in_app = Channel.objects.get(owner=member, kind=ChannelKind.IN_APP)
    assert rows[LAG] == {"kind": LAG, "channels": [in_app.pk], "default": True}
    assert BROKER_DOWN not in rows
    assert client.get(reverse("api:warning-subscription-detail", args=[BROKER_DOWN])).status_code == 404

    url = reverse("api:warning-subscription-detail", args=[LAG])
    assert client.put(url, {"channels": []}, format="json").data == {"kind": LAG, "channels": [], "default": False}
    assert not WarningSubscription.objects.get(user=member, kind=LAG).channels.exists()
    foreign = channels.default_channels(outsider)[0]
    assert client.put(url, {"channels": [foreign.pk]}, format="json").status_code == 400

    assert client.delete(url).status_code == 204
    assert not WarningSubscription.objects.filter(user=member).exists()
    admin_rows = api(portal_admin).get(reverse("api:warning-subscription-list")).data
    assert BROKER_DOWN in {row["kind"] for row in admin_rows}


def test_mutes_are_ones_own_and_end_in_the_future(prod, member, outsider):
    client = api(member)
    until = timezone.now() + dt.timedelta(hours=2)
    body = {"cluster": prod.pk, "subject_type": "consumer_group", "subject_name": "GID_BILLING", "until": until}

    created = client.post(reverse("api:warning-mute-list"), body, format="json")

    assert created.status_code == 201, created.data
    assert created.data["kind"] == ""
    past = client.post(reverse("api:warning-mute-list"), {**body, "until": timezone.now()}, format="json")
    assert past.status_code == 400 and "until" in past.data
    assert [row["subject_name"] for row in client.get(reverse("api:warning-mute-list")).data["results"]] == [
        "GID_BILLING"
    ]
    mute = reverse("api:warning-mute-detail", args=[created.data["id"]])
    assert api(outsider).delete(mute).status_code == 404
    assert client.delete(mute).status_code == 204
    assert not Mute.objects.exists()

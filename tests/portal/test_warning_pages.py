"""The warning pages as the server renders them: the list (what each user may see, open first, filters), a warning
with its events and deliveries, acknowledging, the warnings listed and shaded on the topic, group, broker and server
pages, the thresholds forms (the owning team's overrides, the admins' defaults), subscriptions and mutes, and the
channels page against a real HTTP endpoint on 127.0.0.1. Who may open which page is the authorization matrix's
business (test_authz_pages.py); the charts as a browser draws them are test_browser_warnings.py's.

Warnings are made as the product makes them: conditions reconciled by ``portal.services.warnings.lifecycle`` and
delivered by ``portal.services.warnings.delivery``, at moments just before the test's "now"."""

import datetime as dt
import json
import zoneinfo

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import (
    Broker,
    Channel,
    ChannelKind,
    Cluster,
    ConsumerGroup,
    Mute,
    Notification,
    Subscription,
    Topic,
    UserProfile,
    Warning,
    WarningKind,
    WarningSubscription,
)
from portal.models.warnings import SubjectType
from portal.services.warnings import channels, subscriptions
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.services.warnings.thresholds import thresholds_for
from portal.web.monitoring import WARNING_COLOR
from tests.portal.warning_servers import LOCAL_RECEIVERS, WebhookServer

LAG = WarningKind.CONSUMER_LAG
DROP = WarningKind.TRAFFIC_DROP
BROKER_DOWN = WarningKind.BROKER_DOWN
CPU = WarningKind.SERVER_CPU
LAG_SUMMARY = "GID_BILLING is 52,000 messages (14 min) behind on ORDERS; 3 of 4 queues stalled"


def minutes_ago(minutes: int) -> dt.datetime:
    return timezone.now() - dt.timedelta(minutes=minutes)


@pytest.fixture
def prod(db):
    """A registered cluster with a master and its slave on 10.0.0.5 (no live cluster: pages read stored rows)."""
    cluster = Cluster.objects.create(name="prod")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER")  # fmt: skip
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=1,
                          address="10.0.0.5:10921", role="SLAVE")  # fmt: skip
    return cluster


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS", queue_nums=4)


@pytest.fixture
def billing(prod, team, orders):
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=orders)
    return group


@pytest.fixture
def parcels(prod, other_team):
    """The outsider's team's topic."""
    return Topic.objects.create(cluster=prod, team=other_team, name="PARCELS", queue_nums=4)


def lagging(group="GID_BILLING") -> Condition:
    return Condition(LAG, SubjectType.CONSUMER_GROUP, group, LAG_SUMMARY, {"topic": "ORDERS", "behind": 52_000})


def dropping(topic: str) -> Condition:
    return Condition(DROP, SubjectType.TOPIC, topic, f"{topic} dropped to 3 messages a minute (baseline 400)")


def broker_down() -> Condition:
    return Condition(BROKER_DOWN, SubjectType.BROKER, "broker-a", "broker-a has not answered for 4 minutes")


def cpu_busy() -> Condition:
    return Condition(CPU, SubjectType.SERVER, "10.0.0.5", "10.0.0.5 is 97% busy (threshold 90%)")


def see(cluster, *conditions, at: dt.datetime, evaluated=None):
    """One evaluation of ``cluster`` at ``at``: these conditions hold, every kind named was evaluated."""
    evaluation = Evaluation()
    for kind in evaluated or {condition.kind for condition in conditions}:
        evaluation.add(kind, [condition for condition in conditions if condition.kind == kind])
    return reconcile(cluster, evaluation, at)


def warning_of(kind) -> Warning:
    return Warning.objects.get(kind=kind)


@pytest.fixture
def signed_in(client, member):
    client.force_login(member)
    return client


def listed(response) -> list[tuple[str, str]]:
    return [(warning.kind, warning.subject_name) for warning in response.context["page"].object_list]


def chart_specs(response) -> list[dict]:
    return [json.loads(chart.spec) for chart in response.context["charts"]]


def shaded(spec: dict) -> list[str]:
    """The reasons of the warning periods shaded on one chart: each shape in the warnings' colour has a hover
    marker named by its reason."""
    shapes = [shape for shape in spec["layout"].get("shapes", []) if shape["fillcolor"] == WARNING_COLOR]
    reasons = [trace["name"] for trace in spec["data"] if trace.get("hoverinfo") == "text"]
    return reasons[-len(shapes) :] if shapes else []


# --- the list ---------------------------------------------------------------------------------------------------


def test_the_list_shows_each_user_the_warnings_they_may_see_open_first(
    client, prod, billing, parcels, member, outsider, portal_admin
):
    see(prod, dropping("PARCELS"), at=minutes_ago(50))
    see(prod, at=minutes_ago(40), evaluated={DROP})  # PARCELS recovered
    see(prod, lagging(), at=minutes_ago(30))
    see(prod, broker_down(), at=minutes_ago(20))

    client.force_login(member)
    assert listed(client.get(reverse("warning-list"))) == [(BROKER_DOWN, "broker-a"), (LAG, "GID_BILLING")]
    client.force_login(outsider)
    assert listed(client.get(reverse("warning-list"))) == [(BROKER_DOWN, "broker-a"), (DROP, "PARCELS")]
    client.force_login(portal_admin)
    assert listed(client.get(reverse("warning-list"))) == [
        (BROKER_DOWN, "broker-a"),
        (LAG, "GID_BILLING"),
        (DROP, "PARCELS"),
    ]


def test_the_list_filters_per_group_cluster_state_mine_and_who_was_told(
    client, prod, billing, member, team_admin, portal_admin
):
    see(prod, lagging(), broker_down(), at=minutes_ago(30))
    UserProfile.objects.create(user=team_admin)
    subscriptions.subscribe(team_admin, LAG, [])  # the team admin hears nothing of lag
    deliver(warning_of(LAG).events.get())
    other = Cluster.objects.create(name="staging")
    client.force_login(member)

    assert listed(client.get(reverse("warning-list"), {"consumer_group": billing.pk})) == [(LAG, "GID_BILLING")]
    assert listed(client.get(reverse("warning-list"), {"mine": "on"})) == [(LAG, "GID_BILLING")]
    assert listed(client.get(reverse("warning-list"), {"subject_type": "broker"})) == [(BROKER_DOWN, "broker-a")]
    assert listed(client.get(reverse("warning-list"), {"cluster": other.pk})) == []
    assert listed(client.get(reverse("warning-list"), {"state": "resolved"})) == []
    assert listed(client.get(reverse("warning-list"), {"notified": member.username})) == [(LAG, "GID_BILLING")]
    someone_else = client.get(reverse("warning-list"), {"notified": team_admin.username})
    assert len(listed(someone_else)) == 2  # the filter is not applied, and the page says why
    assert "Told not applied: You may look up only the warnings you were told of." in someone_else.content.decode()
    client.force_login(portal_admin)
    assert listed(client.get(reverse("warning-list"), {"mine": "on"})) == [(BROKER_DOWN, "broker-a")]
    assert listed(client.get(reverse("warning-list"), {"notified": member.username})) == [(LAG, "GID_BILLING")]
    assert listed(client.get(reverse("warning-list"), {"notified": team_admin.username})) == []


# --- one warning --------------------------------------------------------------------------------------------------


def test_a_warning_page_shows_its_events_and_the_deliveries_with_their_errors(
    client, prod, billing, member, team_admin, portal_admin, settings
):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    with WebhookServer() as hooks:
        hooks.answer("/broken", 500, b"upstream exploded")
        webhook = channels.create_channel(member, kind=ChannelKind.WEBHOOK, name="ops hook",
                                          config={"url": hooks.url("/broken")})  # fmt: skip
        subscriptions.subscribe(member, LAG, [*channels.default_channels(member), webhook])
        see(prod, lagging(), at=minutes_ago(130))
        see(prod, lagging(), at=minutes_ago(60))  # more than the hour between repeats
        see(prod, at=minutes_ago(5), evaluated={LAG})
        warning = warning_of(LAG)
        for event in warning.events.all():
            deliver(event)

    client.force_login(member)
    page = client.get(reverse("warning-detail", args=[warning.pk]))
    html = page.content.decode()
    assert [event.transition for event in page.context["events"]] == ["resolved", "repeated", "fired"]
    assert LAG_SUMMARY in html
    mine = page.context["deliveries"]
    assert {(d.channel_kind, d.status) for d in mine} == {("in_app", "sent"), ("webhook", "failed")}
    assert {d.user for d in mine} == {member}
    assert "HTTP 500 Internal Server Error" in html and "upstream exploded" not in html  # never the answer itself
    client.force_login(portal_admin)
    everyone = client.get(reverse("warning-detail", args=[warning.pk])).context["deliveries"]
    assert {d.user for d in everyone} == {member, team_admin}


def test_the_owning_team_acknowledges_an_open_warning_once(client, prod, billing, member, team_admin, outsider):
    see(prod, lagging(), broker_down(), at=minutes_ago(30))
    lag = warning_of(LAG)

    client.force_login(outsider)
    assert client.post(reverse("warning-acknowledge", args=[lag.pk])).status_code == 404
    client.force_login(member)
    assert client.post(reverse("warning-acknowledge", args=[warning_of(BROKER_DOWN).pk])).status_code == 403
    response = client.post(reverse("warning-acknowledge", args=[lag.pk]), follow=True)
    assert "no longer repeated" in response.content.decode()
    lag.refresh_from_db()
    assert lag.acknowledged_by == member
    client.force_login(team_admin)
    again = client.post(reverse("warning-acknowledge", args=[lag.pk]), follow=True)
    assert "already acknowledged" in again.content.decode()
    lag.refresh_from_db()
    assert lag.acknowledged_by == member
    assert "Acknowledge</button>" not in client.get(reverse("warning-detail", args=[lag.pk])).content.decode()


# --- on the subjects' pages ---------------------------------------------------------------------------------------


def test_a_groups_page_lists_its_warnings_and_shades_their_periods_on_its_charts(
    signed_in, prod, billing, team, member
):
    other = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_OTHER")
    see(prod, lagging(), lagging("GID_OTHER"), at=minutes_ago(30))

    response = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]))

    assert [warning.subject_name for warning in response.context["subject_warnings"]] == ["GID_BILLING"]
    reason = f"consumer lag: {LAG_SUMMARY}"
    assert [shaded(spec) for spec in chart_specs(response)] == [[reason], [reason], [reason]]
    html = response.content.decode()
    assert reverse("entry-thresholds", args=["consumer-group", billing.pk]) in html
    assert reverse("mute-create", args=["consumer-group", billing.pk]) in html
    assert other.name not in html


def test_a_topics_page_shades_the_topics_own_warnings_not_its_consumers(signed_in, prod, billing, orders):
    see(prod, dropping("ORDERS"), lagging(), at=minutes_ago(20))

    response = signed_in.get(reverse("topic-detail", args=[orders.pk]))

    assert [warning.kind for warning in response.context["subject_warnings"]] == [DROP]
    messages_chart = chart_specs(response)[0]
    assert shaded(messages_chart) == ["topic traffic drop: ORDERS dropped to 3 messages a minute (baseline 400)"]


def test_a_warning_ended_before_the_charted_range_is_listed_but_not_shaded(signed_in, prod, billing):
    see(prod, lagging(), at=minutes_ago(300))
    see(prod, at=minutes_ago(200), evaluated={LAG})

    response = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]))

    assert [warning.state for warning in response.context["subject_warnings"]] == ["resolved"]
    assert all(shaded(spec) == [] for spec in chart_specs(response))
    wide = signed_in.get(reverse("consumer-group-detail", args=[billing.pk]), {"range": "6h"})
    assert all(len(shaded(spec)) == 1 for spec in chart_specs(wide))


def test_the_broker_and_server_pages_list_and_shade_their_warnings(signed_in, prod):
    see(prod, broker_down(), cpu_busy(), at=minutes_ago(15))
    master = Broker.objects.get(broker_name="broker-a", broker_id=0)

    broker_page = signed_in.get(reverse("broker-detail", args=[master.pk]))
    assert [warning.kind for warning in broker_page.context["subject_warnings"]] == [BROKER_DOWN]
    assert all(len(shaded(spec)) == 1 for spec in chart_specs(broker_page))

    server_page = signed_in.get(reverse("server-detail", args=["10.0.0.5"]))
    assert [warning.kind for warning in server_page.context["subject_warnings"]] == [CPU]
    by_title = {chart.title: json.loads(chart.spec) for chart in server_page.context["charts"]}
    assert shaded(by_title["CPU"]) == ["server CPU usage: 10.0.0.5 is 97% busy (threshold 90%)"]
    assert shaded(by_title["Load"]) == []


# --- thresholds ---------------------------------------------------------------------------------------------------


def test_the_owning_team_overrides_a_groups_thresholds_and_blank_fields_inherit(signed_in, prod, billing):
    url = reverse("entry-thresholds", args=["consumer-group", billing.pk])
    form = signed_in.get(url).content.decode()
    assert 'name="consumer_lag-messages"' in form and 'placeholder="10000"' in form

    saved = signed_in.post(url, {"kind": LAG, "consumer_lag-messages": "50000", "consumer_lag-seconds": ""})

    assert saved.status_code == 302 and saved.url == reverse("consumer-group-detail", args=[billing.pk])
    params = thresholds_for(prod).get(LAG, SubjectType.CONSUMER_GROUP, billing.name)
    assert (params["messages"], params["seconds"]) == (50_000, 300)

    refused = signed_in.post(url, {"kind": LAG, "consumer_lag-messages": "0"})
    assert refused.status_code == 200 and "Must be at least 1." in refused.content.decode()
    assert thresholds_for(prod).get(LAG, SubjectType.CONSUMER_GROUP, billing.name)["messages"] == 50_000

    signed_in.post(url, {"kind": LAG, "consumer_lag-messages": ""})
    assert thresholds_for(prod).get(LAG, SubjectType.CONSUMER_GROUP, billing.name)["messages"] == 10_000


def test_a_huge_number_is_refused_on_its_field_with_the_range_and_nothing_is_saved(signed_in, prod, billing):
    url = reverse("entry-thresholds", args=["consumer-group", billing.pk])
    assert "From 1 to 604,800." in signed_in.get(url).content.decode()

    refused = signed_in.post(url, {"kind": LAG, "consumer_lag-seconds": str(10**30)})

    assert refused.status_code == 200
    form = next(form for form in refused.context["forms"] if form.kind == LAG)
    assert form.errors == {"seconds": ["Must be at most 604,800."]}
    assert thresholds_for(prod).get(LAG, SubjectType.CONSUMER_GROUP, billing.name)["seconds"] == 300
    assert not billing.warning_thresholds.exists()


def test_an_override_can_switch_a_warning_type_off_for_one_topic(signed_in, prod, orders):
    url = reverse("entry-thresholds", args=["topic", orders.pk])
    signed_in.post(url, {"kind": DROP, "traffic_drop-enabled": "false"})

    assert thresholds_for(prod).get(DROP, SubjectType.TOPIC, "ORDERS")["enabled"] is False
    assert thresholds_for(prod).get(DROP, SubjectType.TOPIC, "OTHER")["enabled"] is True


def test_portal_admins_set_the_defaults_and_an_override_still_wins(client, prod, billing, member, portal_admin):
    client.force_login(member)
    client.post(reverse("entry-thresholds", args=["consumer-group", billing.pk]),
                {"kind": LAG, "consumer_lag-messages": "50000"})  # fmt: skip
    client.force_login(portal_admin)

    response = client.post(reverse("warning-defaults"), {"kind": LAG, "consumer_lag-seconds": "600"})

    assert response.status_code == 302
    assert thresholds_for(prod).get(LAG)["seconds"] == 600
    group = thresholds_for(prod).get(LAG, SubjectType.CONSUMER_GROUP, billing.name)
    assert (group["messages"], group["seconds"]) == (50_000, 600)
    page = client.get(reverse("entry-thresholds", args=["consumer-group", billing.pk])).content.decode()
    assert 'placeholder="600"' in page


def test_only_the_owning_team_is_offered_the_thresholds(client, prod, billing, outsider):
    client.force_login(outsider)
    html = client.get(reverse("consumer-group-detail", args=[billing.pk])).content.decode()
    assert reverse("entry-thresholds", args=["consumer-group", billing.pk]) not in html


# --- subscriptions and mutes --------------------------------------------------------------------------------------


def test_subscriptions_start_from_the_defaults_and_keep_what_the_user_chooses(client, member, portal_admin):
    client.force_login(member)
    page = client.get(reverse("warning-preferences"))
    in_app = Channel.objects.get(owner=member, kind=ChannelKind.IN_APP)
    rows = {kind: cells for kind, _label, cells in page.context["form"].rows()}
    assert rows[LAG] == [(in_app, True)]
    assert BROKER_DOWN not in rows  # the cluster machinery's warnings are portal admins'

    every_other_kind = {kind: str(in_app.pk) for kind in rows if kind != LAG}
    assert client.post(reverse("warning-preferences"), every_other_kind).status_code == 302

    assert list(WarningSubscription.objects.filter(user=member).values_list("kind", flat=True)) == [LAG]
    assert not WarningSubscription.objects.get(user=member, kind=LAG).channels.exists()
    rows = {kind: cells for kind, _label, cells in client.get(reverse("warning-preferences")).context["form"].rows()}
    assert rows[LAG] == [(in_app, False)]

    client.post(reverse("warning-preferences"), {"reset": LAG})
    assert not WarningSubscription.objects.filter(user=member).exists()
    client.force_login(portal_admin)
    assert BROKER_DOWN in client.get(reverse("warning-preferences")).context["form"].fields


def test_muting_a_group_from_its_page_until_a_time_in_ones_own_zone(client, prod, billing, member):
    UserProfile.objects.create(user=member, time_zone="Asia/Shanghai")
    client.force_login(member)
    url = reverse("mute-create", args=["consumer-group", billing.pk])
    assert client.get(url).status_code == 200
    until = (timezone.now() + dt.timedelta(hours=3)).astimezone(zoneinfo.ZoneInfo("Asia/Shanghai"))

    response = client.post(url, {"kind": LAG, "until": until.strftime("%Y-%m-%dT%H:%M")})

    assert response.status_code == 302
    mute = Mute.objects.get(user=member)
    assert (mute.cluster, mute.subject_type, mute.subject_name) == (prod, "consumer_group", billing.name)
    assert mute.kind == LAG
    assert mute.until == until.replace(second=0, microsecond=0)
    assert "GID_BILLING" in client.get(reverse("warning-preferences")).content.decode()
    client.post(reverse("mute-delete", args=[mute.pk]))
    assert not Mute.objects.exists()


def test_a_mute_must_end_in_the_future(signed_in, billing):
    past = timezone.localtime() - dt.timedelta(hours=1)
    response = signed_in.post(
        reverse("mute-create", args=["consumer-group", billing.pk]), {"until": past.strftime("%Y-%m-%dT%H:%M")}
    )
    assert response.status_code == 200 and "Choose a time in the future." in response.content.decode()
    assert not Mute.objects.exists()


def test_a_warning_page_mutes_its_subject_for_its_type(signed_in, prod, member):
    see(prod, broker_down(), at=minutes_ago(5))
    url = reverse("mute-create", args=["warning", warning_of(BROKER_DOWN).pk])
    assert signed_in.get(url).context["form"].initial["kind"] == BROKER_DOWN
    until = (timezone.localtime() + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")

    signed_in.post(url, {"kind": BROKER_DOWN, "until": until})

    assert Mute.objects.get(user=member).subject_name == "broker-a"


# --- channels -----------------------------------------------------------------------------------------------------


def test_a_user_adds_a_webhook_tests_it_and_sees_its_last_error(signed_in, member, settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    with WebhookServer() as hooks:
        hooks.answer("/gone", 404, b"no such hook")
        created = signed_in.post(
            reverse("channel-create"),
            {"kind": ChannelKind.WEBHOOK, "name": "ops", "url": hooks.url("/ok/TOKEN123"), "secret": "s3cret"},
        )
        assert created.status_code == 302
        channel = Channel.objects.get(owner=member, name="ops")
        listing = signed_in.get(reverse("channel-list")).content.decode()
        assert hooks.url("") in listing and "TOKEN123" not in listing and "s3cret" not in listing

        tested = signed_in.post(reverse("channel-test", args=[channel.pk]), follow=True)
        assert "Test sent through ops." in tested.content.decode()
        assert len(hooks.on("/ok/TOKEN123")) == 1

        signed_in.post(reverse("channel-edit", args=[channel.pk]), {"name": "ops", "url": hooks.url("/gone")})
        failed = signed_in.post(reverse("channel-test", args=[channel.pk]), follow=True).content.decode()
        assert "The test failed: HTTP 404" in failed

    channel.refresh_from_db()
    assert channel.last_error == "HTTP 404 Not Found" and channel.last_success_at is not None
    listing = signed_in.get(reverse("channel-list")).content.decode()
    assert "HTTP 404 Not Found" in listing and "no such hook" not in listing  # what the endpoint said stays there


def test_a_channel_is_disabled_enabled_and_deleted_by_its_owner(signed_in, member):
    channel = channels.create_channel(member, kind=ChannelKind.SLACK, name="slack",
                                      config={"url": "https://hooks.slack.com/services/T/B/X"})  # fmt: skip

    signed_in.post(reverse("channel-enable", args=[channel.pk]), {"enabled": "false"})
    channel.refresh_from_db()
    assert not channel.enabled and channel.disabled_at is not None
    signed_in.post(reverse("channel-enable", args=[channel.pk]), {"enabled": "true"})
    channel.refresh_from_db()
    assert channel.enabled

    signed_in.post(reverse("channel-delete", args=[channel.pk]))
    assert not Channel.objects.filter(pk=channel.pk).exists()


def test_a_bad_webhook_url_is_refused_on_its_field(signed_in, member):
    response = signed_in.post(
        reverse("channel-create"), {"kind": ChannelKind.DINGTALK, "name": "robot", "url": "ftp://example.com/robot"}
    )
    assert response.status_code == 200
    assert response.context["form"].errors == {"url": ["Only http and https URLs are allowed."]}
    assert not Channel.objects.filter(name="robot").exists()


# --- the header ---------------------------------------------------------------------------------------------------


def test_the_header_counts_the_unread_in_app_warnings_and_they_link_to_the_warning(signed_in, prod, billing, member):
    see(prod, lagging(), at=minutes_ago(5))
    lag = warning_of(LAG)
    deliver(lag.events.get())

    html = signed_in.get(reverse("dashboard")).content.decode()

    unread = '<span class="count hot">1</span>'
    assert f'<a href="{reverse("notification-list")}" title="Notifications">Notifications {unread}</a>' in html
    notification = Notification.objects.get(user=member)
    assert notification.link == reverse("warning-detail", args=[lag.pk])
    assert reverse("warning-list") in html

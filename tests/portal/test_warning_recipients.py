"""Who hears about a warning and through which channels: owners and associated users of topics and groups, portal
admins for the cluster machinery; each user's subscription per kind; mutes of one subject until a time; and nobody
outside."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from portal import access
from portal.models import AssociationRole, Cluster, ConsumerGroup, Membership, TeamRole, Topic, TopicAssociation
from portal.models.warnings import ChannelKind, SubjectType, Warning, WarningKind
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import create_channel, default_channels, set_enabled
from portal.services.warnings.recipients import recipients
from tests.support.factories import make_user

NOW = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)


@pytest.fixture
def own_cluster(db):
    return Cluster.objects.create(name="recipients")


@pytest.fixture
def group(own_cluster, team):
    return ConsumerGroup.objects.create(cluster=own_cluster, team=team, name="order-consumer")


@pytest.fixture
def orders(own_cluster, team):
    return Topic.objects.create(cluster=own_cluster, team=team, name="orders")


def open_warning(cluster, kind, subject_type, subject_name, **links) -> Warning:
    return Warning.objects.create(
        kind=kind,
        cluster=cluster,
        subject_type=subject_type,
        subject_name=subject_name,
        opened_at=NOW,
        last_seen_at=NOW,
        last_notified_at=NOW,
        summary="something is wrong",
        **links,
    )


def lag_warning(cluster, group) -> Warning:
    return open_warning(cluster, WarningKind.CONSUMER_LAG, SubjectType.CONSUMER_GROUP, group.name, consumer_group=group)


def heard(warning) -> dict[str, list[str]]:
    return {r.user.username: sorted(c.kind for c in r.channels) for r in recipients(warning, NOW)}


def with_email(user, address=None):
    user.email = address or f"{user.username}@example.com"
    user.save()
    return user


def test_a_groups_owners_hear_in_app_and_by_e_mail_by_default_and_nobody_else_does(
    own_cluster, group, member, team_admin, outsider, portal_admin
):
    with_email(member)
    with_email(outsider)
    with_email(portal_admin)

    assert heard(lag_warning(own_cluster, group)) == {"mia": ["email", "in_app"], "tom": ["in_app"]}


def test_the_default_e_mail_channel_goes_to_the_account_address_and_is_created_once(member):
    with_email(member)

    first = default_channels(member)
    again = default_channels(member)

    assert [c.kind for c in first] == [ChannelKind.IN_APP, ChannelKind.EMAIL] and first == again


def test_a_topics_warnings_reach_its_owners_and_its_associated_users(own_cluster, orders, member, outsider):
    TopicAssociation.objects.create(topic=orders, user=outsider, role=AssociationRole.CONSUMER)
    stranger = make_user("stan")

    warning = open_warning(own_cluster, WarningKind.TRAFFIC_DROP, SubjectType.TOPIC, "orders", topic=orders)

    assert set(heard(warning)) == {"mia", "olga"}
    assert "stan" not in heard(warning) and stranger.is_active


def test_cluster_machinery_warnings_reach_portal_admins_only(own_cluster, member, portal_admin):
    warning = open_warning(own_cluster, WarningKind.BROKER_DOWN, SubjectType.BROKER, "broker-a")

    assert heard(warning) == {"ada": ["in_app"]}


def test_admins_hear_other_kinds_only_when_they_subscribed_to_them(own_cluster, group, member, portal_admin):
    warning = lag_warning(own_cluster, group)
    assert "ada" not in heard(warning)

    in_app = default_channels(portal_admin)[0]
    subscriptions.subscribe(portal_admin, WarningKind.CONSUMER_LAG, [in_app])

    assert heard(warning)["ada"] == ["in_app"]


def test_a_subscription_chooses_the_channels_and_an_empty_one_silences_the_kind(own_cluster, group, member, team_admin):
    hook = create_channel(member, kind=ChannelKind.WEBHOOK, name="ops hook", config={"url": "https://hooks.test/x"})
    subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [hook])
    subscriptions.subscribe(team_admin, WarningKind.CONSUMER_LAG, [])

    assert heard(lag_warning(own_cluster, group)) == {"mia": ["webhook"]}


def test_a_subscription_for_one_kind_leaves_the_others_at_their_defaults(own_cluster, group, member):
    subscriptions.subscribe(member, WarningKind.CLIENT_BLOCKED, [])

    assert heard(lag_warning(own_cluster, group))["mia"] == ["in_app"]


def test_a_disabled_subscribed_channel_is_still_listed_so_the_skip_is_recorded(own_cluster, group, member):
    hook = create_channel(member, kind=ChannelKind.SLACK, name="slack", config={"url": "https://hooks.test/s"})
    subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [hook])
    set_enabled(hook, False, by=member)

    [recipient] = [r for r in recipients(lag_warning(own_cluster, group), NOW) if r.user == member]
    assert [c.enabled for c in recipient.channels] == [False]


def test_a_mute_of_the_subject_silences_the_user_until_it_ends(own_cluster, group, member, team_admin):
    until = timezone.now() + dt.timedelta(hours=2)
    subscriptions.mute(
        member, cluster=own_cluster, subject_type=SubjectType.CONSUMER_GROUP, subject_name=group.name, until=until
    )
    warning = lag_warning(own_cluster, group)

    assert set(heard(warning)) == {"tom"}
    assert {r.user.username for r in recipients(warning, until + dt.timedelta(seconds=1))} == {"mia", "tom"}


def test_a_mute_of_one_kind_or_another_subject_does_not_silence_this_warning(own_cluster, group, member):
    until = timezone.now() + dt.timedelta(hours=2)
    subscriptions.mute(
        member,
        cluster=own_cluster,
        subject_type=SubjectType.CONSUMER_GROUP,
        subject_name=group.name,
        until=until,
        kind=WarningKind.CLIENT_BLOCKED,
    )
    subscriptions.mute(
        member, cluster=own_cluster, subject_type=SubjectType.CONSUMER_GROUP, subject_name="other", until=until
    )

    assert "mia" in heard(lag_warning(own_cluster, group))


def test_a_mute_must_end_in_the_future_and_within_ninety_days(own_cluster, member):
    for until in (timezone.now() - dt.timedelta(minutes=1), timezone.now() + dt.timedelta(days=91)):
        with pytest.raises(ValidationError) as caught:
            subscriptions.mute(
                member, cluster=own_cluster, subject_type=SubjectType.TOPIC, subject_name="orders", until=until
            )
        assert list(caught.value.message_dict) == ["until"]


def test_one_cannot_subscribe_through_someone_elses_channel(member, outsider):
    theirs = default_channels(outsider)[0]

    with pytest.raises(ValidationError):
        subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [theirs])


def test_inactive_users_and_unowned_groups_hear_nothing(own_cluster, group, member, team):
    member.is_active = False
    member.save()
    unowned = ConsumerGroup.objects.create(cluster=own_cluster, name="imported")

    assert "mia" not in heard(lag_warning(own_cluster, group))
    assert heard(lag_warning(own_cluster, unowned)) == {}


def test_everyone_who_hears_a_warning_finds_it_among_their_own(
    own_cluster, group, orders, member, outsider, portal_admin, team
):
    TopicAssociation.objects.create(topic=orders, user=outsider, role=AssociationRole.PRODUCER)
    second = make_user("sam")
    Membership.objects.create(team=team, user=second, role=TeamRole.MEMBER)
    warnings = [
        lag_warning(own_cluster, group),
        open_warning(own_cluster, WarningKind.TRAFFIC_SURGE, SubjectType.TOPIC, "orders", topic=orders),
        open_warning(own_cluster, WarningKind.SERVER_CPU, SubjectType.SERVER, "10.0.0.1", host="10.0.0.1"),
    ]

    for warning in warnings:
        for recipient in recipients(warning, NOW):
            assert access.own_warnings(recipient.user).filter(pk=warning.pk).exists(), (warning, recipient.user)

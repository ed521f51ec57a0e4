"""Who may read a message's body: the topic's team, those associated with the topic, portal admins; everyone else
sees its metadata only. Every body view is audited. On the real sandbox cluster."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied

from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import create_offset_msg_id
from portal import access
from portal.models import AssociationRole, AuditEntry, ConsumerGroup, Subscription, Topic, TopicAssociation
from portal.services.messages.bodies import MessageNotFound, may_see_bodies, message_for_view, tracks
from tests.portal.message_world import create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401
from tests.support.factories import make_user, unique

BODY = b'{"order": 42, "amount": "9.90"}'


@pytest.fixture
def sent(sandbox, live_topic):
    return send(sandbox, live_topic.name, BODY, keys=["order-42"], tags="TagA")


def body_views():
    return AuditEntry.objects.filter(action="message.body_viewed")


def test_the_topics_team_sees_the_body_and_the_view_is_audited(cluster, member, live_topic, sent):
    msg, may_see = message_for_view(member, cluster, live_topic.name, sent.offset_msg_id)

    assert may_see and msg.body == BODY and msg.keys == ["order-42"] and msg.tags == "TagA"
    (entry,) = body_views()
    assert entry.actor == member and entry.object_id == str(live_topic.pk) and entry.cluster == cluster
    assert sent.offset_msg_id in entry.note and live_topic.name in entry.note


def test_a_member_of_another_team_sees_metadata_only_and_nothing_is_audited(cluster, outsider, live_topic, sent):
    msg, may_see = message_for_view(outsider, cluster, live_topic.name, sent.offset_msg_id)

    assert not may_see and msg.body == b""
    assert msg.msg_id == sent.offset_msg_id and msg.uniq_key == sent.msg_id and msg.keys == ["order-42"]
    assert not body_views().exists()


def test_admins_and_those_associated_with_the_topic_see_the_body(
    cluster, sandbox, portal_admin, outsider, other_team, live_topic, sent
):
    associated = make_user("ann")
    TopicAssociation.objects.create(topic=live_topic, user=associated, role=AssociationRole.CONSUMER)
    group = ConsumerGroup.objects.create(cluster=cluster, team=other_team, name=unique("SUBSCRIBER_"))
    Subscription.objects.create(consumer_group=group, topic=live_topic)

    for user in (portal_admin, associated, outsider):  # outsider: their team's group is subscribed
        msg, may_see = message_for_view(user, cluster, live_topic.name, sent.offset_msg_id)
        assert may_see and msg.body == BODY
    assert body_views().count() == 3


def test_each_view_is_audited_again(cluster, member, live_topic, sent):
    for _ in range(3):
        message_for_view(member, cluster, live_topic.name, sent.offset_msg_id)
    assert body_views().count() == 3


def test_a_topics_permission_never_opens_another_topics_message(cluster, sandbox, member, team, live_topic, sent):
    elsewhere = unique("MSG_ELSEWHERE_")
    create_topic(sandbox, elsewhere)
    Topic.objects.create(cluster=cluster, team=team, name=elsewhere)

    with pytest.raises(MessageNotFound):
        message_for_view(member, cluster, elsewhere, sent.offset_msg_id)
    with pytest.raises(MessageNotFound):
        message_for_view(member, cluster, live_topic.name, "0" * 31 + "X")
    beyond_the_store = create_offset_msg_id(sandbox.broker(sent.broker_name).addr, 1 << 40)
    with pytest.raises(MessageNotFound):
        message_for_view(member, cluster, live_topic.name, beyond_the_store)
    assert not body_views().exists()


def test_unregistered_topics_are_for_admins_only(cluster, sandbox, member, portal_admin):
    name = unique("MSG_UNREGISTERED_")
    create_topic(sandbox, name)
    sent = send(sandbox, name, BODY)

    with pytest.raises(PermissionDenied):
        message_for_view(member, cluster, name, sent.offset_msg_id)
    msg, may_see = message_for_view(portal_admin, cluster, name, sent.offset_msg_id)
    assert may_see and msg.body == BODY


def test_a_groups_dead_letters_are_its_teams(cluster, sandbox, team, member, outsider):
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=unique("DLQ_OWNER_"))
    dlq = f"%DLQ%{group.name}"

    assert may_see_bodies(member, cluster, dlq) and access.can_see_message_bodies(member, group)
    assert not may_see_bodies(outsider, cluster, dlq)


def test_anonymous_visitors_see_no_body(cluster, live_topic):
    assert not access.can_see_message_bodies(AnonymousUser(), live_topic)


def test_the_message_page_shows_where_the_message_went(cluster, sandbox, member, live_topic, live_group, sent):
    with MQAdmin(sandbox.namesrv_addr) as admin:  # the group has consumed the topic (committed offsets)
        for broker_name in sandbox.broker_names:
            addr = sandbox.broker(broker_name).addr
            admin.update_consumer_offset(addr, live_group.name, live_topic.name, sent.queue_id, 0)
    msg, _ = message_for_view(member, cluster, live_topic.name, sent.offset_msg_id)

    assert live_group.name in {track.consumer_group for track in tracks(cluster, msg)}

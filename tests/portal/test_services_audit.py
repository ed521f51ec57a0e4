"""The audit log and in-app notifications services."""

from django.contrib.auth.models import AnonymousUser
from django.utils.translation import get_language, gettext_lazy

from portal.models import AuditEntry, Cluster, ConsumerGroup, Notification, ProducerGroup, Topic
from portal.services import audit, notifications
from portal.services.profiles import update_profile
from tests.support.factories import make_user


def test_snapshot_is_json_with_foreign_keys_as_ids(topic):
    data = audit.snapshot(topic)

    assert data["name"] == "PAY_ORDER_CREATED"
    assert data["queue_nums"] == 8
    assert data["team_id"] == topic.team_id
    assert data["cluster_id"] == topic.cluster_id
    assert isinstance(data["created_at"], str)


def test_snapshot_masks_the_acl_secret_and_says_only_whether_one_is_set(db):
    with_secret = Cluster.objects.create(name="acl", acl_access_key="ak", acl_secret_key="very-secret")
    without = Cluster.objects.create(name="open")

    assert audit.snapshot(with_secret)["acl_secret_key"] == audit.SECRET_MASK
    assert "very-secret" not in str(audit.snapshot(with_secret))
    assert audit.snapshot(without)["acl_secret_key"] == ""
    assert audit.snapshot(with_secret)["acl_access_key"] == "ak"


def test_snapshot_of_a_consumer_group_lists_its_subscriptions_with_tags(cluster, team, topic):
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="PAY_CONSUMER")
    group.subscriptions.create(topic=topic, tag_expression="TagA || TagB")

    assert audit.snapshot(group)["subscriptions"] == {"PAY_ORDER_CREATED": "TagA || TagB"}


def test_snapshot_of_a_producer_group_lists_its_topics_by_name(cluster, team, topic):
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PAY_PRODUCER")
    group.topics.add(topic)

    assert audit.snapshot(group)["topics"] == ["PAY_ORDER_CREATED"]


def test_record_names_the_actor_the_object_and_its_cluster(portal_admin, topic):
    before = audit.snapshot(topic)
    Topic.objects.filter(pk=topic.pk).update(queue_nums=16)
    topic.refresh_from_db()

    entry = audit.record(portal_admin, "topic.changed", topic, before=before, after=audit.snapshot(topic), note="why")

    entry = AuditEntry.objects.get(pk=entry.pk)
    assert (entry.actor, entry.actor_name, entry.action) == (portal_admin, "ada", "topic.changed")
    assert (entry.object_type, entry.object_id, entry.object_repr) == ("topic", str(topic.pk), "PAY_ORDER_CREATED")
    assert entry.cluster == topic.cluster
    assert (entry.before["queue_nums"], entry.after["queue_nums"]) == (8, 16)
    assert entry.note == "why"


def test_record_by_the_system_has_no_actor(cluster):
    entry = audit.record(None, "cluster.synced", cluster)

    assert entry.actor is None and entry.actor_name == ""
    assert entry.cluster == cluster


def test_notify_stores_the_notification_for_the_user(member):
    notification = notifications.notify(member, "Approved", "All good", "/applications/1/")

    assert Notification.objects.get(pk=notification.pk).user == member
    assert (notification.title, notification.body, notification.link) == ("Approved", "All good", "/applications/1/")


def test_unread_count_counts_only_the_users_unread_notifications(member, outsider):
    notifications.notify(member, "one")
    notifications.notify(member, "two")
    notifications.notify(outsider, "not mine")

    assert notifications.unread_count(member) == 2


def test_mark_read_marks_the_given_ids_and_ignores_other_users_notifications(member, outsider):
    first = notifications.notify(member, "one")
    notifications.notify(member, "two")
    theirs = notifications.notify(outsider, "theirs")

    assert notifications.mark_read(member, [first.pk, theirs.pk]) == 1
    assert notifications.unread_count(member) == 1
    assert notifications.unread_count(outsider) == 1


def test_mark_read_without_ids_marks_all(member):
    notifications.notify(member, "one")
    notifications.notify(member, "two")

    assert notifications.mark_read(member) == 2
    assert notifications.unread_count(member) == 0


def test_anonymous_users_have_no_unread_notifications(db):
    assert notifications.unread_count(AnonymousUser()) == 0


def test_notification_text_is_rendered_in_the_recipients_language(db):
    user = make_user("li")
    update_profile(user, language="zh-hans")
    seen = []

    class Probe:
        def __str__(self):
            seen.append(get_language())
            return "probe"

    notifications.notify(user, Probe(), gettext_lazy("approved"))

    assert seen == ["zh-hans"]

"""The audit log (portal admins, filterable) and each user's own notifications through the API."""

import datetime

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from portal.models import AuditEntry, Cluster, Notification
from portal.services import audit, notifications


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def audit_log(portal_admin, member, cluster, topic, team):
    """Four entries on two days and two clusters, by two actors and the system."""
    other = Cluster.objects.create(name="other")
    entries = [
        audit.record(portal_admin, "cluster.registered", cluster, note="first"),
        audit.record(member, "topic.description_changed", topic),
        audit.record(None, "cluster.updated", other),
        audit.record(portal_admin, "team.created", team),
    ]
    AuditEntry.objects.filter(pk=entries[0].pk).update(
        created_at=datetime.datetime(2024, 3, 1, 12, tzinfo=datetime.UTC)
    )
    return entries


def listed(client, query=None) -> list[str]:
    response = client.get(reverse("api:audit-entry-list"), query or {})
    assert response.status_code == 200, response.data
    return [entry["action"] for entry in response.data["results"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["team.created", "cluster.updated", "topic.description_changed", "cluster.registered"]),
        ({"actor": "mia"}, ["topic.description_changed"]),
        ({"actor": "ada"}, ["team.created", "cluster.registered"]),
        ({"action": "cluster.updated"}, ["cluster.updated"]),
        ({"object_type": "cluster"}, ["cluster.updated", "cluster.registered"]),
        ({"created_before": "2024-03-01"}, ["cluster.registered"]),
        ({"created_after": "2024-03-02"}, ["team.created", "cluster.updated", "topic.description_changed"]),
        ({"created_after": "2024-03-01", "created_before": "2024-03-01"}, ["cluster.registered"]),
        ({"q": "first"}, ["cluster.registered"]),
        (
            {"ordering": "action"},
            ["cluster.registered", "cluster.updated", "team.created", "topic.description_changed"],
        ),
    ],
)
def test_portal_admins_filter_the_audit_log(audit_log, portal_admin, query, expected):
    assert listed(logged_in(portal_admin), query) == expected


def test_the_audit_log_filters_by_cluster(audit_log, portal_admin, cluster):
    assert listed(logged_in(portal_admin), {"cluster": cluster.pk}) == [
        "topic.description_changed",
        "cluster.registered",
    ]


def test_an_audit_entry_shows_who_did_what_before_and_after(portal_admin, topic, member):
    before = audit.snapshot(topic)
    topic.description = "orders"
    entry = audit.record(member, "topic.description_changed", topic, before=before, after=audit.snapshot(topic))
    shown = logged_in(portal_admin).get(reverse("api:audit-entry-detail", args=[entry.pk])).data
    assert (shown["actor_name"], shown["object_type"], shown["object_repr"]) == ("mia", "topic", "PAY_ORDER_CREATED")
    assert (shown["before"]["description"], shown["after"]["description"]) == ("", "orders")


@pytest.mark.parametrize("query", [{"created_after": "yesterday"}, {"cluster": "x"}])
def test_bad_audit_filters_are_field_errors(portal_admin, query):
    response = logged_in(portal_admin).get(reverse("api:audit-entry-list"), query)
    assert response.status_code == 400
    assert list(response.data) == list(query), response.data


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_audit_log_cannot_be_written_through_the_api(audit_log, portal_admin, method):
    client = logged_in(portal_admin)
    assert (
        getattr(client, method)(reverse("api:audit-entry-detail", args=[audit_log[0].pk]), {}, "json").status_code
        == 405
    )
    assert AuditEntry.objects.count() == 4


@pytest.fixture
def inbox(member, outsider):
    mine = [notifications.notify(member, f"note {i}") for i in range(3)]
    theirs = notifications.notify(outsider, "not for mia")
    return mine, theirs


def test_users_see_only_their_own_notifications(inbox, member):
    response = logged_in(member).get(reverse("api:notification-list"))
    assert [n["title"] for n in response.data["results"]] == ["note 2", "note 1", "note 0"]
    assert logged_in(member).get(reverse("api:notification-detail", args=[inbox[1].pk])).status_code == 404


def test_marking_some_notifications_read(inbox, member):
    mine, theirs = inbox
    client = logged_in(member)
    response = client.post(reverse("api:notification-mark-read"), {"ids": [mine[0].pk, theirs.pk]}, "json")
    assert response.data == {"marked": 1}
    unread = client.get(reverse("api:notification-list"), {"unread": "true"}).data
    assert [n["title"] for n in unread["results"]] == ["note 2", "note 1"]
    assert Notification.objects.get(pk=theirs.pk).read_at is None


def test_marking_all_notifications_read(inbox, member):
    client = logged_in(member)
    assert client.post(reverse("api:notification-mark-read"), {}, "json").data == {"marked": 3}
    assert client.get(reverse("api:notification-list"), {"unread": "true"}).data["count"] == 0
    read = client.get(reverse("api:notification-detail", args=[inbox[0][0].pk])).data
    assert read["read_at"] is not None


@pytest.mark.parametrize("ids", [[2**80], ["one"], "all", [0], {"id": 1}])
def test_bad_ids_to_mark_read_are_field_errors(inbox, member, ids):
    response = logged_in(member).post(reverse("api:notification-mark-read"), {"ids": ids}, "json")
    assert response.status_code == 400
    assert set(response.data) == {"ids"}
    assert Notification.objects.filter(read_at__isnull=False).count() == 0

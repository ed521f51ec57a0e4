"""The registry through the API: topics (public), consumer and producer groups, their filters, search, ordering and
pagination, description edits by the owning team and adoption of unowned entries by portal admins."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from portal.models import (
    AuditEntry,
    ConsumerGroup,
    MessageModel,
    Origin,
    ProducerGroup,
    RegistryState,
    Subscription,
    Topic,
)


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def names(response) -> list[str]:
    assert response.status_code == 200, response.data
    return [item["name"] for item in response.data["results"]]


@pytest.fixture
def registry(cluster, team, other_team, topic):
    """The team's topic PAY_ORDER_CREATED plus a spread of topics and groups to filter."""
    Topic.objects.create(cluster=cluster, team=team, name="PAY_REFUND", ordered=True, description="refunds in order")
    Topic.objects.create(cluster=cluster, team=other_team, name="SHIP_LABEL", description="labels for PAY orders")
    Topic.objects.create(cluster=cluster, name="LEGACY_IMPORTED", origin=Origin.IMPORTED, state=RegistryState.MISSING)
    billing = ConsumerGroup.objects.create(cluster=cluster, team=team, name="PAY_BILLING")
    Subscription.objects.create(consumer_group=billing, topic=topic, tag_expression="TagA || TagB")
    ConsumerGroup.objects.create(
        cluster=cluster, team=other_team, name="SHIP_AUDIT", message_model=MessageModel.BROADCASTING
    )
    checkout = ProducerGroup.objects.create(cluster=cluster, team=team, name="PAY_CHECKOUT")
    checkout.topics.add(topic)
    ProducerGroup.objects.create(cluster=cluster, name="LEGACY_PRODUCER", origin=Origin.IMPORTED)


def test_anonymous_visitors_read_the_public_topic_list_and_details(registry, topic):
    client = APIClient()
    listed = client.get(reverse("api:topic-list"))
    assert names(listed) == ["LEGACY_IMPORTED", "PAY_ORDER_CREATED", "PAY_REFUND", "SHIP_LABEL"]
    detail = client.get(reverse("api:topic-detail", args=[topic.pk])).data
    assert detail["name"] == "PAY_ORDER_CREATED"
    assert detail["cluster_name"] == "sandbox"
    assert detail["team_name"] == "payments"
    assert detail["queue_nums"] == 8
    assert detail["state"] == "active"
    assert detail["origin"] == "applied"


def test_an_unowned_topic_shows_no_team(registry):
    legacy = APIClient().get(reverse("api:topic-list"), {"q": "LEGACY"}).data["results"][0]
    assert (legacy["team"], legacy["team_name"]) == (None, None)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"team": "team"}, ["PAY_ORDER_CREATED", "PAY_REFUND"]),
        ({"unowned": "true"}, ["LEGACY_IMPORTED"]),
        ({"state": "missing"}, ["LEGACY_IMPORTED"]),
        ({"origin": "applied"}, ["PAY_ORDER_CREATED", "PAY_REFUND", "SHIP_LABEL"]),
        ({"ordered": "true"}, ["PAY_REFUND"]),
        ({"q": "pay"}, ["PAY_ORDER_CREATED", "PAY_REFUND", "SHIP_LABEL"]),
        ({"q": "in order"}, ["PAY_REFUND"]),
        ({"ordering": "-name"}, ["SHIP_LABEL", "PAY_REFUND", "PAY_ORDER_CREATED", "LEGACY_IMPORTED"]),
        ({"team": "team", "ordered": "false"}, ["PAY_ORDER_CREATED"]),
    ],
)
def test_topics_filter_search_and_order(registry, team, query, expected):
    query = {key: team.pk if value == "team" else value for key, value in query.items()}
    assert names(APIClient().get(reverse("api:topic-list"), query)) == expected


def test_topics_filter_by_cluster(registry, cluster):
    assert len(names(APIClient().get(reverse("api:topic-list"), {"cluster": cluster.pk}))) == 4


def test_mine_lists_what_the_users_teams_own(registry, outsider):
    assert names(logged_in(outsider).get(reverse("api:topic-list"), {"mine": "true"})) == ["SHIP_LABEL"]


@pytest.mark.parametrize("query", [{"state": "gone"}, {"team": "abc"}, {"cluster": "99999999999999999999999"}])
def test_an_invalid_filter_value_is_a_field_error(registry, query):
    response = APIClient().get(reverse("api:topic-list"), query)
    assert response.status_code == 400
    assert list(response.data) == list(query)


def test_topic_list_is_paginated(cluster, team):
    Topic.objects.bulk_create(Topic(cluster=cluster, team=team, name=f"BULK_{i:03d}") for i in range(55))
    first = APIClient().get(reverse("api:topic-list")).data
    assert first["count"] == 55
    assert len(first["results"]) == 50
    assert first["previous"] is None
    second = APIClient().get(first["next"]).data
    assert [item["name"] for item in second["results"]] == [f"BULK_{i:03d}" for i in range(50, 55)]
    assert second["next"] is None
    assert APIClient().get(reverse("api:topic-list"), {"page": 3}).status_code == 404


def test_consumer_groups_show_their_subscriptions(registry, member, topic):
    client = logged_in(member)
    billing = client.get(reverse("api:consumer-group-list"), {"q": "BILLING"}).data["results"][0]
    assert billing["message_model"] == "CLUSTERING"
    assert billing["subscriptions"] == [
        {"topic": topic.pk, "topic_name": "PAY_ORDER_CREATED", "tag_expression": "TagA || TagB"}
    ]
    assert names(client.get(reverse("api:consumer-group-list"), {"topic": topic.pk})) == ["PAY_BILLING"]
    assert names(client.get(reverse("api:consumer-group-list"), {"message_model": "BROADCASTING"})) == ["SHIP_AUDIT"]


def test_producer_groups_show_their_topics(registry, member, topic):
    client = logged_in(member)
    checkout = client.get(reverse("api:producer-group-list"), {"topic": topic.pk}).data["results"]
    assert [(group["name"], group["topics"]) for group in checkout] == [
        ("PAY_CHECKOUT", [{"id": topic.pk, "name": "PAY_ORDER_CREATED"}])
    ]
    assert names(client.get(reverse("api:producer-group-list"), {"unowned": "true"})) == ["LEGACY_PRODUCER"]


def test_the_owning_team_edits_a_description_and_the_change_is_audited(topic, member):
    response = logged_in(member).patch(
        reverse("api:topic-detail", args=[topic.pk]), {"description": "  order events  "}, format="json"
    )
    assert response.status_code == 200, response.data
    assert response.data["description"] == "order events"
    topic.refresh_from_db()
    assert topic.description == "order events"
    entry = AuditEntry.objects.get(action="topic.description_changed")
    assert (entry.actor, entry.before["description"], entry.after["description"]) == (member, "", "order events")


def test_a_description_must_be_a_string(topic, member):
    response = logged_in(member).patch(reverse("api:topic-detail", args=[topic.pk]), {"description": ["x"]}, "json")
    assert response.status_code == 400
    assert "description" in response.data


def test_an_outsider_cannot_edit_another_teams_description(topic, outsider):
    response = logged_in(outsider).patch(reverse("api:topic-detail", args=[topic.pk]), {"description": "x"}, "json")
    assert response.status_code == 403
    topic.refresh_from_db()
    assert topic.description == ""


@pytest.mark.parametrize("method", ["put", "delete"])
def test_registry_entries_change_only_through_applications(topic, portal_admin, method):
    response = getattr(logged_in(portal_admin), method)(reverse("api:topic-detail", args=[topic.pk]), {}, "json")
    assert response.status_code == 405
    assert Topic.objects.filter(pk=topic.pk).exists()


def test_a_portal_admin_adopts_an_unowned_group_for_a_team(cluster, team, portal_admin):
    legacy = ConsumerGroup.objects.create(cluster=cluster, name="LEGACY_C", origin=Origin.IMPORTED)
    response = logged_in(portal_admin).post(
        reverse("api:consumer-group-adopt", args=[legacy.pk]), {"team": team.pk}, "json"
    )
    assert response.status_code == 200, response.data
    assert (response.data["team"], response.data["team_name"]) == (team.pk, "payments")
    assert AuditEntry.objects.filter(action="consumergroup.adopted", object_id=str(legacy.pk)).exists()


def test_adopting_an_owned_entry_is_a_field_error(topic, other_team, portal_admin):
    response = logged_in(portal_admin).post(
        reverse("api:topic-adopt", args=[topic.pk]), {"team": other_team.pk}, "json"
    )
    assert response.status_code == 400
    assert "team" in response.data
    topic.refresh_from_db()
    assert topic.team.name == "payments"


@pytest.mark.parametrize("body", [{}, {"team": 987654}, {"team": "payments"}])
def test_adoption_needs_an_existing_team(cluster, portal_admin, body):
    legacy = ProducerGroup.objects.create(cluster=cluster, name="LEGACY_P", origin=Origin.IMPORTED)
    response = logged_in(portal_admin).post(reverse("api:producer-group-adopt", args=[legacy.pk]), body, "json")
    assert response.status_code == 400
    assert "team" in response.data


@pytest.mark.parametrize("pk", ["abc", "99999999999999999999999", "0"])
def test_an_unknown_id_is_not_found(db, pk):
    assert APIClient().get(f"/api/v1/topics/{pk}/").status_code == 404

"""The list filters (portal/filters.py) are one definition per model, shared by the pages and the API: the same query
string lists the same entries on a page and through the API, the text search ``q`` wants every word somewhere, and a
page that narrows its filters offers and applies only those."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AssociationRole,
    ConsumerGroup,
    MessageModel,
    Origin,
    RegistryState,
    Subscription,
    Topic,
)


@pytest.fixture
def entries(cluster, team, other_team, topic):
    """The team's topic PAY_ORDER_CREATED plus a spread of topics and consumer groups to filter."""
    Topic.objects.create(cluster=cluster, team=team, name="PAY_REFUND", ordered=True, description="refunds in order")
    Topic.objects.create(cluster=cluster, team=other_team, name="SHIP_LABEL", description="labels for PAY orders")
    Topic.objects.create(
        cluster=cluster, name="LEGACY_TRACED", origin=Origin.IMPORTED, state=RegistryState.MISSING, trace_enabled=True
    )
    billing = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING", description="pay runs")
    Subscription.objects.create(consumer_group=billing, topic=topic)
    ConsumerGroup.objects.create(
        cluster=cluster, team=other_team, name="GID_SHIPPING", message_model=MessageModel.BROADCASTING
    )
    ConsumerGroup.objects.create(cluster=cluster, name="GID_LEGACY", origin=Origin.IMPORTED)


def on_the_page(client, url_name: str, query: dict) -> list[str]:
    response = client.get(reverse(url_name), query)
    assert response.status_code == 200
    return [entry.name for entry in response.context["page"].object_list]


def through_the_api(client, url_name: str, query: dict) -> list[str]:
    response = client.get(reverse(url_name), query)
    assert response.status_code == 200, response.data
    return [entry["name"] for entry in response.data["results"]]


TOPICS = ("topic-list", "api:topic-list")
GROUPS = ("consumer-group-list", "api:consumer-group-list")


@pytest.mark.parametrize(
    ("lists", "query", "expected"),
    [
        (TOPICS, {"q": "pay"}, ["PAY_ORDER_CREATED", "PAY_REFUND", "SHIP_LABEL"]),
        (TOPICS, {"q": "in order"}, ["PAY_REFUND"]),
        (TOPICS, {"q": "ORDER pay"}, ["PAY_ORDER_CREATED", "PAY_REFUND", "SHIP_LABEL"]),
        (TOPICS, {"q": "order label"}, ["SHIP_LABEL"]),
        (TOPICS, {"unowned": "true"}, ["LEGACY_TRACED"]),
        (TOPICS, {"unowned": "false", "ordered": "false"}, ["PAY_ORDER_CREATED", "SHIP_LABEL"]),
        (TOPICS, {"state": "missing"}, ["LEGACY_TRACED"]),
        (TOPICS, {"origin": "imported"}, ["LEGACY_TRACED"]),
        (TOPICS, {"trace_enabled": "true"}, ["LEGACY_TRACED"]),
        (TOPICS, {"team": "the team", "q": "refund"}, ["PAY_REFUND"]),
        (TOPICS, {"mine": "true"}, ["PAY_ORDER_CREATED", "PAY_REFUND"]),
        (GROUPS, {"q": "pay"}, ["GID_BILLING"]),
        (GROUPS, {"message_model": "BROADCASTING"}, ["GID_SHIPPING"]),
        (GROUPS, {"unowned": "true"}, ["GID_LEGACY"]),
        (GROUPS, {"topic": "the topic"}, ["GID_BILLING"]),
        (GROUPS, {"mine": "true"}, ["GID_BILLING"]),
    ],
)
def test_a_page_and_the_api_filter_alike(client, member, team, topic, entries, lists, query, expected):
    ids = {"the team": team.pk, "the topic": topic.pk}
    query = {key: ids.get(value, value) for key, value in query.items()}
    page, endpoint = lists
    client.force_login(member)
    api = APIClient()
    api.force_login(member)
    assert on_the_page(client, page, query) == expected
    assert through_the_api(api, endpoint, query) == expected


def test_the_subscribed_topic_filter_is_a_hidden_field_the_page_form_keeps(client, member, topic, entries):
    client.force_login(member)
    text = client.get(reverse("consumer-group-list"), {"topic": topic.pk}).text
    assert f'<input type="hidden" name="topic" value="{topic.pk}"' in text


def test_the_unowned_list_searches_and_filters_by_cluster(client, portal_admin, cluster, entries):
    from portal.models import Cluster

    elsewhere = Cluster.objects.create(name="elsewhere")
    Topic.objects.create(cluster=elsewhere, name="LEGACY_ELSEWHERE", origin=Origin.IMPORTED)
    client.force_login(portal_admin)
    assert on_the_page(client, "unowned-list", {}) == ["LEGACY_ELSEWHERE", "LEGACY_TRACED"]
    assert on_the_page(client, "unowned-list", {"cluster": elsewhere.pk}) == ["LEGACY_ELSEWHERE"]
    assert on_the_page(client, "unowned-list", {"q": "traced"}) == ["LEGACY_TRACED"]
    assert on_the_page(client, "unowned-list", {"kind": "consumer-group", "q": "legacy"}) == ["GID_LEGACY"]


def test_the_approval_queue_offers_and_applies_only_its_own_filters(client, portal_admin, member, outsider, topic):
    for applicant, name in ((member, "QUEUED_BY_MIA"), (outsider, "QUEUED_BY_OLGA")):
        Application.objects.create(
            kind=ApplicationKind.TOPIC_CREATE,
            applicant=applicant,
            team=topic.team,
            cluster=topic.cluster,
            payload={"name": name},
        )
    Application.objects.create(
        kind=ApplicationKind.TOPIC_ASSOCIATION,
        applicant=outsider,
        team=topic.team,
        cluster=topic.cluster,
        topic=topic,
        payload={"role": AssociationRole.CONSUMER},
        state=ApplicationState.REJECTED,
    )
    client.force_login(portal_admin)

    def queued(**query):
        response = client.get(reverse("approval-queue"), query)
        return [item["application"].subject_name for item in response.context["items"]], response

    shown, response = queued()
    assert shown == ["QUEUED_BY_MIA", "QUEUED_BY_OLGA"]
    assert list(response.context["filter"].form.fields) == ["kind", "team", "cluster", "applicant"]
    assert queued(applicant="olg")[0] == ["QUEUED_BY_OLGA"]
    assert queued(state="rejected", mine="on")[0] == ["QUEUED_BY_MIA", "QUEUED_BY_OLGA"]


# --- values that are no ids: a page says it did not apply them, the API answers 400 naming the parameter ----------

NOT_IDS = ["²", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1.5", "0"]
ID_FILTERS = [
    ("consumer-group-list", "api:consumer-group-list", "topic"),
    ("warning-list", "api:warning-list", "topic"),
    ("warning-list", "api:warning-list", "consumer_group"),
    ("warning-list", "api:warning-list", "producer_group"),
    (None, "api:producer-group-list", "topic"),
]


@pytest.mark.parametrize("value", NOT_IDS)
@pytest.mark.parametrize(("page", "endpoint", "parameter"), ID_FILTERS)
def test_an_id_filter_refuses_what_is_no_id_naming_the_parameter(client, member, page, endpoint, parameter, value):
    client.force_login(member)

    response = client.get(reverse(endpoint), {parameter: value})

    assert response.status_code == 400 and list(response.json()) == [parameter]
    if page is not None:
        shown = client.get(reverse(page), {parameter: value})
        assert shown.status_code == 200
        assert "not applied" in shown.content.decode()


def test_the_largest_id_is_still_an_id(client, member):
    client.force_login(member)

    response = client.get(reverse("api:warning-list"), {"topic": str(2**63 - 1)})

    assert response.status_code == 200 and response.json()["count"] == 0


@pytest.mark.parametrize("value", ["²", "9223372036854775808", "-1"])
@pytest.mark.parametrize("url_name", ["rankings", "lagging"])
def test_a_team_or_cluster_choice_that_is_no_id_shows_the_page_unnarrowed(client, portal_admin, url_name, value):
    client.force_login(portal_admin)

    for parameter in ("team", "cluster"):
        response = client.get(reverse(url_name), {parameter: value})
        assert response.status_code == 200 and response.context["team"] is None

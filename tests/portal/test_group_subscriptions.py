"""A consumer group's subscriptions from both sides: the registry's beside what its online clients report in the
latest collected minute, with every difference marked on the group's page and in its API detail. Client reports
are stored as the collector stores them (``stats.store``); the same judgement against real C++ consumers and the
sync's import of them are in test_group_subscriptions_live.py."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Cluster, ConsumerGroup, Origin, Subscription, Topic
from portal.services.subscriptions import Difference, compare, importable, normalized
from stats.models import ClientMinute, ClusterMinute
from stats.store.traffic import MinuteSamples, store_minute


def ago(minutes: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=minutes)


def client(client_id: str, subscription: dict[str, str], *, types: dict[str, str] | None = None, error: str = ""):
    """A client row as the collector writes it (group, cluster and minute filled in by :func:`collected`)."""
    return {
        "client_id": client_id,
        "subscription": subscription,
        "expression_types": types if types is not None else dict.fromkeys(subscription, "TAG"),
        "error": error,
    }


def collected(cluster: Cluster, group: str, *clients: dict, minutes_ago: int = 1) -> None:
    minute = ago(minutes_ago)
    store_minute(
        MinuteSamples(
            cluster=ClusterMinute(cluster_id=cluster.pk, minute=minute),
            clients=[
                ClientMinute(cluster_id=cluster.pk, group=group, minute=minute, address="10.0.0.9:4000", **row)
                for row in clients
            ],
        )
    )


def rows(*clients: dict) -> list[ClientMinute]:
    return [ClientMinute(group="g", address="", **row) for row in clients]


@pytest.fixture
def prod(db):
    return Cluster.objects.create(name="prod")


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="TopicOrders", queue_nums=4)


@pytest.fixture
def imported(prod):
    """A group created with mqadmin and imported by the sync: nothing registered for it."""
    return ConsumerGroup.objects.create(cluster=prod, name="GID_LEGACY", origin=Origin.IMPORTED)


@pytest.fixture
def billing(prod, team, orders):
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=orders, tag_expression="paid")
    return group


@pytest.fixture
def signed_in(client, member):
    client.force_login(member)
    return client


def page(signed_in, group):
    response = signed_in.get(reverse("consumer-group-detail", args=[group.pk]))
    assert response.status_code == 200
    return response


def api_check(user, group) -> dict:
    api = APIClient()
    api.force_login(user)
    response = api.get(reverse("api:consumer-group-detail", args=[group.pk]))
    assert response.status_code == 200, response.data
    return response.data["subscription_check"]


# --- the judgement ------------------------------------------------------------------------------------------------


def test_tag_expressions_are_compared_as_the_sets_of_tags_they_select():
    assert normalized("TagB||TagA") == normalized(" TagA || TagB ")
    assert normalized("") == normalized("*") != normalized("TagA")
    assert normalized("a > 1", "SQL92") != normalized("a > 1", "TAG")


def test_a_topic_only_the_clients_subscribe_is_unregistered():
    check = compare({}, rows(client("c1", {"TopicOrders": "*"})), ago(1))

    (topic,) = check.topics
    assert (topic.topic, topic.registered, topic.differences) == ("TopicOrders", None, (Difference.UNREGISTERED,))
    assert [(r.expression, r.expression_type, r.clients) for r in topic.reported] == [("*", "TAG", ("c1",))]
    assert check.unregistered == [topic] and not check.inconsistent


def test_an_equivalent_expression_matches_the_registry_and_another_one_differs():
    registered = {"A": (1, "TagA || TagB"), "B": (2, "TagA")}
    check = compare(registered, rows(client("c1", {"A": "TagB||TagA", "B": "TagC"})), ago(1))

    assert [(t.topic, t.differences) for t in check.topics] == [("A", ()), ("B", (Difference.EXPRESSION_DIFFERS,))]


def test_a_sql92_subscription_differs_from_a_registered_tag_expression_of_the_same_text():
    check = compare({"A": (1, "TagA")}, rows(client("c1", {"A": "TagA"}, types={"A": "SQL92"})), ago(1))

    assert check.topics[0].differences == (Difference.EXPRESSION_DIFFERS,)


def test_a_registered_topic_no_answering_client_subscribes_is_marked_only_when_a_client_answered():
    registered = {"A": (1, "*"), "B": (2, "*")}
    answered = compare(registered, rows(client("c1", {"A": "*"})), ago(1))
    assert [(t.topic, t.differences) for t in answered.topics] == [("A", ()), ("B", (Difference.NOT_SUBSCRIBED,))]

    silent = compare(registered, rows(client("c1", {}, error="timed out")), ago(1))
    assert [t.differences for t in silent.topics] == [(), ()]
    assert silent.unanswered == ("c1",) and not silent.answered

    offline = compare(registered, [], ago(1))
    assert [t.differences for t in offline.topics] == [(), ()] and not offline.answered


def test_clients_with_different_expressions_or_topics_are_an_inconsistent_subscription():
    check = compare(
        {"A": (1, "TagA")},
        rows(
            client("c1", {"A": "TagA", "B": "*"}),
            client("c2", {"A": "TagA"}),
            client("c3", {"A": "TagB"}),
        ),
        ago(1),
    )

    a, b = check.topics
    assert [r.clients for r in a.reported] == [("c1", "c2"), ("c3",)]  # the most clients first
    assert a.differences == (Difference.EXPRESSION_DIFFERS, Difference.INCONSISTENT)
    assert b.not_subscribing == ("c2", "c3")
    assert b.differences == (Difference.UNREGISTERED, Difference.INCONSISTENT)
    assert check.inconsistent


def test_retry_topics_are_listed_apart_and_never_judged():
    check = compare({}, rows(client("c1", {"A": "*", "%RETRY%g": "*"}), client("c2", {"A": "*"})), ago(1))

    assert [t.topic for t in check.topics] == ["A"] and not check.inconsistent
    assert check.group_topics == ("%RETRY%g",)


def test_without_a_collected_minute_only_the_registry_is_known():
    check = compare({"A": (1, "*")}, rows(client("c1", {"B": "*"})), None)

    assert [(t.topic, t.differences) for t in check.topics] == [("A", ())] and not check.clients


def test_only_what_every_client_agrees_on_in_tags_to_an_active_topic_can_be_imported():
    topics = {"A": 1, "B": 2, "C": 3}
    agreed = compare(
        {}, rows(client("c1", {"A": "TagA", "B": "x > 1", "D": "*"}, types={"A": "TAG", "B": "SQL92"})), ago(1)
    )
    assert importable(agreed, topics) == {1: "TagA"}  # SQL92 and unknown topics stay client-only

    split = compare({}, rows(client("c1", {"A": "TagA"}), client("c2", {"A": "TagB"})), ago(1))
    assert importable(split, topics) == {}
    partly = compare({}, rows(client("c1", {"A": "TagA"}), client("c2", {}, error="timed out")), ago(1))
    assert importable(partly, topics) == {}


# --- the page and the API -----------------------------------------------------------------------------------------


def test_an_imported_group_shows_what_its_clients_subscribe_and_that_it_is_not_registered(
    signed_in, member, imported, orders
):
    collected(imported.cluster, "GID_LEGACY", client("10.0.0.9@legacy", {"TopicOrders": "*", "%RETRY%GID_LEGACY": "*"}))

    response = page(signed_in, imported)

    text = response.text
    assert "subscribes to no registered topic" not in text
    assert "The clients subscribe to topics not registered for this group:" in text
    assert "TopicOrders (*)" in text and "10.0.0.9@legacy" in text
    assert reverse("topic-detail", args=[orders.pk]) in text  # the topic is in the registry; the subscription is not
    assert ">not registered<" in text
    assert "%RETRY%GID_LEGACY" in text  # listed apart
    check = api_check(member, imported)
    assert check["topics"] == [
        {
            "topic": "TopicOrders",
            "topic_id": orders.pk,
            "registered_expression": None,
            "reported": [{"expression": "*", "expression_type": "TAG", "clients": ["10.0.0.9@legacy"]}],
            "not_subscribing": [],
            "differences": ["unregistered"],
        }
    ]
    assert check["group_topics"] == ["%RETRY%GID_LEGACY"] and check["differs"] and not check["inconsistent"]


def test_a_registered_subscription_with_another_expression_is_marked(signed_in, member, billing):
    collected(billing.cluster, "GID_BILLING", client("c1", {"TopicOrders": "paid || refunded"}))

    text = page(signed_in, billing).text

    assert "expression differs from the registry" in text and "paid || refunded" in text
    (topic,) = api_check(member, billing)["topics"]
    assert (topic["registered_expression"], topic["differences"]) == ("paid", ["expression_differs"])


def test_clients_subscribing_unlike_each_other_are_an_inconsistent_subscription_on_the_page(signed_in, member, billing):
    collected(billing.cluster, "GID_BILLING", client("c1", {"TopicOrders": "paid"}), client("c2", {"TopicOrders": "*"}))

    text = page(signed_in, billing).text

    assert "inconsistent subscription" in text and "do not all subscribe alike" in text
    check = api_check(member, billing)
    assert check["inconsistent"] is True
    assert check["topics"][0]["differences"] == ["expression_differs", "inconsistent"]


def test_a_subscription_as_registered_is_shown_as_such(signed_in, member, billing):
    collected(billing.cluster, "GID_BILLING", client("c1", {"TopicOrders": "paid"}))

    text = page(signed_in, billing).text

    assert "as registered" in text and "inconsistent subscription" not in text
    assert api_check(member, billing)["differs"] is False


def test_without_a_recent_collection_the_page_says_the_clients_subscriptions_are_unknown(signed_in, member, imported):
    collected(imported.cluster, "GID_LEGACY", client("c1", {"TopicOrders": "*"}), minutes_ago=30)

    text = page(signed_in, imported).text

    assert "No recent collection: only the registry's subscriptions are known" in text
    assert "No subscription is registered for this group." in text
    assert api_check(member, imported) | {"topics": None} == {
        "minute": None,
        "clients": [],
        "unanswered": [],
        "inconsistent": False,
        "differs": False,
        "topics": None,
        "group_topics": [],
    }


def test_clients_that_did_not_answer_are_counted_as_unknown(signed_in, imported):
    collected(imported.cluster, "GID_LEGACY", client("c1", {}, error="timed out"))

    text = page(signed_in, imported).text

    assert "did not say what they subscribe" in text
    assert "1 online client did not answer; its subscription is unknown." in text


def test_the_group_list_does_not_judge_subscriptions(member, billing):
    """The list stays one query per page: the judgement is in the detail only."""
    api = APIClient()
    api.force_login(member)
    (listed,) = api.get(reverse("api:consumer-group-list")).data["results"]
    assert "subscription_check" not in listed and listed["subscriptions"][0]["tag_expression"] == "paid"

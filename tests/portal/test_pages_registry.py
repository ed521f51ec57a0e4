"""The registry pages: the topic list (search, filters, pagination, a query count that does not grow with the rows),
the topic page as the public and signed-in users see it, the consumer-group list and pages, the producer-group page
and the description editor. Who may open which page is the authorization matrix's business (test_authz_pages.py)."""

import pytest
from django.urls import reverse

from portal.models import (
    Application,
    ApplicationKind,
    AssociationRole,
    ConsumerGroup,
    MessageModel,
    ProducerGroup,
    RegistryState,
    Subscription,
    Topic,
    TopicAssociation,
)
from portal.web.paging import PAGE_SIZE


@pytest.fixture
def as_member(client, member):
    client.force_login(member)
    return client


def names_on(response) -> list[str]:
    return [entry.name for entry in response.context["page"].object_list]


def test_the_topic_list_is_public_and_shows_cluster_team_and_state(client, topic):
    response = client.get(reverse("topic-list"))
    assert response.status_code == 200
    assert names_on(response) == ["PAY_ORDER_CREATED"]
    assert "payments" in response.text and "sandbox" in response.text


def test_the_topic_list_searches_names_and_descriptions(client, cluster, team):
    Topic.objects.create(cluster=cluster, team=team, name="ORDER_PAID", description="payments are settled")
    Topic.objects.create(cluster=cluster, team=team, name="USER_SIGNED_UP", description="new accounts")
    Topic.objects.create(cluster=cluster, team=team, name="REFUND_DONE", description="order refunds")
    assert names_on(client.get(reverse("topic-list"), {"q": "order"})) == ["ORDER_PAID", "REFUND_DONE"]
    assert names_on(client.get(reverse("topic-list"), {"q": "accounts"})) == ["USER_SIGNED_UP"]


def test_the_topic_list_filters_by_cluster_team_state_and_my_teams(client, member, cluster, team, other_team):
    from portal.models import Cluster

    second = Cluster.objects.create(name="second")
    Topic.objects.create(cluster=cluster, team=team, name="MINE_ACTIVE")
    Topic.objects.create(cluster=cluster, team=team, name="MINE_MISSING", state=RegistryState.MISSING)
    Topic.objects.create(cluster=second, team=other_team, name="THEIRS_ELSEWHERE")
    url = reverse("topic-list")
    assert names_on(client.get(url, {"cluster": second.pk})) == ["THEIRS_ELSEWHERE"]
    assert names_on(client.get(url, {"team": team.pk})) == ["MINE_ACTIVE", "MINE_MISSING"]
    assert names_on(client.get(url, {"state": "missing"})) == ["MINE_MISSING"]
    client.force_login(member)
    assert names_on(client.get(url, {"mine": "on"})) == ["MINE_ACTIVE", "MINE_MISSING"]
    assert names_on(client.get(url, {"mine": "on", "state": "active"})) == ["MINE_ACTIVE"]


def test_the_topic_list_pages_by_fifty_and_keeps_the_filters_in_page_links(client, cluster, team):
    Topic.objects.bulk_create(
        [Topic(cluster=cluster, team=team, name=f"BULK_{i:03d}") for i in range(PAGE_SIZE + 7)]
        + [Topic(cluster=cluster, team=team, name="OTHER")]
    )
    first = client.get(reverse("topic-list"), {"q": "BULK"})
    assert len(names_on(first)) == PAGE_SIZE
    assert "?q=BULK&amp;page=2" in first.text
    second = client.get(reverse("topic-list"), {"q": "BULK", "page": 2})
    assert names_on(second) == [f"BULK_{i:03d}" for i in range(PAGE_SIZE, PAGE_SIZE + 7)]
    assert names_on(client.get(reverse("topic-list"), {"q": "BULK", "page": "junk"}))[0] == "BULK_000"


def test_the_topic_list_runs_the_same_queries_for_one_row_and_for_a_full_page(
    as_member, cluster, team, django_assert_max_num_queries
):
    """No per-row queries: team, cluster and state come with the page's one select."""
    Topic.objects.create(cluster=cluster, team=team, name="ONLY_ONE")
    with django_assert_max_num_queries(100) as one_row:
        as_member.get(reverse("topic-list"))
    Topic.objects.bulk_create([Topic(cluster=cluster, team=team, name=f"MANY_{i:03d}") for i in range(120)])
    with django_assert_max_num_queries(len(one_row.captured_queries)):
        response = as_member.get(reverse("topic-list"))
    assert len(names_on(response)) == PAGE_SIZE


def test_anonymous_visitors_see_the_public_topic_page_without_groups_or_associated_users(
    client, topic, team, member, outsider
):
    group = ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_PAYMENTS")
    Subscription.objects.create(consumer_group=group, topic=topic, tag_expression="TagA || TagB")
    TopicAssociation.objects.create(topic=topic, user=outsider, role=AssociationRole.CONSUMER)
    response = client.get(reverse("topic-detail", args=[topic.pk]))
    assert response.status_code == 200
    assert "PAY_ORDER_CREATED" in response.text and "payments" in response.text
    assert "GID_PAYMENTS" not in response.text and "olga" not in response.text
    assert reverse("topic-apply-change", args=[topic.pk]) not in response.text


def test_the_topic_page_shows_subscribers_producers_associations_and_pending_applications(
    as_member, topic, team, member, outsider
):
    group = ConsumerGroup.objects.create(
        cluster=topic.cluster, team=team, name="GID_PAYMENTS", message_model=MessageModel.BROADCASTING
    )
    Subscription.objects.create(consumer_group=group, topic=topic, tag_expression="TagA || TagB")
    producer = ProducerGroup.objects.create(cluster=topic.cluster, team=team, name="PID_PAYMENTS")
    producer.topics.add(topic)
    TopicAssociation.objects.create(topic=topic, user=outsider, role=AssociationRole.CONSUMER)
    pending = Application.objects.create(
        kind=ApplicationKind.TOPIC_CHANGE,
        applicant=member,
        team=team,
        cluster=topic.cluster,
        topic=topic,
        payload={"queue_nums": 16},
    )
    response = as_member.get(reverse("topic-detail", args=[topic.pk]))
    text = response.text
    assert "GID_PAYMENTS" in text and "TagA || TagB" in text and "broadcasting" in text
    assert "PID_PAYMENTS" in text and "olga" in text
    assert reverse("application-detail", args=[pending.pk]) in text
    assert reverse("topic-apply-change", args=[topic.pk]) in text
    assert reverse("entry-description", args=["topic", topic.pk]) in text
    # a member may not apply for deletion (team admins may)
    assert reverse("topic-apply-delete", args=[topic.pk]) not in text


def test_other_teams_see_association_instead_of_change_actions(client, topic, outsider):
    client.force_login(outsider)
    text = client.get(reverse("topic-detail", args=[topic.pk])).text
    assert reverse("topic-associate", args=[topic.pk]) in text
    assert reverse("topic-apply-change", args=[topic.pk]) not in text
    assert reverse("entry-description", args=["topic", topic.pk]) not in text


def test_the_topic_page_offers_deletion_to_team_admins(client, topic, team_admin):
    client.force_login(team_admin)
    assert reverse("topic-apply-delete", args=[topic.pk]) in client.get(reverse("topic-detail", args=[topic.pk])).text


def test_the_consumer_group_list_searches_and_filters(as_member, cluster, team, other_team):
    ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_ORDERS", description="order pipeline")
    ConsumerGroup.objects.create(cluster=cluster, team=other_team, name="GID_TRUCKS")
    url = reverse("consumer-group-list")
    assert names_on(as_member.get(url)) == ["GID_ORDERS", "GID_TRUCKS"]
    assert names_on(as_member.get(url, {"q": "pipeline"})) == ["GID_ORDERS"]
    assert names_on(as_member.get(url, {"mine": "on"})) == ["GID_ORDERS"]
    assert names_on(as_member.get(url, {"team": other_team.pk})) == ["GID_TRUCKS"]


def test_the_consumer_group_page_shows_subscriptions_and_message_model(as_member, topic, team):
    group = ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_PAYMENTS")
    Subscription.objects.create(consumer_group=group, topic=topic, tag_expression="Created")
    text = as_member.get(reverse("consumer-group-detail", args=[group.pk])).text
    assert "PAY_ORDER_CREATED" in text and "Created" in text and "clustering" in text
    assert reverse("entry-description", args=["consumer-group", group.pk]) in text


def test_the_producer_group_page_shows_its_topics(as_member, topic, team):
    group = ProducerGroup.objects.create(cluster=topic.cluster, team=team, name="PID_PAYMENTS")
    group.topics.add(topic)
    text = as_member.get(reverse("producer-group-detail", args=[group.pk])).text
    assert "PID_PAYMENTS" in text and reverse("topic-detail", args=[topic.pk]) in text


def test_the_owning_team_edits_a_description_without_an_application(as_member, topic):
    url = reverse("entry-description", args=["topic", topic.pk])
    assert as_member.get(url).status_code == 200
    response = as_member.post(url, {"description": "  Orders created by the shop.  "})
    assert response.status_code == 302 and response.url == reverse("topic-detail", args=[topic.pk])
    topic.refresh_from_db()
    assert topic.description == "Orders created by the shop."
    assert not Application.objects.exists()


def test_an_unknown_entry_kind_is_not_found(as_member, topic):
    assert as_member.get(reverse("entry-description", args=["queue", topic.pk])).status_code == 404

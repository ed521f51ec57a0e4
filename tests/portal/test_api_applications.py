"""Applications through the API: submitting with field-level errors for bad input (never a 500), approving so that
the sandbox cluster really changes, the 502 path when the cluster does not answer, and the 409 of a decision on an
application that is no longer pending."""

import json
import socket

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from monitor.remoting.admin import MQAdmin
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    Cluster,
    ConsumerGroup,
    NameServer,
    Notification,
    Topic,
)
from portal.services import applications


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def submit(client, **body):
    return client.post(reverse("api:application-list"), body, format="json")


def new_topic(team, cluster, name, **payload):
    return {
        "kind": ApplicationKind.TOPIC_CREATE,
        "team": team.pk,
        "cluster": cluster.pk,
        "payload": {"name": name, **payload},
    }


@pytest.fixture
def dead_cluster(db):
    """A registered cluster whose only name server refuses connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = Cluster.objects.create(name="dead")
    NameServer.objects.create(cluster=dead, address=f"127.0.0.1:{port}")
    return dead


def test_a_member_applies_for_a_topic(member, team, cluster):
    response = submit(logged_in(member), **new_topic(team, cluster, "API_ORDERS", queue_nums=4), reason="orders")
    assert response.status_code == 201, response.data
    assert response.data["state"] == ApplicationState.PENDING
    assert response.data["applicant"] == "mia"
    assert response.data["subject_name"] == "API_ORDERS"
    assert response.data["payload"] == {
        "name": "API_ORDERS",
        "queue_nums": 4,
        "ordered": False,
        "trace_enabled": False,
        "description": "",
    }
    assert Application.objects.get(pk=response.data["id"]).reason == "orders"


def test_a_change_takes_the_cluster_of_its_topic(member, team, topic):
    response = submit(
        logged_in(member), kind=ApplicationKind.TOPIC_CHANGE, team=team.pk, topic=topic.pk, payload={"queue_nums": 16}
    )
    assert response.status_code == 201, response.data
    assert (response.data["cluster"], response.data["topic"]) == (topic.cluster_id, topic.pk)


def test_applying_for_another_team_is_forbidden(outsider, team, cluster):
    response = submit(logged_in(outsider), **new_topic(team, cluster, "NOT_MINE"))
    assert response.status_code == 403
    assert not Application.objects.exists()


def test_a_deletion_needs_a_team_admin(member, team_admin, team, topic):
    body = {"kind": ApplicationKind.TOPIC_DELETE, "team": team.pk, "topic": topic.pk}
    assert submit(logged_in(member), **body).status_code == 403
    assert submit(logged_in(team_admin), **body).status_code == 201


HUGE = "A" * 100_000


@pytest.mark.parametrize(
    ("change", "errors"),
    [
        ({"payload": {"name": "bad name!"}}, {"payload": {"name"}}),
        ({"payload": {"name": "TBW102"}}, {"payload": {"name"}}),
        ({"payload": {"name": "%RETRY%mine"}}, {"payload": {"name"}}),
        ({"payload": {"name": HUGE}}, {"payload": {"name"}}),
        ({"payload": {"name": "OK_NAME", "queue_nums": 0}}, {"payload": {"queue_nums"}}),
        ({"payload": {"name": "OK_NAME", "queue_nums": 100_000}}, {"payload": {"queue_nums"}}),
        ({"payload": {"name": "OK_NAME", "queue_nums": "many"}}, {"payload": {"queue_nums"}}),
        ({"payload": {"name": "OK_NAME", "queue_nums": 2**80}}, {"payload": {"queue_nums"}}),
        ({"payload": {"name": "OK_NAME", "ordered": "maybe"}}, {"payload": {"ordered"}}),
        ({"payload": {"name": "OK_NAME", "partitions": 3}}, {"payload": {"partitions"}}),
        ({"payload": {"name": ["OK_NAME"]}}, {"payload": {"name"}}),
        ({"payload": ["OK_NAME"]}, {"payload": set()}),
        ({"payload": "OK_NAME"}, {"payload": set()}),
        ({"cluster": 987654}, {"cluster": set()}),
        ({"cluster": "sandbox"}, {"cluster": set()}),
        ({"team": 2**80}, {"team": set()}),
        ({"team": None}, {"team": set()}),
        ({"kind": "cluster_delete"}, {"kind": set()}),
        ({"kind": HUGE}, {"kind": set()}),
        ({"reason": {"why": "because"}}, {"reason": set()}),
        ({"topic": "PAY_ORDER_CREATED"}, {"topic": set()}),
    ],
)
def test_bad_input_gets_field_errors(member, team, cluster, change, errors):
    body = {**new_topic(team, cluster, "OK_NAME"), **change}
    response = submit(logged_in(member), **body)
    assert response.status_code == 400, response.data
    assert set(response.data) == set(errors), response.data
    for key, nested in errors.items():
        if nested:
            assert set(response.data[key]) == nested, response.data
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        (ApplicationKind.CONSUMER_GROUP_CREATE, {"name": "GID_X", "subscriptions": []}, "subscriptions"),
        (
            ApplicationKind.CONSUMER_GROUP_CREATE,
            {"name": "GID_X", "subscriptions": [{"topic_id": 2**80}]},
            "subscriptions",
        ),
        (ApplicationKind.CONSUMER_GROUP_CREATE, {"name": "GID_X", "subscriptions": "all"}, "subscriptions"),
        (ApplicationKind.PRODUCER_GROUP_CREATE, {"name": "PID_X", "topic_ids": [2**80]}, "topic_ids"),
        (ApplicationKind.PRODUCER_GROUP_CREATE, {"name": "PID_X", "topic_ids": {"a": 1}}, "topic_ids"),
        (ApplicationKind.CONSUMER_GROUP_CREATE, {"name": "DEFAULT_CONSUMER", "subscriptions": [{}]}, "name"),
    ],
    ids=[
        "no-subscription",
        "huge-topic-id",
        "subscriptions-not-a-list",
        "huge-producer-topic-id",
        "ids-not-a-list",
        "system-group",
    ],
)
def test_bad_group_payloads_get_field_errors_under_payload(member, team, cluster, kind, payload, field):
    response = submit(logged_in(member), kind=kind, team=team.pk, cluster=cluster.pk, payload=payload)
    assert response.status_code == 400, response.data
    assert field in response.data["payload"], response.data


def test_a_change_without_its_topic_is_a_field_error(member, team, cluster):
    response = submit(logged_in(member), kind=ApplicationKind.TOPIC_CHANGE, team=team.pk, cluster=cluster.pk)
    assert response.status_code == 400
    assert set(response.data) == {"topic"}


def test_a_second_pending_deletion_is_a_non_field_error(team_admin, team, topic):
    body = {"kind": ApplicationKind.TOPIC_DELETE, "team": team.pk, "topic": topic.pk}
    assert submit(logged_in(team_admin), **body).status_code == 201
    response = submit(logged_in(team_admin), **body)
    assert response.status_code == 400
    assert set(response.data) == {"non_field_errors"}


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        ('{"kind": "topic_create", ', "application/json"),
        ("[1, 2", "application/json"),
        ("\xff\xfe", "application/json"),
        ("kind=topic_create", "application/xml"),
    ],
    ids=["truncated", "unclosed-list", "not-utf8", "unsupported-type"],
)
def test_malformed_bodies_are_refused_cleanly(member, content, content_type):
    response = logged_in(member).generic("POST", reverse("api:application-list"), content, content_type)
    assert response.status_code in (400, 415)
    assert "detail" in json.loads(response.content)


def test_a_json_list_body_is_a_validation_error(member):
    response = logged_in(member).post(reverse("api:application-list"), [1, 2], format="json")
    assert response.status_code == 400
    assert "non_field_errors" in response.data


def sandbox_topic_route(sandbox, name):
    with MQAdmin(sandbox.namesrv_addr) as admin:
        return admin.examine_topic_route_info(name)


def test_an_approved_topic_exists_on_every_master_of_the_sandbox(member, portal_admin, team, cluster, sandbox):
    submitted = submit(logged_in(member), **new_topic(team, cluster, "API_APPROVED_TOPIC", queue_nums=6)).data
    response = logged_in(portal_admin).post(
        reverse("api:application-approve", args=[submitted["id"]]), {"reason": "fine"}, "json"
    )
    assert response.status_code == 200, response.data
    assert response.data["state"] == ApplicationState.APPROVED
    assert (response.data["decided_by"], response.data["decision_reason"]) == ("ada", "fine")
    topic = Topic.objects.get(pk=response.data["topic"])
    assert (topic.name, topic.team, topic.queue_nums) == ("API_APPROVED_TOPIC", team, 6)
    route = sandbox_topic_route(sandbox, "API_APPROVED_TOPIC")
    assert sorted((q.broker_name, q.write_queue_nums) for q in route.queue_datas) == [
        ("broker-a", 6),
        ("broker-b", 6),
    ]
    assert Notification.objects.filter(user=member, title__startswith="Approved").exists()


def test_an_approved_consumer_group_exists_on_the_sandbox(member, portal_admin, team, cluster, sandbox, topic):
    body = {
        "kind": ApplicationKind.CONSUMER_GROUP_CREATE,
        "team": team.pk,
        "cluster": cluster.pk,
        "payload": {"name": "GID_API_APPROVED", "subscriptions": [{"topic_id": topic.pk, "tag_expression": "*"}]},
    }
    submitted = submit(logged_in(member), **body).data
    response = logged_in(portal_admin).post(reverse("api:application-approve", args=[submitted["id"]]))
    assert response.status_code == 200, response.data
    group = ConsumerGroup.objects.get(name="GID_API_APPROVED")
    assert list(group.topics.all()) == [topic]
    with MQAdmin(sandbox.namesrv_addr) as admin:
        masters = [data.master_addr for data in admin.examine_broker_cluster_info().broker_addr_table.values()]
        assert len(masters) == 2
        for addr in masters:
            assert "GID_API_APPROVED" in admin.get_all_subscription_group(addr).subscription_group_table


def test_a_topic_with_two_consumer_groups_is_applied_for_and_approved_once_through_the_api(
    member, portal_admin, team, cluster, sandbox
):
    groups = [{"name": "GID_API_BILLING", "tag_expression": "paid"}, {"name": "GID_API_AUDIT"}]
    response = submit(logged_in(member), **new_topic(team, cluster, "API_WITH_GROUPS", consumer_groups=groups))
    assert response.status_code == 201, response.data
    expected = [
        {"name": "GID_API_BILLING", "message_model": "CLUSTERING", "tag_expression": "paid", "description": ""},
        {"name": "GID_API_AUDIT", "message_model": "CLUSTERING", "tag_expression": "*", "description": ""},
    ]
    assert response.data["consumer_groups"] == expected

    approved = logged_in(portal_admin).post(reverse("api:application-approve", args=[response.data["id"]]))
    assert approved.status_code == 200, approved.data
    assert (approved.data["state"], approved.data["consumer_groups"]) == (ApplicationState.APPROVED, expected)
    topic = Topic.objects.get(pk=approved.data["topic"])
    for name in ("GID_API_BILLING", "GID_API_AUDIT"):
        group = ConsumerGroup.objects.get(name=name)
        assert (group.team, list(group.topics.all())) == (team, [topic])
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for data in admin.examine_broker_cluster_info().broker_addr_table.values():
            assert {"GID_API_BILLING", "GID_API_AUDIT"} <= set(
                admin.get_all_subscription_group(data.master_addr).subscription_group_table
            )


def test_an_invalid_consumer_group_refuses_the_topic_application_under_payload(member, team, cluster):
    groups = [{"name": "GID_FINE"}, {"name": "bad group!"}]
    response = submit(logged_in(member), **new_topic(team, cluster, "API_REFUSED", consumer_groups=groups))
    assert response.status_code == 400, response.data
    assert list(response.data) == ["payload"] and list(response.data["payload"]) == ["consumer_groups"]
    assert response.data["payload"]["consumer_groups"][0].startswith("bad group!: Only letters, digits")
    assert not Application.objects.exists()


def test_the_schema_documents_the_consumer_groups_of_a_new_topic(db):
    schema = APIClient().get(reverse("api:schema"), {"format": "json"}).json()
    groups = schema["components"]["schemas"]["Application"]["properties"]["consumer_groups"]
    assert groups["items"]["$ref"].endswith("/TopicGroup")
    assert set(schema["components"]["schemas"]["TopicGroup"]["properties"]) == {
        "name",
        "message_model",
        "tag_expression",
        "description",
    }
    create = schema["paths"]["/api/v1/applications/"]["post"]
    assert "consumer_groups" in create["description"]
    example = create["requestBody"]["content"]["application/json"]["examples"]["ANewTopicWithTwoConsumerGroups"]
    assert len(example["value"]["payload"]["consumer_groups"]) == 2


def test_a_cluster_that_does_not_answer_gives_502_and_the_application_stays_pending(
    member, portal_admin, team, dead_cluster
):
    submitted = submit(logged_in(member), **new_topic(team, dead_cluster, "API_NEVER_CREATED")).data
    response = logged_in(portal_admin).post(reverse("api:application-approve", args=[submitted["id"]]))
    assert response.status_code == 502
    assert set(response.data) == {"detail"}
    assert "dead" in response.data["detail"]
    application = Application.objects.get(pk=submitted["id"])
    assert application.state == ApplicationState.PENDING
    assert application.last_error == response.data["detail"]
    assert application.attempts == 1
    assert not Topic.objects.filter(name="API_NEVER_CREATED").exists()
    shown = logged_in(member).get(reverse("api:application-detail", args=[submitted["id"]])).data
    assert (shown["state"], shown["last_error"]) == ("pending", application.last_error)


def test_deciding_an_application_that_is_no_longer_pending_is_a_conflict(member, portal_admin, team, cluster):
    submitted = submit(logged_in(member), **new_topic(team, cluster, "API_CANCELLED")).data
    assert logged_in(member).post(reverse("api:application-cancel", args=[submitted["id"]])).status_code == 200
    admin = logged_in(portal_admin)
    for action, body in (("approve", {}), ("reject", {"reason": "late"}), ("cancel", {})):
        response = admin.post(reverse(f"api:application-{action}", args=[submitted["id"]]), body, "json")
        assert response.status_code == 409, (action, response.data)
        assert "no longer pending" in response.data["detail"]
    assert Application.objects.get(pk=submitted["id"]).state == ApplicationState.CANCELLED


def test_only_the_applicant_cancels_through_the_api(member, portal_admin, team, cluster):
    submitted = submit(logged_in(member), **new_topic(team, cluster, "API_NOT_YOURS")).data
    url = reverse("api:application-cancel", args=[submitted["id"]])
    assert logged_in(portal_admin).post(url).status_code == 403
    assert Application.objects.get(pk=submitted["id"]).state == ApplicationState.PENDING
    assert logged_in(member).post(url).data["state"] == "cancelled"


def test_a_rejection_needs_a_reason_and_notifies_the_applicant(member, portal_admin, team, cluster):
    submitted = submit(logged_in(member), **new_topic(team, cluster, "API_REJECTED")).data
    url = reverse("api:application-reject", args=[submitted["id"]])
    admin = logged_in(portal_admin)
    missing = admin.post(url, {"reason": "  "}, "json")
    assert missing.status_code == 400
    assert set(missing.data) == {"reason"}
    rejected = admin.post(url, {"reason": "use PAY_ORDER_CREATED"}, "json")
    assert rejected.status_code == 200, rejected.data
    assert (rejected.data["state"], rejected.data["decision_reason"]) == ("rejected", "use PAY_ORDER_CREATED")
    assert Notification.objects.filter(user=member, title__startswith="Rejected").exists()


def test_applicants_see_their_teams_applications_and_filter_them(member, team_admin, outsider, team, cluster):
    mine = applications.submit(
        member, kind=ApplicationKind.TOPIC_CREATE, team=team, cluster=cluster, payload={"name": "API_LISTED"}
    )
    applications.cancel(
        applications.submit(
            member, kind=ApplicationKind.TOPIC_CREATE, team=team, cluster=cluster, payload={"name": "API_GONE"}
        ),
        by=member,
    )

    def listed(user, query=None):
        response = logged_in(user).get(reverse("api:application-list"), query or {})
        assert response.status_code == 200, response.data
        return [item["subject_name"] for item in response.data["results"]]

    assert listed(team_admin) == ["API_GONE", "API_LISTED"]
    assert listed(outsider) == []
    assert listed(member, {"state": "pending"}) == ["API_LISTED"]
    assert listed(member, {"kind": "topic_delete"}) == []
    assert listed(member, {"applicant": "mia", "ordering": "created_at"}) == ["API_LISTED", "API_GONE"]
    assert logged_in(outsider).get(reverse("api:application-detail", args=[mine.pk])).status_code == 404

"""The application workflow: what may be asked, who decides, and what approval does to a real cluster."""

import datetime
import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.utils import timezone

from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from monitor.sandbox.cluster import SandboxCluster
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    Cluster,
    ConsumerGroup,
    NameServer,
    Notification,
    Origin,
    ProducerGroup,
    RegistryState,
    Subscription,
    Topic,
    TopicAssociation,
)
from portal.services import applications, cluster_ops
from portal.services.applications import InvalidTransition, workflow
from portal.services.cluster_ops import ClusterOperationError
from tests.support.factories import make_user

K = ApplicationKind


# --- helpers ------------------------------------------------------------------------------------------------------


@pytest.fixture
def wire(sandbox):
    with MQAdmin(sandbox.namesrv_addr, timeout=2) as admin:
        yield admin


def on_masters(admin, topic):
    """broker name -> the topic's config on that master (None where absent)."""
    info = admin.examine_broker_cluster_info()
    return {
        name: admin.get_all_topic_config(data.master_addr).topic_config_table.get(topic)
        for name, data in info.broker_addr_table.items()
    }


def group_on_masters(admin, group):
    info = admin.examine_broker_cluster_info()
    return {
        name: admin.get_all_subscription_group(data.master_addr).subscription_group_table.get(group)
        for name, data in info.broker_addr_table.items()
    }


def routed(admin, topic) -> bool:
    try:
        admin.examine_topic_route_info(topic)
    except RemotingError as exc:
        assert exc.code == ResponseCode.TOPIC_NOT_EXIST
        return False
    return True


def apply_topic(user, team, cluster, name, **payload):
    return applications.submit(
        user, kind=K.TOPIC_CREATE, team=team, cluster=cluster, payload={"name": name, **payload}, reason="we need it"
    )


def errors_of(call) -> dict:
    with pytest.raises(ValidationError) as caught:
        call()
    return caught.value.message_dict


@pytest.fixture
def fast_timeouts(settings):
    settings.ROCKETMQ_REQUEST_TIMEOUT = 0.5


@pytest.fixture
def own_sandbox():
    """A cluster of our own to break (two broker names, masters only)."""
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


@pytest.fixture
def own_cluster(own_sandbox, db):
    """own_sandbox registered with its brokers discovered, as register_cluster leaves a cluster."""
    registered = Cluster.objects.create(name="own")
    NameServer.objects.create(cluster=registered, address=own_sandbox.namesrv_addr)
    cluster_ops.discover_brokers(registered)
    return registered


# --- the story the issue asks for ---------------------------------------------------------------------------------


def test_a_member_applies_for_a_topic_and_a_group_an_admin_approves_and_both_exist_on_the_cluster(
    member, team, cluster, portal_admin, wire
):
    topic_app = apply_topic(member, team, cluster, "E2E_ORDERS", queue_nums=4, description="orders")
    approved = applications.approve(topic_app, by=portal_admin, reason="fine")
    topic = Topic.objects.get(cluster=cluster, name="E2E_ORDERS")
    group_app = applications.submit(
        member,
        kind=K.CONSUMER_GROUP_CREATE,
        team=team,
        cluster=cluster,
        reason="to read orders",
        payload={"name": "E2E_ORDERS_READER", "subscriptions": [{"topic_id": topic.pk, "tag_expression": "paid"}]},
    )
    applications.approve(group_app, by=portal_admin)

    assert approved.state == ApplicationState.APPROVED and approved.topic == topic
    assert (approved.decided_by, approved.decision_reason, approved.attempts) == (portal_admin, "fine", 1)
    assert (topic.team, topic.queue_nums, topic.origin, topic.description) == (team, 4, Origin.APPLIED, "orders")
    configs = on_masters(wire, "E2E_ORDERS")
    assert set(configs) == {"broker-a", "broker-b"}
    assert {(c.read_queue_nums, c.write_queue_nums) for c in configs.values()} == {(4, 4)}
    assert sorted(q.broker_name for q in wire.examine_topic_route_info("E2E_ORDERS").queue_datas) == [
        "broker-a",
        "broker-b",
    ]
    group = ConsumerGroup.objects.get(cluster=cluster, name="E2E_ORDERS_READER")
    assert [(s.topic, s.tag_expression) for s in group.subscriptions.all()] == [(topic, "paid")]
    assert all(config is not None for config in group_on_masters(wire, "E2E_ORDERS_READER").values())
    assert Application.objects.get(pk=group_app.pk).consumer_group == group


# --- a new topic with its consumer groups: one application, one approval ------------------------------------------


def readers(*names, **fields):
    return [{"name": name, **fields} for name in names]


def test_one_approval_creates_a_topic_and_its_consumer_groups_on_the_cluster_and_in_the_registry(
    member, team, cluster, portal_admin, wire
):
    application = apply_topic(
        member,
        team,
        cluster,
        "WITH_GROUPS",
        queue_nums=4,
        consumer_groups=[
            {"name": "WITH_GROUPS_BILLING", "tag_expression": "paid || refunded", "description": "billing"},
            {"name": "WITH_GROUPS_AUDIT", "message_model": "BROADCASTING"},
        ],
    )
    assert application.payload["consumer_groups"] == [
        {
            "name": "WITH_GROUPS_BILLING",
            "message_model": "CLUSTERING",
            "description": "billing",
            "tag_expression": "paid || refunded",
        },
        {"name": "WITH_GROUPS_AUDIT", "message_model": "BROADCASTING", "description": "", "tag_expression": "*"},
    ]

    applications.approve(application, by=portal_admin)

    topic = Topic.objects.get(cluster=cluster, name="WITH_GROUPS")
    assert (topic.team, topic.origin) == (team, Origin.APPLIED)
    groups = {group.name: group for group in ConsumerGroup.objects.filter(cluster=cluster)}
    assert set(groups) == {"WITH_GROUPS_BILLING", "WITH_GROUPS_AUDIT"}
    assert {(g.team, g.origin, g.state) for g in groups.values()} == {(team, Origin.APPLIED, RegistryState.ACTIVE)}
    assert (groups["WITH_GROUPS_AUDIT"].message_model, groups["WITH_GROUPS_BILLING"].description) == (
        "BROADCASTING",
        "billing",
    )
    assert sorted((s.consumer_group.name, s.topic, s.tag_expression) for s in Subscription.objects.all()) == [
        ("WITH_GROUPS_AUDIT", topic, "*"),
        ("WITH_GROUPS_BILLING", topic, "paid || refunded"),
    ]
    assert all(config is not None for config in on_masters(wire, "WITH_GROUPS").values())
    for name in groups:
        assert all(config is not None for config in group_on_masters(wire, name).values())
    assert group_on_masters(wire, "WITH_GROUPS_AUDIT")["broker-a"].consume_broadcast_enable
    application.refresh_from_db()
    assert (application.state, application.topic, application.attempts) == (ApplicationState.APPROVED, topic, 1)
    assert AuditEntry.objects.filter(action="consumergroup.created").count() == 2


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (readers("bad name"), "bad name: Only letters, digits"),
        (readers("DEFAULT_CONSUMER"), "DEFAULT_CONSUMER: "),
        (readers("TWIN", "TWIN"), "TWIN: This group is asked for twice."),
        (readers("TAGGED", tag_expression="* || TagA"), "TAGGED, tag_expression: "),
        (readers("MODELLED", message_model="PUSH"), "MODELLED, message_model: "),
        (readers("COLOURED", colour="red"), "COLOURED, colour: This cannot be set here."),
        ([{"message_model": "CLUSTERING"}], "Group 1: The name must not be blank."),
        ("GID_A GID_B", "Give a list of consumer groups"),
        (readers(*(f"MANY_{i}" for i in range(21))), "At most 20 consumer groups"),
    ],
)
def test_an_invalid_consumer_group_refuses_the_whole_topic_application_naming_the_group(
    member, team, cluster, groups, message
):
    errors = errors_of(lambda: apply_topic(member, team, cluster, "REFUSED_WITH_GROUPS", consumer_groups=groups))

    assert set(errors) == {"consumer_groups"}
    assert errors["consumer_groups"][0].startswith(message)
    assert not Application.objects.exists()


def test_a_group_name_taken_or_pending_elsewhere_refuses_the_topic_application(member, team, cluster, topic):
    existing = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_EXISTS")
    pending = consumer_group(member, team, cluster, name="GID_PENDING", subscriptions=[{"topic_id": topic.pk}])

    errors = errors_of(
        lambda: apply_topic(member, team, cluster, "NEW_TOPIC", consumer_groups=readers(existing.name, "GID_PENDING"))
    )

    assert errors == {
        "consumer_groups": [
            "GID_EXISTS: GID_EXISTS already exists on cluster sandbox (owned by payments).",
            f"GID_PENDING: Application #{pending.pk} for GID_PENDING is already pending.",
        ]
    }


def test_a_group_a_pending_topic_application_asks_for_cannot_be_asked_for_again(member, team, cluster, topic):
    first = apply_topic(member, team, cluster, "FIRST_TOPIC", consumer_groups=readers("GID_CLAIMED"))

    alone = errors_of(
        lambda: consumer_group(member, team, cluster, name="GID_CLAIMED", subscriptions=[{"topic_id": topic.pk}])
    )
    with_topic = errors_of(
        lambda: apply_topic(member, team, cluster, "SECOND_TOPIC", consumer_groups=readers("GID_CLAIMED"))
    )

    assert alone == {"name": [f"Application #{first.pk} for GID_CLAIMED is already pending."]}
    assert with_topic == {
        "consumer_groups": [f"GID_CLAIMED: Application #{first.pk} for GID_CLAIMED is already pending."]
    }


def test_a_failure_creating_a_group_on_the_cluster_leaves_no_registry_rows_and_a_retry_completes_it(
    member, team, portal_admin, own_sandbox, own_cluster, fast_timeouts, monkeypatch
):
    application = apply_topic(member, team, own_cluster, "HALF_WAY", consumer_groups=readers("GID_ONE", "GID_TWO"))
    create_topic = cluster_ops.create_topic

    def create_topic_then_break_broker_b(*args):
        create_topic(*args)
        own_sandbox.hang("broker-b")

    monkeypatch.setattr(cluster_ops, "create_topic", create_topic_then_break_broker_b)
    with pytest.raises(ClusterOperationError, match="Creating consumer group GID_ONE on broker broker-b"):
        applications.approve(application, by=portal_admin)

    application.refresh_from_db()
    assert (application.state, application.attempts) == (ApplicationState.PENDING, 1)
    assert "GID_ONE" in application.last_error
    assert not Topic.objects.exists() and not ConsumerGroup.objects.exists() and not Subscription.objects.exists()
    assert not AuditEntry.objects.filter(action__endswith=".created").exists()

    monkeypatch.setattr(cluster_ops, "create_topic", create_topic)
    own_sandbox.heal()
    applications.approve(application, by=portal_admin)

    topic = Topic.objects.get(name="HALF_WAY")
    assert sorted(ConsumerGroup.objects.filter(team=team).values_list("name", flat=True)) == ["GID_ONE", "GID_TWO"]
    assert Subscription.objects.filter(topic=topic).count() == 2
    with MQAdmin(own_sandbox.namesrv_addr, timeout=2) as admin:
        for name in ("GID_ONE", "GID_TWO"):
            assert all(config is not None for config in group_on_masters(admin, name).values())


def test_rejecting_a_topic_application_rejects_its_groups_and_frees_their_names(
    member, team, cluster, portal_admin, topic
):
    application = apply_topic(member, team, cluster, "NOT_WANTED", consumer_groups=readers("GID_NOT_WANTED"))

    applications.reject(application, by=portal_admin, reason="use the shared topic")

    assert Application.objects.get(pk=application.pk).state == ApplicationState.REJECTED
    assert not Topic.objects.filter(name="NOT_WANTED").exists() and not ConsumerGroup.objects.exists()
    again = consumer_group(member, team, cluster, name="GID_NOT_WANTED", subscriptions=[{"topic_id": topic.pk}])
    assert again.is_pending


# --- submit: validation per kind ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({"name": ""}, {"name"}),
        ({"name": "has space"}, {"name"}),
        ({"name": "%RETRY%mine"}, {"name"}),
        ({"name": "TBW102"}, {"name"}),
        ({"name": "RMQ_SYS_TRACE_TOPIC"}, {"name"}),
        ({"name": "x" * 128}, {"name"}),
        ({"name": "OK_NAME", "queue_nums": 0}, {"queue_nums"}),
        ({"name": "OK_NAME", "queue_nums": 257}, {"queue_nums"}),
        ({"name": "OK_NAME", "queue_nums": "many"}, {"queue_nums"}),
        ({"name": "bad name", "queue_nums": -1}, {"name", "queue_nums"}),
        ({"name": "OK_NAME", "colour": "red"}, {"colour"}),
    ],
)
def test_topic_create_is_validated_per_field(member, team, cluster, payload, fields):
    assert (
        set(
            errors_of(
                lambda: applications.submit(member, kind=K.TOPIC_CREATE, team=team, cluster=cluster, payload=payload)
            )
        )
        == fields
    )
    assert not Application.objects.exists()


def test_a_topic_name_taken_on_the_cluster_is_refused_naming_the_owner(member, team, cluster, topic):
    errors = errors_of(lambda: apply_topic(member, team, cluster, topic.name))

    assert errors == {"name": [f"{topic.name} already exists on cluster sandbox (owned by payments)."]}


def test_a_topic_name_another_pending_application_asks_for_is_refused(member, team, cluster):
    first = apply_topic(member, team, cluster, "TWICE")

    assert errors_of(lambda: apply_topic(member, team, cluster, "TWICE")) == {
        "name": [f"Application #{first.pk} for TWICE is already pending."]
    }


def test_the_clusters_own_trace_topic_is_refused(member, team, cluster):
    Cluster.objects.filter(pk=cluster.pk).update(trace_topic="MY_TRACE")
    cluster.refresh_from_db()

    assert set(errors_of(lambda: apply_topic(member, team, cluster, "MY_TRACE"))) == {"name"}


def test_a_topic_create_payload_is_stored_normalized(member, team, cluster):
    application = apply_topic(member, team, cluster, " NORMAL ", queue_nums="16", ordered=True)

    assert application.payload == {
        "name": "NORMAL",
        "queue_nums": 16,
        "ordered": True,
        "trace_enabled": False,
        "description": "",
    }
    assert (application.state, application.applicant, application.reason) == ("pending", member, "we need it")


def consumer_group(member, team, cluster, **payload):
    return applications.submit(
        member, kind=K.CONSUMER_GROUP_CREATE, team=team, cluster=cluster, payload={"name": "CG_OK", **payload}
    )


def test_a_consumer_group_needs_at_least_one_subscription(member, team, cluster):
    assert set(errors_of(lambda: consumer_group(member, team, cluster, subscriptions=[]))) == {"subscriptions"}
    assert set(errors_of(lambda: consumer_group(member, team, cluster))) == {"subscriptions"}


def test_subscriptions_must_name_active_topics_of_the_same_cluster(member, team, cluster, topic):
    elsewhere = Cluster.objects.create(name="elsewhere")
    foreign = Topic.objects.create(cluster=elsewhere, team=team, name="FOREIGN")
    missing = Topic.objects.create(cluster=cluster, team=team, name="GONE", state=RegistryState.MISSING)

    for topic_id in (foreign.pk, missing.pk, 999_999, "abc", 2**80, -1, True):
        subscriptions = [{"topic_id": topic_id, "tag_expression": "*"}]
        assert set(errors_of(lambda s=subscriptions: consumer_group(member, team, cluster, subscriptions=s))) == {
            "subscriptions"
        }


@pytest.mark.parametrize("expression", ["TagA ||", "* || TagA", "   "])
def test_tag_expressions_follow_rocketmqs_syntax(member, team, cluster, topic, expression):
    subscriptions = [{"topic_id": topic.pk, "tag_expression": expression}]

    assert set(errors_of(lambda: consumer_group(member, team, cluster, subscriptions=subscriptions))) == {
        "subscriptions"
    }


def test_subscribing_to_another_teams_topic_is_allowed(outsider, other_team, cluster, topic):
    application = applications.submit(
        outsider,
        kind=K.CONSUMER_GROUP_CREATE,
        team=other_team,
        cluster=cluster,
        payload={"name": "THEIR_READER", "subscriptions": [{"topic_id": topic.pk}]},
    )

    assert application.payload["subscriptions"] == [{"topic_id": topic.pk, "tag_expression": "*"}]


def test_a_consumer_group_is_validated_per_field(member, team, cluster, topic):
    errors = errors_of(
        lambda: consumer_group(
            member,
            team,
            cluster,
            name="DEFAULT_CONSUMER",
            message_model="PUSH",
            subscriptions=[{"topic_id": topic.pk}, {"topic_id": topic.pk}],
        )
    )

    assert set(errors) == {"name", "message_model", "subscriptions"}


def test_producer_group_topics_must_exist(member, team, cluster, topic):
    def producer_group(topic_ids):
        return applications.submit(
            member,
            kind=K.PRODUCER_GROUP_CREATE,
            team=team,
            cluster=cluster,
            payload={"name": "PG_OK", "topic_ids": topic_ids},
        )

    assert set(errors_of(lambda: producer_group([topic.pk, 999_999]))) == {"topic_ids"}
    assert set(errors_of(lambda: producer_group([2**80]))) == {"topic_ids"}
    assert set(errors_of(lambda: producer_group("all"))) == {"topic_ids"}
    assert producer_group([topic.pk, topic.pk]).payload["topic_ids"] == [topic.pk]


def change(member, topic, **payload):
    return applications.submit(
        member, kind=K.TOPIC_CHANGE, team=topic.team, cluster=topic.cluster, topic=topic, payload=payload
    )


def test_a_topic_change_must_change_something_it_may_change(member, topic):
    assert set(errors_of(lambda: change(member, topic))) == {"__all__"}
    assert set(errors_of(lambda: change(member, topic, queue_nums=topic.queue_nums))) == {"queue_nums"}
    assert set(errors_of(lambda: change(member, topic, trace_enabled=False))) == {"trace_enabled"}
    assert set(errors_of(lambda: change(member, topic, ordered=True))) == {"ordered"}
    assert set(errors_of(lambda: change(member, topic, queue_nums=1000))) == {"queue_nums"}


def test_a_topic_change_records_only_the_changed_keys_and_the_name(member, topic):
    application = change(member, topic, queue_nums="4")

    assert application.payload == {"name": topic.name, "queue_nums": 4}
    assert application.topic == topic


def test_only_one_change_per_topic_may_be_pending(member, topic):
    change(member, topic, queue_nums=16)

    assert set(errors_of(lambda: change(member, topic, trace_enabled=True))) == {"__all__"}


def test_a_topic_with_subscribed_groups_cannot_be_deleted_and_the_error_names_them(team_admin, team, cluster, topic):
    for name in ("READER_B", "READER_A"):
        group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=name)
        Subscription.objects.create(consumer_group=group, topic=topic)

    errors = errors_of(
        lambda: applications.submit(
            team_admin, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=topic, payload={}
        )
    )

    assert errors == {
        "__all__": [
            "Topic PAY_ORDER_CREATED cannot be deleted while consumer groups subscribe to it: READER_A, READER_B. "
            "Delete those groups (or their subscriptions) first."
        ]
    }


def associate(user, team, topic, role="producer"):
    return applications.submit(
        user, kind=K.TOPIC_ASSOCIATION, team=team, cluster=topic.cluster, topic=topic, payload={"role": role}
    )


def test_an_association_needs_a_role_and_another_teams_topic(outsider, other_team, member, team, topic):
    assert set(errors_of(lambda: associate(outsider, other_team, topic, role="owner"))) == {"role"}
    assert set(errors_of(lambda: associate(member, team, topic))) == {"topic"}


def test_an_association_may_not_be_asked_twice(outsider, other_team, topic):
    associate(outsider, other_team, topic)
    assert set(errors_of(lambda: associate(outsider, other_team, topic))) == {"role"}

    TopicAssociation.objects.create(topic=topic, user=outsider, role="consumer")
    assert set(errors_of(lambda: associate(outsider, other_team, topic, role="consumer"))) == {"role"}


def test_the_target_must_belong_to_the_team_and_the_cluster(portal_admin, other_team, topic):
    assert set(
        errors_of(
            lambda: applications.submit(
                portal_admin,
                kind=K.TOPIC_CHANGE,
                team=other_team,
                cluster=topic.cluster,
                topic=topic,
                payload={"queue_nums": 2},
            )
        )
    ) == {"team"}
    assert set(
        errors_of(
            lambda: applications.submit(
                portal_admin,
                kind=K.TOPIC_CHANGE,
                team=topic.team,
                cluster=Cluster.objects.create(name="x"),
                topic=topic,
                payload={"queue_nums": 2},
            )
        )
    ) == {"cluster"}


def test_missing_kind_team_cluster_or_target_are_field_errors(member, team, cluster):
    def submit(**arguments):
        return applications.submit(
            member,
            **{"kind": K.TOPIC_CREATE, "team": team, "cluster": cluster, "payload": {"name": "FINE"}, **arguments},
        )

    assert set(errors_of(lambda: submit(kind="topic_rename"))) == {"kind"}
    assert set(errors_of(lambda: submit(team=None))) == {"team"}
    assert set(errors_of(lambda: submit(cluster=None))) == {"cluster"}
    assert set(errors_of(lambda: submit(kind=K.TOPIC_CHANGE))) == {"topic"}


# --- submit: permissions ------------------------------------------------------------------------------------------


def test_only_members_of_a_team_apply_for_it(outsider, team, cluster):
    with pytest.raises(PermissionDenied):
        apply_topic(outsider, team, cluster, "NOT_YOURS")


def test_portal_admins_may_apply_for_any_team(portal_admin, team, cluster):
    assert apply_topic(portal_admin, team, cluster, "ADMIN_MADE").team == team


def test_deletions_need_a_team_admin(member, team_admin, team, cluster, topic):
    with pytest.raises(PermissionDenied):
        applications.submit(member, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=topic, payload={})

    application = applications.submit(
        team_admin, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=topic, payload={}
    )
    assert application.payload == {"name": topic.name}


def test_an_outsider_cannot_apply_to_change_another_teams_topic(outsider, other_team, topic):
    with pytest.raises(PermissionDenied):
        applications.submit(
            outsider,
            kind=K.TOPIC_CHANGE,
            team=other_team,
            cluster=topic.cluster,
            topic=topic,
            payload={"queue_nums": 2},
        )


# --- submit: audit and notifications -----------------------------------------------------------------------------


def test_submitting_is_audited_and_notifies_the_portal_admins(member, team, cluster, portal_admin, team_admin):
    application = apply_topic(member, team, cluster, "NOTIFY_ME")

    entry = AuditEntry.objects.get(action="application.submitted")
    assert (entry.actor, entry.object_id, entry.cluster) == (member, str(application.pk), cluster)
    assert entry.after["payload"]["name"] == "NOTIFY_ME"
    assert [(n.user, n.link) for n in Notification.objects.all()] == [
        (portal_admin, f"/applications/{application.pk}/")
    ]
    assert "NOTIFY_ME" in Notification.objects.get().title


def test_an_association_also_notifies_the_topics_team_admins(outsider, other_team, topic, team_admin, portal_admin):
    associate(outsider, other_team, topic)

    assert set(Notification.objects.values_list("user__username", flat=True)) == {"tom", "ada"}


# --- approve ------------------------------------------------------------------------------------------------------


def test_approval_is_audited_before_and_after_and_notifies_the_applicant(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "AUDITED_TOPIC")
    Notification.objects.all().delete()

    applications.approve(application, by=portal_admin, reason="ok")

    approved = AuditEntry.objects.get(action="application.approved")
    assert (approved.actor, approved.before["state"], approved.after["state"]) == (portal_admin, "pending", "approved")
    created = AuditEntry.objects.get(action="topic.created")
    assert (created.before, created.after["name"], created.cluster) == (None, "AUDITED_TOPIC", cluster)
    notification = Notification.objects.get()
    assert notification.user == member
    assert notification.title.startswith("Approved: application #")
    assert notification.body == "ok"


def test_only_deciders_approve(member, team, cluster, team_admin):
    application = apply_topic(member, team, cluster, "NOT_BY_YOU")

    for user in (member, team_admin):
        with pytest.raises(PermissionDenied):
            applications.approve(application, by=user)
    assert Application.objects.get(pk=application.pk).state == ApplicationState.PENDING


def test_a_topics_team_admin_decides_associations_with_it(outsider, other_team, topic, team_admin):
    application = associate(outsider, other_team, topic, role="consumer")

    applications.approve(application, by=team_admin)

    assert TopicAssociation.objects.filter(topic=topic, user=outsider, role="consumer").exists()


def test_approving_twice_is_an_invalid_transition(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "ONCE_ONLY")
    applications.approve(application, by=portal_admin)

    with pytest.raises(InvalidTransition, match="no longer pending"):
        applications.approve(application, by=portal_admin)
    assert AuditEntry.objects.filter(action="application.approved").count() == 1


def test_a_topic_change_is_applied_on_the_cluster_and_in_the_registry(member, team, cluster, portal_admin, wire):
    applications.approve(apply_topic(member, team, cluster, "GROWING", queue_nums=2), by=portal_admin)
    topic = Topic.objects.get(name="GROWING")

    applications.approve(change(member, topic, queue_nums=6, trace_enabled=True), by=portal_admin)

    topic.refresh_from_db()
    assert (topic.queue_nums, topic.trace_enabled) == (6, True)
    assert {c.write_queue_nums for c in on_masters(wire, "GROWING").values()} == {6}
    entry = AuditEntry.objects.get(action="topic.changed")
    assert (entry.before["queue_nums"], entry.after["queue_nums"]) == (2, 6)


def test_an_ordered_topic_is_recorded_ordered_in_the_name_server(member, team, cluster, portal_admin, wire):
    applications.approve(apply_topic(member, team, cluster, "IN_ORDER", queue_nums=3, ordered=True), by=portal_admin)

    assert wire.get_kv_config("ORDER_TOPIC_CONFIG", "IN_ORDER") == "broker-a:3;broker-b:3"
    assert Topic.objects.get(name="IN_ORDER").ordered


def test_deleting_a_topic_removes_it_from_the_brokers_the_name_server_and_the_registry(
    member, team_admin, team, cluster, portal_admin, wire
):
    applications.approve(apply_topic(member, team, cluster, "SHORT_LIVED"), by=portal_admin)
    topic = Topic.objects.get(name="SHORT_LIVED")
    deletion = applications.submit(team_admin, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=topic, payload={})

    applications.approve(deletion, by=portal_admin)

    assert on_masters(wire, "SHORT_LIVED") == {"broker-a": None, "broker-b": None}
    assert not routed(wire, "SHORT_LIVED")
    assert not Topic.objects.filter(name="SHORT_LIVED").exists()
    deletion.refresh_from_db()
    assert (deletion.state, deletion.topic, deletion.subject_name) == ("approved", None, "SHORT_LIVED")
    assert AuditEntry.objects.get(action="topic.deleted").before["name"] == "SHORT_LIVED"


def test_deleting_a_consumer_group_removes_it_and_its_subscriptions(
    member, team_admin, team, cluster, portal_admin, topic, wire
):
    creation = consumer_group(member, team, cluster, name="CG_TEMP", subscriptions=[{"topic_id": topic.pk}])
    applications.approve(creation, by=portal_admin)
    group = ConsumerGroup.objects.get(name="CG_TEMP")
    deletion = applications.submit(
        team_admin, kind=K.CONSUMER_GROUP_DELETE, team=team, cluster=cluster, consumer_group=group, payload={}
    )

    applications.approve(deletion, by=portal_admin)

    assert group_on_masters(wire, "CG_TEMP") == {"broker-a": None, "broker-b": None}
    assert not ConsumerGroup.objects.filter(name="CG_TEMP").exists()
    assert not Subscription.objects.filter(topic=topic).exists()


def test_producer_groups_live_only_in_the_registry(member, team_admin, team, cluster, portal_admin, topic):
    creation = applications.submit(
        member,
        kind=K.PRODUCER_GROUP_CREATE,
        team=team,
        cluster=cluster,
        payload={"name": "PG_REG", "topic_ids": [topic.pk], "description": "sends orders"},
    )
    applications.approve(creation, by=portal_admin)
    group = ProducerGroup.objects.get(name="PG_REG")
    assert (list(group.topics.all()), group.team, group.description) == ([topic], team, "sends orders")

    deletion = applications.submit(
        team_admin, kind=K.PRODUCER_GROUP_DELETE, team=team, cluster=cluster, producer_group=group, payload={}
    )
    applications.approve(deletion, by=portal_admin)
    assert not ProducerGroup.objects.filter(name="PG_REG").exists()


def test_approval_revalidates_a_topic_deletion_against_new_subscribers(team_admin, team, cluster, topic, portal_admin):
    deletion = applications.submit(team_admin, kind=K.TOPIC_DELETE, team=team, cluster=cluster, topic=topic, payload={})
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="LATE_READER")
    Subscription.objects.create(consumer_group=group, topic=topic)

    with pytest.raises(ValidationError, match="LATE_READER"):
        applications.approve(deletion, by=portal_admin)

    deletion.refresh_from_db()
    assert deletion.state == ApplicationState.PENDING
    assert "LATE_READER" in deletion.last_error
    assert Topic.objects.filter(pk=topic.pk).exists()


def test_an_application_whose_target_was_deleted_meanwhile_cannot_be_approved(member, topic, portal_admin):
    application = change(member, topic, queue_nums=2)
    topic.delete()

    with pytest.raises(ValidationError, match="PAY_ORDER_CREATED no longer exists"):
        applications.approve(application, by=portal_admin)
    application.refresh_from_db()
    assert (application.state, application.last_error) == ("pending", "PAY_ORDER_CREATED no longer exists.")


def test_a_topic_missing_from_its_cluster_cannot_be_changed(member, topic):
    Topic.objects.filter(pk=topic.pk).update(state=RegistryState.MISSING)
    topic.refresh_from_db()

    assert set(errors_of(lambda: change(member, topic, queue_nums=2))) == {"topic"}


def test_a_topic_a_sync_imported_while_its_approval_ran_is_taken_over(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "RACED_BY_SYNC", queue_nums=2)
    Topic.objects.create(cluster=cluster, team=None, origin=Origin.IMPORTED, name="RACED_BY_SYNC", queue_nums=2)

    applications.approve(application, by=portal_admin)

    topic = Topic.objects.get(name="RACED_BY_SYNC")
    assert (topic.team, topic.origin) == (team, Origin.APPLIED)


# --- failures and retries -----------------------------------------------------------------------------------------


def test_a_failing_cluster_keeps_the_application_pending_and_a_retry_after_healing_succeeds(
    member, team, portal_admin, own_sandbox, own_cluster, fast_timeouts
):
    application = apply_topic(member, team, own_cluster, "RETRIED")
    own_sandbox.hang("broker-b")

    with pytest.raises(ClusterOperationError, match="broker-b"):
        applications.approve(application, by=portal_admin)

    application.refresh_from_db()
    assert application.state == ApplicationState.PENDING
    assert application.attempts == 1
    assert "Creating topic RETRIED on broker broker-b" in application.last_error
    assert not application.is_processing
    assert not Topic.objects.filter(name="RETRIED").exists()
    assert AuditEntry.objects.get(action="application.approval_failed").note == application.last_error
    assert not AuditEntry.objects.filter(action__in=["topic.created", "application.approved"]).exists()

    own_sandbox.heal()
    applications.approve(application, by=portal_admin)

    application.refresh_from_db()
    assert (application.state, application.attempts, application.last_error) == ("approved", 2, "")
    assert Topic.objects.get(name="RETRIED").team == team
    with MQAdmin(own_sandbox.namesrv_addr, timeout=2) as admin:
        assert all(config is not None for config in on_masters(admin, "RETRIED").values())


def test_a_stopped_master_fails_the_approval_until_it_is_back(member, team, portal_admin, own_sandbox, own_cluster):
    application = consumer_group(
        member,
        team,
        own_cluster,
        name="CG_WAITS",
        subscriptions=[{"topic_id": Topic.objects.create(cluster=own_cluster, team=team, name="T_FOR_CG").pk}],
    )
    own_sandbox.stop_broker("broker-a")

    with pytest.raises(ClusterOperationError, match="master of broker-a is not registered"):
        applications.approve(application, by=portal_admin)
    assert not ConsumerGroup.objects.filter(name="CG_WAITS").exists()

    own_sandbox.start_broker("broker-a")
    applications.approve(application, by=portal_admin)

    with MQAdmin(own_sandbox.namesrv_addr, timeout=2) as admin:
        assert all(config is not None for config in group_on_masters(admin, "CG_WAITS").values())


# --- claims: concurrent decisions ---------------------------------------------------------------------------------


def test_an_application_being_approved_cannot_be_approved_rejected_or_cancelled(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "IN_FLIGHT")
    Application.objects.filter(pk=application.pk).update(claim_token="someone-else", claimed_at=timezone.now())

    for decide in (
        lambda: applications.approve(application, by=portal_admin),
        lambda: applications.reject(application, by=portal_admin, reason="no"),
        lambda: applications.cancel(application, by=member),
    ):
        with pytest.raises(InvalidTransition, match="being approved right now"):
            decide()
    assert Application.objects.get(pk=application.pk).state == ApplicationState.PENDING
    assert not Topic.objects.filter(name="IN_FLIGHT").exists()


def test_an_abandoned_claim_is_taken_over(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "ABANDONED")
    long_ago = timezone.now() - datetime.timedelta(hours=1)
    Application.objects.filter(pk=application.pk).update(claim_token="died", claimed_at=long_ago)

    applications.approve(application, by=portal_admin)

    assert Application.objects.get(pk=application.pk).state == ApplicationState.APPROVED


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_approvals_act_once(member, team, portal_admin, own_cluster, monkeypatch):
    """Two admins approve at once, in two threads with their own database connections. Both see the application
    pending before either claims it; the second claim is tried while the first approval is on the cluster. The
    threads are sequenced with events rather than timing (no two database writes overlap, which SQLite's shared
    in-memory test database could not take); a broken claim would make both act, and the waits would time out."""
    second_admin = make_user("bea", staff=True)
    application = apply_topic(member, team, own_cluster, "RACED")
    both_checked = threading.Barrier(2, timeout=10)
    first_on_cluster = threading.Event()
    a_thread_finished = threading.Event()
    acted, outcomes = [], {}
    real_claim, real_create_topic = workflow._claim, cluster_ops.create_topic

    def claim(app):
        if both_checked.wait() != 0:
            first_on_cluster.wait(10)
        return real_claim(app)

    def create_topic(*args):
        acted.append(threading.current_thread().name)
        first_on_cluster.set()
        a_thread_finished.wait(10)
        real_create_topic(*args)

    monkeypatch.setattr(workflow, "_claim", claim)
    monkeypatch.setattr(cluster_ops, "create_topic", create_topic)

    def approve_as(user):
        try:
            applications.approve(Application.objects.get(pk=application.pk), by=user)
            outcomes[user.username] = "approved"
        except InvalidTransition:
            outcomes[user.username] = "refused"
        finally:
            a_thread_finished.set()
            connection.close()

    threads = [threading.Thread(target=approve_as, args=(user,)) for user in (portal_admin, second_admin)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes.values()) == ["approved", "refused"]
    assert len(acted) == 1
    application.refresh_from_db()
    assert (application.state, application.attempts) == ("approved", 1)
    assert outcomes[application.decided_by.username] == "approved"
    assert Topic.objects.filter(name="RACED").count() == 1
    assert AuditEntry.objects.filter(action="application.approved").count() == 1


# --- reject and cancel --------------------------------------------------------------------------------------------


def test_rejecting_needs_a_reason_and_notifies_the_applicant(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "NOT_NEEDED")

    assert set(errors_of(lambda: applications.reject(application, by=portal_admin, reason="  "))) == {"reason"}
    applications.reject(application, by=portal_admin, reason="use PAY_ORDER_CREATED")

    application.refresh_from_db()
    assert (application.state, application.decided_by, application.decision_reason) == (
        "rejected",
        portal_admin,
        "use PAY_ORDER_CREATED",
    )
    notification = Notification.objects.get(user=member)
    assert notification.title.startswith("Rejected: application #")
    assert notification.body == "use PAY_ORDER_CREATED"
    assert AuditEntry.objects.get(action="application.rejected").note == "use PAY_ORDER_CREATED"
    with pytest.raises(InvalidTransition):
        applications.approve(application, by=portal_admin)


def test_only_deciders_reject(member, team, cluster, outsider):
    application = apply_topic(member, team, cluster, "STAYS")

    with pytest.raises(PermissionDenied):
        applications.reject(application, by=outsider, reason="no")


def test_the_applicant_cancels_their_pending_application(member, team, cluster, team_admin):
    application = apply_topic(member, team, cluster, "CHANGED_MY_MIND")

    with pytest.raises(PermissionDenied):
        applications.cancel(application, by=team_admin)
    applications.cancel(application, by=member)

    assert Application.objects.get(pk=application.pk).state == ApplicationState.CANCELLED
    assert AuditEntry.objects.get(action="application.cancelled").actor == member
    assert not Notification.objects.filter(user=member).exists()  # nobody to tell but oneself
    with pytest.raises(InvalidTransition):
        applications.cancel(application, by=member)


def test_a_portal_admin_may_not_cancel_someone_elses_application(member, team, cluster, portal_admin):
    application = apply_topic(member, team, cluster, "NOT_THEIRS")

    with pytest.raises(PermissionDenied):
        applications.cancel(application, by=portal_admin)

    assert Application.objects.get(pk=application.pk).state == ApplicationState.PENDING
    assert not AuditEntry.objects.filter(action="application.cancelled").exists()


def test_a_portal_admin_cancels_their_own_application(team, cluster, portal_admin):
    application = apply_topic(portal_admin, team, cluster, "MY_OWN")

    applications.cancel(application, by=portal_admin)

    assert Application.objects.get(pk=application.pk).state == ApplicationState.CANCELLED

"""The admin pages: the approval queue acting on the real sandbox cluster, registering clusters (broker discovery,
unreachable name servers, the ACL secret never shown back), adoption of unowned entries, the audit log and its
filters. Who may open which page is the authorization matrix's business (test_authz_pages.py)."""

import datetime
import socket

import pytest
from django.urls import reverse

from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import TopicConfig
from monitor.sandbox.cluster import SandboxCluster
from portal.models import (
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    Broker,
    BrokerRole,
    Cluster,
    ConsumerGroup,
    NameServer,
    Origin,
    Team,
    Topic,
    TopicAssociation,
)
from portal.services import applications, audit, cluster_ops
from portal.services.profiles import update_profile

ACL_ACCESS_KEY = "portal-admin"
ACL_SECRET = "s3cret-never-shown-9f2c"


@pytest.fixture
def staff(client, portal_admin):
    client.force_login(portal_admin)
    return client


@pytest.fixture
def discovered(cluster):
    """The sandbox cluster with its brokers discovered, as registering it through the portal leaves it."""
    cluster_ops.discover_brokers(cluster)
    return cluster


@pytest.fixture
def dead_addr():
    """A name-server address on which nothing listens (a port that was just free)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def acl_sandbox():
    with SandboxCluster(brokers=1, acl={ACL_ACCESS_KEY: ACL_SECRET}) as sandbox:
        yield sandbox


def apply_for_topic(member, team, cluster, name, **payload):
    return applications.submit(
        member,
        kind=ApplicationKind.TOPIC_CREATE,
        team=team,
        cluster=cluster,
        payload={"name": name, "queue_nums": 4, "ordered": False, "trace_enabled": False, **payload},
        reason="orders service",
    )


def master_topic_tables(namesrv_addr: str) -> dict[str, set[str]]:
    """What each master of the cluster really holds, read with the wire client: broker name -> topic names."""
    with MQAdmin(namesrv_addr) as admin:
        masters = {
            name: data.master_addr for name, data in admin.examine_broker_cluster_info().broker_addr_table.items()
        }
        return {name: set(admin.get_all_topic_config(addr).topic_config_table) for name, addr in masters.items()}


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# --- every page -------------------------------------------------------------------------------------------------


def test_every_admin_page_renders_for_a_portal_admin(staff, discovered, member, team):
    apply_for_topic(member, team, discovered, "ADMIN_PAGES_RENDER")
    Topic.objects.create(cluster=discovered, name="LEGACY_RENDER", origin=Origin.IMPORTED)
    pages = {
        reverse("approval-queue"): "ADMIN_PAGES_RENDER",
        reverse("cluster-list"): discovered.name,
        reverse("cluster-create"): "namesrv_addrs",
        reverse("cluster-detail", args=[discovered.pk]): "broker-b",
        reverse("unowned-list"): "LEGACY_RENDER",
        reverse("audit-log"): "application.submitted",
        reverse("team-create"): 'name="name"',
    }
    for url, expected in pages.items():
        response = staff.get(url)
        assert response.status_code == 200, url
        assert expected in response.content.decode(), url


# --- approval queue ---------------------------------------------------------------------------------------------


def test_the_queue_lists_pending_applications_oldest_first_with_what_is_asked(staff, discovered, member, team):
    first = apply_for_topic(member, team, discovered, "QUEUE_FIRST", ordered=True)
    second = apply_for_topic(member, team, discovered, "QUEUE_SECOND")
    response = staff.get(reverse("approval-queue"))
    listed = [item["application"] for item in response.context["items"]]
    assert listed == [first, second]
    page = response.content.decode()
    assert page.index("QUEUE_FIRST") < page.index("QUEUE_SECOND")
    assert ("Ordered", "yes") in response.context["items"][0]["asked"]
    assert "orders service" in page and member.username in page and team.name in page


def test_the_queue_filters_by_kind_and_cluster(staff, discovered, member, team, topic):
    creation = apply_for_topic(member, team, discovered, "QUEUE_FILTER")
    change = applications.submit(
        member,
        kind=ApplicationKind.TOPIC_CHANGE,
        team=team,
        cluster=discovered,
        payload={"queue_nums": 16},
        topic=topic,
    )
    elsewhere = Cluster.objects.create(name="elsewhere")

    def listed(**query):
        return [item["application"] for item in staff.get(reverse("approval-queue"), query).context["items"]]

    assert listed(kind=ApplicationKind.TOPIC_CHANGE) == [change]
    assert listed(kind=ApplicationKind.TOPIC_CREATE) == [creation]
    assert listed(cluster=discovered.pk) == [creation, change]
    assert listed(cluster=elsewhere.pk) == []


def test_approving_creates_the_topic_on_every_master(staff, discovered, member, team, sandbox):
    application = apply_for_topic(member, team, discovered, "APPROVED_ON_SANDBOX")

    response = staff.post(reverse("application-approve", args=[application.pk]), follow=True)

    assert response.status_code == 200
    assert any("approved" in message for message in messages_of(response))
    application.refresh_from_db()
    assert application.state == ApplicationState.APPROVED
    assert Topic.objects.get(cluster=discovered, name="APPROVED_ON_SANDBOX").team == team
    tables = master_topic_tables(sandbox.namesrv_addr)
    assert set(tables) == {"broker-a", "broker-b"}
    assert all("APPROVED_ON_SANDBOX" in topics for topics in tables.values())


def test_approving_on_an_unreachable_cluster_shows_the_error_and_leaves_the_application_pending(
    staff, member, team, dead_addr
):
    unreachable = Cluster.objects.create(name="unreachable")
    NameServer.objects.create(cluster=unreachable, address=dead_addr)
    application = apply_for_topic(member, team, unreachable, "NEVER_CREATED")

    response = staff.post(reverse("application-approve", args=[application.pk]), follow=True)

    assert response.status_code == 200
    application.refresh_from_db()
    assert application.state == ApplicationState.PENDING
    assert application.last_error
    assert any("still pending" in message and dead_addr in message for message in messages_of(response))
    assert response.context["items"][0]["application"] == application
    assert "The last attempt failed" in response.content.decode()
    assert not Topic.objects.filter(name="NEVER_CREATED").exists()


def test_approving_an_application_that_is_no_longer_pending_says_so(staff, discovered, member, team):
    application = apply_for_topic(member, team, discovered, "ALREADY_CANCELLED")
    applications.cancel(application, by=member)

    response = staff.post(reverse("application-approve", args=[application.pk]), follow=True)

    assert any("no longer pending" in message for message in messages_of(response))
    application.refresh_from_db()
    assert application.state == ApplicationState.CANCELLED


def test_rejecting_needs_a_reason(staff, discovered, member, team):
    application = apply_for_topic(member, team, discovered, "REJECTED_TOPIC")
    url = reverse("application-reject", args=[application.pk])

    refused = staff.post(url, {"reason": "  "})

    assert refused.status_code == 200
    item = refused.context["items"][0]
    assert item["application"] == application
    assert item["reject_form"].errors["reason"]
    application.refresh_from_db()
    assert application.state == ApplicationState.PENDING

    staff.post(url, {"reason": "use the existing PAY_ORDER topic"})
    application.refresh_from_db()
    assert application.state == ApplicationState.REJECTED
    assert application.decision_reason == "use the existing PAY_ORDER topic"


def test_a_team_admin_decides_associations_with_their_teams_topics(
    client, team_admin, member, outsider, other_team, team, topic
):
    association = applications.submit(
        outsider,
        kind=ApplicationKind.TOPIC_ASSOCIATION,
        team=other_team,
        cluster=topic.cluster,
        payload={"role": "consumer"},
        topic=topic,
    )
    apply_for_topic(member, team, topic.cluster, "NOT_FOR_TEAM_ADMINS")
    client.force_login(team_admin)

    queue = client.get(reverse("approval-queue"))
    assert [item["application"] for item in queue.context["items"]] == [association]

    client.post(reverse("application-approve", args=[association.pk]))
    assert TopicAssociation.objects.filter(topic=topic, user=outsider, role="consumer").exists()

    client.force_login(member)
    assert client.get(reverse("approval-queue")).status_code == 403


# --- clusters ---------------------------------------------------------------------------------------------------


def test_registering_the_sandbox_discovers_its_four_brokers_with_roles_and_versions(staff, sandbox, db):
    response = staff.post(
        reverse("cluster-create"),
        {"name": "sandbox-registered", "namesrv_addrs": f"{sandbox.namesrv_addr}\n", "description": "test"},
        follow=True,
    )

    registered = Cluster.objects.get(name="sandbox-registered")
    assert response.redirect_chain[-1][0] == reverse("cluster-detail", args=[registered.pk])
    brokers = Broker.objects.filter(cluster=registered, present=True)
    assert sorted((broker.broker_name, broker.broker_id) for broker in brokers) == [
        ("broker-a", 0),
        ("broker-a", 1),
        ("broker-b", 0),
        ("broker-b", 1),
    ]
    assert {broker.role for broker in brokers if broker.broker_id == 1} == {BrokerRole.SLAVE}
    assert all(broker.role and broker.version for broker in brokers)
    page = response.content.decode()
    for broker in brokers:
        assert broker.address in page
        assert str(broker.get_role_display()) in page
    assert brokers[0].version in page


def test_name_servers_may_be_separated_by_semicolons(staff, sandbox, dead_addr, db):
    response = staff.post(
        reverse("cluster-create"), {"name": "two-namesrvs", "namesrv_addrs": f"{sandbox.namesrv_addr}; {dead_addr}"}
    )
    assert response.status_code == 302
    addresses = NameServer.objects.filter(cluster__name="two-namesrvs").values_list("address", flat=True)
    assert sorted(addresses) == sorted([sandbox.namesrv_addr, dead_addr])


def test_an_unreachable_name_server_is_a_field_error_and_nothing_is_saved(staff, dead_addr, db):
    response = staff.post(reverse("cluster-create"), {"name": "nowhere", "namesrv_addrs": dead_addr})

    assert response.status_code == 200
    assert response.context["form"].errors["namesrv_addrs"]
    assert not Cluster.objects.exists()
    assert not NameServer.objects.exists()
    assert not Broker.objects.exists()


def test_the_acl_secret_is_never_shown_back(staff, acl_sandbox, dead_addr, db):
    form = {
        "name": "acl-cluster",
        "namesrv_addrs": acl_sandbox.namesrv_addr,
        "acl_access_key": ACL_ACCESS_KEY,
        "acl_secret_key": ACL_SECRET,
    }
    responses = [staff.post(reverse("cluster-create"), {**form, "namesrv_addrs": dead_addr})]
    responses.append(staff.post(reverse("cluster-create"), form, follow=True))
    registered = Cluster.objects.get(name="acl-cluster")
    detail = reverse("cluster-detail", args=[registered.pk])
    assert Broker.objects.filter(cluster=registered, present=True).count() == 1  # the signed requests were accepted
    responses.append(staff.post(detail, {**form, "acl_secret_key": "", "description": "kept secret"}, follow=True))
    responses.append(staff.post(detail, {**form, "name": ""}))
    responses.append(staff.post(reverse("cluster-sync", args=[registered.pk]), follow=True))
    responses += [staff.get(url) for url in (reverse("cluster-list"), detail, reverse("audit-log"))]

    assert [response.status_code for response in responses] == [200] * 8
    for response in responses:
        assert ACL_SECRET not in response.content.decode()
    registered.refresh_from_db()
    assert registered.description == "kept secret"
    assert registered.acl_secret_key == ACL_SECRET
    with MQAdmin(acl_sandbox.namesrv_addr, acl=AclCredentials(ACL_ACCESS_KEY, ACL_SECRET)) as admin:
        assert admin.examine_broker_cluster_info().broker_addr_table


def test_sync_now_imports_a_topic_created_directly_on_the_cluster(staff, discovered, sandbox):
    with MQAdmin(sandbox.namesrv_addr) as admin:
        master = admin.examine_broker_cluster_info().broker_addr_table["broker-a"].master_addr
        admin.create_and_update_topic_config(
            master, TopicConfig(topic_name="MADE_WITH_MQADMIN", read_queue_nums=2, write_queue_nums=2)
        )

    response = staff.post(reverse("cluster-sync", args=[discovered.pk]), follow=True)

    assert any(message.startswith(f"Sync of {discovered.name}") for message in messages_of(response))
    imported = Topic.objects.get(cluster=discovered, name="MADE_WITH_MQADMIN")
    assert imported.team is None and imported.origin == Origin.IMPORTED
    assert "MADE_WITH_MQADMIN" in staff.get(reverse("unowned-list")).content.decode()


# --- unowned entries --------------------------------------------------------------------------------------------


def test_adopting_gives_an_unowned_entry_a_team(staff, cluster, team):
    legacy_topic = Topic.objects.create(cluster=cluster, name="LEGACY_ORDERS", origin=Origin.IMPORTED)
    legacy_group = ConsumerGroup.objects.create(cluster=cluster, name="legacy-billing", origin=Origin.IMPORTED)
    assert "legacy-billing" in staff.get(reverse("unowned-list"), {"kind": "consumer-group"}).content.decode()

    staff.post(reverse("entry-adopt", args=["topic", legacy_topic.pk]), {"team": team.pk}, follow=True)
    staff.post(reverse("entry-adopt", args=["consumer-group", legacy_group.pk]), {"team": team.pk}, follow=True)

    legacy_topic.refresh_from_db()
    legacy_group.refresh_from_db()
    assert legacy_topic.team == team and legacy_group.team == team
    assert AuditEntry.objects.filter(object_type="topic", object_id=str(legacy_topic.pk)).exists()
    assert "LEGACY_ORDERS" not in staff.get(reverse("unowned-list")).content.decode()


def test_adopting_needs_a_team_and_a_known_kind(staff, cluster):
    legacy = Topic.objects.create(cluster=cluster, name="LEGACY_NO_TEAM", origin=Origin.IMPORTED)

    response = staff.post(reverse("entry-adopt", args=["topic", legacy.pk]), {"team": ""}, follow=True)
    assert any("was not adopted" in message for message in messages_of(response))
    legacy.refresh_from_db()
    assert legacy.team is None
    assert staff.post(reverse("entry-adopt", args=["queue", legacy.pk]), {"team": ""}).status_code == 404


def test_missing_entries_are_listed_with_their_team(staff, topic):
    Topic.objects.filter(pk=topic.pk).update(state="missing")
    page = staff.get(reverse("unowned-list")).content.decode()
    assert topic.name in page and topic.team.name in page


# --- audit log --------------------------------------------------------------------------------------------------


def test_the_audit_log_filters_by_actor_action_object_type_cluster_and_date(staff, portal_admin, member, cluster):
    elsewhere = Cluster.objects.create(name="elsewhere")
    by_admin = audit.record(portal_admin, "team.created", Team.objects.create(name="audit-team"))
    by_member = audit.record(member, "topic.created", Topic(pk=990, name="AUDIT_TOPIC"), cluster=cluster)
    by_system = audit.record(None, "topic.imported", Topic(pk=991, name="AUDIT_IMPORTED"), cluster=elsewhere)
    utc = datetime.UTC
    AuditEntry.objects.filter(pk=by_admin.pk).update(created_at=datetime.datetime(2024, 1, 10, 12, tzinfo=utc))
    # 20:00 UTC on 31 January is already 1 February in Shanghai, the admin's time zone.
    AuditEntry.objects.filter(pk=by_member.pk).update(created_at=datetime.datetime(2024, 1, 31, 20, tzinfo=utc))
    AuditEntry.objects.filter(pk=by_system.pk).update(created_at=datetime.datetime(2024, 3, 1, 12, tzinfo=utc))
    update_profile(portal_admin, time_zone="Asia/Shanghai")

    def listed(**query):
        response = staff.get(reverse("audit-log"), query)
        assert response.status_code == 200
        return {item["entry"] for item in response.context["items"]}

    assert listed() == {by_admin, by_member, by_system}
    assert listed(actor=member.username) == {by_member}
    assert listed(action="topic.imported") == {by_system}
    assert listed(object_type="topic") == {by_member, by_system}
    assert listed(cluster=elsewhere.pk) == {by_system}
    assert listed(created_after="2024-02-01") == {by_member, by_system}
    assert listed(created_after="2024-01-01", created_before="2024-01-31") == {by_admin}
    assert listed(object_type="topic", created_before="2024-02-29") == {by_member}


def test_the_audit_log_shows_the_changed_keys_only(staff, portal_admin, topic):
    before = audit.snapshot(topic)
    topic.queue_nums = 16
    audit.record(portal_admin, "topic.changed", topic, before=before, after=audit.snapshot(topic))

    response = staff.get(reverse("audit-log"), {"action": "topic.changed"})

    (item,) = response.context["items"]
    assert item["changes"] == [("queue_nums", "8", "16")]
    assert "<del>8</del>" in response.content.decode()


# --- teams ------------------------------------------------------------------------------------------------------


def test_creating_a_team(staff, team):
    response = staff.post(reverse("team-create"), {"name": "search", "description": "search team"})
    created = Team.objects.get(name="search")
    assert response.status_code == 302
    assert response["Location"] == reverse("team-detail", args=[created.pk])

    duplicate = staff.post(reverse("team-create"), {"name": team.name})
    assert duplicate.status_code == 200
    assert duplicate.context["form"].errors["name"]

"""Registry services: registering and editing clusters, adopting unowned entries, descriptions, teams."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from monitor.sandbox.cluster import SandboxCluster
from portal.models import AuditEntry, BrokerRole, Cluster, Membership, NameServer, Origin, Team, TeamRole, Topic
from portal.services import audit, registry
from tests.support.factories import make_user
from tests.support.network import closed_port_addr


@pytest.fixture
def fast_timeouts(settings):
    settings.ROCKETMQ_REQUEST_TIMEOUT = 0.5


# --- register_cluster ---------------------------------------------------------------------------------------------


def test_register_cluster_discovers_the_four_brokers_with_roles_and_versions(portal_admin, sandbox):
    cluster = registry.register_cluster(
        name="prod", namesrv_addrs=[sandbox.namesrv_addr], by=portal_admin, description="main"
    )

    brokers = {(b.broker_name, b.broker_id): (b.role, b.version) for b in cluster.brokers.all()}
    assert brokers == {
        ("broker-a", 0): (BrokerRole.ASYNC_MASTER, "V4_9_4"),
        ("broker-a", 1): (BrokerRole.SLAVE, "V4_9_4"),
        ("broker-b", 0): (BrokerRole.ASYNC_MASTER, "V4_9_4"),
        ("broker-b", 1): (BrokerRole.SLAVE, "V4_9_4"),
    }
    assert cluster.namesrv_addr == sandbox.namesrv_addr
    entry = AuditEntry.objects.get(action="cluster.registered")
    assert (entry.actor, entry.cluster, entry.after["name"]) == (portal_admin, cluster, "prod")
    assert entry.after["namesrv_addrs"] == [sandbox.namesrv_addr]


def test_register_cluster_skips_a_dead_name_server_when_another_answers(portal_admin, sandbox):
    cluster = registry.register_cluster(
        name="prod", namesrv_addrs=[closed_port_addr(), sandbox.namesrv_addr], by=portal_admin
    )

    assert cluster.name_servers.count() == 2
    assert cluster.brokers.count() == 4


def test_register_cluster_refuses_an_unreachable_name_server_and_saves_nothing(portal_admin):
    with pytest.raises(ValidationError) as caught:
        registry.register_cluster(name="ghost", namesrv_addrs=[closed_port_addr()], by=portal_admin)

    assert "No name server of cluster ghost answered" in caught.value.message_dict["namesrv_addrs"][0]
    assert not Cluster.objects.exists()
    assert not NameServer.objects.exists()
    assert not AuditEntry.objects.exists()


def test_register_cluster_refuses_a_hung_name_server_quickly(portal_admin, fast_timeouts):
    with SandboxCluster() as hung:
        hung.hang("namesrv")
        with pytest.raises(ValidationError) as caught:
            registry.register_cluster(name="hung", namesrv_addrs=[hung.namesrv_addr], by=portal_admin)

    assert "timed out after 0.5s" in caught.value.message_dict["namesrv_addrs"][0]
    assert not Cluster.objects.exists()


@pytest.mark.parametrize(
    "addresses", [[], ["   "], ["localhost"], ["10.0.0.1:"], ["10.0.0.1:99999"], ["host:port"], ["a b:9876"]]
)
def test_register_cluster_wants_host_port_addresses(portal_admin, addresses):
    with pytest.raises(ValidationError) as caught:
        registry.register_cluster(name="bad", namesrv_addrs=addresses, by=portal_admin)

    assert set(caught.value.message_dict) == {"namesrv_addrs"}


def test_register_cluster_reports_every_bad_field_at_once(portal_admin, cluster):
    with pytest.raises(ValidationError) as caught:
        registry.register_cluster(name=cluster.name, namesrv_addrs=["nope"], by=portal_admin, acl_access_key="ak")

    assert set(caught.value.message_dict) == {"name", "namesrv_addrs", "acl_secret_key"}


def test_register_cluster_is_for_portal_admins_only(team_admin, sandbox):
    with pytest.raises(PermissionDenied):
        registry.register_cluster(name="prod", namesrv_addrs=[sandbox.namesrv_addr], by=team_admin)
    assert not Cluster.objects.exists()


def test_register_an_acl_cluster_keeps_the_secret_and_audits_it_masked(portal_admin):
    with SandboxCluster(acl={"portal": "s3cret"}) as acl_cluster:
        cluster = registry.register_cluster(
            name="acl",
            namesrv_addrs=[acl_cluster.namesrv_addr],
            by=portal_admin,
            acl_access_key="portal",
            acl_secret_key="s3cret",
        )

    assert cluster.brokers.get().role == BrokerRole.ASYNC_MASTER
    assert Cluster.objects.get(pk=cluster.pk).acl_secret_key == "s3cret"
    assert "s3cret" not in str(AuditEntry.objects.get(action="cluster.registered").after)


def test_register_an_acl_cluster_with_a_wrong_secret_is_refused(portal_admin):
    with SandboxCluster(acl={"portal": "s3cret"}) as acl_cluster, pytest.raises(ValidationError) as caught:
        registry.register_cluster(
            name="acl",
            namesrv_addrs=[acl_cluster.namesrv_addr],
            by=portal_admin,
            acl_access_key="portal",
            acl_secret_key="wrong",
        )

    assert "Check signature failed" in caught.value.message_dict["__all__"][0]
    assert not Cluster.objects.exists()


# --- update_cluster -----------------------------------------------------------------------------------------------


@pytest.fixture
def registered(portal_admin, sandbox):
    return registry.register_cluster(name="prod", namesrv_addrs=[sandbox.namesrv_addr], by=portal_admin)


def test_update_cluster_changes_fields_and_audits_before_and_after(portal_admin, registered):
    updated = registry.update_cluster(registered, by=portal_admin, description="the big one")

    assert Cluster.objects.get(pk=registered.pk).description == "the big one"
    assert updated.description == "the big one"
    entry = AuditEntry.objects.get(action="cluster.updated")
    assert (entry.before["description"], entry.after["description"]) == ("", "the big one")


def test_update_cluster_without_a_secret_keeps_the_stored_one(portal_admin, registered):
    Cluster.objects.filter(pk=registered.pk).update(acl_access_key="ak")
    registry.update_cluster(registered, by=portal_admin, acl_secret_key="first")

    registry.update_cluster(registered, by=portal_admin, acl_access_key="ak", description="x")

    assert Cluster.objects.get(pk=registered.pk).acl_secret_key == "first"


def test_clearing_the_access_key_clears_the_secret(portal_admin, registered):
    registry.update_cluster(registered, by=portal_admin, acl_access_key="ak", acl_secret_key="first")

    registry.update_cluster(registered, by=portal_admin, acl_access_key="")

    assert Cluster.objects.get(pk=registered.pk).acl_secret_key == ""


def test_update_cluster_to_unreachable_name_servers_saves_nothing(portal_admin, registered):
    with pytest.raises(ValidationError) as caught:
        registry.update_cluster(registered, by=portal_admin, namesrv_addrs=[closed_port_addr()], description="moved")

    assert set(caught.value.message_dict) == {"namesrv_addrs"}
    unchanged = Cluster.objects.get(pk=registered.pk)
    assert unchanged.description == ""
    assert [ns.address for ns in unchanged.name_servers.all()] == [registered.namesrv_addr]
    assert unchanged.brokers.filter(present=True).count() == 4


def test_update_cluster_is_for_portal_admins_only(team_admin, registered):
    with pytest.raises(PermissionDenied):
        registry.update_cluster(registered, by=team_admin, description="mine now")


# --- adopt, describe ----------------------------------------------------------------------------------------------


@pytest.fixture
def unowned(cluster):
    return Topic.objects.create(cluster=cluster, team=None, origin=Origin.IMPORTED, name="LEGACY_TOPIC")


def test_adopt_gives_an_unowned_entry_a_team_and_audits_it(portal_admin, team, unowned):
    registry.adopt(unowned, team=team, by=portal_admin)

    assert Topic.objects.get(pk=unowned.pk).team == team
    entry = AuditEntry.objects.get(action="topic.adopted")
    assert (entry.before["team_id"], entry.after["team_id"]) == (None, team.pk)
    assert entry.cluster == unowned.cluster


def test_adopt_refuses_an_entry_that_already_has_a_team(portal_admin, other_team, topic):
    with pytest.raises(ValidationError) as caught:
        registry.adopt(topic, team=other_team, by=portal_admin)

    assert "already owned by payments" in caught.value.message_dict["team"][0]
    assert Topic.objects.get(pk=topic.pk).team_id == topic.team_id


def test_only_portal_admins_adopt(team_admin, team, unowned):
    with pytest.raises(PermissionDenied):
        registry.adopt(unowned, team=team, by=team_admin)


def test_the_owning_team_edits_the_description_with_an_audit_entry(member, topic):
    registry.update_description(topic, "  Orders paid  ", by=member)

    assert Topic.objects.get(pk=topic.pk).description == "Orders paid"
    entry = AuditEntry.objects.get(action="topic.description_changed")
    assert (entry.actor, entry.before["description"], entry.after["description"]) == (member, "", "Orders paid")


def test_an_outsider_cannot_edit_the_description(outsider, topic):
    with pytest.raises(PermissionDenied):
        registry.update_description(topic, "hijacked", by=outsider)
    assert Topic.objects.get(pk=topic.pk).description == ""


# --- teams --------------------------------------------------------------------------------------------------------


def test_create_team_is_audited(portal_admin):
    team = registry.create_team(name=" search ", description="finds things", by=portal_admin)

    assert team.name == "search"
    assert AuditEntry.objects.get(action="team.created").after["name"] == "search"


def test_create_team_refuses_a_taken_name(portal_admin, team):
    with pytest.raises(ValidationError) as caught:
        registry.create_team(name=team.name, by=portal_admin)
    assert set(caught.value.message_dict) == {"name"}
    assert Team.objects.count() == 1


def test_only_portal_admins_create_teams(team_admin):
    with pytest.raises(PermissionDenied):
        registry.create_team(name="rogue", by=team_admin)


def test_a_team_admin_adds_changes_and_removes_members_with_audit_entries(team_admin, team):
    newcomer = make_user("nina")

    registry.add_member(team, newcomer, TeamRole.MEMBER, by=team_admin)
    registry.add_member(team, newcomer, TeamRole.ADMIN, by=team_admin)
    registry.remove_member(team, newcomer, by=team_admin)

    assert not Membership.objects.filter(team=team, user=newcomer).exists()
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["membership.created", "membership.changed", "membership.deleted"]
    changed = AuditEntry.objects.get(action="membership.changed")
    assert (changed.before["role"], changed.after["role"]) == ("member", "admin")


def test_a_plain_member_cannot_manage_the_team(member, team):
    with pytest.raises(PermissionDenied):
        registry.add_member(team, make_user("nina"), TeamRole.MEMBER, by=member)


def test_adding_with_an_unknown_role_is_a_field_error(team_admin, team):
    with pytest.raises(ValidationError) as caught:
        registry.add_member(team, make_user("nina"), "owner", by=team_admin)
    assert set(caught.value.message_dict) == {"role"}


def test_removing_a_non_member_is_a_field_error(team_admin, team, outsider):
    with pytest.raises(ValidationError) as caught:
        registry.remove_member(team, outsider, by=team_admin)
    assert set(caught.value.message_dict) == {"user"}


def test_audit_snapshots_of_memberships_name_team_user_and_role(team, member):
    membership = Membership.objects.get(team=team, user=member)

    assert {key: audit.snapshot(membership)[key] for key in ("team_id", "user_id", "role")} == {
        "team_id": team.pk,
        "user_id": member.pk,
        "role": "member",
    }

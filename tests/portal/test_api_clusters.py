"""Clusters and brokers through the API: portal admins register a cluster (its brokers are discovered from the
sandbox's name server) and change it; the ACL secret goes in and never comes back out."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from portal.models import AuditEntry, Broker, BrokerRole, Cluster
from tests.support.network import closed_port_addr


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_a_portal_admin_registers_a_cluster_and_its_brokers_are_discovered(sandbox, portal_admin):
    response = logged_in(portal_admin).post(
        reverse("api:cluster-list"),
        {"name": "api-registered", "description": "from the API", "namesrv_addrs": [sandbox.namesrv_addr]},
        "json",
    )
    assert response.status_code == 201, response.data
    assert response.data["name_servers"] == [sandbox.namesrv_addr]
    assert response.data["acl_enabled"] is False
    brokers = {(b["broker_name"], b["broker_id"]): b for b in response.data["brokers"]}
    assert set(brokers) == {("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)}
    assert brokers["broker-a", 1]["role"] == BrokerRole.SLAVE
    assert brokers["broker-a", 0]["role"] in (BrokerRole.ASYNC_MASTER, BrokerRole.SYNC_MASTER)
    assert all(broker["present"] and broker["address"] for broker in brokers.values())
    assert AuditEntry.objects.filter(action="cluster.registered", object_repr="api-registered").exists()


def test_a_cluster_whose_name_server_does_not_answer_is_not_registered(portal_admin):
    response = logged_in(portal_admin).post(
        reverse("api:cluster-list"), {"name": "unreachable", "namesrv_addrs": [closed_port_addr()]}, "json"
    )
    assert response.status_code == 400
    assert "namesrv_addrs" in response.data
    assert not Cluster.objects.filter(name="unreachable").exists()


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"name": "c1", "namesrv_addrs": ["not-an-address"]}, {"namesrv_addrs"}),
        ({"name": "c1", "namesrv_addrs": []}, {"namesrv_addrs"}),
        ({"name": "c1", "namesrv_addrs": "127.0.0.1:9876"}, {"namesrv_addrs"}),
        ({"name": "x" * 10_000, "namesrv_addrs": ["127.0.0.1:1"]}, {"name"}),
        ({"namesrv_addrs": ["127.0.0.1:1"]}, {"name"}),
        ({"name": "c1", "namesrv_addrs": ["127.0.0.1:1"], "acl_access_key": "ak"}, {"acl_secret_key"}),
    ],
    ids=["not-host-port", "empty-list", "not-a-list", "huge-name", "no-name", "key-without-secret"],
)
def test_bad_cluster_registrations_get_field_errors(portal_admin, body, fields):
    response = logged_in(portal_admin).post(reverse("api:cluster-list"), body, "json")
    assert response.status_code == 400
    assert fields <= set(response.data), response.data
    assert not Cluster.objects.exists()


def test_a_cluster_name_is_unique(cluster, portal_admin):
    response = logged_in(portal_admin).post(
        reverse("api:cluster-list"), {"name": "sandbox", "namesrv_addrs": ["127.0.0.1:1"]}, "json"
    )
    assert response.status_code == 400
    assert "name" in response.data


def test_the_acl_secret_is_write_only(cluster, portal_admin, member):
    secret = "s3cr3t-never-shown"
    response = logged_in(portal_admin).patch(
        reverse("api:cluster-detail", args=[cluster.pk]), {"acl_access_key": "portal", "acl_secret_key": secret}, "json"
    )
    assert response.status_code == 200, response.data
    assert response.data["acl_enabled"] is True
    cluster.refresh_from_db()
    assert (cluster.acl_access_key, cluster.acl_secret_key) == ("portal", secret)
    for user in (portal_admin, member):
        body = logged_in(user).get(reverse("api:cluster-detail", args=[cluster.pk])).content.decode()
        assert secret not in body
        assert "acl_secret_key" not in body
    assert secret not in logged_in(portal_admin).get(reverse("api:audit-entry-list")).content.decode()


def test_changing_the_description_keeps_the_name_servers(cluster, sandbox, portal_admin):
    response = logged_in(portal_admin).patch(
        reverse("api:cluster-detail", args=[cluster.pk]), {"description": "shared sandbox"}, "json"
    )
    assert response.status_code == 200, response.data
    assert (response.data["description"], response.data["name_servers"]) == ("shared sandbox", [sandbox.namesrv_addr])


def test_moving_a_cluster_to_a_dead_name_server_is_refused(cluster, sandbox, portal_admin):
    response = logged_in(portal_admin).patch(
        reverse("api:cluster-detail", args=[cluster.pk]), {"namesrv_addrs": [closed_port_addr()]}, "json"
    )
    assert response.status_code == 400
    assert "namesrv_addrs" in response.data
    assert cluster.namesrv_addr == sandbox.namesrv_addr


def test_brokers_filter_by_cluster_and_role(cluster, member):
    other = Cluster.objects.create(name="other")
    for target, name, broker_id, role in [
        (cluster, "broker-a", 0, BrokerRole.SYNC_MASTER),
        (cluster, "broker-a", 1, BrokerRole.SLAVE),
        (other, "broker-z", 0, BrokerRole.ASYNC_MASTER),
    ]:
        Broker.objects.create(
            cluster=target,
            cluster_name="DefaultCluster",
            broker_name=name,
            broker_id=broker_id,
            address=f"10.0.0.{broker_id}:10911",
            role=role,
        )
    client = logged_in(member)

    def listed(query):
        response = client.get(reverse("api:broker-list"), query)
        assert response.status_code == 200, response.data
        return [(b["broker_name"], b["broker_id"]) for b in response.data["results"]]

    assert listed({"cluster": cluster.pk}) == [("broker-a", 0), ("broker-a", 1)]
    assert listed({"role": "SLAVE"}) == [("broker-a", 1)]
    assert listed({"cluster": other.pk, "role": "ASYNC_MASTER"}) == [("broker-z", 0)]
    assert client.get(reverse("api:broker-list"), {"role": "LEADER"}).status_code == 400
    listed_cluster = client.get(reverse("api:cluster-detail", args=[cluster.pk])).data
    assert [b["broker_name"] for b in listed_cluster["brokers"]] == ["broker-a", "broker-a"]

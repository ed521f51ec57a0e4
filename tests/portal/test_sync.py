"""The brownfield sync against the real sandbox cluster: what exists on the cluster but not in the registry is
imported unowned, what vanished is flagged missing (and restored when it comes back), and nothing is judged
absent unless every master answered.

The sandbox is shared by the whole session, so each test creates names of its own and asserts about those.
"""

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone, translation

from monitor.remoting import body as b
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.sandbox.cluster import SandboxCluster
from portal.models import (
    AuditEntry,
    Broker,
    BrokerRole,
    Cluster,
    ConsumerGroup,
    MessageModel,
    Origin,
    ProducerGroup,
    RegistryState,
    Topic,
)
from portal.models.validation import is_system_group, is_system_topic
from portal.services import registry
from portal.services.sync import SYNC_LEASE, SyncReport, sync_cluster
from tests.support.waiting import wait_for


@pytest.fixture
def admin(sandbox):
    with MQAdmin(sandbox.namesrv_addr) as client:
        yield client


def masters(sandbox) -> list[str]:
    return [sandbox.broker(name).addr for name in sandbox.broker_names]


def create_topic(admin, sandbox, name: str, queue_nums: int = 4, *, only: str | None = None) -> None:
    """What an operator's ``mqadmin updateTopic`` does: the topic on every master (or on one broker name)."""
    config = b.TopicConfig(topic_name=name, read_queue_nums=queue_nums, write_queue_nums=queue_nums)
    for addr in [sandbox.broker(only).addr] if only else masters(sandbox):
        admin.create_and_update_topic_config(addr, config)


def delete_topic(admin, sandbox, name: str) -> None:
    admin.delete_topic_in_broker(masters(sandbox), name)
    admin.delete_topic_in_name_server(name)


def create_group(admin, sandbox, name: str) -> None:
    for addr in masters(sandbox):
        admin.create_and_update_subscription_group_config(addr, b.SubscriptionGroupConfig(group_name=name))


def test_the_sync_imports_a_topic_created_directly_on_the_cluster(cluster, sandbox, admin):
    create_topic(admin, sandbox, "SYNC_DIRECT_TOPIC", queue_nums=6)

    report = sync_cluster(cluster)

    topic = Topic.objects.get(cluster=cluster, name="SYNC_DIRECT_TOPIC")
    assert (topic.team, topic.origin, topic.state, topic.queue_nums) == (None, Origin.IMPORTED, RegistryState.ACTIVE, 6)
    assert not topic.ordered
    assert "SYNC_DIRECT_TOPIC" in report.imported_topics
    assert report.complete
    entry = AuditEntry.objects.get(action="topic.imported", object_id=str(topic.pk))
    assert entry.actor is None and entry.cluster == cluster and entry.after["name"] == "SYNC_DIRECT_TOPIC"
    cluster.refresh_from_db()
    assert cluster.last_synced_at is not None and cluster.last_sync_error == ""


def test_an_imported_topic_is_ordered_when_the_name_servers_say_so(cluster, sandbox, admin):
    create_topic(admin, sandbox, "SYNC_ORDERED_TOPIC", queue_nums=2)
    admin.put_kv_config(ORDER_TOPIC_NAMESPACE, "SYNC_ORDERED_TOPIC", "broker-a:2;broker-b:2")

    sync_cluster(cluster)

    assert Topic.objects.get(cluster=cluster, name="SYNC_ORDERED_TOPIC").ordered


def test_the_sync_imports_subscription_groups_created_directly_on_the_cluster(cluster, sandbox, admin):
    create_group(admin, sandbox, "cg_sync_direct")

    report = sync_cluster(cluster)

    group = ConsumerGroup.objects.get(cluster=cluster, name="cg_sync_direct")
    assert (group.team, group.origin, group.message_model) == (None, Origin.IMPORTED, MessageModel.CLUSTERING)
    assert "cg_sync_direct" in report.imported_groups
    assert AuditEntry.objects.filter(action="consumergroup.imported", object_id=str(group.pk), actor=None).exists()


def test_the_sync_rediscovers_the_brokers(cluster, sandbox):
    report = sync_cluster(cluster)

    assert report.brokers == 4
    roles = {(broker.broker_name, broker.broker_id): broker.role for broker in Broker.objects.filter(cluster=cluster)}
    assert roles == {
        ("broker-a", 0): BrokerRole.ASYNC_MASTER,
        ("broker-a", 1): BrokerRole.SLAVE,
        ("broker-b", 0): BrokerRole.ASYNC_MASTER,
        ("broker-b", 1): BrokerRole.SLAVE,
    }


def test_system_topics_and_groups_are_never_imported(cluster, sandbox, admin):
    create_topic(admin, sandbox, "%RETRY%cg_sync_system")
    create_topic(admin, sandbox, "%DLQ%cg_sync_system")

    sync_cluster(cluster)

    topics = set(Topic.objects.filter(cluster=cluster).values_list("name", flat=True))
    groups = set(ConsumerGroup.objects.filter(cluster=cluster).values_list("name", flat=True))
    assert topics, "the sandbox has topics of other tests; the sync must import those"
    rocketmq_own = {"DefaultCluster", "DefaultCluster_REPLY_TOPIC", "broker-a", "broker-b", "RMQ_SYS_TRACE_TOPIC"}
    assert not topics & rocketmq_own
    assert not [name for name in topics if is_system_topic(name)]
    assert not [name for name in groups if is_system_group(name)]


def test_a_topic_deleted_on_the_cluster_is_flagged_missing_and_restored_when_it_reappears(
    cluster, sandbox, admin, team, portal_admin
):
    create_topic(admin, sandbox, "SYNC_COMES_AND_GOES")
    sync_cluster(cluster)
    topic = registry.adopt(Topic.objects.get(cluster=cluster, name="SYNC_COMES_AND_GOES"), team=team, by=portal_admin)

    delete_topic(admin, sandbox, "SYNC_COMES_AND_GOES")
    flagged = sync_cluster(cluster)

    topic.refresh_from_db()
    assert topic.state == RegistryState.MISSING and topic.missing_since is not None
    assert topic.team == team, "ownership survives while the topic is missing"
    assert "SYNC_COMES_AND_GOES" in flagged.missing_topics
    flag = AuditEntry.objects.get(action="topic.flagged_missing", object_id=str(topic.pk))
    assert flag.actor is None and (flag.before["state"], flag.after["state"]) == ("active", "missing")

    create_topic(admin, sandbox, "SYNC_COMES_AND_GOES")
    restored = sync_cluster(cluster)

    topic.refresh_from_db()
    assert (topic.state, topic.missing_since, topic.team) == (RegistryState.ACTIVE, None, team)
    assert "SYNC_COMES_AND_GOES" in restored.restored_topics
    assert "SYNC_COMES_AND_GOES" not in restored.imported_topics
    assert AuditEntry.objects.filter(action="topic.restored", object_id=str(topic.pk), actor=None).exists()


def test_a_registered_group_the_cluster_does_not_have_is_flagged_missing(cluster, team):
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="cg_sync_never_created")

    report = sync_cluster(cluster)

    group.refresh_from_db()
    assert group.state == RegistryState.MISSING
    assert report.missing_groups == ["cg_sync_never_created"]


def test_producer_groups_are_never_touched(cluster, team):
    """Producer groups live only in clients: no broker lists them, so their absence means nothing."""
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name="pg_sync_client_side")

    report = sync_cluster(cluster)

    group.refresh_from_db()
    assert report.complete and group.state == RegistryState.ACTIVE


def test_an_unreachable_broker_flags_nothing_missing(cluster, sandbox, admin, team, settings):
    settings.ROCKETMQ_REQUEST_TIMEOUT = 0.5
    create_topic(admin, sandbox, "SYNC_ONLY_ON_A", only="broker-a")
    absent = Topic.objects.create(cluster=cluster, team=team, name="SYNC_NOT_ON_THE_CLUSTER")
    sandbox.hang("broker-b")
    try:
        report = sync_cluster(cluster)
    finally:
        sandbox.heal("broker-b")

    absent.refresh_from_db()
    assert absent.state == RegistryState.ACTIVE
    assert report.missing_topics == [] and report.missing_groups == []
    assert "SYNC_ONLY_ON_A" in report.imported_topics, "what the answering masters hold is still imported"
    assert not report.complete and "broker-b" in report.errors[0]
    cluster.refresh_from_db()
    assert "broker-b" in cluster.last_sync_error
    assert cluster.last_synced_at is None, "only a complete sync counts as one"


def test_a_master_that_left_the_name_server_flags_nothing_missing(cluster, sandbox, team):
    sync_cluster(cluster)  # the portal now knows broker-b's master
    absent = Topic.objects.create(cluster=cluster, team=team, name="SYNC_NOT_THERE_EITHER")
    sandbox.stop_broker("broker-b")
    try:
        report = sync_cluster(cluster)
    finally:
        sandbox.start_broker("broker-b")

    absent.refresh_from_db()
    assert absent.state == RegistryState.ACTIVE
    assert report.missing_topics == [] and any("broker-b" in error for error in report.errors)
    assert not Broker.objects.get(cluster=cluster, broker_name="broker-b", broker_id=0).present


def test_a_cluster_whose_brokers_are_all_down_keeps_its_entries(db, team):
    """However many syncs run while it is down: no listed master is no answer, not an empty cluster."""
    with SandboxCluster(brokers=1) as small:
        cluster = Cluster.objects.create(name="small")
        cluster.name_servers.create(address=small.namesrv_addr)
        with MQAdmin(small.namesrv_addr) as admin:
            admin.create_and_update_topic_config(small.broker().addr, b.TopicConfig(topic_name="SYNC_SMALL"))
        sync_cluster(cluster)
        small.stop_broker("broker-a")

        reports = [sync_cluster(cluster), sync_cluster(cluster)]

    assert Topic.objects.get(cluster=cluster, name="SYNC_SMALL").state == RegistryState.ACTIVE
    assert [report.missing_topics for report in reports] == [[], []]
    assert all(not report.complete for report in reports)


def test_an_unreachable_name_server_is_recorded_on_the_cluster(db, team):
    cluster = Cluster.objects.create(name="nowhere")
    cluster.name_servers.create(address="127.0.0.1:1")
    Topic.objects.create(cluster=cluster, team=team, name="SYNC_ON_NOWHERE")

    report = sync_cluster(cluster)

    assert not report.complete and report.missing_topics == []
    cluster.refresh_from_db()
    assert "127.0.0.1:1" in cluster.last_sync_error and cluster.sync_started_at is None


def test_a_second_sync_imports_nothing(cluster, sandbox, admin):
    create_topic(admin, sandbox, "SYNC_TWICE")
    create_group(admin, sandbox, "cg_sync_twice")
    sync_cluster(cluster)
    entries = AuditEntry.objects.count()

    again = sync_cluster(cluster)

    assert again.complete
    assert (again.imported_topics, again.imported_groups) == ([], [])
    assert (again.missing_topics, again.missing_groups, again.restored_topics, again.restored_groups) == ([],) * 4
    assert AuditEntry.objects.count() == entries
    assert Topic.objects.filter(cluster=cluster, name="SYNC_TWICE").count() == 1


def test_a_sync_does_nothing_while_another_holds_the_cluster(cluster):
    Cluster.objects.filter(pk=cluster.pk).update(sync_started_at=timezone.now())

    report = sync_cluster(cluster)

    assert not report.ran
    assert not Topic.objects.filter(cluster=cluster).exists()


def test_a_lease_left_by_a_sync_that_died_is_taken_over(cluster):
    Cluster.objects.filter(pk=cluster.pk).update(sync_started_at=timezone.now() - SYNC_LEASE - timedelta(seconds=1))

    report = sync_cluster(cluster)

    assert report.ran and report.complete
    cluster.refresh_from_db()
    assert cluster.sync_started_at is None


@pytest.mark.django_db(transaction=True)
def test_concurrent_syncs_of_one_cluster_do_not_both_run(cluster, sandbox, admin, settings):
    """A real race: the first sync is held up by a hung broker while the second one starts."""
    settings.ROCKETMQ_REQUEST_TIMEOUT = 30.0  # the first sync waits for broker-a until it is healed below
    create_topic(admin, sandbox, "SYNC_RACE")
    results = {}

    def first_sync():
        try:
            results["first"] = sync_cluster(Cluster.objects.get(pk=cluster.pk))
        finally:
            connections.close_all()

    sandbox.hang("broker-a")
    try:
        thread = threading.Thread(target=first_sync)
        thread.start()
        wait_for(lambda: Cluster.objects.filter(pk=cluster.pk, sync_started_at__isnull=False).exists())
        second = sync_cluster(Cluster.objects.get(pk=cluster.pk))
    finally:
        sandbox.heal("broker-a")
        thread.join(60)

    assert not second.ran and second.imported_topics == []
    assert results["first"].ran and "SYNC_RACE" in results["first"].imported_topics
    assert Topic.objects.filter(cluster=cluster, name="SYNC_RACE").count() == 1


def test_a_sync_report_sums_itself_up_in_one_sentence():
    report = SyncReport(cluster="prod", brokers=4, imported_topics=["A", "B"], missing_groups=["G"])
    with translation.override("en"):
        summary = report.summary()
    assert summary == (
        "Sync of prod: 4 brokers; imported 2 topics and 0 consumer groups; flagged 0 topics and 1 consumer groups "
        "missing; restored 0 topics and 0 consumer groups."
    )

"""The Celery tasks and the beat schedule: thin tasks that take ids and call the sync, one periodic fan-out.

The tasks run in-process here (called directly, or eagerly through ``.delay``); tests/portal/test_demo.py sends one
through a real Redis to a real worker.
"""

import pytest

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from portal.beat import beat_schedule
from portal.celery import app as celery_app
from portal.models import Cluster, Origin, Topic
from portal.tasks import sync_all_registries, sync_registry


@pytest.fixture
def eager():
    """``.delay`` runs the task at once, in this process (and raises what it raises)."""
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    celery_app.conf.update(task_always_eager=False, task_eager_propagates=False)


def create_topic_on_masters(sandbox, name: str) -> None:
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for broker_name in sandbox.broker_names:
            admin.create_and_update_topic_config(sandbox.broker(broker_name).addr, b.TopicConfig(topic_name=name))


def test_sync_registry_syncs_the_cluster_it_is_given(cluster, sandbox):
    create_topic_on_masters(sandbox, "TASK_DIRECT_TOPIC")

    counts = sync_registry(cluster.pk)

    assert counts["imported_topics"] >= 1 and counts["errors"] == 0
    assert Topic.objects.get(cluster=cluster, name="TASK_DIRECT_TOPIC").origin == Origin.IMPORTED


def test_sync_registry_of_a_cluster_deleted_since_it_was_queued_does_nothing(db):
    assert sync_registry(123456) is None


def test_sync_all_registries_syncs_every_cluster_on_its_own(cluster, sandbox, eager):
    unreachable = Cluster.objects.create(name="unreachable")
    unreachable.name_servers.create(address="127.0.0.1:1")

    assert sync_all_registries.delay().get() == 2

    cluster.refresh_from_db()
    unreachable.refresh_from_db()
    assert cluster.last_synced_at is not None and cluster.last_sync_error == ""
    assert unreachable.last_synced_at is None and "127.0.0.1:1" in unreachable.last_sync_error


def test_beat_runs_the_registry_sync_every_interval_and_drops_runs_older_than_one(settings):
    entry = celery_app.conf.beat_schedule["sync-all-registries"]

    assert entry["task"] == sync_all_registries.name
    assert entry["schedule"] == settings.REGISTRY_SYNC_INTERVAL_SECONDS
    assert entry["options"]["expires"] == settings.REGISTRY_SYNC_INTERVAL_SECONDS
    assert beat_schedule(registry_sync_seconds=60)["sync-all-registries"]["schedule"] == 60


def test_every_scheduled_task_exists():
    celery_app.loader.import_default_modules()
    for entry in celery_app.conf.beat_schedule.values():
        assert entry["task"] in celery_app.tasks

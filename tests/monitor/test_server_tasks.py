"""The server-stats tasks and their beat entry: thin tasks taking ids, one periodic fan-out per five-minute slot.
Tasks run in-process here (called directly, or eagerly through ``apply_async``)."""

import datetime as dt

from celery.schedules import crontab

from monitor.tasks.servers import collect_all_server_stats, collect_server_stats
from portal.celery import app as celery_app
from portal.models import Cluster
from stats.models import ServerSample
from tests.monitor.test_server_stats import AT, SLOT, register


def test_the_task_collects_the_cluster_it_is_given_into_the_slot_it_names(db, sshd, ssh_keys):
    cluster = register("task", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)

    assert collect_server_stats(cluster.pk, AT.isoformat()) == {"collected": 1, "errors": 0}

    assert list(ServerSample.objects.values_list("host", "minute", "error")) == [("127.0.0.1", SLOT, "")]


def test_the_task_for_a_cluster_gone_or_without_server_access_does_nothing(db):
    assert collect_server_stats(123456) is None
    assert collect_server_stats(Cluster.objects.create(name="no-access").pk) is None
    assert not ServerSample.objects.exists()


def test_the_periodic_task_collects_every_cluster_with_server_access_on_its_own(db, sshd, ssh_keys, eager):
    register("up", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)
    register("down", ["127.0.0.2"], port=sshd.port, private_key=ssh_keys.client)
    Cluster.objects.create(name="no-access")

    assert collect_all_server_stats.delay().get() == 2

    rows = {row.host: row for row in ServerSample.objects.all()}
    assert rows["127.0.0.1"].error == "" and rows["127.0.0.1"].mem_total > 0
    assert rows["127.0.0.2"].error.startswith("cannot connect") and rows["127.0.0.2"].mem_total is None
    assert rows["127.0.0.1"].minute == rows["127.0.0.2"].minute  # one slot for the whole run
    assert rows["127.0.0.1"].minute.minute % 5 == 0 and rows["127.0.0.1"].minute.second == 0


def test_beat_collects_server_stats_at_the_start_of_every_five_minute_slot_and_drops_late_runs():
    entry = celery_app.conf.beat_schedule["collect-all-server-stats"]

    assert entry["task"] == collect_all_server_stats.name
    assert entry["schedule"] == crontab(minute="*/5")
    assert entry["options"]["expires"] == dt.timedelta(minutes=5).total_seconds()

"""The per-minute tasks and their beat entries: thin tasks taking ids, the portal's fan-out chaining each collection
with its warning evaluation (monitor collects, the portal judges) and expiring with its minute, and retention every
quarter of an hour. Tasks run in-process here (called directly, or eagerly through ``apply_async``)."""

import contextlib
import datetime as dt

from celery.schedules import crontab
from celery.signals import task_postrun
from django.utils import timezone

from monitor.collect import lease
from monitor.tasks.traffic import collect_cluster, delete_expired_minutes, probe_cluster
from portal.celery import app as celery_app
from portal.tasks import collect_all_clusters, evaluate_collected_minute
from stats.models import BrokerProbe, ClusterMinute, NameServerProbe

pytest_plugins = ["tests.monitor.fixtures_traffic"]


def test_the_tasks_collect_and_probe_the_cluster_they_are_given(registered):
    assert collect_cluster(registered.pk)["brokers"] == 4
    assert probe_cluster(registered.pk) == {"name_servers_down": 0, "brokers_down": 0}
    assert ClusterMinute.objects.filter(cluster_id=registered.pk).count() == 1
    assert NameServerProbe.objects.count() == 1 and BrokerProbe.objects.count() == 4


@contextlib.contextmanager
def tasks_run():
    """The names and arguments of the tasks that ran (eagerly, in this process) inside the block."""
    ran = []

    def record(task=None, args=None, **_):
        ran.append((task.name, tuple(args)))

    task_postrun.connect(record, weak=False)
    try:
        yield ran
    finally:
        task_postrun.disconnect(record)


def test_each_collection_cycle_is_followed_by_the_clusters_warning_evaluation(registered, eager):
    with tasks_run() as ran:
        collect_all_clusters()

    names = [name for name, _ in ran]
    assert names.index("monitor.tasks.traffic.collect_cluster") < names.index("portal.tasks.evaluate_collected_minute")
    assert ("portal.tasks.evaluate_collected_minute", (registered.pk,)) in [(n, a[-1:]) for n, a in ran]


def test_a_collection_that_found_the_cluster_busy_is_not_evaluated(registered, eager):
    lease.claim(registered)

    with tasks_run() as ran:
        collect_all_clusters()

    evaluations = [args for name, args in ran if name == "portal.tasks.evaluate_collected_minute"]
    assert [args[0]["ran"] for args in evaluations] == [0]


def test_the_evaluation_link_judges_only_a_collection_that_ran(registered):
    assert evaluate_collected_minute(None, registered.pk) is None  # the cluster was gone
    assert evaluate_collected_minute({"ran": 0}, registered.pk) is None  # another worker's chain evaluates
    assert evaluate_collected_minute({"ran": 1}, registered.pk)["rule_errors"] == 0


def test_the_tasks_for_a_cluster_gone_do_nothing(db):
    assert collect_cluster(123456) is None
    assert probe_cluster(123456) is None
    assert not ClusterMinute.objects.exists()


def test_the_periodic_task_probes_and_collects_every_cluster(registered, eager):
    assert collect_all_clusters.delay().get() == 1
    assert ClusterMinute.objects.filter(cluster_id=registered.pk).count() == 1
    assert BrokerProbe.objects.filter(cluster_id=registered.pk).count() == 4


def test_retention_keeps_the_configured_days(db, settings):
    settings.MINUTE_RETENTION_DAYS = 2
    now = timezone.now().replace(second=0, microsecond=0)
    for days in (1, 3):
        ClusterMinute.objects.create(cluster_id=1, minute=now - dt.timedelta(days=days))
    assert delete_expired_minutes() == 1
    assert list(ClusterMinute.objects.values_list("minute", flat=True)) == [now - dt.timedelta(days=1)]


def test_beat_collects_every_minute_and_deletes_expired_minutes_every_quarter_hour():
    schedule = celery_app.conf.beat_schedule
    collect = schedule["collect-all-clusters"]
    assert collect["task"] == collect_all_clusters.name
    assert collect["schedule"] == crontab(minute="*") and collect["options"]["expires"] == 60
    retention = schedule["delete-expired-minutes"]
    assert retention["task"] == delete_expired_minutes.name
    assert retention["schedule"] == crontab(minute="7-59/15") and retention["options"]["expires"] == 900

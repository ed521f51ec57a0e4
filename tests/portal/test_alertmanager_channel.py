"""The Alertmanager warning channel against a real Alertmanager (Debian's ``prometheus-alertmanager``, run as a plain
process on a port of its own, clustering off): a fired warning appears there as a firing alert with its labels,
since the warning opened, and its resolution ends it; the channel's settings are checked like a webhook's, and an
address Alertmanager does not serve is a permanent failure. Posts go through ``portal.services.outbound``, so the
tests allow 127.0.0.1 with ``WEBHOOK_ALLOWED_NETWORKS`` as the webhook tests do."""

import datetime as dt
import json
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from portal.models import Cluster, ConsumerGroup
from portal.models.warnings import Channel, ChannelKind, Delivery, SubjectType, WarningKind
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import create_channel, describe
from portal.services.warnings.channels.alertmanager import FIRING_FOR, alertname, alerts_url
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from tests.portal.warning_servers import LOCAL_RECEIVERS
from tests.support.network import free_port
from tests.support.waiting import wait_for

LAG = WarningKind.CONSUMER_LAG
CONFIG = """
route:
  receiver: nobody
  group_wait: 1h
receivers:
  - name: nobody
"""


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    """A real Alertmanager with a receiver that sends nowhere; yields its base URL."""
    binary = shutil.which("prometheus-alertmanager")
    assert binary, "prometheus-alertmanager is missing: `make sysdeps` installs Debian's package"
    home = tmp_path_factory.mktemp("alertmanager")
    (home / "alertmanager.yml").write_text(CONFIG)
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={home / 'alertmanager.yml'}",
            f"--storage.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(home / "alertmanager.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(base), timeout=60, what="Alertmanager ready", state=lambda: process.poll())
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/-/ready", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


def firing(base: str, **labels) -> list[dict]:
    """The alerts Alertmanager holds now (resolved ones are not listed) matching ``labels``."""
    matchers = [("filter", f'{name}="{value}"') for name, value in labels.items()]
    with urllib.request.urlopen(f"{base}/api/v2/alerts?{urllib.parse.urlencode(matchers)}", timeout=5) as answer:
        return json.load(answer)


@pytest.fixture
def local(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    settings.PORTAL_BASE_URL = "https://mqcloud.test"


@pytest.fixture
def group(db, team):
    cluster = Cluster.objects.create(name=f"prod-{free_port()}")  # one cluster name per test: alerts outlive tests
    return ConsumerGroup.objects.create(cluster=cluster, team=team, name="order-consumer")


def evaluation(*conditions: Condition) -> Evaluation:
    result = Evaluation()
    result.add(LAG, list(conditions))
    return result


LAGGING = Condition(
    kind=LAG,
    subject_type=SubjectType.CONSUMER_GROUP,
    subject_name="order-consumer",
    summary="order-consumer is 52,000 messages behind on orders",
    details={"topic": "orders", "behind": 52_000},
)


def only_through_alertmanager(user, base: str) -> Channel:
    channel = create_channel(user, kind=ChannelKind.ALERTMANAGER, name="alertmanager", config={"url": base})
    subscriptions.subscribe(user, LAG, [channel])
    return channel


def test_a_fired_warning_fires_in_alertmanager_and_its_resolution_ends_it(alertmanager, local, group, member):
    only_through_alertmanager(member, alertmanager)
    opened = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=30)
    fired = reconcile(group.cluster, evaluation(LAGGING), opened).fired[0]

    assert deliver(fired).sent == 1

    (alert,) = wait_for(lambda: firing(alertmanager, cluster=group.cluster.name), what="the alert in Alertmanager")
    assert alert["labels"] == {
        "alertname": "MQCloudWarningConsumerLag",
        "kind": "consumer_lag",
        "severity": "warning",
        "cluster": group.cluster.name,
        "subject_type": "consumer_group",
        "subject": "order-consumer",
        "topic": "orders",
    }
    assert alert["status"]["state"] == "active"
    assert dt.datetime.fromisoformat(alert["startsAt"]) == opened
    assert dt.datetime.fromisoformat(alert["endsAt"]) > timezone.now() + FIRING_FOR - dt.timedelta(hours=1)
    assert alert["annotations"]["summary"].startswith("order-consumer is 52,000 messages behind")
    assert alert["generatorURL"] == f"https://mqcloud.test/warnings/{fired.warning.pk}/"

    resolved = reconcile(group.cluster, evaluation(), opened + dt.timedelta(minutes=20)).resolved[0]
    assert deliver(resolved).sent == 1

    wait_for(lambda: not firing(alertmanager, cluster=group.cluster.name), what="the alert resolved")
    assert sorted(Delivery.objects.values_list("channel_kind", "status")) == [("alertmanager", "sent")] * 2


def test_an_address_alertmanager_does_not_serve_disables_the_channel_at_once(alertmanager, local, group, member):
    """A wrong path prefix (the API is not under it: 404) fails the same way every time."""
    channel = only_through_alertmanager(member, alertmanager + "/not-served-here")
    fired = reconcile(group.cluster, evaluation(LAGGING), timezone.now()).fired[0]

    report = deliver(fired)

    channel.refresh_from_db()
    assert (report.failed, report.retryable) == (1, 0)
    assert not channel.enabled and channel.last_error == "HTTP 404 Not Found"
    assert firing(alertmanager, cluster=group.cluster.name) == []


def test_the_channel_takes_the_alertmanager_address_and_shows_only_its_host(db, member):
    channel = create_channel(
        member, kind=ChannelKind.ALERTMANAGER, name="am", config={"url": "https://am.example.com/alertmanager/"}
    )

    assert describe(channel) == "https://am.example.com"
    assert alerts_url("https://am.example.com/alertmanager/") == "https://am.example.com/alertmanager/api/v2/alerts"
    assert alerts_url("http://am:9093/api/v2/alerts") == "http://am:9093/api/v2/alerts"
    with pytest.raises(ValidationError) as refused:
        create_channel(member, kind=ChannelKind.ALERTMANAGER, name="am", config={"url": "http://u:p@am:9093"})
    assert "url" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        create_channel(member, kind=ChannelKind.ALERTMANAGER, name="am", config={"url": "http://am", "secret": "a b"})
    assert "secret" in refused.value.message_dict


def test_alert_names_follow_the_shipped_prometheus_rules():
    assert alertname("nameserver_down") == "MQCloudWarningNameserverDown"
    assert alertname("server_tcp") == "MQCloudWarningServerTcp"

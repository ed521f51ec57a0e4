"""A warning's figures as its page shows them (``portal.web.warning_details``): what each rule family keeps becomes
labelled values in units (messages, seconds, %, bytes; yes/no; "—" for unknown) and tables of queues, clients or
mounts; the page has the chart of what the warning is about, and no Python repr of the stored JSON."""

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.models import Broker, Cluster, ConsumerGroup, NameServer, ProducerGroup, Subscription, Topic, Warning
from portal.models.warnings import WarningKind
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.web.monitoring import WARNING_COLOR
from portal.web.warning_details import LABELS, present
from tests.portal.warning_rules.test_warning_rules import found, lagging_group
from tests.portal.warning_snapshots import GROUP, SNAPSHOTS, TOPIC

RAW = ("{'", "['", "[{", "True", "False", "None", "': ")
NAMES = {TOPIC, "REFUNDS", "MQBrokerException", "RemotingTimeoutException"}  # names the snapshots are keyed by


def keys_of(value) -> set[str]:
    """Every key of a stored snapshot, however deep (the names of a mapping of names excepted)."""
    if isinstance(value, list):
        return set().union(*(keys_of(item) for item in value)) if value else set()
    if not isinstance(value, dict):
        return set()
    if all(isinstance(item, dict) for item in value.values()) and not set(value) <= set(LABELS):
        return set().union(*(keys_of(item) for item in value.values()))  # topic -> figures, mount -> figures
    return set(value) | set().union(*(keys_of(item) for item in value.values()))


def shown(figures) -> list[str]:
    return [text for figure in figures.values for text in (figure.label, figure.value)] + [
        text for table in figures.tables for text in [table.title, *(c.text for c in table.columns)]
    ] + [text for table in figures.tables for row in table.texts for text in row]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(SNAPSHOTS))
def test_every_figure_a_rule_family_keeps_has_a_label_and_none_is_shown_raw(kind):
    details = SNAPSHOTS[kind][3]
    assert keys_of(details) - set(LABELS) - NAMES == set()
    texts = shown(present(details))
    assert [text for text in texts if any(raw in text for raw in RAW)] == []


def test_a_lag_shows_its_figures_in_units_and_its_queues_as_a_table(settings):
    settings.TIME_ZONE = "UTC"
    figures = present(SNAPSHOTS[WarningKind.CONSUMER_LAG][3])

    values = {figure.label: figure.value for figure in figures.values}
    assert values["Judged at"] == "2026-03-02 10:00:00"
    assert values["State"] == "falling behind"
    assert values["Lag"] == "52,000 messages"
    assert values["Lag time"] == "14 min"
    assert values["Lag time measured"] == "yes" and values["Broadcasting"] == "no"
    assert values["Pulled in the last minute"] == "—"  # the rule could not know
    assert values["Consumed"] == "3.33/s"
    assert values["Thresholds: Messages"] == "10,000 messages" and values["Thresholds: Time"] == "5 min"
    topics, queues = figures.tables
    assert [cell.text for cell in topics.columns] == ["Topic", "Lag", "Lag time", "Lag time measured", "Read at"]
    assert [cell.text for cell in queues.columns] == [
        "Topic", "Broker", "Queue", "Lag", "Consumer offset", "Broker offset", "Client id"
    ]  # fmt: skip
    assert len(queues.rows) == 16
    assert queues.texts[1] == [TOPIC, "broker-b", "0", "5,750 messages", "1,204,501", "1,210,251", "—"]
    assert [cell.numeric for cell in queues.rows[0]] == [False, False, False, True, True, True, False]


def test_servers_mounts_producers_exceptions_and_clients_subscriptions_are_tables():
    disk = present(SNAPSHOTS[WarningKind.SERVER_DISK][3])
    assert [cell.text for cell in disk.tables[0].columns] == ["Mount", "Usage", "Used", "Free"]
    assert disk.tables[0].texts[0][:2] == ["/data/rocketmq/store", "93.4 %"]
    assert {figure.label: figure.value for figure in disk.values}["Threshold"] == "90 %"

    errors = present(SNAPSHOTS[WarningKind.PRODUCE_ERRORS][3])
    exceptions, brokers = errors.tables
    assert exceptions.texts == [["MQBrokerException", "40"], ["RemotingTimeoutException", "2"]]
    assert brokers.texts[1] == ["RemotingTimeoutException", "broker-a, broker-b"]
    assert {figure.label: figure.value for figure in errors.values}["Topics"] == f"{TOPIC}, REFUNDS"

    mismatch = present(SNAPSHOTS[WarningKind.SUBSCRIPTION_MISMATCH][3])
    assert mismatch.tables[0].texts[1] == ["10.0.0.22@12345", f"{TOPIC}: *; REFUNDS: *", "—"]

    cpu = {figure.label: figure.value for figure in present(SNAPSHOTS[WarningKind.SERVER_CPU][3]).values}
    assert cpu["CPU busy"] == "97.5 %, 96 %, 95.2 %"  # to a tenth
    slave = {figure.label: figure.value for figure in present(SNAPSHOTS[WarningKind.SLAVE_LAG][3]).values}
    assert slave["Behind its master"] == "256.0\xa0MB" and slave["Change a minute"] == "—"


def test_a_figure_no_label_knows_yet_is_still_shown_readably():
    figures = present({"stalled_for_seconds": 5, "flags": {"x": True}})
    assert [(f.label, f.value) for f in figures.values] == [("Stalled for seconds", "5")]
    assert figures.tables[0].texts == [["x", "yes"]]


def test_what_the_real_lag_rule_keeps_is_all_labelled(db):
    cluster = Cluster.objects.create(name="rules")
    NameServer.objects.create(cluster=cluster, address="127.0.0.1:9876")
    lagging_group(cluster, before=(1000, 8000), now=(1500, 10000))

    details = found(cluster, WarningKind.CONSUMER_LAG)["cg_orders"].details

    assert keys_of(details) - set(LABELS) == set()
    assert [text for text in shown(present(details)) if any(raw in text for raw in RAW)] == []


# --- the page -----------------------------------------------------------------------------------------------------


@pytest.fixture
def prod(db, team):
    """Every subject of the example snapshots, registered, with their warnings opened 15 minutes ago."""
    cluster = Cluster.objects.create(name="prod")
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                          address="10.0.0.5:10911", role="ASYNC_MASTER")  # fmt: skip
    Broker.objects.create(cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-a", broker_id=1,
                          address="10.0.0.5:10921", role="SLAVE")  # fmt: skip
    topic = Topic.objects.create(cluster=cluster, team=team, name=TOPIC, queue_nums=8)
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=GROUP)
    Subscription.objects.create(consumer_group=group, topic=topic)
    ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_PAYMENT_ORDER")
    evaluation = Evaluation()
    for kind, (subject_type, subject, summary, details) in SNAPSHOTS.items():
        evaluation.add(kind, [Condition(kind, subject_type, subject, summary, details)])
    reconcile(cluster, evaluation, timezone.now() - dt.timedelta(minutes=15))
    return cluster


@pytest.mark.parametrize("kind", sorted(SNAPSHOTS))
def test_a_warning_page_shows_no_python_values_and_charts_what_it_is_about(client, portal_admin, prod, kind):
    warning = Warning.objects.get(kind=kind)
    client.force_login(portal_admin)

    response = client.get(reverse("warning-detail", args=[warning.pk]))

    html = response.content.decode()
    figures = html[html.index('id="figures"') : html.index('id="events"')]
    assert [raw for raw in RAW if raw.replace("'", "&#x27;") in figures or raw in figures] == []
    specs = [json.loads(chart.spec) for chart in response.context["charts"]]
    assert len(specs) == 1, "the chart of what the warning is about"
    assert [shape["fillcolor"] for shape in specs[0]["layout"].get("shapes", [])].count(WARNING_COLOR) == 1


def test_the_lag_warning_page_labels_its_figures_and_tables_its_queues(client, member, prod):
    warning = Warning.objects.get(kind=WarningKind.CONSUMER_LAG)
    client.force_login(member)

    html = client.get(reverse("warning-detail", args=[warning.pk])).content.decode()

    assert "<dt>Lag</dt><dd>52,000 messages</dd>" in html
    assert "<dt>Lag time measured</dt><dd>yes</dd>" in html
    assert "<dt>Pulled in the last minute</dt><dd>—</dd>" in html
    assert '<th class="num">Consumer offset</th>' in html
    assert html.count(f"<td>{TOPIC}</td>") == 17  # the topics table's row and the sixteen queues

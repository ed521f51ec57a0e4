"""The message trace rule against stored trace counts (:class:`stats.models.TraceClientMinute`, as the SDK's reports
leave them): a topic warns when its clients dropped or failed enough trace records within the window, with the
clients named, and the warning resolves once a window passes without a loss."""

import datetime as dt
import json

import pytest
from django.utils import timezone

from portal.models import Cluster, Team, Topic
from portal.models.warnings import SubjectType, Warning, WarningKind, WarningState
from portal.services.warnings.lifecycle import reconcile, stored_summary
from portal.services.warnings.rules import evaluate
from stats.models import TraceClientMinute
from stats.models.tracing import CONSUMER, PRODUCER
from stats.store.tracing import store_trace_minutes
from tests.portal.warning_rules.warning_rows import NOW, T, default_threshold, minutes_before, override_threshold

KIND = WarningKind.TRACE_FAILURES
ID = "10.2.0.9@1"  # a consumer


@pytest.fixture
def cluster(db):
    return Cluster.objects.create(name="rules")


def traced(cluster, topic, at, *, written=100, dropped=0, failed=0, role=PRODUCER, group="PID_ORDERS",
           client="10.2.0.1@4711"):  # fmt: skip
    return TraceClientMinute(
        cluster_id=cluster.pk,
        role=role,
        group=group,
        topic=topic,
        client_id=client,
        client_addr=client.partition("@")[0],
        minute=at,
        written=written,
        dropped=dropped,
        failed=failed,
        updated_at=timezone.now(),
    )


def found(cluster, now=NOW):
    evaluation = evaluate(cluster, now)
    assert KIND in evaluation.evaluated  # judged without any collected minute: the clients' reports suffice
    for condition in evaluation.conditions:
        json.dumps(condition.details)
    return {c.subject_name: c for c in evaluation.of_kind(KIND)}


def test_trace_records_dropped_or_not_written_in_the_window_warn_on_the_topic_naming_the_clients(cluster):
    store_trace_minutes(
        [
            traced(cluster, "TopicOrders", minutes_before(T, 2), dropped=4),
            traced(
                cluster, "TopicOrders", minutes_before(T, 1), failed=1, role=CONSUMER, group="GID_ORDERS", client=ID
            ),
            traced(cluster, "TopicOrders", minutes_before(T, 1), client="10.2.0.2@99"),  # writes all it traces
            traced(cluster, "TopicFine", minutes_before(T, 1)),
            traced(cluster, "TopicPast", minutes_before(T, 6), dropped=50),  # before the five-minute window
        ]
    )

    conditions = found(cluster)

    assert set(conditions) == {"TopicOrders"}
    condition = conditions["TopicOrders"]
    assert condition.subject_type == SubjectType.TOPIC
    assert stored_summary(condition).startswith(
        "5 trace records of TopicOrders were lost in the last 5 min: 4 dropped by the clients and 1 not written to "
        "the trace topic, by 2 clients (10.2.0.9@1 and 10.2.0.1@4711)."
    )
    details = condition.details
    assert (details["trace_written"], details["trace_dropped"], details["trace_failed"]) == (300, 4, 1)
    assert details["losing_clients"] == [
        {"consumer_group": "GID_ORDERS", "client_id": "10.2.0.9@1", "trace_written": 100, "trace_dropped": 0,
         "trace_failed": 1},
        {"producer_group": "PID_ORDERS", "client_id": "10.2.0.1@4711", "trace_written": 100, "trace_dropped": 4,
         "trace_failed": 0},
    ]  # fmt: skip
    assert details["last_loss_minute"] == minutes_before(T, 1).isoformat()


def test_a_topics_own_threshold_and_window_apply_to_it(cluster):
    tolerant = Topic.objects.create(cluster=cluster, team=Team.objects.create(name="orders"), name="TopicTolerant")
    default_threshold(KIND, records=1, window_minutes=5)
    override_threshold(KIND, tolerant, records=10, window_minutes=30)
    store_trace_minutes(
        [
            traced(cluster, "TopicTolerant", minutes_before(T, 20), dropped=6),
            traced(cluster, "TopicTolerant", minutes_before(T, 1), failed=4),
        ]
    )

    assert found(cluster)["TopicTolerant"].details["threshold"] == 10
    override_threshold(KIND, tolerant, records=11, window_minutes=30)
    assert found(cluster) == {}


def test_the_warning_fires_then_resolves_once_a_window_passes_without_a_loss(cluster):
    store_trace_minutes([traced(cluster, "TopicOrders", minutes_before(T, 1), dropped=2)])

    fired = reconcile(cluster, evaluate(cluster, NOW), NOW)
    later = NOW + dt.timedelta(minutes=6)
    store_trace_minutes([traced(cluster, "TopicOrders", minutes_before(T, -5), dropped=0)])  # still tracing, no loss
    resolved = reconcile(cluster, evaluate(cluster, later), later)

    assert [event.warning.subject_name for event in fired.fired] == ["TopicOrders"]
    assert [event.warning.subject_name for event in resolved.resolved] == ["TopicOrders"]
    assert Warning.objects.get(kind=KIND).state == WarningState.RESOLVED

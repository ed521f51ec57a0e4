"""Consumer-group warning rules against stored stats: each condition, its boundary and its absence, written through
the stats store as the collector writes them (the sandbox-driven scenarios are in test_warning_scenarios.py)."""

import datetime as dt
import json

import pytest

from portal.models import Cluster, ConsumerGroup, NameServer, Team
from portal.models.warnings import Severity, SubjectType, WarningKind
from portal.services.warnings.lifecycle import stored_summary
from portal.services.warnings.rules import evaluate
from tests.portal.warning_rules.warning_rows import (
    NOW,
    Minute,
    T,
    collected,
    default_threshold,
    minutes_before,
    override_threshold,
)

CONSUMER_KINDS = {
    WarningKind.CONSUMER_LAG,
    WarningKind.CLIENT_BLOCKED,
    WarningKind.OFFSET_MOVED,
    WarningKind.SUBSCRIPTION_MISMATCH,
    WarningKind.CONSUME_FAILURES,
    WarningKind.DEAD_LETTERS,
}


@pytest.fixture
def cluster(db):
    cluster = Cluster.objects.create(name="rules")
    NameServer.objects.create(cluster=cluster, address="127.0.0.1:9876")
    return cluster


def found(cluster, kind, now=NOW):
    """The conditions of ``kind`` by subject (the kind must have been evaluated; what a warning event keeps of a
    condition must be JSON)."""
    evaluation = evaluate(cluster, now)
    assert kind in evaluation.evaluated
    for condition in evaluation.conditions:
        json.dumps(condition.details)
    return {c.subject_name: c for c in evaluation.of_kind(kind)}


def lagging_group(cluster, group="cg_orders", topic="TopicOrders", *, before, now, clients=2, lag_seconds=400.0):
    """``before`` and ``now``: (consumer offset, broker offset) of queues 0 and 1 on broker-a, five minutes apart;
    the minutes between are collected with the lag in between."""
    collected(cluster.pk, *(minutes_before(T, n) for n in (4, 3, 2, 1)))
    for at, (consumer, broker) in ((minutes_before(T, 5), before), (T, now)):
        minute = Minute(cluster.pk, at).consume(group, topic, lag=2 * (broker - consumer), lag_seconds=lag_seconds)
        for queue_id in (0, 1):
            minute.queue(group, topic, "broker-a", queue_id, broker_offset=broker, consumer_offset=consumer)
        if clients:
            minute.group(group, clients=clients)
        minute.store()


# --- consumer lag -------------------------------------------------------------------------------------------------


def test_a_lag_over_both_thresholds_says_how_far_which_queues_and_that_it_falls_behind(cluster):
    lagging_group(cluster, before=(1000, 8000), now=(1500, 10000))

    lag = found(cluster, WarningKind.CONSUMER_LAG)["cg_orders"]

    assert lag.subject_type == SubjectType.CONSUMER_GROUP and lag.severity == Severity.WARNING
    assert stored_summary(lag) == (
        "cg_orders is 17,000 messages behind on TopicOrders; the oldest waiting message has waited 6 min 40 s. "
        "Falling behind: consuming 3.3/s while 13/s arrive; the backlog grows by 600 a minute. "
        "Most behind: TopicOrders broker-a/0 (8,500) and TopicOrders broker-a/1 (8,500)."
    )
    assert lag.details["state"] == "falling_behind"
    assert (lag.details["lag"], lag.details["lag_seconds"], lag.details["clients"]) == (17000, 400.0, 2)
    assert lag.details["consumed_per_second"] == pytest.approx(1000 / 300)
    assert lag.details["produced_per_second"] == pytest.approx(4000 / 300)
    assert lag.details["lag_change_per_minute"] == pytest.approx(600)
    assert [(q["broker_name"], q["queue_id"], q["lag"]) for q in lag.details["queues"]] == [
        ("broker-a", 0, 8500),
        ("broker-a", 1, 8500),
    ]


def test_a_shrinking_backlog_is_slow_but_catching_up_with_the_time_it_takes_to_clear(cluster):
    lagging_group(cluster, before=(1000, 9000), now=(4000, 10000))

    lag = found(cluster, WarningKind.CONSUMER_LAG)["cg_orders"]

    assert lag.details["state"] == "catching_up" and lag.severity == Severity.WARNING
    # 16,000 behind five minutes ago, 12,000 now: 800 a minute less, 15 minutes to go.
    assert "Slow but catching up: consuming 20/s while 6.7/s arrive; the backlog shrinks by 800 a minute and " in (
        stored_summary(lag)
    )
    assert "clears in about 15 min." in stored_summary(lag)


def test_offsets_not_moving_while_clients_are_online_is_a_stalled_consumer(cluster):
    lagging_group(cluster, before=(1000, 8000), now=(1000, 9000))

    lag = found(cluster, WarningKind.CONSUMER_LAG)["cg_orders"]

    assert lag.details["state"] == "stalled" and lag.severity == Severity.CRITICAL
    assert "Stalled: 2 clients online, but the committed offsets have not moved in 5 min." in stored_summary(lag)


def test_a_lagging_group_without_clients_has_stopped(cluster):
    lagging_group(cluster, before=(1000, 8000), now=(1000, 9000), clients=0)

    lag = found(cluster, WarningKind.CONSUMER_LAG)["cg_orders"]

    assert lag.details["state"] == "stopped" and lag.severity == Severity.CRITICAL
    assert "Stopped: no consumer client is online" in stored_summary(lag)


@pytest.mark.parametrize(
    ("lag", "lag_seconds", "warns"),
    [
        (10_000, 3600.0, False),  # messages AT the threshold: not over it
        (10_001, 300.0, False),  # time AT the threshold
        (10_001, 301.0, True),
        (50, 86_400.0, False),  # long behind, few messages: an idle queue's last message
        (5_000_000, 30.0, False),  # a burst consumed within seconds
    ],
)
def test_lag_warns_only_over_both_the_message_and_the_time_threshold(cluster, lag, lag_seconds, warns):
    Minute(cluster.pk, T).consume("cg_edge", "TopicEdge", lag=lag, lag_seconds=lag_seconds).group("cg_edge").store()

    assert ("cg_edge" in found(cluster, WarningKind.CONSUMER_LAG)) is warns


def test_a_group_lagging_on_several_topics_is_one_warning_naming_each(cluster):
    Minute(cluster.pk, T).consume("cg_multi", "TopicA", lag=30_000, lag_seconds=900.0).consume(
        "cg_multi", "TopicB", lag=12_000, lag_seconds=320.0
    ).group("cg_multi").store()

    (lag,) = found(cluster, WarningKind.CONSUMER_LAG).values()

    assert stored_summary(lag).startswith(
        "cg_multi is 42,000 messages behind on 2 topics (TopicA: 30,000 and TopicB: 12,000); the oldest waiting "
        "message has waited 15 min."
    )
    assert set(lag.details["topics"]) == {"TopicA", "TopicB"}


def test_a_broadcasting_group_is_judged_by_how_long_its_lag_stayed_over_the_threshold(cluster):
    """Broadcasting clients keep their own offsets: the time behind is unknown, so the lag must have stayed over
    the message threshold for the time threshold."""
    group, topic = "cg_broadcast", "TopicBroadcast"
    for n in range(6, -1, -1):  # over the threshold from T-6 (10:54) on
        at = minutes_before(T, n)
        Minute(cluster.pk, at).consume(group, topic, lag=20_000 + 100 * (6 - n), lag_seconds=None).queue(
            group, topic, "broker-a", 0, broker_offset=30_000 + 100 * (6 - n), consumer_offset=10_000, client_id="c1"
        ).group(group, model="BROADCASTING").store()

    at_five = found(cluster, WarningKind.CONSUMER_LAG, now=minutes_before(T, 1) + dt.timedelta(seconds=20))
    at_six = found(cluster, WarningKind.CONSUMER_LAG)

    assert group not in at_five  # over for 5 minutes: not more than 300 s yet
    lag = at_six[group]
    assert lag.details["broadcasting"] is True and lag.details["age_measured"] is False
    assert lag.details["lag_seconds"] == 360.0
    assert "over 10,000 messages for at least 6 min" in stored_summary(lag)
    assert "Broadcasting group: each client consumes every message, and this is its furthest-behind client." in (
        stored_summary(lag)
    )
    assert lag.details["state"] == "stalled"  # its client's offset has not moved


def test_a_dip_under_the_threshold_restarts_the_time_of_a_lag_of_unknown_age(cluster):
    group, topic = "cg_dip", "TopicDip"
    for n, lag in ((7, 20_000), (6, 20_000), (5, 20_000), (4, 9_000), (3, 20_000), (2, 20_000), (1, 20_000)):
        Minute(cluster.pk, minutes_before(T, n)).consume(group, topic, lag=lag, lag_seconds=None).group(group).store()
    Minute(cluster.pk, T).consume(group, topic, lag=20_000, lag_seconds=None).group(group).store()

    assert group not in found(cluster, WarningKind.CONSUMER_LAG)


def test_a_lag_not_read_this_minute_keeps_its_last_reading(cluster):
    """Its master did not answer: the lag is NULL (unknown), and the warning must not end for that."""
    group, topic = "cg_unread", "TopicUnread"
    Minute(cluster.pk, minutes_before(T, 1)).consume(group, topic, lag=50_000, lag_seconds=600.0).group(group).store()
    Minute(cluster.pk, T).consume(group, topic, lag=None, lag_seconds=None).group(group).store()

    lag = found(cluster, WarningKind.CONSUMER_LAG)[group]

    assert lag.details["lag"] == 50_000
    assert lag.details["topics"][topic]["measured_at"] == minutes_before(T, 1).isoformat()
    summary = stored_summary(lag)
    assert "Not read this minute for TopicUnread (a broker did not answer): the last reading stands." in summary


def test_an_owners_override_changes_the_thresholds_of_their_group_only(cluster):
    team = Team.objects.create(name="orders")
    relaxed = ConsumerGroup.objects.create(cluster=cluster, team=team, name="cg_relaxed")
    override_threshold(WarningKind.CONSUMER_LAG, relaxed, messages=100_000)
    default_threshold(WarningKind.CONSUMER_LAG, seconds=60)
    minute = Minute(cluster.pk, T)
    for group in ("cg_relaxed", "cg_strict"):
        minute.consume(group, "TopicShared", lag=50_000, lag_seconds=120.0).group(group)
    minute.store()

    assert set(found(cluster, WarningKind.CONSUMER_LAG)) == {"cg_strict"}


def test_a_disabled_kind_raises_nothing_but_is_still_evaluated(cluster):
    default_threshold(WarningKind.CONSUMER_LAG, enabled=False)
    Minute(cluster.pk, T).consume("cg_off", "TopicOff", lag=50_000, lag_seconds=900.0).group("cg_off").store()

    assert found(cluster, WarningKind.CONSUMER_LAG) == {}


def test_without_a_recent_collection_no_consumer_kind_is_evaluated(cluster):
    Minute(cluster.pk, T).consume("cg_old", "TopicOld", lag=50_000, lag_seconds=900.0).group("cg_old").store()

    evaluation = evaluate(cluster, T + dt.timedelta(minutes=6))

    assert not CONSUMER_KINDS & evaluation.evaluated and evaluation.conditions == []
    assert evaluate(cluster, T + dt.timedelta(minutes=5)).evaluated >= CONSUMER_KINDS


# --- blocked clients ----------------------------------------------------------------------------------------------


def test_queues_not_consumed_longer_than_the_threshold_while_messages_wait_are_blocked(cluster, settings):
    settings.CONSUMER_BLOCKED_SECONDS = 5
    Minute(cluster.pk, T).blocked(
        "cg_hung", "TopicHung", "broker-a", 0, "10.0.0.1@100", since=T - dt.timedelta(seconds=95), cached=32, lag=900
    ).blocked(
        "cg_hung", "TopicHung", "broker-b", 3, "10.0.0.2@200", since=T - dt.timedelta(seconds=30), cached=0, lag=7
    ).blocked(
        # collector's floor (5 s) and 8 s behind the minute: under the group's 10 s threshold
        "cg_fine",
        "TopicFine",
        "broker-a",
        1,
        "10.0.0.3@300",
        since=T - dt.timedelta(seconds=8),
    ).group("cg_hung", clients=2, blocked=2).store()

    blocked = found(cluster, WarningKind.CLIENT_BLOCKED)

    assert set(blocked) == {"cg_hung"}
    assert stored_summary(blocked["cg_hung"]).startswith(
        "2 queues of cg_hung not consumed for up to 1 min 35 s while messages wait, on 2 clients: "
        "TopicHung broker-a/0 on 10.0.0.1@100 (32 cached, 900 behind) and "
        "TopicHung broker-b/3 on 10.0.0.2@200 (0 cached, 7 behind)."
    )
    assert [q["blocked_seconds"] for q in blocked["cg_hung"].details["queues"]] == [95.0, 30.0]


def test_a_blocked_row_counts_at_least_the_collectors_own_threshold(cluster, settings):
    """The collector keeps only queues blocked past CONSUMER_BLOCKED_SECONDS: a row is that long blocked at least,
    whatever the minute it is filed under says."""
    settings.CONSUMER_BLOCKED_SECONDS = 60
    Minute(cluster.pk, T).blocked(
        "cg_late", "TopicLate", "broker-a", 0, "c@1", since=T + dt.timedelta(seconds=1)
    ).store()

    assert found(cluster, WarningKind.CLIENT_BLOCKED)["cg_late"].details["queues"][0]["blocked_seconds"] == 60.0


# --- offset errors ------------------------------------------------------------------------------------------------


def test_an_offset_moved_event_in_the_last_ten_minutes_is_an_offset_error(cluster):
    minute = Minute(cluster.pk, T)
    minute.offset_moved(
        "cg_moved", "TopicMoved", at=NOW - dt.timedelta(minutes=3), queue_offset=1, requested=1200, new=5000
    )
    minute.offset_moved(
        "cg_moved", "TopicMoved", at=NOW - dt.timedelta(minutes=1), queue_offset=2, requested=9000, new=0
    )
    minute.offset_moved("cg_past", "TopicPast", at=NOW - dt.timedelta(minutes=11), queue_offset=3, requested=1, new=2)
    minute.store()

    moved = found(cluster, WarningKind.OFFSET_MOVED)

    assert set(moved) == {"cg_moved"}
    assert stored_summary(moved["cg_moved"]).startswith(
        "cg_moved asked for offsets outside the queues 2 times in the last 10 min (OFFSET_MOVED_EVENT), the latest at "
        "09:59:20 UTC; the broker moved it: TopicMoved broker-a/1: asked for 9,000, moved to 0, 9,000 messages to be "
        "consumed again."
    )
    assert moved["cg_moved"].details["events"] == 2


# --- subscriptions ------------------------------------------------------------------------------------------------


def test_clients_of_a_group_subscribing_differently_are_named_with_their_subscriptions(cluster):
    Minute(cluster.pk, T).group("cg_split", clients=3, consistent=False).client(
        "cg_split", "10.0.0.1@1", {"TopicA": "*", "%RETRY%cg_split": "*"}
    ).client("cg_split", "10.0.0.2@2", {"TopicA": "*", "%RETRY%cg_split": "*"}).client(
        "cg_split", "10.0.0.3@3", {"TopicB": "TagA || TagB", "%RETRY%cg_split": "*"}
    ).group("cg_same", clients=2, consistent=True).store()

    mismatched = found(cluster, WarningKind.SUBSCRIPTION_MISMATCH)

    assert set(mismatched) == {"cg_split"}
    assert stored_summary(mismatched["cg_split"]).startswith(
        "The clients of cg_split subscribe differently: 2 clients (10.0.0.1@1 and 10.0.0.2@2) to TopicA (*); "
        "1 client (10.0.0.3@3) to TopicB (TagA || TagB)."
    )
    assert len(mismatched["cg_split"].details["clients"]) == 3


def test_a_group_whose_clients_could_not_be_asked_keeps_its_recent_verdict_while_they_are_the_same(cluster):
    earlier = Minute(cluster.pk, minutes_before(T, 2))  # a minute is stored whole: one Minute for both groups
    for group in ("cg_split", "cg_left"):
        earlier.group(group, clients=2, consistent=False).client(group, "a@1", {"TopicA": "*"}).client(
            group, "b@2", {"TopicB": "*"}
        )
    earlier.store()
    collected(cluster.pk, minutes_before(T, 1))
    Minute(cluster.pk, T).group("cg_split", clients=2, consistent=None).client("cg_split", "a@1", {}).client(
        "cg_split", "b@2", {}
    ).group("cg_left", clients=2, consistent=None).client("cg_left", "a@1", {}).client("cg_left", "c@3", {}).store()

    mismatched = found(cluster, WarningKind.SUBSCRIPTION_MISMATCH)

    assert set(mismatched) == {"cg_split"}  # cg_left's odd client b@2 has left
    summary = stored_summary(mismatched["cg_split"])
    assert summary.endswith("(Clients not all reachable this minute; verdict of 09:58 UTC.)")


# --- retries and dead letters -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sent_back", "warns"), [(99, False), (100, True)])
def test_messages_sent_back_for_retry_in_the_last_hour_are_consume_failures(cluster, sent_back, warns):
    # 40 an hour and a half ago do not count; the rest is spread over the last hour.
    Minute(cluster.pk, T - dt.timedelta(minutes=90)).consume("cg_failing", "TopicFailing", sndbck=40).store()
    Minute(cluster.pk, T - dt.timedelta(minutes=59)).consume("cg_failing", "TopicFailing", sndbck=sent_back - 9).store()
    Minute(cluster.pk, T).consume("cg_failing", "TopicFailing", sndbck=9).consume(
        "cg_failing", "%RETRY%cg_failing", sndbck=None
    ).store()

    failures = found(cluster, WarningKind.CONSUME_FAILURES)

    assert ("cg_failing" in failures) is warns
    if warns:
        assert stored_summary(failures["cg_failing"]).startswith(
            "cg_failing sent 100 messages back for retry in the last hour (2 of its minutes collected) "
            "(TopicFailing: 100), 9 in the latest minute"
        )


def test_any_message_reaching_the_dead_letter_queue_in_the_last_hour_is_reported(cluster):
    Minute(cluster.pk, minutes_before(T, 30)).group("cg_dead", dlq_nums=3, dlq_total=10).group(
        "cg_alive", dlq_nums=0, dlq_total=5
    ).store()
    Minute(cluster.pk, T).group("cg_dead", dlq_nums=0, dlq_total=10).group("cg_alive", dlq_nums=0, dlq_total=5).store()

    dead = found(cluster, WarningKind.DEAD_LETTERS)

    assert set(dead) == {"cg_dead"}
    assert stored_summary(dead["cg_dead"]) == (
        "3 messages of cg_dead reached its dead-letter queue %DLQ%cg_dead in the last hour (the latest at 09:30 UTC; "
        "10 there in all): they failed every retry and will not be consumed again unless someone resends them."
    )


def test_a_groups_first_dead_letters_count_when_it_was_seen_without_a_dead_letter_queue_before(cluster):
    """The collector cannot tell how many of a dead-letter queue's messages are new the first time it sees it."""
    Minute(cluster.pk, minutes_before(T, 2)).group("cg_first", dlq_nums=0, dlq_total=None).store()
    Minute(cluster.pk, minutes_before(T, 1)).group("cg_first", dlq_nums=None, dlq_total=4).group(
        "cg_old", dlq_nums=None, dlq_total=7
    ).store()
    Minute(cluster.pk, T).group("cg_first", dlq_nums=0, dlq_total=4).group("cg_old", dlq_nums=0, dlq_total=7).store()

    dead = found(cluster, WarningKind.DEAD_LETTERS)

    assert set(dead) == {"cg_first"}  # cg_old's were there when monitoring began
    assert dead["cg_first"].details["dead_letters"] == 4


def test_a_healthy_cluster_has_no_consumer_condition_but_every_consumer_kind_is_evaluated(cluster):
    Minute(cluster.pk, T).consume("cg_ok", "TopicOk", lag=5, lag_seconds=1.0, get_nums=600).group("cg_ok").store()

    evaluation = evaluate(cluster, NOW)

    assert evaluation.evaluated >= CONSUMER_KINDS
    assert [c for c in evaluation.conditions if c.kind in CONSUMER_KINDS] == []

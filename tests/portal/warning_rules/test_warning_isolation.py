"""One bad subject costs only its own verdict (issue 15): a stored threshold the rules cannot compute with, or a rule
that raises while judging one subject, one kind or one family, is logged with what was judged and counted, and
every other subject, kind and family of the evaluation is still judged. A subject whose judging failed keeps its
open warning as it is (never "resolved" on the strength of a crash)."""

import datetime as dt
import logging
import math

import pytest
from django.utils import timezone

from portal.models import Cluster, ConsumerGroup, NameServer, Team
from portal.models.warnings import SubjectType, ThresholdScope, Warning, WarningKind, WarningState, WarningThreshold
from portal.services.warnings.rules import RuleFailure, evaluate
from portal.services.warnings.rules.consumers import group_state, lag, queues
from portal.tasks import evaluate_warnings
from tests.portal.warning_rules.warning_rows import NOW, Minute, T, collected, minutes_before

LAG = WarningKind.CONSUMER_LAG
BLOCKED = WarningKind.CLIENT_BLOCKED
GROUP = SubjectType.CONSUMER_GROUP


@pytest.fixture
def cluster(db):
    cluster = Cluster.objects.create(name="isolation")
    NameServer.objects.create(cluster=cluster, address="127.0.0.1:9876")
    return cluster


def lagging(cluster, at: dt.datetime, *groups: str) -> None:
    """A collected minute at ``at`` with each of ``groups`` 50,000 messages and 15 minutes behind."""
    minute = Minute(cluster.pk, at)
    for group in groups:
        minute.consume(group, f"Topic_{group}", lag=50_000, lag_seconds=900.0, get_nums=10).group(group)
    minute.store()


@pytest.fixture
def two_teams_lagging(cluster):
    """cg_payments (team payments) and cg_orders (team orders), both lagging at T."""
    for team in ("payments", "orders"):
        ConsumerGroup.objects.create(cluster=cluster, team=Team.objects.create(name=team), name=f"cg_{team}")
    collected(cluster.pk, *(minutes_before(T, n) for n in (3, 2, 1)))
    lagging(cluster, T, "cg_payments", "cg_orders")
    return cluster


def breaking(monkeypatch, module, name: str, subject: str) -> None:
    """Make ``<module>.<name>`` (a consumer rule module) raise whenever its arguments mention ``subject`` (a rule's
    bug on a rare path)."""
    original = getattr(module, name)

    def rule(*args, **kwargs):
        if subject in repr(args):
            raise ZeroDivisionError(f"cannot judge {subject}")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, rule)


def test_a_stored_lag_threshold_out_of_range_does_not_stop_other_teams_lag_warnings(two_teams_lagging):
    payments = ConsumerGroup.objects.get(name="cg_payments")
    WarningThreshold.objects.create(  # saved before the bounds existed: straight to the table, no validation
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=payments, params={"seconds": 10**30}
    )

    evaluation = evaluate(two_teams_lagging, NOW)

    assert LAG in evaluation.evaluated and evaluation.failures == []
    lagging = {c.subject_name: c for c in evaluation.of_kind(LAG)}
    assert set(lagging) == {"cg_orders", "cg_payments"}
    assert lagging["cg_payments"].details["thresholds"] == {"messages": 10_000, "seconds": 300}  # the inherited


def test_a_subject_whose_judging_raises_is_logged_counted_and_unjudged_while_every_other_is_judged(
    two_teams_lagging, monkeypatch, caplog
):
    breaking(monkeypatch, lag, "_lag_condition", "cg_payments")

    with caplog.at_level(logging.ERROR, logger="portal.services.warnings.rules"):
        evaluation = evaluate(two_teams_lagging, NOW)

    assert [c.subject_name for c in evaluation.of_kind(LAG)] == ["cg_orders"]
    assert evaluation.failures == [
        RuleFailure(LAG, GROUP, "cg_payments", "ZeroDivisionError: cannot judge cg_payments")
    ]
    assert evaluation.unjudged == {(LAG, GROUP, "cg_payments")}
    assert "warning rule consumer_lag failed for consumer_group cg_payments on cluster isolation" in caplog.text
    # the other kinds and families were judged all the same
    assert {LAG, BLOCKED, WarningKind.PRODUCE_ERRORS} <= evaluation.evaluated


def test_a_kind_whose_rule_raises_is_left_out_and_its_familys_other_kinds_still_count(two_teams_lagging, monkeypatch):
    breaking(monkeypatch, queues, "blocked_conditions", "isolation")

    evaluation = evaluate(two_teams_lagging, NOW)

    assert BLOCKED not in evaluation.evaluated
    assert LAG in evaluation.evaluated and len(evaluation.of_kind(LAG)) == 2
    [failure] = evaluation.failures
    assert (failure.rule, failure.subject_type, failure.key) == (BLOCKED, None, None)


def test_a_family_that_raises_is_counted_and_the_other_families_still_count(two_teams_lagging, monkeypatch):
    breaking(monkeypatch, group_state, "group_health", "isolation")  # read first, by every consumer kind

    evaluation = evaluate(two_teams_lagging, NOW)

    assert LAG not in evaluation.evaluated and WarningKind.PRODUCE_ERRORS in evaluation.evaluated
    assert [failure.rule for failure in evaluation.failures] == ["consumers"]


def test_a_condition_whose_details_cannot_be_stored_is_a_failure_of_its_subject(two_teams_lagging, monkeypatch):
    original = lag._lag_condition

    def odd_figure(ctx, entry, *args):
        condition = original(ctx, entry, *args)
        if entry.group == "cg_payments":
            condition.details["consumed_per_second"] = math.inf
        return condition

    monkeypatch.setattr(lag, "_lag_condition", odd_figure)

    evaluation = evaluate(two_teams_lagging, NOW)

    assert [c.subject_name for c in evaluation.of_kind(LAG)] == ["cg_orders"]
    assert evaluation.unjudged == {(LAG, GROUP, "cg_payments")}


def test_the_task_counts_rule_errors_and_a_failed_subjects_warning_stays_open(
    two_teams_lagging, monkeypatch, django_capture_on_commit_callbacks
):
    cluster = two_teams_lagging
    now = timezone.now().replace(second=0, microsecond=0)  # the task evaluates at the current time
    lagging(cluster, now - dt.timedelta(minutes=1), "cg_payments", "cg_orders")
    with django_capture_on_commit_callbacks():
        assert evaluate_warnings(cluster.pk) == {"fired": 2, "repeated": 0, "resolved": 0, "rule_errors": 0}
    breaking(monkeypatch, lag, "_lag_condition", "cg_payments")
    lagging(cluster, now, "cg_payments")  # cg_orders has caught up; cg_payments still lags, but cannot be judged

    with django_capture_on_commit_callbacks():
        result = evaluate_warnings(cluster.pk)

    assert result == {"fired": 0, "repeated": 0, "resolved": 1, "rule_errors": 1}
    assert dict(Warning.objects.values_list("subject_name", "state")) == {
        "cg_orders": WarningState.RESOLVED,
        "cg_payments": WarningState.OPEN,
    }

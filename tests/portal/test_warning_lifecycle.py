"""The warning lifecycle: a condition fires a warning once, repeats at most once per interval while it lasts, and
resolves when it is gone — but only for kinds the rules could evaluate. Every transition is a row with the condition
snapshot; racing reconciles record each transition once."""

import datetime as dt

import pytest
from django.core.exceptions import PermissionDenied

from portal.models import AuditEntry, Cluster, ConsumerGroup, Membership, TeamRole, Topic
from portal.models.warnings import (
    SubjectType,
    ThresholdScope,
    Transition,
    Warning,
    WarningEvent,
    WarningKind,
    WarningState,
    WarningThreshold,
)
from portal.services.warnings import lifecycle
from portal.services.warnings.lifecycle import acknowledge, reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from portal.tasks import deliver_warning_event, evaluate_warnings
from tests.support.factories import make_user

T0 = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
LAG = WarningKind.CONSUMER_LAG


@pytest.fixture
def own_cluster(db):
    return Cluster.objects.create(name="lifecycle")


@pytest.fixture
def group(own_cluster, team):
    return ConsumerGroup.objects.create(cluster=own_cluster, team=team, name="order-consumer")


def lagging(behind: int = 52_000, group: str = "order-consumer") -> Condition:
    return Condition(
        kind=LAG,
        subject_type=SubjectType.CONSUMER_GROUP,
        subject_name=group,
        summary=f"{group} is {behind:,} messages behind on orders",
        details={"topic": "orders", "behind": behind},
    )


def evaluation(*conditions: Condition, evaluated=(LAG,)) -> Evaluation:
    result = Evaluation()
    for kind in evaluated:
        result.add(kind, [c for c in conditions if c.kind == kind])
    return result


def transitions(warning: Warning) -> list[str]:
    return list(warning.events.order_by("at", "id").values_list("transition", flat=True))


def test_a_new_condition_opens_a_warning_and_records_it_fired_with_the_condition(own_cluster, group):
    result = reconcile(own_cluster, evaluation(lagging()), T0)

    warning = Warning.objects.get()
    assert (warning.kind, warning.subject_type, warning.subject_name) == (LAG, "consumer_group", "order-consumer")
    assert warning.state == WarningState.OPEN and warning.opened_at == T0 and warning.consumer_group == group
    assert warning.summary == "order-consumer is 52,000 messages behind on orders"
    [event] = result.fired
    assert (event.transition, event.at) == (Transition.FIRED, T0)
    assert event.snapshot == {
        "summary": "order-consumer is 52,000 messages behind on orders",
        "details": {"topic": "orders", "behind": 52_000},
        "severity": "warning",
    }


def test_a_group_warning_links_the_group_and_the_topic_its_details_name(own_cluster, group, team):
    orders = Topic.objects.create(cluster=own_cluster, team=team, name="orders")

    reconcile(own_cluster, evaluation(lagging()), T0)

    warning = Warning.objects.get()
    assert (warning.consumer_group, warning.topic) == (group, orders)


def test_the_same_evaluation_again_changes_nothing(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging()), T0)

    again = reconcile(own_cluster, evaluation(lagging()), T0)

    assert again.events == []
    assert Warning.objects.count() == 1 and WarningEvent.objects.count() == 1


def test_a_lasting_condition_is_not_repeated_within_the_interval_but_its_warning_shows_the_latest_numbers(
    own_cluster, group
):
    reconcile(own_cluster, evaluation(lagging(52_000)), T0)

    result = reconcile(own_cluster, evaluation(lagging(61_000)), T0 + dt.timedelta(minutes=59))

    assert result.events == []
    warning = Warning.objects.get()
    assert transitions(warning) == ["fired"]
    assert warning.details["behind"] == 61_000 and warning.last_seen_at == T0 + dt.timedelta(minutes=59)


def test_a_lasting_condition_repeats_once_the_interval_has_passed_and_then_waits_again(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging()), T0)

    first = reconcile(own_cluster, evaluation(lagging(70_000)), T0 + dt.timedelta(hours=1))
    second = reconcile(own_cluster, evaluation(lagging(80_000)), T0 + dt.timedelta(hours=1, minutes=30))
    third = reconcile(own_cluster, evaluation(lagging(90_000)), T0 + dt.timedelta(hours=2))

    assert [len(r.repeated) for r in (first, second, third)] == [1, 0, 1]
    assert first.repeated[0].snapshot["details"]["behind"] == 70_000
    assert transitions(Warning.objects.get()) == ["fired", "repeated", "repeated"]


def test_the_repeat_interval_is_the_subjects_threshold(own_cluster, group):
    WarningThreshold.objects.create(
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"repeat_seconds": 600}
    )
    reconcile(own_cluster, evaluation(lagging()), T0)

    result = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(minutes=10))

    assert len(result.repeated) == 1


def test_a_gone_condition_resolves_its_warning_with_the_last_snapshot(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging(52_000)), T0)
    reconcile(own_cluster, evaluation(lagging(3_000_000)), T0 + dt.timedelta(minutes=5))

    result = reconcile(own_cluster, evaluation(), T0 + dt.timedelta(minutes=6))

    warning = Warning.objects.get()
    assert (warning.state, warning.resolved_at) == (WarningState.RESOLVED, T0 + dt.timedelta(minutes=6))
    [event] = result.resolved
    assert event.snapshot["details"]["behind"] == 3_000_000
    assert transitions(warning) == ["fired", "resolved"]


def test_a_warning_is_not_resolved_when_its_kind_was_not_evaluated(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging()), T0)

    result = reconcile(own_cluster, evaluation(evaluated=()), T0 + dt.timedelta(hours=2))

    assert result.events == []
    assert Warning.objects.get().state == WarningState.OPEN


def test_a_condition_coming_back_after_resolution_opens_a_new_warning(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging()), T0)
    reconcile(own_cluster, evaluation(), T0 + dt.timedelta(minutes=1))

    result = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(minutes=2))

    assert len(result.fired) == 1
    assert sorted(Warning.objects.values_list("state", flat=True)) == ["open", "resolved"]


def test_only_the_subjects_whose_conditions_are_gone_resolve(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging(group="a"), lagging(group="b")), T0)

    result = reconcile(own_cluster, evaluation(lagging(group="b")), T0 + dt.timedelta(minutes=1))

    assert [event.warning.subject_name for event in result.resolved] == ["a"]
    assert Warning.objects.get(subject_name="b").state == WarningState.OPEN


def test_a_kind_switched_off_for_a_subject_neither_fires_nor_stays_open(own_cluster, group):
    reconcile(own_cluster, evaluation(lagging()), T0)
    WarningThreshold.objects.create(
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"enabled": False}
    )

    result = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(minutes=1))

    assert len(result.resolved) == 1 and result.fired == []


def test_reconciles_racing_each_other_record_each_transition_once(own_cluster, group, monkeypatch):
    """A reconcile that read the open warnings before another one recorded its transitions (as two overlapping
    tasks do) must not fire, repeat or resolve again: its writes are conditional on what it read still holding."""
    stale_view: dict = {}
    real_open_warnings = lifecycle._open_warnings
    monkeypatch.setattr(lifecycle, "_open_warnings", lambda cluster: dict(stale_view))

    # Fire: both saw no open warning.
    first = reconcile(own_cluster, evaluation(lagging()), T0)
    second = reconcile(own_cluster, evaluation(lagging()), T0)
    assert (len(first.fired), len(second.fired)) == (1, 0)

    # Repeat: both saw the warning as last notified at T0.
    stale_view.update(real_open_warnings(own_cluster))
    first = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(hours=1))
    second = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(hours=1, minutes=1))
    assert (len(first.repeated), len(second.repeated)) == (1, 0)

    # Resolve: both saw it open.
    first = reconcile(own_cluster, evaluation(), T0 + dt.timedelta(hours=2))
    second = reconcile(own_cluster, evaluation(), T0 + dt.timedelta(hours=2))
    assert (len(first.resolved), len(second.resolved)) == (1, 0)

    assert transitions(Warning.objects.get()) == ["fired", "repeated", "resolved"]


def test_an_acknowledged_warning_stops_repeating_but_its_resolution_is_still_recorded(own_cluster, group, member):
    reconcile(own_cluster, evaluation(lagging()), T0)
    warning = Warning.objects.get()

    assert acknowledge(warning, member) is True
    assert acknowledge(Warning.objects.get(), member) is False  # already acknowledged
    repeat = reconcile(own_cluster, evaluation(lagging()), T0 + dt.timedelta(hours=3))
    resolve = reconcile(own_cluster, evaluation(), T0 + dt.timedelta(hours=4))

    assert repeat.events == [] and len(resolve.resolved) == 1
    assert Warning.objects.get().acknowledged_by == member


def test_only_the_owning_team_and_portal_admins_may_acknowledge(own_cluster, group, outsider, portal_admin):
    reconcile(own_cluster, evaluation(lagging()), T0)
    warning = Warning.objects.get()

    with pytest.raises(PermissionDenied):
        acknowledge(warning, outsider)
    assert acknowledge(warning, portal_admin) is True


def test_a_team_admin_acknowledging_is_audited(own_cluster, group, team):
    lead = make_user("lead")
    Membership.objects.create(team=team, user=lead, role=TeamRole.ADMIN)
    reconcile(own_cluster, evaluation(lagging()), T0)

    acknowledge(Warning.objects.get(), lead)

    assert AuditEntry.objects.filter(action="warning.acknowledged", actor=lead).count() == 1


def test_each_event_is_handed_to_delivery_once_its_transaction_commits(
    own_cluster, group, django_capture_on_commit_callbacks, monkeypatch
):
    queued = []
    monkeypatch.setattr(lifecycle, "_enqueue_delivery", queued.append)

    with django_capture_on_commit_callbacks(execute=True):
        result = reconcile(own_cluster, evaluation(lagging(group="a"), lagging(group="b")), T0)

    assert sorted(queued) == sorted(event.pk for event in result.fired) and len(queued) == 2


def test_the_tasks_for_a_cluster_or_event_deleted_since_do_nothing(db):
    assert evaluate_warnings(123456) is None
    assert deliver_warning_event(123456) is None
